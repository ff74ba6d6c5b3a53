/* seen.h - a bounded, lossy set of keys this process has seen committed:
 * the pay_nos whose callbacks are recorded. It is a routing hint, never an
 * answer. A repeat callback whose pay_no is in the set takes the cheap
 * path (one indexed read of the record); any other callback takes the one
 * call that inserts first. Both paths answer correctly from the database,
 * so a false hit (a hash collision) costs a read and a miss (never seen
 * here, or overwritten by a later key) costs the insert attempt, nothing
 * else. Fixed memory: one 64-bit hash per slot, direct-mapped.
 * Thread-safe: seen_add and seen_has may run concurrently, lock-free. */
#ifndef PAYCALLBACK_SEEN_H
#define PAYCALLBACK_SEEN_H

#include <stdbool.h>
#include <stddef.h>

#define SEEN_SLOTS_DEFAULT 65536 /* 512 KiB */

struct seen;

/* A set of at least slots slots (rounded up to a power of two, at least
 * 64). NULL on allocation failure. */
struct seen *seen_create(size_t slots);

/* NULL-safe. No other call may run concurrently. */
void seen_destroy(struct seen *s);

/* Remembers key (NUL-terminated), possibly forgetting an older key that
 * falls on the same slot. NULL-safe on s. */
void seen_add(struct seen *s, const char *key);

/* True when key was added and not overwritten since, or when another key
 * with the same 64-bit hash was. False for a NULL s. */
bool seen_has(const struct seen *s, const char *key);

#endif
