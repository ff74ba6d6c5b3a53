/* webhook_cfg.c - the shop's webhook endpoints of the config file, checked
 * member by member: an endpoint that would sign with a secret the shop's
 * library cannot decode, or subscribe to a type that does not exist,
 * stops the start (or the reload). */
#include "webhook_cfg.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "array.h"
#include "stdwebhook.h"

static const char *const event_types[] = { WEBHOOK_EVENT_TYPES };
_Static_assert(ARRAY_SIZE(event_types) == WEBHOOK_EVENT_TYPES_N, "WEBHOOK_EVENT_TYPES_N");

static const char *const members[] = {
    "name",
    "url",
    "events",
    "format",
    "secret",
    "previous_secret",
    "previous_secret_until",
    "timeout_ms",
    "max_attempts",
    "backoff_base_ms",
    "backoff_max_ms",
    "rate_per_s",
    "disabled",
};

unsigned webhook_event_bit(const char *t)
{
    for (size_t i = 0; i < ARRAY_SIZE(event_types); i++)
        if (strcmp(t, event_types[i]) == 0)
            return 1u << i;
    return 0;
}

long long webhook_parse_utc(const char *s)
{
    struct tm tm;
    int y, mo, d, h, mi, se, used = 0;

    if (strlen(s) != WEBHOOK_TIME_MAX - 1 ||
        sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &se, &used) != 6 ||
        used != WEBHOOK_TIME_MAX - 1 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 ||
        mi < 0 || mi > 59 || se < 0 || se > 60)
        return -1;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    return (long long)timegm(&tm);
}

int webhook_cfg_check_secrets(const struct webhook_endpoint_cfg *ep, const char *where, char *err,
                              size_t errsz)
{
    const char *names[] = { "secret", "previous_secret" };
    const char *vals[] = { ep->secret, ep->previous_secret };
    unsigned char key[SWH_KEY_MAX];
    size_t n;

    if (ep->secret[0] == '\0') {
        snprintf(err, errsz,
                 "%s: a secret must be set: the shop could not tell our events from forged ones",
                 where);
        return -1;
    }
    for (size_t i = 0; ep->format == WEBHOOK_STANDARD && i < ARRAY_SIZE(vals); i++) {
        int bad = vals[i][0] != '\0' && swh_secret_decode(vals[i], key, &n) != 0;

        OPENSSL_cleanse(key, sizeof(key));
        if (bad) {
            snprintf(err, errsz,
                     "%s: %s must be whsec_ and the base64 of %d to %d random bytes for the "
                     "standard format (or use the legacy format to keep X-Signature)",
                     where, names[i], SWH_KEY_MIN, SWH_KEY_MAX);
            return -1;
        }
    }
    if (ep->previous_secret[0] != '\0' && ep->format != WEBHOOK_STANDARD) {
        snprintf(err, errsz,
                 "%s: previous_secret needs the standard format: the legacy one carries a "
                 "single signature",
                 where);
        return -1;
    }
    return 0;
}

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

static int get_int(const cJSON *obj, const char *name, int lo, int hi, int *dst, const char *where,
                   char *err, size_t errsz)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

    if (it == NULL)
        return 0;
    if (!cJSON_IsNumber(it) || it->valuedouble < lo || it->valuedouble > hi ||
        it->valuedouble != (double)(int)it->valuedouble) {
        snprintf(err, errsz, "%s.%s must be an integer in %d..%d", where, name, lo, hi);
        return -1;
    }
    *dst = (int)it->valuedouble;
    return 0;
}

static int valid_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > WEBHOOK_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
              s[i] == '-'))
            return 0;
    return 1;
}

static int parse_events(const cJSON *obj, struct webhook_endpoint_cfg *ep, const char *where,
                        char *err, size_t errsz)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, "events"), *it;

    ep->events = (1u << WEBHOOK_EVENT_TYPES_N) - 1;
    if (arr == NULL)
        return 0;
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
        snprintf(err, errsz, "%s.events must be a non-empty array of event types", where);
        return -1;
    }
    ep->events = 0;
    cJSON_ArrayForEach (it, arr) {
        unsigned bit = cJSON_IsString(it) ? webhook_event_bit(it->valuestring) : 0;

        if (bit == 0) {
            snprintf(err, errsz, "%s.events: \"%s\" is not an event type", where,
                     cJSON_IsString(it) ? it->valuestring : "?");
            return -1;
        }
        ep->events |= bit;
    }
    return 0;
}

