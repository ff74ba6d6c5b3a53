/* harness/callback.c - signed payment callbacks. */
#include "../harness.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

void h_sign(const char *secret, const char *ts, const char *body, size_t len,
            char out[H_SIG_HEX_LEN + 1])
{
    size_t tlen = strlen(ts);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    unsigned char *msg = malloc(tlen + 1 + len + 1);

    out[0] = '\0';
    ck_assert_msg(msg != NULL, "out of memory");
    memcpy(msg, ts, tlen);
    msg[tlen] = '.';
    if (len > 0)
        memcpy(msg + tlen + 1, body, len);
    ck_assert_msg(HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, tlen + 1 + len, mac,
                       &maclen) != NULL &&
                      maclen == 32,
                  "HMAC-SHA256 failed");
    free(msg);
    for (unsigned int i = 0; i < maclen; i++)
        snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

int h_post_callback(int port, const char *secret, long long ts_s, const char *body, size_t len,
                    struct h_resp *out)
{
    char ts[32], sig[H_SIG_HEX_LEN + 1], ts_hdr[64], sig_hdr[96];
    const char *headers[] = { "Content-Type: application/json", ts_hdr, sig_hdr, NULL };

    snprintf(ts, sizeof ts, "%lld", ts_s);
    h_sign(secret, ts, body, len, sig);
    snprintf(ts_hdr, sizeof ts_hdr, "X-Timestamp: %s", ts);
    snprintf(sig_hdr, sizeof sig_hdr, "X-Signature: %s", sig);
    return h_http(port, "POST", "/pay/callback", headers, body, len, out);
}

size_t h_callback_body(char *buf, size_t bufsz, const char *order_no, const char *pay_no,
                       const char *amount)
{
    int n = snprintf(buf, bufsz, "{\"order_no\":\"%s\",\"pay_no\":\"%s\",\"amount\":\"%s\"}",
                     order_no, pay_no, amount);

    ck_assert_msg(n > 0 && (size_t)n < bufsz, "callback body too long");
    return (size_t)n;
}

int h_callback(int port, const char *order_no, const char *pay_no, const char *amount,
               struct h_resp *out)
{
    char body[512];
    size_t len = h_callback_body(body, sizeof body, order_no, pay_no, amount);

    return h_post_callback(port, H_SECRET, (long long)time(NULL), body, len, out);
}
