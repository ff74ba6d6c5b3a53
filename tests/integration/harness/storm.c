/* harness/storm.c - storms: many threads sending at once, with latency percentiles. */
#include "../harness.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/file.h>
#include <sys/stat.h>

struct storm {
    h_storm_fn fn;
    void *arg;
    int total;
    atomic_int next; /* next call index to hand out */
    atomic_int errors;
    long long *lat_us; /* per call */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go; /* 0 wait, 1 run, -1 give up */
};

/* Waits for the start signal, then takes call indices until none remain. */
static void *storm_worker(void *p)
{
    struct storm *s = p;
    int go;

    pthread_mutex_lock(&s->mu);
    while (s->go == 0)
        pthread_cond_wait(&s->cv, &s->mu);
    go = s->go;
    pthread_mutex_unlock(&s->mu);
    if (go < 0)
        return NULL;
    for (;;) {
        int i = atomic_fetch_add(&s->next, 1);
        long long t0;

        if (i >= s->total)
            break;
        t0 = hi_now_us();
        if (s->fn(i, s->arg) != 0)
            atomic_fetch_add(&s->errors, 1);
        s->lat_us[i] = hi_now_us() - t0;
    }
    return NULL;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile q (0..1] of n sorted values. */
static long long percentile(const long long *sorted, int n, double q)
{
    int k = (int)(q * n + 0.999999);

    if (n == 0)
        return 0;
    if (k < 1)
        k = 1;
    return sorted[(k > n ? n : k) - 1];
}

int h_storm(int threads, int total, h_storm_fn fn, void *arg, struct h_storm_stats *st)
{
    struct storm s = { .fn = fn, .arg = arg, .total = total };
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    int started = 0, rc = -1;
    long long t0, t1;

    memset(st, 0, sizeof *st);
    s.lat_us = calloc((size_t)(total > 0 ? total : 1), sizeof *s.lat_us);
    atomic_init(&s.next, 0);
    atomic_init(&s.errors, 0);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    if (tid == NULL || s.lat_us == NULL || threads < 1 || total < 0)
        goto out;
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, storm_worker, &s) != 0)
            break;
    pthread_mutex_lock(&s.mu);
    s.go = started == threads ? 1 : -1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    t0 = hi_now_us();
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    t1 = hi_now_us();
    if (started != threads)
        goto out;
    qsort(s.lat_us, (size_t)total, sizeof *s.lat_us, cmp_ll);
    st->total = total;
    st->errors = atomic_load(&s.errors);
    st->seconds = (double)(t1 - t0) / 1e6;
    st->rps = st->seconds > 0 ? total / st->seconds : 0;
    st->p50_us = percentile(s.lat_us, total, 0.50);
    st->p99_us = percentile(s.lat_us, total, 0.99);
    st->max_us = total > 0 ? s.lat_us[total - 1] : 0;
    rc = 0;
out:
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    free(s.lat_us);
    free(tid);
    return rc;
}

/* Integration suites share one test database and one Redis db, and each
 * empties them between tests, so two suites must never run at once (two
 * terminals, or a benchmark beside a test run). Every suite takes this
 * lock before main and holds it until it exits; the next one waits. */
__attribute__((constructor)) static void h_exclusive(void)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    const char *root = getenv("PCB_ROOT");
    int fd;

    snprintf(dir, sizeof(dir), "%.4000s/var", root && *root ? root : ".");
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/test.lock", dir);
    if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
        return; /* no lock: run anyway */
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    /* fd stays open for the life of the process: the lock goes with it. */
}
