/* workq.c - a mutex-protected FIFO, n worker threads and one watchdog that
 * expires jobs which waited too long. Jobs are intrusive, so pushing never
 * allocates and never fails for want of memory. */
#include "workq.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define WORKQ_WATCH_MIN_MS 10         /* shortest watchdog sleep */

struct workq {
    pthread_mutex_t mu;
    pthread_cond_t cv;                /* a job was queued, or stop */
    pthread_cond_t watch_cv;          /* wakes the watchdog at stop */
    struct workq_job *head, *tail;
    int waiting;
    int max_wait_ms;
    bool stop;
    int nthreads;
    pthread_t watchdog;
    bool watchdog_started;
    pthread_t threads[];
};

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Takes the oldest job off the queue. Called with mu held. */
static struct workq_job *pop(struct workq *q)
{
    struct workq_job *j = q->head;

    if (j != NULL) {
        q->head = j->next;
        if (q->head == NULL)
            q->tail = NULL;
        j->next = NULL;
        q->waiting--;
    }
    return j;
}

static void *worker_main(void *arg)
{
    struct workq *q = arg;
    struct workq_job *j;

    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->head == NULL && !q->stop)
            pthread_cond_wait(&q->cv, &q->mu);
        if (q->stop)
            break;
        j = pop(q);
        pthread_mutex_unlock(&q->mu);
        if (now_ms() - j->enqueued_ms > q->max_wait_ms)
            j->expire(j);
        else
            j->run(j);
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
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
        now = now_ms();
        if (q->head != NULL && now - q->head->enqueued_ms > q->max_wait_ms) {
            j = pop(q);
            pthread_mutex_unlock(&q->mu);
            j->expire(j);
            pthread_mutex_lock(&q->mu);
            continue;
        }
        wake = q->head != NULL ? q->head->enqueued_ms + q->max_wait_ms + 1
                               : now + q->max_wait_ms;
        if (wake < now + WORKQ_WATCH_MIN_MS)
            wake = now + WORKQ_WATCH_MIN_MS;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (wake - now) / 1000;
        until.tv_nsec += ((wake - now) % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&q->watch_cv, &q->mu, &until);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

struct workq *workq_create(int nthreads, int max_wait_ms)
{
    struct workq *q = calloc(1, sizeof(*q) + (size_t)nthreads * sizeof(pthread_t));
    pthread_condattr_t ca;

    if (q == NULL)
        return NULL;
    q->max_wait_ms = max_wait_ms;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->watch_cv, &ca);
    pthread_condattr_destroy(&ca);
    for (; q->nthreads < nthreads; q->nthreads++) {
        if (pthread_create(&q->threads[q->nthreads], NULL, worker_main, q) != 0)
            goto fail;
    }
    if (pthread_create(&q->watchdog, NULL, watchdog_main, q) != 0)
        goto fail;
    q->watchdog_started = true;
    return q;
fail:
    workq_destroy(q);
    return NULL;
}

int workq_push(struct workq *q, struct workq_job *job)
{
    job->enqueued_ms = now_ms();
    job->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->stop) {
        pthread_mutex_unlock(&q->mu);
        return -1;
    }
    if (q->tail != NULL)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
    q->waiting++;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

int workq_waiting(struct workq *q)
{
    int n;

    pthread_mutex_lock(&q->mu);
    n = q->waiting;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void workq_destroy(struct workq *q)
{
    struct workq_job *j;

    if (q == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_broadcast(&q->cv);
    pthread_cond_broadcast(&q->watch_cv);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nthreads; i++)
        pthread_join(q->threads[i], NULL);
    if (q->watchdog_started)
        pthread_join(q->watchdog, NULL);
    while ((j = pop(q)) != NULL)
        j->expire(j);
    pthread_cond_destroy(&q->cv);
    pthread_cond_destroy(&q->watch_cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}
