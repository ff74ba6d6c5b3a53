/* jsonutil.h - strict reading of JSON documents with cJSON (request
 * bodies, the configuration file, gateway answers). Pure: no HTTP; the
 * handlers' _or_reply readers are handlers/json_reply.h.
 * cJSON rules: free only the root with cJSON_Delete. */
#ifndef PAYCALLBACK_JSONUTIL_H
#define PAYCALLBACK_JSONUTIL_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* What the pure readers below found. */
enum json_status {
    JSON_OK,
    JSON_NUL,        /* a NUL byte or \u0000: C strings would cut it */
    JSON_NOT_OBJECT, /* not one JSON object, or data after it */
    JSON_NOT_NUMBER,
    JSON_RANGE,   /* a number outside [min, max], NaN, infinity */
    JSON_FRACTION /* a number with a fractional part */
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

/* Finds the member called name of obj (case-sensitive). Returns 0 with
 * *item set (NULL when absent), or -1 when the name appears more than
 * once: cJSON would quietly take the first while a gateway or log reader
 * may take the last, and two readings of one "amount" must never both be
 * possible. */
int json_member(const struct cJSON *obj, const char *name, const struct cJSON **item);

/* Reads item as an integer in [min, max]: JSON_OK with *out set, or
 * JSON_NOT_NUMBER, JSON_RANGE or JSON_FRACTION with *out 0. The range is
 * checked on the double before any conversion. */
enum json_status json_int_value(const struct cJSON *item, int64_t min, int64_t max, int64_t *out);

#endif
