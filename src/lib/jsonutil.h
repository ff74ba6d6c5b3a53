/* jsonutil.h - strict field extraction from cJSON request bodies, each
 * writing a 400 reply on failure (the _or_reply convention).
 * cJSON rules: free only the root with cJSON_Delete. */
#ifndef PAYCALLBACK_JSONUTIL_H
#define PAYCALLBACK_JSONUTIL_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct http_resp;

/* What the pure readers below found. */
enum json_status {
    JSON_OK,
    JSON_NUL,                     /* a NUL byte or \u0000: C strings would cut it */
    JSON_NOT_OBJECT,              /* not one JSON object, or data after it */
    JSON_NOT_NUMBER,
    JSON_RANGE,                   /* a number outside [min, max], NaN, infinity */
    JSON_FRACTION                 /* a number with a fractional part */
};

/* Parses exactly len bytes of text as one JSON object: only whitespace may
 * follow it, and no NUL may hide in it. JSON_OK with *root set (the caller
 * frees it with cJSON_Delete), or a failure status with *root NULL. The
 * request bodies and the configuration file are both read with this. */
enum json_status json_parse_object(const char *text, size_t len, struct cJSON **root);

/* The name of the first member of obj that appears twice in obj itself
 * (nested objects are not searched), or NULL. Borrowed from obj. cJSON
 * keeps every copy and its lookups take the first, while another reader
 * may take the last: such a document has no single meaning. */
const char *json_duplicate_key(const struct cJSON *obj);

/* Reads item as an integer in [min, max]: JSON_OK with *out set, or
 * JSON_NOT_NUMBER, JSON_RANGE or JSON_FRACTION with *out 0. The range is
 * checked on the double before any conversion. */
enum json_status json_int_value(const struct cJSON *item, int64_t min, int64_t max,
                                int64_t *out);

/* Parses body as a JSON object. Returns the root (caller frees with
 * cJSON_Delete), or NULL after replying 400 BAD_REQUEST. */
struct cJSON *json_parse_object_or_reply(const char *body, size_t len,
                                         struct http_resp *resp);

/* Copies the identifier field name (1..64 of [A-Za-z0-9_.:-]) into out
 * (ID_BUF bytes). Returns 0, or -1 after replying 400 naming the field. */
int json_get_id_or_reply(const struct cJSON *obj, const char *name, char *out,
                         struct http_resp *resp);

/* Reads a money string field into cents. 0, or -1 after a 400. */
int json_get_money_or_reply(const struct cJSON *obj, const char *name,
                            int64_t *cents, struct http_resp *resp);

/* Reads an integer field in [min, max]. 0, or -1 after a 400. */
int json_get_int_or_reply(const struct cJSON *obj, const char *name,
                          int64_t min, int64_t max, int64_t *out,
                          struct http_resp *resp);

#endif
