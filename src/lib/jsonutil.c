/* jsonutil.c - strict reading of JSON documents with cJSON: one object,
 * no NUL, no member twice, integers exactly. Knows nothing of HTTP: the
 * request bodies (handlers/json_reply.c), the configuration file and the
 * gateways' answers are all read with it. */
#include "jsonutil.h"

#include <stdbool.h>
#include <string.h>

#include <cjson/cJSON.h>

static bool is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* True when the text holds a NUL that cJSON would turn into a C string
 * terminator: a raw NUL byte anywhere, or a \u0000 escape in a string.
 * cJSON accepts both and hands back a silently shortened valuestring, so
 * "ord1\u0000junk" would pass as the identifier "ord1". The scan tracks
 * string and escape state so that an escaped backslash followed by the
 * text "u0000" is not mistaken for the escape. */
static bool has_nul(const char *s, size_t len)
{
    bool in_string = false;
    size_t i;

    if (memchr(s, '\0', len) != NULL)
        return true;
    for (i = 0; i < len; i++) {
        if (!in_string) {
            in_string = s[i] == '"';
        } else if (s[i] == '"') {
            in_string = false;
        } else if (s[i] == '\\' && i + 1 < len) {
            if (s[i + 1] == 'u' && i + 5 < len && memcmp(s + i + 2, "0000", 4) == 0)
                return true;
            i++; /* skip the escaped character */
        }
    }
    return false;
}

enum json_status json_parse_object(const char *text, size_t len, struct cJSON **root)
{
    const char *end = NULL;
    cJSON *obj = NULL;

    *root = NULL;
    if (text == NULL || len == 0)
        return JSON_NOT_OBJECT;
    if (has_nul(text, len))
        return JSON_NUL;
    obj = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (obj == NULL || !cJSON_IsObject(obj))
        goto fail;
    /* Only whitespace may follow the object: '{"a":1} x' is not JSON. */
    while (end < text + len && is_json_space(*end))
        end++;
    if (end != text + len)
        goto fail;
    *root = obj;
    return JSON_OK;
fail:
    cJSON_Delete(obj);
    return JSON_NOT_OBJECT;
}

const char *json_duplicate_key(const struct cJSON *obj)
{
    const cJSON *a, *b;

    if (!cJSON_IsObject(obj))
        return NULL;
    for (a = obj->child; a != NULL; a = a->next)
        for (b = a->next; b != NULL; b = b->next)
            if (a->string != NULL && b->string != NULL && strcmp(a->string, b->string) == 0)
                return a->string;
    return NULL;
}

int json_member(const struct cJSON *obj, const char *name, const struct cJSON **item)
{
    const cJSON *child;

    *item = NULL;
    cJSON_ArrayForEach (child, obj) {
        if (child->string == NULL || strcmp(child->string, name) != 0)
            continue;
        /* cppcheck-suppress knownConditionTrueFalse ; set by an earlier turn of the loop */
        if (*item != NULL)
            return -1;
        *item = child;
    }
    return 0;
}
/* The range test comes before the conversion because converting a double
 * outside int64_t is undefined; the comparison is false for NaN, and the
 * infinity cJSON makes of 1e400 is outside every range. Only then is the
 * value converted and compared back to find a fraction. */
enum json_status json_int_value(const struct cJSON *item, int64_t min, int64_t max, int64_t *out)
{
    double d;
    int64_t v;

    *out = 0;
    if (!cJSON_IsNumber(item))
        return JSON_NOT_NUMBER;
    d = item->valuedouble;
    if (!(d >= (double)min && d <= (double)max))
        return JSON_RANGE;
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return JSON_RANGE; /* (double)INT64_MAX rounds up to 2^63 */
    v = (int64_t)d;
    if ((double)v != d)
        return JSON_FRACTION;
    if (v < min || v > max)
        return JSON_RANGE;
    *out = v;
    return JSON_OK;
}
