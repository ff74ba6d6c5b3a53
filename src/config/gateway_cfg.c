/* gateway_cfg.c - the "gateways" profiles of the config file, checked
 * member by member. A profile that lacks what its kind needs, or carries a
 * member nobody reads, stops the start: a gateway half configured would
 * refuse or, worse, accept the wrong notifications. */
#include "gateway_cfg.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "array.h"
#include "currency.h"
#include "validate.h"

#define TOLERANCE_S_MAX 86400

static const char *const kind_names[] = { "alipay", "wechatpay_v3", "stripe" };

/* Members each profile may carry; anything else is a typo. */
static const char *const profile_members[] = {
    "name",
    "kind",
    "app_id",
    "mchid",
    "currency",
    "tolerance_s",
    "public_key",
    "public_key_file",
    "platform_keys",
    "secret_env",
    "query_url",
    "query_token_env",
    "query_timeout_ms",
    "refund",
    "refund_url",
    "refund_key_env",
    "refund_timeout_ms",
    "merchant_key_file",
    "merchant_serial",
};

const char *gateway_kind_name(enum gateway_kind kind)
{
    return (size_t)kind < ARRAY_SIZE(kind_names) ? kind_names[kind] : "?";
}

static int valid_name(const char *s)
{
    size_t i, n = strlen(s);

    if (n == 0 || n > GATEWAY_NAME_MAX)
        return 0;
    for (i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
              s[i] == '-'))
            return 0;
    return 1;
}

/* Copies the optional string member name of obj into dst (dstsz bytes).
 * Absent leaves dst alone; a non-string or too long value is an error. */
static int get_str(const cJSON *obj, const char *name, char *dst, size_t dstsz, const char *where,
                   char *err, size_t errsz)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

    if (it == NULL)
        return 0;
    if (!cJSON_IsString(it) || strlen(it->valuestring) >= dstsz) {
        snprintf(err, errsz, "%s.%s must be a string shorter than %zu bytes", where, name, dstsz);
        return -1;
    }
    memcpy(dst, it->valuestring, strlen(it->valuestring) + 1);
    return 0;
}

static int check_members(const cJSON *obj, const char *const *allowed, size_t nallowed,
                         const char *where, char *err, size_t errsz)
{
    const cJSON *it;
    size_t i;
    int known;

    cJSON_ArrayForEach (it, obj) {
        for (known = 0, i = 0; i < nallowed && !known; i++)
            known = strcmp(it->string, allowed[i]) == 0;
        if (!known) {
            snprintf(err, errsz, "%s: unknown member \"%s\"", where, it->string);
            return -1;
        }
    }
    return 0;
}

/* One key: exactly one of public_key and public_key_file. */
static int get_key(const cJSON *obj, struct gateway_key_cfg *k, const char *where, char *err,
                   size_t errsz)
{
    if (get_str(obj, "public_key", k->text, sizeof(k->text), where, err, errsz) != 0 ||
        get_str(obj, "public_key_file", k->file, sizeof(k->file), where, err, errsz) != 0)
        return -1;
    if ((k->text[0] == '\0') == (k->file[0] == '\0')) {
        snprintf(err, errsz, "%s needs exactly one of public_key and public_key_file", where);
        return -1;
    }
    return 0;
}

static int get_platform_keys(const cJSON *obj, struct gateway_profile_cfg *p, const char *where,
                             char *err, size_t errsz)
{
    static const char *const members[] = { "serial", "public_key", "public_key_file" };
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, "platform_keys"), *it;
    char at[GATEWAY_STR_MAX + 64];
    size_t i;

    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 ||
        cJSON_GetArraySize(arr) > GATEWAY_KEYS_MAX) {
        snprintf(err, errsz, "%s.platform_keys must be an array of 1..%d keys", where,
                 GATEWAY_KEYS_MAX);
        return -1;
    }
    cJSON_ArrayForEach (it, arr) {
        struct gateway_key_cfg *k = &p->keys[p->nkeys];

        snprintf(at, sizeof(at), "%s.platform_keys[%zu]", where, p->nkeys);
        if (!cJSON_IsObject(it) || check_members(it, members, 3, at, err, errsz) != 0 ||
            get_str(it, "serial", k->serial, sizeof(k->serial), at, err, errsz) != 0 ||
            get_key(it, k, at, err, errsz) != 0)
            goto bad;
        if (k->serial[0] == '\0') {
            snprintf(err, errsz, "%s.serial must not be empty", at);
            return -1;
        }
        for (i = 0; i < p->nkeys; i++)
            if (strcmp(p->keys[i].serial, k->serial) == 0) {
                snprintf(err, errsz, "%s: serial %s appears twice", at, k->serial);
                return -1;
            }
        p->nkeys++;
    }
    return 0;
