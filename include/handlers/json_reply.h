/* json_reply.h - reading a request body in a handler: each reader
 * replies 400 BAD_REQUEST naming the field on failure (the _or_reply
 * convention) and is built on the pure readers of jsonutil.h. */
#ifndef PAYCALLBACK_JSON_REPLY_H
#define PAYCALLBACK_JSON_REPLY_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct http_resp;

/* Parses body as a JSON object. Returns the root (caller frees with
 * cJSON_Delete), or NULL after replying 400 BAD_REQUEST. */
struct cJSON *json_parse_object_or_reply(const char *body, size_t len, struct http_resp *resp);

/* Copies the identifier field name (1..64 of [A-Za-z0-9_.:-]) into out
 * (ID_BUF bytes). Returns 0, or -1 after replying 400 naming the field. */
int json_get_id_or_reply(const struct cJSON *obj, const char *name, char *out,
                         struct http_resp *resp);

/* Reads a money string field into cents. 0, or -1 after a 400. */
int json_get_money_or_reply(const struct cJSON *obj, const char *name, int64_t *cents,
                            struct http_resp *resp);

/* Reads an integer field in [min, max]. 0, or -1 after a 400. */
int json_get_int_or_reply(const struct cJSON *obj, const char *name, int64_t min, int64_t max,
                          int64_t *out, struct http_resp *resp);

#endif
