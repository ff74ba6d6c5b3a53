/* gateway_alipay.h - Alipay asynchronous notifications (notify_url): RSA2
 * (SHA256withRSA) over the sorted k=v&... of every parameter except sign
 * and sign_type, then the trade fields. Pure; thread-safe. */
#ifndef PAYCALLBACK_GW_ALIPAY_H
#define PAYCALLBACK_GW_ALIPAY_H

#include "gateway_notice.h"

struct form;
struct pubkey;

#define GATEWAY_ALIPAY_ACK "success"  /* the only body that stops Alipay retrying */
#define GATEWAY_ALIPAY_NACK "failure" /* anything else makes it try again */

/* The string Alipay signs: every field except sign and sign_type, sorted by
 * key (bytewise), as decoded k=v joined by '&'. Empty values are kept, as
 * the notification carried them. Returns a malloc'd string (caller frees),
 * or NULL when out of memory. */
char *gateway_alipay_sign_content(const struct form *f);

/* Verifies the sign field of f with Alipay's public key. sign_type, when
 * present, must be RSA2. Returns GATEWAY_OK, GATEWAY_SIG_MISSING, GATEWAY_SIG_MISMATCH or
 * GATEWAY_ERROR. */
enum gateway_status gateway_alipay_verify(const struct form *f, const struct pubkey *alipay_key);

/* Reads a verified notification: app_id must equal app_id; trade_status
 * TRADE_SUCCESS or TRADE_FINISHED pays trade_no (pay_no) for out_trade_no
 * (order_no) with total_amount yuan in currency; any other trade_status is
 * acknowledged only. Returns GATEWAY_OK, GATEWAY_WRONG_APP, GATEWAY_MALFORMED or
 * GATEWAY_BAD_AMOUNT; on failure *n is zeroed. */
enum gateway_status gateway_alipay_notice(const struct form *f, const char *app_id,
                                          const char *currency, struct gateway_notice *n);

#endif
