/* gateway_notice.c - the shared vocabulary of the gateway formats: status reasons and
 * messages, identifier copying and exact integer amounts out of JSON. */
#include "gateway_notice.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "array.h"

/* 2^53: every integer below it has an exact double. */
#define GATEWAY_JSON_EXACT_MAX INT64_C(9007199254740992)

/* Indexed by enum gateway_status. */
static const char *const reasons[] = {
    [GATEWAY_OK] = "ok",
    [GATEWAY_MALFORMED] = "malformed",
    [GATEWAY_SIG_MISSING] = "signature_missing",
    [GATEWAY_SIG_STALE] = "timestamp_stale",
    [GATEWAY_SIG_UNKNOWN_KEY] = "unknown_serial",
    [GATEWAY_SIG_MISMATCH] = "signature_mismatch",
    [GATEWAY_DECRYPT_FAILED] = "decrypt_failed",
    [GATEWAY_WRONG_APP] = "wrong_app",
    [GATEWAY_BAD_AMOUNT] = "bad_amount",
    [GATEWAY_BAD_CURRENCY] = "bad_currency",
    [GATEWAY_ERROR] = "internal",
};

const char *gateway_status_reason(enum gateway_status st)
{
    return (size_t)st < ARRAY_SIZE(reasons) ? reasons[st] : "unknown";
}

const char *const *gateway_failure_reasons(size_t *n)
{
    *n = GATEWAY_ERROR;
    return reasons + GATEWAY_MALFORMED;
}

const char *gateway_status_str(enum gateway_status st)
{
    switch (st) {
    case GATEWAY_OK: return "notification ok";
    case GATEWAY_MALFORMED: return "notification is not in the gateway's format";
    case GATEWAY_SIG_MISSING: return "signature or signature header missing";
    case GATEWAY_SIG_STALE: return "signed timestamp outside the allowed window";
    case GATEWAY_SIG_UNKNOWN_KEY: return "no configured key has this serial";
    case GATEWAY_SIG_MISMATCH: return "signature does not verify";
    case GATEWAY_DECRYPT_FAILED: return "encrypted resource does not decrypt";
    case GATEWAY_WRONG_APP: return "notification is for another app or merchant";
    case GATEWAY_BAD_AMOUNT: return "amount missing or not exact";
    case GATEWAY_BAD_CURRENCY: return "currency missing or unknown";
    case GATEWAY_ERROR: return "internal error";
    }
    return "unknown gateway status";
}

int gateway_copy_id(char *dst, const char *src)
{
    dst[0] = '\0';
    if (!validate_id(src))
        return -1;
    memcpy(dst, src, strlen(src) + 1); /* validate_id bounds it to 64 */
    return 0;
}

int gateway_json_amount(const struct cJSON *item, int64_t max, int64_t *out)
{
    double d;
    int64_t v;

    *out = 0;
    if (!cJSON_IsNumber(item))
        return -1;
    d = item->valuedouble;
    /* Range first: converting a double outside int64_t is undefined. */
    if (!(d >= 0 && d < (double)GATEWAY_JSON_EXACT_MAX))
        return -1;
    v = (int64_t)d;
    if ((double)v != d || v > max)
        return -1;
    *out = v;
    return 0;
}
