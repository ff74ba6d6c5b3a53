/* connguard.c - a registry of open connections (a list for the reaper and
 * for eviction, oldest last; a hash of per-client counts for admission)
 * under one mutex, and the reaper thread that enforces the header and body
 * deadlines. */
#include "connguard.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "monotime.h"
#include "netaddr.h"

#define CG_BUCKETS 4096      /* per-address hash buckets */
#define CG_REAP_EVERY_MS 100 /* reaper pass interval */

/* What an entry counts: one client, or every IPv6 client of a /56 or a
 * /48 (whose keys could equal a client's, hence the level). */
enum cg_level {
    CG_CLIENT,
    CG_V6_56,
    CG_V6_48,
    CG_LEVELS
};

struct addr_count {
    struct netaddr key;
    int level; /* enum cg_level */
    int n;
    struct addr_count *next;
};

struct connguard_conn {
    int fd;
    struct netaddr key;            /* the client as counted (IPv6 by prefix) */
    struct netaddr net[CG_LEVELS]; /* the keys it is counted under; len 0: not counted */
    atomic_llong body_start_ms;    /* when its body phase began */
    atomic_llong body_bytes;       /* body bytes received since */
    bool trusted;                  /* from a trusted proxy: no per-client cap */
    atomic_llong deadline_ms;      /* 0 = none */
    atomic_int phase;
    const struct connguard *g;
    bool reaped;  /* shut down: the reaper leaves it alone */
    bool evicted; /* shut down to admit another client: no longer counted */
    struct connguard_conn *prev, *next;
};

struct connguard {
    struct connguard_limits lim;
    struct metrics *m;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* stop */
    bool stop;
    pthread_t reaper;
    int count;                          /* counted connections (evicted ones are not) */
    struct connguard_conn *head, *tail; /* newest first */
    struct addr_count *bucket[CG_BUCKETS];
};

/* The key a connection from sa is counted by, and whether sa is a
 * trusted proxy. */
static bool make_key(const struct connguard *g, const struct sockaddr *sa, socklen_t len,
                     struct netaddr *k)
{
    struct netaddr a;

    netaddr_from_sockaddr(sa, len, &a);
    netaddr_key(&a, g->lim.v6_prefix, k);
    return netaddr_list_contains(&g->lim.trusted, &a);
}

static size_t hash_key(const struct netaddr *k, int level)
{
    uint32_t h = 2166136261u ^ (uint32_t)level; /* FNV-1a */

    for (unsigned i = 0; i < k->len; i++)
        h = (h ^ k->b[i]) * 16777619u;
    return h % CG_BUCKETS;
}

/* The count entry of k at level, or NULL. Called with mu held. */
static struct addr_count *find_count(struct connguard *g, const struct netaddr *k, int level)
{
    struct addr_count *e;

    for (e = g->bucket[hash_key(k, level)]; e != NULL; e = e->next)
        if (e->level == level && netaddr_equal(&e->key, k))
            return e;
    return NULL;
}

/* Adds delta to k's count, creating or dropping its entry. 0, or -1 when
 * out of memory. Called with mu held. */
static int add_count(struct connguard *g, const struct netaddr *k, int level, int delta)
{
    struct addr_count *e = find_count(g, k, level), **pp;
    size_t h = hash_key(k, level);

    if (e == NULL) {
        if (delta <= 0 || (e = calloc(1, sizeof(*e))) == NULL)
            return delta <= 0 ? 0 : -1;
        e->key = *k;
        e->level = level;
        e->next = g->bucket[h];
        g->bucket[h] = e;
    }
    e->n += delta;
    if (e->n > 0)
        return 0;
    for (pp = &g->bucket[h]; *pp != e; pp = &(*pp)->next)
        ;
    *pp = e->next;
    free(e);
    return 0;
}

/* Whether c, reading a body, averages fewer than min_body_bps bytes a
 * second since its body began, once body_grace_ms have passed. */
static bool too_slow(const struct connguard *g, const struct connguard_conn *c, long long now)
{
    long long elapsed = now - atomic_load(&c->body_start_ms);

    if (g->lim.min_body_bps <= 0 || atomic_load(&c->phase) != CONNGUARD_BODY ||
        elapsed < g->lim.body_grace_ms)
        return false;
    return atomic_load(&c->body_bytes) * 1000 < (long long)g->lim.min_body_bps * elapsed;
}

/* One pass: shuts down every connection past its deadline or, reading a
 * body, below the least body rate. shutdown()
 * rather than close(): the HTTP library owns the descriptor and closes it
 * once it sees the end of the stream, which keeps the descriptor valid
 * for as long as the connection is registered here. */
static void reap(struct connguard *g)
{
    long long now = monotime_ms(), d;

    for (struct connguard_conn *c = g->head; c != NULL; c = c->next) {
        d = atomic_load(&c->deadline_ms);
        if (c->reaped || d == 0)
            continue;
        if (now < d) {
            if (too_slow(g, c, now)) {
                shutdown(c->fd, SHUT_RDWR);
                c->reaped = true;
                metrics_inc(g->m, M_HTTP_BODY_TOO_SLOW);
            }
            continue;
        }
        shutdown(c->fd, SHUT_RDWR);
        c->reaped = true;
        metrics_inc(g->m, atomic_load(&c->phase) == CONNGUARD_BODY ? M_HTTP_BODY_TIMEOUTS
                                                                   : M_HTTP_HEADER_TIMEOUTS);
    }
}

