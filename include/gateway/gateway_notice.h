/* gateway_notice.h - what every gateway format shares: the verdict of verifying and
 * reading a notification, and the payment it announces in the service's
 * own terms (pay_no, order_no, cents, currency). Pure; thread-safe. */
#ifndef PAYCALLBACK_GATEWAY_NOTICE_H
#define PAYCALLBACK_GATEWAY_NOTICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "currency.h"
#include "validate.h"

struct cJSON;

#define GATEWAY_STATE_BUF 48 /* a gateway's status or event type */

enum gateway_status {
    GATEWAY_OK,
    GATEWAY_MALFORMED,       /* not the form or JSON the gateway sends */
    GATEWAY_SIG_MISSING,     /* no signature, or a required header is absent */
    GATEWAY_SIG_STALE,       /* signed timestamp outside the tolerance */
    GATEWAY_SIG_UNKNOWN_KEY, /* the key serial names no configured key */
    GATEWAY_SIG_MISMATCH,    /* the signature does not verify */
    GATEWAY_DECRYPT_FAILED,  /* the encrypted resource fails authentication */
    GATEWAY_WRONG_APP,       /* app_id or mchid is not the profile's */
    GATEWAY_BAD_AMOUNT,      /* amount missing, malformed or not exact in cents */
    GATEWAY_BAD_CURRENCY,    /* currency code missing or unknown */
    GATEWAY_ERROR            /* OpenSSL or memory failed: not the sender's fault */
};

/* What a refund notification says of the refund it names. */
enum gateway_refund {
    GATEWAY_REFUND_NONE,      /* not a refund notification */
    GATEWAY_REFUND_SUCCEEDED, /* the money went back */
    GATEWAY_REFUND_FAILED,    /* refused, closed or abnormal: refund_code says which */
    GATEWAY_REFUND_PENDING    /* still processing: changes nothing */
};

#define GATEWAY_REFUND_ID_MAX 65

/* A verified notification. When pays is false the gateway reports something
 * other than a completed payment (a closed trade, another event type): it is
 * acknowledged and changes nothing, and only state is meaningful, unless
 * refund says it reports a refund (refund_no: our request number, as the
 * gateway echoes it; "" when it names none of ours). */
struct gateway_notice {
    bool pays;
    enum gateway_refund refund;
    char refund_no[ID_BUF];
    char refund_id[GATEWAY_REFUND_ID_MAX]; /* the gateway's own refund id */
    char refund_code[GATEWAY_REFUND_ID_MAX];
    /* What a refund notification says of the money, to be matched against
     * the refund it names: its payment (pay_no, "" when it names none) and
     * its amount, when refund_has_amount (the refund's own, or with
     * refund_amount_total every refund of the payment so far, as Alipay's
     * refund_fee). */
    bool refund_has_amount;
    bool refund_amount_total;
    int64_t refund_amount_cents;
    char state[GATEWAY_STATE_BUF]; /* trade_status, trade_state or event type */
    char pay_no[ID_BUF];           /* the gateway's transaction id (a refund's payment too) */
    char order_no[ID_BUF];
    int64_t amount_cents;
    char currency[CURRENCY_BUF]; /* upper case ISO 4217 */
};

/* Stable snake_case reason for metrics labels ("signature_mismatch"). */
const char *gateway_status_reason(enum gateway_status st);

/* The reasons of every failure status, GATEWAY_MALFORMED first: reason i
 * belongs to status i + 1. *n is set to their number. For metrics labels. */
const char *const *gateway_failure_reasons(size_t *n);

/* Human-readable message for a status, for failure replies and logs. */
const char *gateway_status_str(enum gateway_status st);

/* Copies src into dst (dstsz bytes) when it is a contract identifier
 * (1..64 of [A-Za-z0-9_.:-]). Returns 0, or -1 with dst "". */
int gateway_copy_id(char *dst, const char *src);

/* Parses a JSON integer that cJSON stored as a double: exact for any whole
 * number below 2^53, which covers every amount the service can hold.
 * Returns 0 with *out set, or -1 for a fraction, a negative, or a value
 * beyond max. */
int gateway_json_amount(const struct cJSON *item, int64_t max, int64_t *out);

#endif