static int parse_one(const cJSON *obj, struct webhook_endpoint_cfg *ep, const char *where,
                     char *err, size_t errsz)
{
    char format[16] = "standard", until[WEBHOOK_TIME_MAX + 8] = "";
    const cJSON *it;
    bool known;

    if (!cJSON_IsObject(obj)) {
        snprintf(err, errsz, "%s must be an object", where);
        return -1;
    }
    cJSON_ArrayForEach (it, obj) {
        known = false;
        for (size_t i = 0; i < ARRAY_SIZE(members) && !known; i++)
            known = strcmp(it->string, members[i]) == 0;
        if (!known) {
            snprintf(err, errsz, "%s: unknown member \"%s\"", where, it->string);
            return -1;
        }
    }
    if (get_str(obj, "name", ep->name, sizeof(ep->name), where, err, errsz) != 0 ||
        get_str(obj, "url", ep->url, sizeof(ep->url), where, err, errsz) != 0 ||
        get_str(obj, "format", format, sizeof(format), where, err, errsz) != 0 ||
        get_str(obj, "secret", ep->secret, sizeof(ep->secret), where, err, errsz) != 0 ||
        get_str(obj, "previous_secret", ep->previous_secret, sizeof(ep->previous_secret), where,
                err, errsz) != 0 ||
        get_str(obj, "previous_secret_until", until, sizeof(until), where, err, errsz) != 0 ||
        get_int(obj, "timeout_ms", 100, 60000, &ep->timeout_ms, where, err, errsz) != 0 ||
        get_int(obj, "max_attempts", 1, 1000, &ep->max_attempts, where, err, errsz) != 0 ||
        get_int(obj, "backoff_base_ms", 10, 3600000, &ep->backoff_base_ms, where, err, errsz) !=
            0 ||
        get_int(obj, "backoff_max_ms", 10, 86400000, &ep->backoff_max_ms, where, err, errsz) != 0 ||
        get_int(obj, "rate_per_s", 0, WEBHOOK_RATE_MAX, &ep->rate_per_s, where, err, errsz) != 0 ||
        parse_events(obj, ep, where, err, errsz) != 0)
        return -1;
    if ((it = cJSON_GetObjectItemCaseSensitive(obj, "disabled")) != NULL) {
        if (!cJSON_IsBool(it)) {
            snprintf(err, errsz, "%s.disabled must be true or false", where);
            return -1;
        }
        ep->disabled = cJSON_IsTrue(it);
    }
    if (!valid_name(ep->name)) {
        snprintf(err, errsz, "%s.name must be 1..%d of [a-z0-9_-]", where, WEBHOOK_NAME_MAX);
        return -1;
    }
    if (strncmp(ep->url, "http://", 7) != 0 && strncmp(ep->url, "https://", 8) != 0) {
        snprintf(err, errsz, "%s.url must start with http:// or https://", where);
        return -1;
    }
    if (strcmp(format, "standard") == 0)
        ep->format = WEBHOOK_STANDARD;
    else if (strcmp(format, "legacy") == 0)
        ep->format = WEBHOOK_LEGACY;
    else {
        snprintf(err, errsz, "%s.format must be standard or legacy", where);
        return -1;
    }
    if ((ep->previous_secret[0] != '\0') != (until[0] != '\0')) {
        snprintf(err, errsz,
                 "%s: previous_secret and previous_secret_until go together: the previous "
                 "secret signs until that time",
                 where);
        return -1;
    }
    if (until[0] != '\0' && (ep->previous_until_s = webhook_parse_utc(until)) < 0) {
        snprintf(err, errsz,
                 "%s.previous_secret_until must be a UTC time like 2026-12-03T15:00:00Z", where);
        return -1;
    }
    if (ep->backoff_max_ms < ep->backoff_base_ms) {
        snprintf(err, errsz, "%s.backoff_max_ms must not be below backoff_base_ms", where);
        return -1;
    }
    return webhook_cfg_check_secrets(ep, where, err, errsz);
}

int webhook_cfg_parse(const struct cJSON *arr, const struct webhook_endpoint_cfg *defaults,
                      struct webhook_cfg *out, const char *file, char *err, size_t errsz)
{
    const cJSON *it;
    char where[WEBHOOK_STR_MAX + 32];

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsArray(arr)) {
        snprintf(err, errsz, "%s: webhooks must be an array of endpoints", file);
        return -1;
    }
    cJSON_ArrayForEach (it, arr) {
        struct webhook_endpoint_cfg *ep = &out->ep[out->n];

        snprintf(where, sizeof(where), "%s: webhooks[%zu]", file, out->n);
        if (out->n == WEBHOOKS_MAX) {
            snprintf(err, errsz, "%s: at most %d endpoints", where, WEBHOOKS_MAX);
            return -1;
        }
        *ep = *defaults;
        ep->name[0] = ep->url[0] = ep->secret[0] = ep->previous_secret[0] = '\0';
        ep->previous_until_s = 0;
        ep->rate_per_s = 0;
        ep->disabled = false;
        if (parse_one(it, ep, where, err, errsz) != 0)
            return -1;
        for (size_t j = 0; j < out->n; j++)
            if (strcmp(out->ep[j].name, ep->name) == 0) {
                snprintf(err, errsz, "%s: the name \"%s\" is taken", where, ep->name);
                return -1;
            }
        out->n++;
    }
    return 0;
}
