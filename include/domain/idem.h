/* idem.h - the Idempotency-Key store: the claim a first request takes on
 * its key, the answer it stores with its effect, and what a repeat gets:
 * the stored answer, a mismatch, or a bounded wait for a first attempt
 * still running. Records live in MySQL (idem_key), so instances sharing a
 * database share them. Knows nothing of HTTP beyond a status code and a
 * body to keep: parsing the header and rendering replies is the caller's.
 *
 * A first request: idem_begin (IDEM_RUN) -> the effect, inside whose
 * transaction idem_finish_in_txn stores the answer -> COMMIT. An answer
 * without an effect (a refusal) is stored by idem_finish; a retryable
 * failure gives the key back with idem_release. A first attempt that dies
 * leaves a RUNNING record whose lease runs out: the next repeat takes it
 * over and runs the request again (the effect's own unique keys keep that
 * to one effect).
 *
 * Sharded, a key's records live on idem_shard (placed by its scope). When
 * that is not the order's shard, the answer is stored by idem_finish after
 * the order's commit; orders_route.h says what a crash between the two
 * leaves. */
#ifndef PAYCALLBACK_IDEM_H
#define PAYCALLBACK_IDEM_H

#include <stdbool.h>
#include <stddef.h>

#include "db.h"
#include "ids.h"

struct metrics;
struct route;
struct route_failure;
struct shard;

#define IDEM_KEY_MAX 255    /* characters of a key */
#define IDEM_SCOPE_MAX 127  /* "key:<credential>" */
#define IDEM_FP_HEX 64      /* a SHA-256 in hex */
#define IDEM_BODY_MAX 65536 /* a stored answer; larger ones are not stored */
#define IDEM_POLL_MIN_MS 5  /* first pause of a waiting repeat, doubling */
#define IDEM_POLL_MAX_MS 100
#define IDEM_PURGE_EVERY 32 /* about one claim in this many purges a batch */

/* How long a repeat waits, how long a claim lasts, how long a record is
 * kept (idempotency.* in the configuration). */
struct idem_settings {
    int wait_ms;
    int lease_ms;
    int ttl_s;
};

/* One request's key, and its claim once it holds one. */
struct idem_claim {
    char scope[IDEM_SCOPE_MAX + 1];
    char key[IDEM_KEY_MAX + 1];
    char fingerprint[IDEM_FP_HEX + 1];
    char owner[IDS_TOKEN_BUF];  /* set by idem_begin: this attempt's claim id */
    char errstr[DB_ERRSTR_MAX]; /* IDEM_UNAVAILABLE / IDEM_ERROR: why */
};

/* A stored answer. body is malloc'd: free it. */
struct idem_answer {
    int status;
    char *body;
    size_t len;
};

enum idem_result {
    IDEM_RUN,         /* the key is this request's: run it */
    IDEM_REPLAY,      /* answered before: *ans holds the answer */
    IDEM_MISMATCH,    /* the key was used for another request */
    IDEM_BUSY,        /* the first attempt still runs after wait_ms */
    IDEM_UNAVAILABLE, /* MySQL unreachable or busy: cl->errstr */
    IDEM_ERROR        /* a malformed record or a bug: cl->errstr */
};

/* Parses an Idempotency-Key header value into out: either a structured-
 * field string ("..." with \" and \\ escapes, as the IETF draft writes it)
 * or the bare value; the key is 1..255 visible ASCII characters (space
 * allowed inside a quoted string). Returns 0, or -1 when value is NULL,
 * empty, too long or holds anything else. Pure. */
int idem_key_parse(const char *value, char out[IDEM_KEY_MAX + 1]);

/* The request's fingerprint: SHA-256, in hex, of method, path, scope and
 * the SHA-256 of the body, so that the same key with another payload is
 * told apart. Pure. */
void idem_fingerprint(const char *method, const char *path, const char *scope, const char *body,
                      size_t body_len, char out[IDEM_FP_HEX + 1]);

/* Where cl's records live: placed by its scope (shard_place), for creates
 * and status changes alike, so a key reused with another request is
 * refused whatever shard its order is on. One database: its only one. */
const struct shard *idem_shard(const struct route *rt, const struct idem_claim *cl);

/* Claims cl's key (scope, key and fingerprint set by the caller) on
 * idem_shard, with one connection borrowed for each step. A new key, an
 * expired one, or a RUNNING one whose lease ran out becomes this request's
 * (IDEM_RUN, cl->owner set). A key whose record holds another fingerprint
 * is IDEM_MISMATCH; one with a stored answer is IDEM_REPLAY (*ans filled).
 * A key whose first attempt is running is polled, with growing pauses,
 * until its answer is stored (IDEM_REPLAY), its claim is given back or
 * lapses (then claimed here), or set->wait_ms is up (IDEM_BUSY). *waited_us
 * gets the time spent waiting (0 when it did not wait); rt->m (may be NULL)
 * counts waits and their time, and IDEM_UNAVAILABLE for the shard. Blocks
 * the calling thread while it waits. */
enum idem_result idem_begin(const struct route *rt, const struct idem_settings *set,
                            struct idem_claim *cl, struct idem_answer *ans, long long *waited_us);

/* After the request, on idem_shard with a connection of its own (the
 * caller holds none): status 0 gives the key back (idem_release, after a
 * retryable answer); otherwise status and body are stored as its answer
 * (idem_finish), unless the claim went to a repeat meanwhile (*lost set,
 * DB_OK). A failure is described in *fail, not counted against the shard:
 * the answer was decided already. */
enum db_status idem_settle(const struct route *rt, const struct idem_claim *cl, int status,
                           const char *body, bool *lost, struct route_failure *fail);

/* Inside the caller's db_txn body: stores status and body as the answer of
 * cl's claim, in the transaction of the effect. DB_OK; DB_ROLLBACK with
 * *lost set when the claim is no longer this attempt's (its lease ran out
 * and a repeat took it over: the caller rolls its effect back and waits for
 * the repeat's answer instead); or a failure status. */
enum db_status idem_finish_in_txn(struct db_conn *c, const struct idem_claim *cl, int status,
                                  const char *body, bool *lost);

/* idem_finish_in_txn as a transaction of its own, for an answer that has no
 * effect to go with (a refusal). */
enum db_status idem_finish(struct db_conn *c, const struct idem_claim *cl, int status,
                           const char *body, bool *lost);

/* Gives the key back (deletes this attempt's RUNNING record), after a
 * retryable failure, so that a retry runs the request afresh. */
enum db_status idem_release(struct db_conn *c, const struct idem_claim *cl);

/* Deletes at most one batch of expired records; *purged (may be NULL) gets
 * the count. */
enum db_status idem_purge(struct db_conn *c, uint64_t *purged);

/* Frees ans->body and zeroes ans. NULL-safe. */
void idem_answer_free(struct idem_answer *ans);

#endif
