/* signature.h - callback authentication: HMAC-SHA256 over
 * X-Timestamp + "." + raw body, hex-encoded, compared in constant time.
 * Pure apart from the clock, which the caller passes in. Thread-safe. */
#ifndef PAYCALLBACK_SIGNATURE_H
#define PAYCALLBACK_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIG_HEX_LEN 64 /* lowercase hex of a 32-byte MAC */

enum sig_status {
    SIG_OK,
    SIG_MISSING,       /* no timestamp or no signature header */
    SIG_BAD_TIMESTAMP, /* not decimal digits, or out of the window */
    SIG_MISMATCH       /* MAC differs */
};

/* Writes the lowercase hex MAC of ts "." body into out (SIG_HEX_LEN + 1
 * bytes, NUL-terminated). Returns 0, or -1 when OpenSSL fails. */
int sig_compute(const char *secret, const char *ts, const char *body, size_t body_len,
                char out[SIG_HEX_LEN + 1]);

/* Verifies a callback. ts and sig are the header values (may be NULL).
 * now_s is the current unix time; window_s the allowed skew either way.
 * The hex comparison is constant-time and case-sensitive (lowercase). */
enum sig_status sig_verify(const char *secret, const char *ts, const char *sig, const char *body,
                           size_t body_len, int64_t now_s, int64_t window_s);

/* True when ts is 1..19 ASCII digits of unix seconds within window_s of
 * now_s either way. The gateway formats share this freshness rule. */
bool sig_ts_fresh(const char *ts, int64_t now_s, int64_t window_s);

/* The same against up to SIG_SECRETS_MAX secrets (the current one and
 * the previous one during a rotation): SIG_OK when the signature matches
 * any of them. Every secret is tried and compared in constant time, with
 * no early exit, so the timing does not tell which one matched. Empty or
 * NULL secrets never match. */
#define SIG_SECRETS_MAX 2
enum sig_status sig_verify_any(const char *const *secrets, size_t nsecrets, const char *ts,
                               const char *sig, const char *body, size_t body_len, int64_t now_s,
                               int64_t window_s);

/* The secrets a service verifies with, each keyed once: the HMAC
 * context of every secret is prepared at start (key hashing, inner and
 * outer pads) and copied per request, instead of being set up from the
 * secret on every call. Read-only once created, so any number of threads
 * may verify with one struct sig_keys at once. */
struct sig_keys;

/* Keys for up to SIG_SECRETS_MAX secrets, in order. An empty or NULL
 * secret gets no key and never matches. NULL when secrets is NULL, there
 * are too many, memory runs out or OpenSSL fails. Free with
 * sig_keys_destroy. */
struct sig_keys *sig_keys_create(const char *const *secrets, size_t nsecrets);

/* NULL-safe. No verification may be running with k. */
void sig_keys_destroy(struct sig_keys *k);

/* sig_compute with the i-th key of k: the same MAC, without the key
 * schedule. 0, or -1 (no such key, an empty secret, OpenSSL failed). */
int sig_keys_compute(const struct sig_keys *k, size_t i, const char *ts, const char *body,
                     size_t body_len, char out[SIG_HEX_LEN + 1]);

/* sig_verify_any with prepared keys, with the same checks in the same
 * order and the same constant-time rule: every key is computed and
 * compared. A NULL k never matches. */
enum sig_status sig_keys_verify(const struct sig_keys *k, const char *ts, const char *sig,
                                const char *body, size_t body_len, int64_t now_s, int64_t window_s);

/* Human-readable reason for a status, for error messages. */
const char *sig_status_str(enum sig_status st);

#endif
