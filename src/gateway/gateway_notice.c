/* gw.c - the shared vocabulary of the gateway formats: status reasons and
 * messages, identifier copying and exact integer amounts out of JSON. */
#include "gateway_notice.h"

#include <cjson/cJSON.h>
#include <string.h>

/* 2^53: every integer below it has an exact double. */
#define GW_JSON_EXACT_MAX INT64_C(9007199254740992)

/* Indexed by enum gw_status. */
static const char *const reasons[] = {
    [GW_OK] = "ok",
    [GW_MALFORMED] = "malformed",
    [GW_SIG_MISSING] = "signature_missing",
    [GW_SIG_STALE] = "timestamp_stale",
    [GW_SIG_UNKNOWN_KEY] = "unknown_serial",
    [GW_SIG_MISMATCH] = "signature_mismatch",
    [GW_DECRYPT_FAILED] = "decrypt_failed",
    [GW_WRONG_APP] = "wrong_app",
    [GW_BAD_AMOUNT] = "bad_amount",
    [GW_BAD_CURRENCY] = "bad_currency",
    [GW_ERROR] = "internal",
};

const char *gw_status_reason(enum gw_status st)
{
    return (size_t)st < sizeof(reasons) / sizeof(reasons[0]) ? reasons[st] : "unknown";
}

const char *const *gw_failure_reasons(size_t *n)
{
    *n = GW_ERROR;
    return reasons + GW_MALFORMED;
}

const char *gw_status_str(enum gw_status st)
{
    switch (st) {
    case GW_OK:
        return "notification ok";
    case GW_MALFORMED:
        return "notification is not in the gateway's format";
    case GW_SIG_MISSING:
        return "signature or signature header missing";
    case GW_SIG_STALE:
        return "signed timestamp outside the allowed window";
    case GW_SIG_UNKNOWN_KEY:
        return "no configured key has this serial";
    case GW_SIG_MISMATCH:
        return "signature does not verify";
    case GW_DECRYPT_FAILED:
        return "encrypted resource does not decrypt";
    case GW_WRONG_APP:
        return "notification is for another app or merchant";
    case GW_BAD_AMOUNT:
        return "amount missing or not exact";
    case GW_BAD_CURRENCY:
        return "currency missing or unknown";
    case GW_ERROR:
        return "internal error";
    }
    return "unknown gateway status";
}

int gw_copy_id(char *dst, const char *src)
{
    dst[0] = '\0';
    if (!validate_id(src))
        return -1;
    memcpy(dst, src, strlen(src) + 1);      /* validate_id bounds it to 64 */
    return 0;
}

int gw_json_amount(const struct cJSON *item, int64_t max, int64_t *out)
{
    double d;
    int64_t v;

    *out = 0;
    if (!cJSON_IsNumber(item))
        return -1;
    d = item->valuedouble;
    /* Range first: converting a double outside int64_t is undefined. */
    if (!(d >= 0 && d < (double)GW_JSON_EXACT_MAX))
        return -1;
    v = (int64_t)d;
    if ((double)v != d || v > max)
        return -1;
    *out = v;
    return 0;
}