static void *reaper_main(void *arg)
{
    struct connguard *g = arg;
    struct timespec until;

    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        reap(g);
        until = monotime_after_ms(CG_REAP_EVERY_MS);
        pthread_cond_timedwait(&g->cv, &g->mu, &until);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

struct connguard *connguard_create(const struct connguard_limits *lim, struct metrics *m)
{
    struct connguard *g = calloc(1, sizeof(*g));
    pthread_condattr_t ca;

    if (g == NULL)
        return NULL;
    g->lim = *lim;
    g->m = m;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&g->reaper, NULL, reaper_main, g) != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return NULL;
    }
    return g;
}

void connguard_destroy(struct connguard *g)
{
    struct connguard_conn *c, *cn;
    struct addr_count *e, *en;

    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->reaper, NULL);
    for (c = g->head; c != NULL; c = cn) {
        cn = c->next;
        free(c);
    }
    for (size_t i = 0; i < CG_BUCKETS; i++)
        for (e = g->bucket[i]; e != NULL; e = en) {
            en = e->next;
            free(e);
        }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* Connections k holds. Called with mu held. */
static int held_by(struct connguard *g, const struct netaddr *k, int level)
{
    struct addr_count *e = find_count(g, k, level);

    return e != NULL ? e->n : 0;
}

/* The untrusted client holding the most connections, or NULL. Called with
 * mu held; walks every count, which only a full registry pays for. */
static struct addr_count *largest_holder(struct connguard *g)
{
    struct addr_count *e, *best = NULL;

    for (size_t i = 0; i < CG_BUCKETS; i++)
        for (e = g->bucket[i]; e != NULL; e = e->next)
            if (e->level == CG_CLIENT && (best == NULL || e->n > best->n) &&
                !netaddr_list_contains(&g->lim.trusted, &e->key))
                best = e;
    return best;
}

/* Counts c under each of its keys (delta 1) or stops counting it (-1).
 * 0, or -1 when out of memory (nothing counted then). Called with mu
 * held. */
static int count_conn(struct connguard *g, const struct connguard_conn *c, int delta)
{
    for (int l = 0; l < CG_LEVELS; l++)
        if (c->net[l].len > 0 && add_count(g, &c->net[l], l, delta) != 0) {
            while (--l >= 0)
                if (c->net[l].len > 0)
                    add_count(g, &c->net[l], l, -delta);
            return -1;
        }
    return 0;
}

static void uncount(struct connguard *g, const struct connguard_conn *c)
{
    count_conn(g, c, -1);
}

/* Shuts c down to make room: it stops being counted now; the library
 * closes it when it sees the end of the stream. Called with mu held. */
static void evict(struct connguard *g, struct connguard_conn *c)
{
    shutdown(c->fd, SHUT_RDWR);
    c->evicted = c->reaped = true;
    uncount(g, c);
    g->count--;
    metrics_inc(g->m, M_HTTP_EVICTED);
}

/* The connection that delivers least, whoever holds it, among those in
 * their phase for at least evict_idle_ms: the oldest still waiting for its
 * header block (idle, or sending nothing useful), else the body arriving
 * slowest on average. Never a trusted proxy's, never one being handled.
 * NULL when none qualifies. Called with mu held. */
static struct connguard_conn *least_delivering(struct connguard *g, long long now)
{
    struct connguard_conn *c, *slow = NULL;
    long long slow_rate = 0, age, rate;

    for (c = g->tail; c != NULL; c = c->prev) { /* oldest first */
        if (c->evicted || c->reaped || c->trusted)
            continue;
        if (atomic_load(&c->phase) == CONNGUARD_HEADERS) {
            age = now - (atomic_load(&c->deadline_ms) - g->lim.header_ms);
            if (age >= g->lim.evict_idle_ms)
                return c;
        } else if (atomic_load(&c->phase) == CONNGUARD_BODY) {
            age = now - atomic_load(&c->body_start_ms);
            rate = atomic_load(&c->body_bytes) * 1000 / (age > 0 ? age : 1);
            if (age >= g->lim.evict_idle_ms && (slow == NULL || rate < slow_rate)) {
                slow = c;
                slow_rate = rate;
            }
        }
    }
    return slow;
}

/* Makes room for a client holding held connections in a full registry:
 * first the oldest connection of the largest holder that is still waiting
 * for its header block, if that holder holds more than held + 1; else the
 * connection that delivers least, whoever holds it (least_delivering).
 * Returns whether a connection was evicted. Called with mu held. */
