/* replays.h - the bounded in-process cache of recorded payments whose
 * answer to a repeat can no longer change, so that a repeat callback is
 * answered without a database read.
 *
 * What a repeat answers (pay.c, from ST_PAY_SELECT): REPLAY or CONFLICT,
 * from the record's order_no, amount and first outcome, which never change
 * once committed (no statement updates payment_record.order_no, .amount or
 * .outcome after the insert's own transaction), plus the order's current
 * status, which /pay/callback reports. So an entry answers:
 *   - any repeat whose answer carries no order status (the gateways'
 *     acknowledgements), whatever the status was;
 *   - a repeat whose answer carries the status only when that status is
 *     terminal: no move out of it in the state machine
 *     (order_state_terminal), so the database would report it forever.
 * Everything else reads the database.
 *
 * An entry is filled only from a row read from the database after the
 * record committed (the hint's read of the record), never from a write in
 * flight, so any instance, on any shard, caches only what every instance
 * reads. It lives at most ttl_s, and is not filled at all when retention
 * (retention.payment_days) could purge the record within that time: a
 * purged record would make the database give another answer.
 *
 * Fixed memory: entries rounded up to a multiple of 4 (sets of 4 ways,
 * one mutex each), about 170 bytes an entry. Thread-safe. */
#ifndef PAYCALLBACK_REPLAYS_H
#define PAYCALLBACK_REPLAYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "validate.h"

/* The immutable part of a record, and the order's status when read. */
struct replay {
    char order_no[ID_BUF];
    int64_t amount_cents;
    int outcome;      /* enum payment_status: the first answer */
    int order_status; /* enum order_status at the read; 0: no order */
};

struct replays;

/* A cache of at least entries entries (0: NULL, the cache is off), each
 * kept at most ttl_s seconds; retention_days is retention.payment_days (0:
 * records are never purged). NULL also on allocation failure. */
struct replays *replays_create(size_t entries, int ttl_s, int retention_days);

/* NULL-safe. No other call may run concurrently. */
void replays_destroy(struct replays *r);

/* Remembers the record of pay_no, read from the database at now_ms
 * (monotime_ms) when it was age_s seconds old. Nothing when it could be
 * purged before the entry runs out. NULL-safe on r. */
void replays_put(struct replays *r, const char *pay_no, const struct replay *rec, int64_t age_s,
                 long long now_ms);

/* True with *rec filled when pay_no has a live entry that answers: its
 * status terminal, or status_in_answer false. NULL-safe on r. */
bool replays_get(struct replays *r, const char *pay_no, bool status_in_answer, long long now_ms,
                 struct replay *rec);

#endif
