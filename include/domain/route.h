/* route.h - how a request reaches the shards: a hop moves it from one
 * shard's database to another's, holding one connection at a time, and a
 * scan reads every shard in turn and says which could not answer. Both
 * borrow through shard_acquire, so whatever guards a shard applies to every
 * path, and both count a shard that fails a request (its
 * paycallback_shard_unavailable_total) here and nowhere else. Knows nothing
 * of HTTP: a failure is described in a struct route_failure for the caller
 * to log and render.
 *
 * Why one connection at a time: a thread that waits for one pool while
 * holding another's could deadlock with a thread doing the reverse. */
#ifndef PAYCALLBACK_ROUTE_H
#define PAYCALLBACK_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "db.h"
#include "shard.h"

struct metrics;
struct server;

/* One request's way to the databases. */
struct route {
    const struct shard_set *set;
    int wait_ms;            /* longest wait for each connection borrowed */
    struct metrics *m;      /* a shard that fails a request is counted; may be NULL */
    const char *request_id; /* for the log lines of a scan; may be NULL */
};

/* The route of a request served by srv: its shards, mysql.wait_ms, its
 * metrics. */
struct route route_of(const struct server *srv, const char *request_id);

/* Where a routed call failed, for the caller's one log line and reply. */
struct route_failure {
    const struct shard *shard; /* whose database failed; NULL: none did */
    const char *step;          /* the operation, for the log ("orders_create") */
    bool unavailable;          /* retryable (503): unreachable, busy, no connection */
    bool no_conn;              /* no connection of its pool freed up in time, or its
                                     guard refused at once (refusal says which) */
    enum db_refusal refusal;   /* what the shard's pool said when it gave none */
    bool logged;               /* already logged (a scan logs each shard it missed) */
    unsigned int err;          /* db_errno, 0 when there was none */
    char msg[DB_ERRSTR_MAX];   /* db_errstr, or why there was no connection */
};

/* The one connection a request holds, and its shard. Zero it with
 * route_hop_init; give it back with route_hop_release. */
struct route_hop {
    const struct route *rt;
    const struct shard *sh;
    struct db_conn *c;
    struct route_failure *fail; /* where route_hop_to and route_failed write */
    bool uncounted;             /* its failures do not decide the answer: not counted */
};

void route_hop_init(struct route_hop *h, const struct route *rt, struct route_failure *fail);

/* A connection of sh, giving back the one of another shard first. NULL
 * when none frees up within rt->wait_ms: then the failure is recorded in
 * h->fail (unavailable, no_conn) and counted for sh. */
struct db_conn *route_hop_to(struct route_hop *h, const struct shard *sh, const char *step);

/* Gives the held connection back. Safe to call again. */
void route_hop_release(struct route_hop *h);

/* Records that step failed on the hop's shard (db_errno and db_errstr of
 * its connection); retryable failures are counted for the shard. */
void route_failed(struct route_hop *h, bool retryable, const char *step);

/* A bare failure with no connection to describe it (a shard named by
 * data that no longer exists, a random source that failed). */
void route_fail_msg(struct route_failure *f, const char *step, const char *msg);

/* Logs f as one "mysql failure" line (op, shard, errno, error,
 * request_id): a warning when retryable, an error otherwise. Nothing for a
 * failure already logged or one that is a pool's own wait. */
void route_log_failure(const struct route_failure *f, const char *request_id);

/* Counts a request that sh could not serve (its
 * paycallback_shard_unavailable_total), for a path that borrows outside a
 * hop (the token store's fallback). Every count of it is made here. */
void route_count_unavailable(const struct route *rt, const struct shard *sh);

/* ---- every shard ------------------------------------------------------- */

/* What one shard's part of a scan did. */
enum route_step {
    ROUTE_NEXT,   /* read: go on to the next shard */
    ROUTE_STOP,   /* read, and nothing more is needed */
    ROUTE_MISSED, /* retryable failure: note the shard, go on */
    ROUTE_ERROR   /* a bug or a malformed row: the scan fails */
};

/* Reads shard sh over c for the scan, merging into arg. */
typedef enum route_step (*route_scan_fn)(struct db_conn *c, const struct shard *sh, void *arg);

/* What a scan found: which shards did not answer. */
struct route_scan {
    bool missed[CFG_SHARDS_MAX];
    size_t asked, nmissed;
    struct route_failure fail; /* the last failure met */
};

enum route_result {
    ROUTE_OK,          /* some shard answered (or none was asked) */
    ROUTE_UNAVAILABLE, /* no shard answered: each counted; sc->fail says why */
    ROUTE_FAILED       /* a shard answered an error: sc->fail */
};

/* Calls fn on each shard from index first on, one connection at a time,
 * until fn says ROUTE_STOP. A shard with no free connection, or whose fn
 * says ROUTE_MISSED, is noted in sc->missed (each retryable failure logged
 * with step) and the scan goes on; a shard whose fn says ROUTE_ERROR
 * stops it (ROUTE_FAILED). When every shard asked was missed the answer is
 * ROUTE_UNAVAILABLE, counted for each of them. sc is reset first. */
enum route_result route_scan(const struct route *rt, size_t first, const char *step,
                             route_scan_fn fn, void *arg, struct route_scan *sc);

/* Notes sh as missed by a scan after the fact (a write that failed on it
 * midway), with f as the failure, logged. */
void route_scan_miss(const struct route *rt, struct route_scan *sc, const struct shard *sh,
                     const struct route_failure *f);

/* The retryable classes of enum db_status: DB_UNAVAILABLE and DB_RETRY. */
bool route_retryable(enum db_status st);

#endif
