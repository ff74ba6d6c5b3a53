/* check_workq.c - the handler pool: every job is run or expired exactly
 * once, in FIFO order, on as many threads as the pool has. Nothing here
 * asserts a duration; a test that waits polls for an outcome. */
#include <check.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include "workq.h"
#include "../check_main.h"

#define JOBS_MANY 2000
#define THREADS 4
#define WAIT_LONG_MS 60000 /* a bound no test job waits past */
#define WAIT_SHORT_MS 200  /* a bound a job held up behind another passes */

struct test_job {
    struct workq_job job; /* first: the job is the test job */
    atomic_int runs, expires;
    int seq;
    sem_t *gate;             /* when set, run waits on it */
    pthread_barrier_t *meet; /* when set, run meets the others there */
};

static atomic_int order[64];
static atomic_int norder;

static void run_job(struct workq_job *j)
{
    struct test_job *t = (struct test_job *)j;

    if (t->gate != NULL)
        sem_wait(t->gate);
    if (t->meet != NULL)
        pthread_barrier_wait(t->meet);
    order[atomic_fetch_add(&norder, 1) % 64] = t->seq;
    atomic_fetch_add(&t->runs, 1);
}

/* A gated job holds its thread whether it is run or expired. */
static void expire_job(struct workq_job *j)
{
    struct test_job *t = (struct test_job *)j;

    if (t->gate != NULL)
        sem_wait(t->gate);
    atomic_fetch_add(&t->expires, 1);
}

static void job_init(struct test_job *t, int seq)
{
    t->job.run = run_job;
    t->job.expire = expire_job;
    atomic_init(&t->runs, 0);
    atomic_init(&t->expires, 0);
    t->seq = seq;
    t->gate = NULL;
    t->meet = NULL;
}

/* Polls until the job was run or expired, for up to a minute. */
static void wait_done(struct test_job *t)
{
    struct timespec ms = { 0, 1000000 };

    for (int i = 0; i < 60000 && atomic_load(&t->runs) + atomic_load(&t->expires) == 0; i++)
        nanosleep(&ms, NULL);
}

START_TEST(workq_runs_every_job_once)
{
    static struct test_job jobs[JOBS_MANY];
    struct workq *q = workq_create(THREADS, WAIT_LONG_MS);

    ck_assert_ptr_nonnull(q);
    for (int i = 0; i < JOBS_MANY; i++) {
        job_init(&jobs[i], i);
        ck_assert_int_eq(0, workq_push(q, &jobs[i].job));
    }
    for (int i = 0; i < JOBS_MANY; i++)
        wait_done(&jobs[i]);
    workq_destroy(q);
    for (int i = 0; i < JOBS_MANY; i++) {
        ck_assert_int_eq(1, atomic_load(&jobs[i].runs));
        ck_assert_int_eq(0, atomic_load(&jobs[i].expires));
    }
}
END_TEST

/* THREADS jobs that can only finish together (a barrier of THREADS + 1):
 * every idle thread must have been handed one, twice over, so threads
 * that went back to idle are woken again. */
START_TEST(workq_runs_as_many_jobs_at_once_as_it_has_threads)
{
    struct test_job jobs[THREADS];
    pthread_barrier_t meet;
    struct workq *q = workq_create(THREADS, WAIT_LONG_MS);

    ck_assert_ptr_nonnull(q);
    for (int round = 0; round < 2; round++) {
        pthread_barrier_init(&meet, NULL, THREADS + 1);
        for (int i = 0; i < THREADS; i++) {
            job_init(&jobs[i], i);
            jobs[i].meet = &meet;
            ck_assert_int_eq(0, workq_push(q, &jobs[i].job));
        }
        pthread_barrier_wait(&meet);
        for (int i = 0; i < THREADS; i++)
            wait_done(&jobs[i]);
        for (int i = 0; i < THREADS; i++)
            ck_assert_int_eq(1, atomic_load(&jobs[i].runs));
        pthread_barrier_destroy(&meet);
    }
    workq_destroy(q);
}
END_TEST

/* One thread, held by the first job: the jobs queued behind it run in the
 * order they were pushed. */
START_TEST(workq_runs_queued_jobs_in_fifo_order)
{
    struct test_job jobs[10];
    sem_t gate;
    struct workq *q = workq_create(1, WAIT_LONG_MS);

    ck_assert_ptr_nonnull(q);
    sem_init(&gate, 0, 0);
    atomic_store(&norder, 0);
    for (int i = 0; i < 10; i++) {
        job_init(&jobs[i], i);
        if (i == 0)
            jobs[i].gate = &gate;
        ck_assert_int_eq(0, workq_push(q, &jobs[i].job));
    }
    sem_post(&gate);
    for (int i = 0; i < 10; i++)
        wait_done(&jobs[i]);
    workq_destroy(q);
    sem_destroy(&gate);
    ck_assert_int_eq(10, atomic_load(&norder));
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(i, atomic_load(&order[i]));
}
END_TEST

/* One thread, held (run or expired) until the second job has an outcome:
 * that job cannot have run, so the watchdog must have expired it. */
START_TEST(workq_expires_a_job_that_waited_past_the_bound)
{
    struct test_job held, late;
    sem_t gate;
    struct workq *q = workq_create(1, WAIT_SHORT_MS);

    ck_assert_ptr_nonnull(q);
    sem_init(&gate, 0, 0);
    job_init(&held, 0);
    held.gate = &gate;
    job_init(&late, 1);
    ck_assert_int_eq(0, workq_push(q, &held.job));
    ck_assert_int_eq(0, workq_push(q, &late.job));
    wait_done(&late);
    ck_assert_int_eq(1, atomic_load(&late.expires));
    ck_assert_int_eq(0, atomic_load(&late.runs));
    sem_post(&gate);
    wait_done(&held);
    workq_destroy(q);
    sem_destroy(&gate);
    ck_assert_int_eq(1, atomic_load(&held.runs) + atomic_load(&held.expires));
    ck_assert_int_eq(1, atomic_load(&late.expires));
}
END_TEST

static Suite *workq_suite(void)
{
    Suite *s = suite_create("workq");
    TCase *tc;

    tc = tcase_create("run");
    tcase_add_test(tc, workq_runs_every_job_once);
    tcase_add_test(tc, workq_runs_as_many_jobs_at_once_as_it_has_threads);
    tcase_add_test(tc, workq_runs_queued_jobs_in_fifo_order);
    suite_add_tcase(s, tc);

    tc = tcase_create("expire");
    tcase_add_test(tc, workq_expires_a_job_that_waited_past_the_bound);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(workq_suite, NULL, NULL);