bad:
    if (err[0] == '\0')
        snprintf(err, errsz, "%s must be an object", at);
    return -1;
}

static int get_kind(const cJSON *obj, struct gateway_profile_cfg *p, const char *where, char *err,
                    size_t errsz)
{
    char kind[32] = "";
    size_t i;

    if (get_str(obj, "kind", kind, sizeof(kind), where, err, errsz) != 0)
        return -1;
    for (i = 0; i < ARRAY_SIZE(kind_names); i++)
        if (strcmp(kind, kind_names[i]) == 0) {
            p->kind = (enum gateway_kind)i;
            return 0;
        }
    snprintf(err, errsz, "%s.kind must be alipay, wechatpay_v3 or stripe, got \"%s\"", where, kind);
    return -1;
}

static int get_tolerance(const cJSON *obj, struct gateway_profile_cfg *p, const char *where,
                         char *err, size_t errsz)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, "tolerance_s");

    p->tolerance_s = GATEWAY_TOLERANCE_S_DEFAULT;
    if (it == NULL)
        return 0;
    if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > TOLERANCE_S_MAX ||
        it->valuedouble != (double)(int)it->valuedouble) {
        snprintf(err, errsz, "%s.tolerance_s must be an integer in 1..%d", where, TOLERANCE_S_MAX);
        return -1;
    }
    p->tolerance_s = (int)it->valuedouble;
    return 0;
}

/* PAYCALLBACK_GATEWAY_<NAME><suffix> into out (GATEWAY_STR_MAX bytes),
 * in capitals, '-' as '_'. */
static void default_env(const struct gateway_profile_cfg *p, const char *suffix, char *out)
{
    char name[GATEWAY_NAME_MAX + 1];
    size_t i;

    memcpy(name, p->name, sizeof(name));
    snprintf(out, GATEWAY_STR_MAX, "PAYCALLBACK_GATEWAY_%s%s", name, suffix);
    for (i = 0; out[i] != '\0'; i++) {
        char c = out[i];
        out[i] = c == '-' ? '_' : (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
}

/* The optional active-query members: a URL the service may call, and
 * the token variable and timeout that only mean something with it. */
static int get_query(const cJSON *obj, struct gateway_profile_cfg *p, const char *where, char *err,
                     size_t errsz)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "query_timeout_ms");

    p->query_timeout_ms = GATEWAY_QUERY_TIMEOUT_MS_DEFAULT;
    if (get_str(obj, "query_url", p->query_url, sizeof(p->query_url), where, err, errsz) != 0 ||
        get_str(obj, "query_token_env", p->query_token_env, sizeof(p->query_token_env), where, err,
                errsz) != 0)
        return -1;
    if (p->query_url[0] == '\0') {
        if (t != NULL || cJSON_GetObjectItemCaseSensitive(obj, "query_token_env") != NULL) {
            snprintf(err, errsz,
                     "%s: query_token_env and query_timeout_ms need a non-empty "
                     "query_url",
                     where);
            return -1;
        }
        return 0;
    }
    if (!validate_http_url(p->query_url)) {
        snprintf(err, errsz,
                 "%s.query_url must be an http:// or https:// URL without user "
                 "info or fragment, got \"%s\"",
                 where, p->query_url);
        return -1;
    }
    if (t != NULL) {
        if (!cJSON_IsNumber(t) || t->valuedouble < GATEWAY_QUERY_TIMEOUT_MS_MIN ||
            t->valuedouble > GATEWAY_QUERY_TIMEOUT_MS_MAX ||
            t->valuedouble != (double)(int)t->valuedouble) {
            snprintf(err, errsz, "%s.query_timeout_ms must be an integer in %d..%d", where,
                     GATEWAY_QUERY_TIMEOUT_MS_MIN, GATEWAY_QUERY_TIMEOUT_MS_MAX);
            return -1;
        }
        p->query_timeout_ms = (int)t->valuedouble;
    }
    if (p->query_token_env[0] == '\0')
        default_env(p, "_QUERY_TOKEN", p->query_token_env);
    return 0;
}