static bool evict_for(struct connguard *g, int held)
{
    struct addr_count *big = largest_holder(g);
    struct connguard_conn *c;

    for (c = g->tail; big != NULL && big->n > held + 1 && c != NULL; c = c->prev) {
        if (c->evicted || c->reaped || !netaddr_equal(&c->key, &big->key) ||
            atomic_load(&c->phase) != CONNGUARD_HEADERS)
            continue;
        evict(g, c);
        return true;
    }
    if ((c = least_delivering(g, monotime_ms())) == NULL)
        return false;
    evict(g, c);
    return true;
}

/* The caps of a connection's networks (CG_V6_56, CG_V6_48). */
static int net_cap(const struct connguard *g, int level)
{
    return level == CG_V6_56 ? g->lim.max_per_v6_56 : g->lim.max_per_v6_48;
}

/* Whether c's /56 or /48 (IPv6) holds its cap already: counted. */
static bool net_full(struct connguard *g, const struct connguard_conn *c)
{
    for (int l = CG_V6_56; l < CG_LEVELS; l++)
        if (c->net[l].len > 0 && net_cap(g, l) > 0 && held_by(g, &c->net[l], l) >= net_cap(g, l)) {
            metrics_inc(g->m, l == CG_V6_56 ? M_HTTP_REFUSED_V6_56_CAP : M_HTTP_REFUSED_V6_48_CAP);
            return true;
        }
    return false;
}

/* Whether connection c (trusted: from a trusted proxy) may be one more,
 * evicting another to make room if it must. Counts a refusal. Called
 * with mu held. */
static bool admit(struct connguard *g, const struct connguard_conn *c)
{
    bool trusted = c->trusted;
    int held = trusted ? 0 : held_by(g, &c->key, CG_CLIENT);

    if (!trusted && g->lim.max_per_addr > 0 && held >= g->lim.max_per_addr) {
        metrics_inc(g->m, M_HTTP_REFUSED_ADDR_CAP);
        return false;
    }
    if (!trusted && net_full(g, c))
        return false;
    if (g->count >= g->lim.max_conns) {
        if (held < g->lim.reserved_below && evict_for(g, held))
            return true;
        metrics_inc(g->m, M_HTTP_REFUSED_TOTAL_CAP);
        return false;
    }
    if (g->count >= g->lim.max_conns - g->lim.reserved && !trusted &&
        held >= g->lim.reserved_below) {
        metrics_inc(g->m, M_HTTP_REFUSED_RESERVED); /* the rest is kept for small holders */
        return false;
    }
    return true;
}

struct connguard_conn *connguard_accept(struct connguard *g, int fd, const struct sockaddr *addr,
                                        socklen_t len)
{
    struct connguard_conn *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->fd = fd;
    c->g = g;
    c->trusted = make_key(g, addr, len, &c->key);
    c->net[CG_CLIENT] = c->key;
    if (!c->trusted && c->key.len == 16) { /* an IPv6 client: its /56 and /48 too */
        if (g->lim.v6_prefix > 56)
            netaddr_key(&c->key, 56, &c->net[CG_V6_56]);
        if (g->lim.v6_prefix > 48)
            netaddr_key(&c->key, 48, &c->net[CG_V6_48]);
    }
    connguard_phase(c, CONNGUARD_HEADERS);
    pthread_mutex_lock(&g->mu);
    if (!admit(g, c) || count_conn(g, c, 1) != 0) {
        pthread_mutex_unlock(&g->mu);
        free(c);
        return NULL;
    }
    c->next = g->head;
    if (g->head != NULL)
        g->head->prev = c;
    else
        g->tail = c;
    g->head = c;
    g->count++;
    pthread_mutex_unlock(&g->mu);
    return c;
}

void connguard_close(struct connguard *g, struct connguard_conn *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    else
        g->tail = c->prev;
    if (!c->evicted) { /* else uncounted when it was evicted */
        uncount(g, c);
        g->count--;
    }
    pthread_mutex_unlock(&g->mu);
    free(c);
}

void connguard_phase(struct connguard_conn *c, enum connguard_phase p)
{
    long long d = 0;

    if (c == NULL)
        return;
    if (p == CONNGUARD_HEADERS)
        d = monotime_ms() + c->g->lim.header_ms;
    else if (p == CONNGUARD_BODY)
        d = monotime_ms() + c->g->lim.body_ms;
    if (p == CONNGUARD_BODY) {
        atomic_store(&c->body_bytes, 0);
        atomic_store(&c->body_start_ms, monotime_ms());
    }
    atomic_store(&c->phase, (int)p);
    atomic_store(&c->deadline_ms, d);
}

void connguard_progress(struct connguard_conn *c, size_t n)
{
    if (c != NULL)
        atomic_fetch_add(&c->body_bytes, (long long)n);
}

bool connguard_expired(const struct connguard_conn *c)
{
    long long d;

    if (c == NULL)
        return false;
    d = atomic_load(&c->deadline_ms);
    return d != 0 && monotime_ms() >= d;
}

int connguard_count(struct connguard *g)
{
    int n;

    pthread_mutex_lock(&g->mu);
    n = g->count;
    pthread_mutex_unlock(&g->mu);
    return n;
}
