/* harness/json.c - JSON bodies and the error shape. */
#include "../harness.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

char *h_json_get_str(const char *body, const char *key)
{
    cJSON *root = body != NULL ? cJSON_Parse(body) : NULL;
    const cJSON *v = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, key) : NULL;
    char *s = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;

    cJSON_Delete(root);
    return s;
}

int h_json_get_bool(const char *body, const char *key)
{
    cJSON *root = body != NULL ? cJSON_Parse(body) : NULL;
    const cJSON *v = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, key) : NULL;
    int b = cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;

    cJSON_Delete(root);
    return b;
}

int h_json_is_object(const char *body)
{
    cJSON *root = body != NULL ? cJSON_Parse(body) : NULL;
    int obj = cJSON_IsObject(root);

    cJSON_Delete(root);
    return obj;
}

int h_json_eq_str(const char *body, const char *key, const char *want)
{
    char *s = h_json_get_str(body, key);
    int eq = s != NULL && strcmp(s, want) == 0;

    free(s);
    return eq;
}

static int is_upper_snake(const char *s)
{
    if (s == NULL || !(*s >= 'A' && *s <= 'Z'))
        return 0;
    for (; *s != '\0'; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

const char *h_check_error(const struct h_resp *r, int status, const char *code)
{
    static _Thread_local char why[768];
    const char *body = r->body != NULL ? r->body : "";
    char *got_code = NULL, *msg = NULL;

    why[0] = '\0';
    if (r->status != status) {
        snprintf(why, sizeof why, "expected HTTP %d, got %d%s%s: %.400s", status, r->status,
                 r->err[0] ? " " : "", r->err, body);
        return why;
    }
    if (!h_resp_is_json(r)) {
        snprintf(why, sizeof why, "expected Content-Type application/json, got %s: %.400s",
                 h_resp_header(r, "Content-Type") ? h_resp_header(r, "Content-Type") : "(none)",
                 body);
        return why;
    }
    got_code = h_json_get_str(body, "code");
    msg = h_json_get_str(body, "message");
    if (code != NULL && (got_code == NULL || strcmp(got_code, code) != 0))
        snprintf(why, sizeof why, "expected code %s: %.400s", code, body);
    else if (code == NULL && !is_upper_snake(got_code))
        snprintf(why, sizeof why, "expected an UPPER_SNAKE code: %.400s", body);
    else if (msg == NULL || msg[0] == '\0')
        snprintf(why, sizeof why, "expected a non-empty message: %.400s", body);
    free(got_code);
    free(msg);
    return why[0] != '\0' ? why : NULL;
}
