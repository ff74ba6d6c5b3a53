/* http.c - what a handler sees of HTTP: the request's headers and query,
 * and the reply helpers that fill struct http_resp. The server
 * (http_server.c) sends what they set. */
#include "http.h"

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HTTP_REPLY_INIT_BYTES 512 /* below the allocator's per-thread cache limit */

const char *http_req_query(const struct http_req *req, const char *name)
{
    return MHD_lookup_connection_value((struct MHD_Connection *)req->conn, MHD_GET_ARGUMENT_KIND,
                                       name);
}

const char *http_req_header(const struct http_req *req, const char *name)
{
    return MHD_lookup_connection_value((struct MHD_Connection *)req->conn, MHD_HEADER_KIND, name);
}

/* Every reply helper ends here: a reply replaces whatever was set before,
 * and is a definite answer unless the helper says otherwise after. */
static void set_body(struct http_resp *resp, int status, char *body)
{
    free(resp->body);
    resp->status = status;
    resp->body = body;
    resp->content_type = NULL;
    resp->code = NULL;
    resp->retry_after_s = 0;
    resp->replayed = 0;
    resp->shard_outage[0] = '\0';
    resp->cache_control = NULL;
    resp->etag = NULL;
    resp->csp = NULL;
    resp->outcome = HTTP_OUT_DEFINITE;
}

/* Most replies are printed straight into a buffer of ours, which the
 * reply keeps: cJSON's own buffer grows by reallocation and is freed with
 * cJSON_free, so it has to be copied. A reply longer than the buffer
 * (cJSON_PrintPreallocated fails) is printed the long way. */
void http_reply_json(struct http_resp *resp, int status, const struct cJSON *obj)
{
    char *text = malloc(HTTP_REPLY_INIT_BYTES), *copy;

    /* cJSON_PrintPreallocated takes a non-const item, but only reads it. */
    if (text != NULL && cJSON_PrintPreallocated((cJSON *)obj, text, HTTP_REPLY_INIT_BYTES, false)) {
        set_body(resp, status, text);
        return;
    }
    free(text);
    text = cJSON_PrintUnformatted(obj);
    copy = text ? strdup(text) : NULL;
    cJSON_free(text);
    if (copy == NULL) {
        set_body(resp, 500, strdup("{\"code\":\"INTERNAL\",\"message\":\"out of memory\"}"));
        return;
    }
    set_body(resp, status, copy);
}

void http_reply_error(struct http_resp *resp, int status, const char *code, const char *message)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "code", code);
    cJSON_AddStringToObject(o, "message", message);
    http_reply_json(resp, status, o);
    cJSON_Delete(o);
    resp->code = code;
}

void http_reply_challenge(struct http_resp *resp, const char *challenge)
{
    resp->www_authenticate = challenge;
}

void http_reply_text(struct http_resp *resp, int status, const char *ctype, const char *text,
                     size_t len)
{
    char *copy = malloc(len + 1);

    if (copy == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    set_body(resp, status, copy);
    resp->content_type = ctype;
}

void http_reply_document(struct http_resp *resp, const char *ctype, const char *body, size_t len,
                         const char *etag, const char *cache_control, const char *csp,
                         int not_modified)
{
    http_reply_text(resp, not_modified ? 304 : 200, ctype, body, not_modified ? 0 : len);
    if (resp->content_type != ctype)
        return; /* out of memory: the 500 stays an API answer */
    resp->etag = etag;
    resp->cache_control = cache_control;
    resp->csp = csp;
}

/* Marks the reply just set (status want) as retryable, with its
 * Retry-After. */
static void set_retryable(struct http_resp *resp, int want, const char *code, int retry_after_s)
{
    if (resp->status != want)
        return; /* out of memory turned it into a 500 */
    resp->code = code;
    resp->retry_after_s = retry_after_s > 0 ? retry_after_s : 1;
    resp->outcome = HTTP_OUT_RETRYABLE;
}

void http_reply_retry(struct http_resp *resp, const char *code, const char *message,
                      int retry_after_s)
{
    http_reply_error(resp, 503, code, message);
    set_retryable(resp, 503, code, retry_after_s);
}

void http_reply_text_retry(struct http_resp *resp, const char *ctype, const char *text, size_t len,
                           const char *code, int retry_after_s)
{
    http_reply_text(resp, 503, ctype, text, len);
    set_retryable(resp, 503, code, retry_after_s);
}

void http_reply_unavailable(struct http_resp *resp, const char *message)
{
    http_reply_retry(resp, "UNAVAILABLE", message, 1);
}

void http_reply_shard_outage(struct http_resp *resp, const char *shard, const char *message,
                             int retry_after_s)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL || cJSON_AddStringToObject(o, "code", "UNAVAILABLE") == NULL ||
        cJSON_AddStringToObject(o, "message", message) == NULL ||
        cJSON_AddStringToObject(o, "shard_outage", shard) == NULL) {
        cJSON_Delete(o);
        http_reply_retry(resp, "UNAVAILABLE", message, retry_after_s);
        return;
    }
    http_reply_json(resp, 503, o);
    cJSON_Delete(o);
    set_retryable(resp, 503, "UNAVAILABLE", retry_after_s);
    if (resp->status == 503)
        snprintf(resp->shard_outage, sizeof(resp->shard_outage), "%s", shard);
}

void http_mark_shard_outage(struct http_resp *resp, const char *shard)
{
    if (resp->status == 503)
        snprintf(resp->shard_outage, sizeof(resp->shard_outage), "%s", shard);
}

void http_reply_json_unavailable(struct http_resp *resp, const struct cJSON *obj)
{
    http_reply_json(resp, 503, obj);
    set_retryable(resp, 503, "UNAVAILABLE", 1);
}

void http_reply_in_progress(struct http_resp *resp, const char *code, const char *message,
                            int retry_after_s)
{
    http_reply_error(resp, 409, code, message);
    set_retryable(resp, 409, code, retry_after_s);
}

void http_reply_replay(struct http_resp *resp, int status, const char *body, size_t len)
{
    char *copy = malloc(len + 1);

    if (copy == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    memcpy(copy, body, len);
    copy[len] = '\0';
    set_body(resp, status, copy);
    resp->replayed = 1;
}

int http_resp_retryable(const struct http_resp *resp)
{
    return resp->outcome == HTTP_OUT_RETRYABLE;
}

void http_reply_rate_limited(struct http_resp *resp, const char *code, const char *message,
                             int retry_after_s)
{
    http_reply_error(resp, 429, code, message);
    set_retryable(resp, 429, code, retry_after_s);
}