/* The optional refund members: the base URL of the gateway's refund API
 * (none: refunds through this gateway are settled by hand, as native
 * payments), who asks for the refund of a double payment ("auto": the
 * service; "approval", the default: an operator approves each), the
 * variable holding the API key (Stripe's secret key), and the timeout of
 * one call. */
static int get_refund(const cJSON *obj, struct gateway_profile_cfg *p, const char *where, char *err,
                      size_t errsz)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "refund_timeout_ms");
    char mode[16] = "";

    p->refund_timeout_ms = GATEWAY_QUERY_TIMEOUT_MS_DEFAULT;
    if (get_str(obj, "refund_url", p->refund_url, sizeof(p->refund_url), where, err, errsz) != 0 ||
        get_str(obj, "merchant_key_file", p->merchant_key_file, sizeof(p->merchant_key_file), where,
                err, errsz) != 0 ||
        get_str(obj, "merchant_serial", p->merchant_serial, sizeof(p->merchant_serial), where, err,
                errsz) != 0 ||
        get_str(obj, "refund_key_env", p->refund_key_env, sizeof(p->refund_key_env), where, err,
                errsz) != 0 ||
        get_str(obj, "refund", mode, sizeof(mode), where, err, errsz) != 0)
        return -1;
    if (mode[0] != '\0' && strcmp(mode, "auto") != 0 && strcmp(mode, "approval") != 0) {
        snprintf(err, errsz, "%s.refund must be \"auto\" or \"approval\", got \"%s\"", where, mode);
        return -1;
    }
    p->refund_auto = strcmp(mode, "auto") == 0;
    if (p->refund_url[0] == '\0') {
        if (t != NULL || mode[0] != '\0' || p->merchant_key_file[0] != '\0' ||
            p->merchant_serial[0] != '\0' ||
            cJSON_GetObjectItemCaseSensitive(obj, "refund_key_env") != NULL) {
            snprintf(err, errsz,
                     "%s: refund, refund_key_env, refund_timeout_ms, merchant_key_file and "
                     "merchant_serial need a non-empty refund_url",
                     where);
            return -1;
        }
        return 0;
    }
    if (p->kind != GATEWAY_STRIPE && p->merchant_key_file[0] == '\0') {
        snprintf(err, errsz, "%s: refunds through an %s profile need merchant_key_file", where,
                 gateway_kind_name(p->kind));
        return -1;
    }
    if (p->kind == GATEWAY_WECHATPAY_V3 && p->merchant_serial[0] == '\0') {
        snprintf(err, errsz, "%s: refunds through a wechatpay_v3 profile need merchant_serial",
                 where);
        return -1;
    }
    if (!validate_http_url(p->refund_url)) {
        snprintf(err, errsz,
                 "%s.refund_url must be an http:// or https:// URL without user "
                 "info or fragment, got \"%s\"",
                 where, p->refund_url);
        return -1;
    }
    if (t != NULL) {
        if (!cJSON_IsNumber(t) || t->valuedouble < GATEWAY_QUERY_TIMEOUT_MS_MIN ||
            t->valuedouble > GATEWAY_QUERY_TIMEOUT_MS_MAX ||
            t->valuedouble != (double)(int)t->valuedouble) {
            snprintf(err, errsz, "%s.refund_timeout_ms must be an integer in %d..%d", where,
                     GATEWAY_QUERY_TIMEOUT_MS_MIN, GATEWAY_QUERY_TIMEOUT_MS_MAX);
            return -1;
        }
        p->refund_timeout_ms = (int)t->valuedouble;
    }
    if (p->refund_key_env[0] == '\0')
        default_env(p, "_REFUND_KEY", p->refund_key_env);
    return 0;
}

