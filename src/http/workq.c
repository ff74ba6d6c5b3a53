/* workq.c - a mutex-protected FIFO, n worker threads and one watchdog that
 * expires jobs which waited too long. Jobs are intrusive, so pushing never
 * allocates and never fails for want of memory. An idle worker is handed
 * its job directly and woken alone, on its own semaphore, so a push wakes
 * one thread that never has to take the queue's lock to start. */
#include "workq.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "monotime.h"

#define WORKQ_WATCH_MIN_MS 10 /* shortest watchdog sleep */

struct worker {
    struct workq *q;
    pthread_t tid;
    sem_t wake;            /* posted once per hand-off, and at stop */
    struct workq_job *job; /* handed by workq_push; NULL at stop */
    struct worker *next_idle;
};

struct workq {
    pthread_mutex_t mu;
    pthread_cond_t watch_cv;       /* wakes the watchdog at stop */
    struct workq_job *head, *tail; /* empty whenever a worker is idle */
    struct worker *idle;           /* idle workers, the last one to finish on top */
    int max_wait_ms;
    bool stop;
    int nthreads;
    pthread_t watchdog;
    bool watchdog_started;
    struct worker w[];
};

/* Takes the oldest job off the queue. Called with mu held. */
static struct workq_job *pop(struct workq *q)
{
    struct workq_job *j = q->head;

    if (j != NULL) {
        q->head = j->next;
        if (q->head == NULL)
            q->tail = NULL;
        j->next = NULL;
    }
    return j;
}

/* Takes the next queued job, or, with none queued, puts w on the idle
 * stack and sleeps until workq_push hands it one. NULL at stop. */
static struct workq_job *next_job(struct worker *w)
{
    struct workq *q = w->q;
    struct workq_job *j = NULL;
    bool idle = false;

    pthread_mutex_lock(&q->mu);
    if (!q->stop && (j = pop(q)) == NULL) {
        w->job = NULL;
        w->next_idle = q->idle;
        q->idle = w;
        idle = true;
    }
    pthread_mutex_unlock(&q->mu);
    if (!idle)
        return j;
    while (sem_wait(&w->wake) != 0 && errno == EINTR)
        ;
    return w->job; /* written before the post */
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct workq_job *j;

    while ((j = next_job(w)) != NULL) {
        if (monotime_ms() - j->enqueued_ms > w->q->max_wait_ms)
            j->expire(j);
        else
            j->run(j);
    }
    return NULL;
}

/* Expires every job at the head of the queue that has waited past the
 * bound, then sleeps until the next one would. The queue is FIFO, so the
 * head is always the oldest job. */
static void *watchdog_main(void *arg)
{
    struct workq *q = arg;
    struct workq_job *j;
    struct timespec until;
    long long now, wake;

    pthread_mutex_lock(&q->mu);
    while (!q->stop) {
        now = monotime_ms();
        if (q->head != NULL && now - q->head->enqueued_ms > q->max_wait_ms) {
            j = pop(q);
            pthread_mutex_unlock(&q->mu);
            j->expire(j);
            pthread_mutex_lock(&q->mu);
            continue;
        }
        wake = q->head != NULL ? q->head->enqueued_ms + q->max_wait_ms + 1 : now + q->max_wait_ms;
        if (wake < now + WORKQ_WATCH_MIN_MS)
            wake = now + WORKQ_WATCH_MIN_MS;
        until = monotime_after_ms(wake - now);
        pthread_cond_timedwait(&q->watch_cv, &q->mu, &until);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

struct workq *workq_create(int nthreads, int max_wait_ms)
{
    struct workq *q = calloc(1, sizeof(*q) + (size_t)nthreads * sizeof(q->w[0]));
    pthread_condattr_t ca;

    if (q == NULL)
        return NULL;
    q->max_wait_ms = max_wait_ms;
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->watch_cv, &ca);
    pthread_condattr_destroy(&ca);
    for (; q->nthreads < nthreads; q->nthreads++) {
        struct worker *w = &q->w[q->nthreads];

        w->q = q;
        if (sem_init(&w->wake, 0, 0) != 0)
            goto fail;
        if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
            sem_destroy(&w->wake);
            goto fail;
        }
    }
    if (pthread_create(&q->watchdog, NULL, watchdog_main, q) != 0)
        goto fail;
    q->watchdog_started = true;
    return q;
fail:
    workq_destroy(q);
    return NULL;
}

/* An idle worker means an empty queue, so handing it the job keeps the
 * FIFO order. The post (a system call when the worker sleeps) comes after
 * the unlock, so no other thread waits on mu behind it; the worker, off
 * the idle stack, waits for that post, and workq_destroy (never run beside
 * a push) joins it, so it outlives the post. The woken worker does not
 * take mu to start. */
int workq_push(struct workq *q, struct workq_job *job)
{
    struct worker *w;

    job->enqueued_ms = monotime_ms();
    job->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->stop) {
        pthread_mutex_unlock(&q->mu);
        return -1;
    }
    if ((w = q->idle) != NULL) {
        q->idle = w->next_idle;
        w->job = job;
    } else {
        if (q->tail != NULL)
            q->tail->next = job;
        else
            q->head = job;
        q->tail = job;
    }
    pthread_mutex_unlock(&q->mu);
    if (w != NULL)
        sem_post(&w->wake);
    return 0;
}

void workq_destroy(struct workq *q)
{
    struct workq_job *j;
    struct worker *w;

    if (q == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    for (w = q->idle; w != NULL; w = w->next_idle) {
        w->job = NULL; /* wakes to stop */
        sem_post(&w->wake);
    }
    q->idle = NULL;
    pthread_cond_broadcast(&q->watch_cv);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nthreads; i++) {
        pthread_join(q->w[i].tid, NULL);
        sem_destroy(&q->w[i].wake);
    }
    if (q->watchdog_started)
        pthread_join(q->watchdog, NULL);
    while ((j = pop(q)) != NULL)
        j->expire(j);
    pthread_cond_destroy(&q->watch_cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}
