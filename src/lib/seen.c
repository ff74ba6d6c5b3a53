/* seen.c - the bounded set of committed keys behind the callback's fast
 * path for repeats: a direct-mapped table of 64-bit FNV-1a hashes in
 * relaxed atomics. No I/O, no locks; see seen.h for what a hit means. */
#include "seen.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define SEEN_SLOTS_MIN 64

struct seen {
    size_t mask;             /* slots - 1, slots a power of two */
    _Atomic uint64_t slot[]; /* 0: empty; else the key's hash, never 0 */
};

/* FNV-1a, then a final mix so the low bits (the slot index) depend on
 * every byte. Never returns 0, which marks an empty slot. */
static uint64_t hash(const char *key)
{
    uint64_t h = 14695981039346656037ULL;

    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h != 0 ? h : 1;
}

struct seen *seen_create(size_t slots)
{
    size_t n = SEEN_SLOTS_MIN;
    struct seen *s;

    while (n < slots && n < ((size_t)1 << 40))
        n <<= 1;
    if ((s = calloc(1, sizeof(*s) + n * sizeof(s->slot[0]))) == NULL)
        return NULL;
    s->mask = n - 1;
    for (size_t i = 0; i < n; i++)
        atomic_init(&s->slot[i], 0);
    return s;
}

void seen_destroy(struct seen *s)
{
    free(s);
}

void seen_add(struct seen *s, const char *key)
{
    uint64_t h;

    if (s == NULL)
        return;
    h = hash(key);
    atomic_store_explicit(&s->slot[h & s->mask], h, memory_order_relaxed);
}

bool seen_has(const struct seen *s, const char *key)
{
    uint64_t h;

    if (s == NULL)
        return false;
    h = hash(key);
    /* The slot is only read; the cast drops const for C11's atomic_load,
     * whose argument is not const-qualified before C17. */
    return atomic_load_explicit((_Atomic uint64_t *)&s->slot[h & s->mask], memory_order_relaxed) ==
           h;
}
