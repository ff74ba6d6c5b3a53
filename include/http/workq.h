/* workq.h - a fixed pool of threads that run queued jobs in FIFO order,
 * with a bound on how long a job may wait for a thread: past it the job
 * is expired instead of run, even while every thread is busy (a watchdog
 * thread does that), so a caller always hears back within the bound.
 * Knows nothing of HTTP. Every function is thread-safe except create and
 * destroy. */
#ifndef PAYCALLBACK_WORKQ_H
#define PAYCALLBACK_WORKQ_H

struct workq;
struct workq_job;

/* Called exactly once per job, on a pool or watchdog thread: run when a
 * thread took it in time, expire when it waited past the bound or the
 * queue was destroyed first. Either may free the job. */
typedef void (*workq_fn)(struct workq_job *job);

/* A job, embedded in the caller's own state (intrusive: no allocation). */
struct workq_job {
    workq_fn run;
    workq_fn expire;
    long long enqueued_ms;  /* set by workq_push */
    struct workq_job *next; /* owned by the queue while queued */
};

/* nthreads threads; a job waits at most max_wait_ms. NULL on failure. */
struct workq *workq_create(int nthreads, int max_wait_ms);

/* Queues job. Returns 0, or -1 when the queue is being destroyed (the job
 * is then untouched and still the caller's). */
int workq_push(struct workq *q, struct workq_job *job);

/* Stops the threads after the job each one runs, expires what is still
 * queued, joins, frees. NULL-safe. No workq_push may run beside it (or
 * after it: q is freed). */
void workq_destroy(struct workq *q);

#endif