/* What each kind needs beyond the common members. */
static int check_kind(const cJSON *obj, struct gateway_profile_cfg *p, const char *where, char *err,
                      size_t errsz)
{
    switch (p->kind) {
    case GATEWAY_ALIPAY:
        if (p->app_id[0] == '\0') {
            snprintf(err, errsz, "%s: an alipay profile needs app_id", where);
            return -1;
        }
        if (cJSON_GetObjectItemCaseSensitive(obj, "platform_keys") != NULL) {
            snprintf(err, errsz, "%s: platform_keys is for wechatpay_v3 profiles", where);
            return -1;
        }
        p->nkeys = 1;
        return get_key(obj, &p->keys[0], where, err, errsz);
    case GATEWAY_WECHATPAY_V3:
        if (p->mchid[0] == '\0') {
            snprintf(err, errsz, "%s: a wechatpay_v3 profile needs mchid", where);
            return -1;
        }
        return get_platform_keys(obj, p, where, err, errsz);
    case GATEWAY_STRIPE:
        if (cJSON_GetObjectItemCaseSensitive(obj, "public_key") != NULL ||
            cJSON_GetObjectItemCaseSensitive(obj, "public_key_file") != NULL ||
            cJSON_GetObjectItemCaseSensitive(obj, "platform_keys") != NULL) {
            snprintf(err, errsz, "%s: a stripe profile is keyed by its secret only", where);
            return -1;
        }
        return 0;
    }
    return -1;
}

static int parse_profile(const cJSON *obj, struct gateway_profile_cfg *p, const char *where,
                         char *err, size_t errsz)
{
    memset(p, 0, sizeof(*p));
    memcpy(p->currency, CURRENCY_DEFAULT, sizeof(p->currency));
    if (!cJSON_IsObject(obj)) {
        snprintf(err, errsz, "%s must be an object", where);
        return -1;
    }
    if (check_members(obj, profile_members, ARRAY_SIZE(profile_members), where, err, errsz) != 0 ||
        get_str(obj, "name", p->name, sizeof(p->name), where, err, errsz) != 0 ||
        get_kind(obj, p, where, err, errsz) != 0 ||
        get_str(obj, "app_id", p->app_id, sizeof(p->app_id), where, err, errsz) != 0 ||
        get_str(obj, "mchid", p->mchid, sizeof(p->mchid), where, err, errsz) != 0 ||
        get_str(obj, "currency", p->currency, sizeof(p->currency), where, err, errsz) != 0 ||
        get_str(obj, "secret_env", p->secret_env, sizeof(p->secret_env), where, err, errsz) != 0 ||
        get_tolerance(obj, p, where, err, errsz) != 0)
        return -1;
    if (!valid_name(p->name)) {
        snprintf(err, errsz, "%s.name must be 1..%d of [a-z0-9_-], got \"%s\"", where,
                 GATEWAY_NAME_MAX, p->name);
        return -1;
    }
    if (currency_normalize(p->currency, p->currency) != CURRENCY_OK) {
        snprintf(err, errsz, "%s.currency is not a known ISO 4217 code", where);
        return -1;
    }
    if (p->secret_env[0] == '\0')
        default_env(p, "_SECRET", p->secret_env);
    if (get_query(obj, p, where, err, errsz) != 0 || get_refund(obj, p, where, err, errsz) != 0)
        return -1;
    return check_kind(obj, p, where, err, errsz);
}

int gateway_cfg_parse(const struct cJSON *arr, struct gateway_cfg *out, const char *file, char *err,
                      size_t errsz)
{
    const cJSON *it;
    char where[GATEWAY_STR_MAX + 32];
    size_t i;

    memset(out, 0, sizeof(*out));
    err[0] = '\0';
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > GATEWAYS_MAX) {
        snprintf(err, errsz, "%s: gateways must be an array of at most %d profiles", file,
                 GATEWAYS_MAX);
        return -1;
    }
    cJSON_ArrayForEach (it, arr) {
        struct gateway_profile_cfg *p = &out->profile[out->n];

        snprintf(where, sizeof(where), "%s: gateways[%zu]", file, out->n);
        if (parse_profile(it, p, where, err, errsz) != 0)
            goto fail;
        for (i = 0; i < out->n; i++)
            if (strcmp(out->profile[i].name, p->name) == 0) {
                snprintf(err, errsz, "%s: gateway name \"%s\" appears twice", where, p->name);
                goto fail;
            }
        out->n++;
    }
    return 0;
fail:
    memset(out, 0, sizeof(*out));
    return -1;
}
