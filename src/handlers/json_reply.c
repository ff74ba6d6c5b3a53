/* json_reply.c - the request-body readers of the handlers: the pure
 * readers of jsonutil.c, each failure answered 400 BAD_REQUEST naming the
 * field (the _or_reply convention). None truncates. */
#include "json_reply.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api_error.h"
#include "jsonutil.h"
#include "money.h"
#include "validate.h"

#define JSON_MSG_MAX 192    /* bytes of one error message */
#define JSON_PROBLEM_MAX 96 /* bytes of its part after the field name */

/* Every reply here is the same 400, its message the field name followed
 * by what is wrong with it ("amount is required"). */
static void reply_field(struct http_resp *resp, const char *name, const char *problem)
{
    char msg[JSON_MSG_MAX];

    snprintf(msg, sizeof(msg), "%s %s", name, problem);
    api_reply(resp, API_BAD_REQUEST, msg);
}

struct cJSON *json_parse_object_or_reply(const char *body, size_t len, struct http_resp *resp)
{
    cJSON *root = NULL;

    switch (json_parse_object(body, len, &root)) {
    case JSON_OK: return root;
    case JSON_NUL:
        api_reply(resp, API_BAD_REQUEST, "body must not contain NUL characters");
        return NULL;
    default: api_reply(resp, API_BAD_REQUEST, "body must be a JSON object"); return NULL;
    }
}

/* Looks up name and checks presence and uniqueness. Returns the member,
 * or NULL after replying 400. */
static const cJSON *member_or_reply(const cJSON *obj, const char *name, struct http_resp *resp)
{
    const cJSON *item = NULL;

    if (obj == NULL || !cJSON_IsObject(obj)) {
        api_reply(resp, API_BAD_REQUEST, "body must be a JSON object");
        return NULL;
    }
    if (json_member(obj, name, &item) != 0) {
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

int json_get_money_or_reply(const struct cJSON *obj, const char *name, int64_t *cents,
                            struct http_resp *resp)
{
    const cJSON *item;

    *cents = 0;
    if ((item = member_or_reply(obj, name, resp)) == NULL)
        return -1;
    if (!cJSON_IsString(item) || money_parse(item->valuestring, cents) != MONEY_OK) {
        reply_field(resp, name, "must be a decimal string like \"899.00\"");
        return -1;
    }
    return 0;
}
/* Strings such as "1" are refused: the contract says integer. */
int json_get_int_or_reply(const struct cJSON *obj, const char *name, int64_t min, int64_t max,
                          int64_t *out, struct http_resp *resp)
{
    const cJSON *item;
    char problem[JSON_PROBLEM_MAX];

    *out = 0;
    if ((item = member_or_reply(obj, name, resp)) == NULL)
        return -1;
    if (json_int_value(item, min, max, out) == JSON_OK)
        return 0;
    snprintf(problem, sizeof(problem), "must be an integer from %" PRId64 " to %" PRId64, min, max);
    reply_field(resp, name, problem);
    return -1;
}
