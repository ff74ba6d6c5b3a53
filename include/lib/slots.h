/* slots.h - a fixed set of n slots (0..n-1) lent to one thread at a time:
 * the free list, mutex and condition variable behind the MySQL and Redis
 * connection pools, which keep their connections in arrays indexed by slot.
 * Every function is thread-safe except create and destroy. */
#ifndef PAYCALLBACK_SLOTS_H
#define PAYCALLBACK_SLOTS_H

#include <stdbool.h>

struct slots;

/* n free slots. NULL on allocation failure. */
struct slots *slots_create(int n);

/* NULL-safe. Every slot must be back. */
void slots_destroy(struct slots *s);

/* Takes a free slot, waiting at most wait_ms for one to come back (0: not
 * at all, never leaving the mutex or entering the kernel to wait). Returns
 * its index, or -1 on timeout. *waited (may be NULL) says whether the call
 * had to wait. */
int slots_take(struct slots *s, int wait_ms, bool *waited);

/* Gives slot i back and wakes one waiter. */
void slots_put(struct slots *s, int i);

#endif
