/* jsonutil.c - strict reading of request bodies with cJSON: one object,
 * fields of the right JSON type, identifiers and money checked against the
 * contract. Each helper replies 400 naming the field; none truncates. */
#include "jsonutil.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "http.h"
#include "money.h"
#include "validate.h"

#define JSON_MSG_MAX     192      /* bytes of one error message */
#define JSON_PROBLEM_MAX 96       /* bytes of its part after the field name */

/* Every reply here is the same 400, its message the field name followed
 * by what is wrong with it ("amount is required"). */
static void reply_field(struct http_resp *resp, const char *name,
                        const char *problem)
{
    char msg[JSON_MSG_MAX];

    snprintf(msg, sizeof(msg), "%s %s", name, problem);
    http_reply_error(resp, 400, "BAD_REQUEST", msg);
}

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
            if (s[i + 1] == 'u' && i + 5 < len &&
                memcmp(s + i + 2, "0000", 4) == 0)
                return true;
            i++;                            /* skip the escaped character */
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

struct cJSON *json_parse_object_or_reply(const char *body, size_t len,
                                         struct http_resp *resp)
{
    cJSON *root = NULL;

    switch (json_parse_object(body, len, &root)) {
    case JSON_OK:
        return root;
    case JSON_NUL:
        http_reply_error(resp, 400, "BAD_REQUEST",
                         "body must not contain NUL characters");
        return NULL;
    default:
        http_reply_error(resp, 400, "BAD_REQUEST", "body must be a JSON object");
        return NULL;
    }
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

/* Finds the member called name (case-sensitive). Returns 0 with *item set
 * (NULL when absent), or -1 when the name appears more than once: cJSON
 * would quietly take the first while a gateway or log reader may take the
 * last, and two readings of one "amount" must never both be possible. */
static int get_member(const cJSON *obj, const char *name, const cJSON **item)
{
    const cJSON *child;

    *item = NULL;
    cJSON_ArrayForEach(child, obj) {
        if (child->string == NULL || strcmp(child->string, name) != 0)
            continue;
        if (*item != NULL)
            return -1;
        *item = child;
    }
    return 0;
}

/* Looks up name and checks presence and uniqueness. Returns the member,
 * or NULL after replying 400. */
static const cJSON *member_or_reply(const cJSON *obj, const char *name,
                                    struct http_resp *resp)
{
    const cJSON *item = NULL;

    if (obj == NULL || !cJSON_IsObject(obj)) {
        http_reply_error(resp, 400, "BAD_REQUEST", "body must be a JSON object");
        return NULL;
    }
    if (get_member(obj, name, &item) != 0) {
        reply_field(resp, name, "must appear only once");
        return NULL;
    }
    if (item == NULL) {
        reply_field(resp, name, "is required");
        return NULL;
    }
    return item;
}

int json_get_id_or_reply(const struct cJSON *obj, const char *name, char *out,
                         struct http_resp *resp)
{
    const cJSON *item;

    out[0] = '\0';
    if ((item = member_or_reply(obj, name, resp)) == NULL)
        return -1;
    if (!cJSON_IsString(item) || !validate_id(item->valuestring)) {
        reply_field(resp, name, "must be 1..64 characters of [A-Za-z0-9_.:-]");
        return -1;
    }
    memcpy(out, item->valuestring, strlen(item->valuestring) + 1);
    return 0;
}

int json_get_money_or_reply(const struct cJSON *obj, const char *name,
                            int64_t *cents, struct http_resp *resp)
{
    const cJSON *item;

    *cents = 0;
    if ((item = member_or_reply(obj, name, resp)) == NULL)
        return -1;
    if (!cJSON_IsString(item) ||
        money_parse(item->valuestring, cents) != MONEY_OK) {
        reply_field(resp, name, "must be a decimal string like \"899.00\"");
        return -1;
    }
    return 0;
}

/* The range test comes before the conversion because converting a double
 * outside int64_t is undefined; the comparison is false for NaN, and the
 * infinity cJSON makes of 1e400 is outside every range. Only then is the
 * value converted and compared back to find a fraction. */
enum json_status json_int_value(const struct cJSON *item, int64_t min, int64_t max,
                                int64_t *out)
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
        return JSON_RANGE;        /* (double)INT64_MAX rounds up to 2^63 */
    v = (int64_t)d;
    if ((double)v != d)
        return JSON_FRACTION;
    if (v < min || v > max)
        return JSON_RANGE;
    *out = v;
    return JSON_OK;
}

/* Strings such as "1" are refused: the contract says integer. */
int json_get_int_or_reply(const struct cJSON *obj, const char *name,
                          int64_t min, int64_t max, int64_t *out,
                          struct http_resp *resp)
{
    const cJSON *item;
    char problem[JSON_PROBLEM_MAX];

    *out = 0;
    if ((item = member_or_reply(obj, name, resp)) == NULL)
        return -1;
    if (json_int_value(item, min, max, out) == JSON_OK)
        return 0;
    snprintf(problem, sizeof(problem),
             "must be an integer from %" PRId64 " to %" PRId64, min, max);
    reply_field(resp, name, problem);
    return -1;
}
