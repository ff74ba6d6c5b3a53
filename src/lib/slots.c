/* slots.c - a stack of free slot indices under a mutex, with a condition
 * variable on the monotonic clock for bounded waits. */
#include "slots.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "monotime.h"

struct slots {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nfree;
    int free[]; /* indices of free slots; top at nfree - 1 */
};

struct slots *slots_create(int n)
{
    struct slots *s = malloc(sizeof(*s) + (size_t)n * sizeof(int));
    pthread_condattr_t ca;

    if (s == NULL)
        return NULL;
    for (int i = 0; i < n; i++)
        s->free[i] = n - 1 - i; /* slot 0 is taken first */
    s->nfree = n;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    return s;
}

void slots_destroy(struct slots *s)
{
    if (s == NULL)
        return;
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int slots_take(struct slots *s, int wait_ms, bool *waited)
{
    struct timespec deadline;
    int i = -1;

    if (waited != NULL)
        *waited = false;
    deadline = monotime_after_ms(wait_ms);
    pthread_mutex_lock(&s->mu);
    while (s->nfree == 0) {
        if (waited != NULL)
            *waited = true;
        /* No wait at all: a timed wait whose deadline has passed still
         * drops the mutex and enters the kernel, where it can sleep. */
        if (wait_ms <= 0)
            break;
        if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) == ETIMEDOUT && s->nfree == 0)
            break;
    }
    if (s->nfree > 0)
        i = s->free[--s->nfree];
    pthread_mutex_unlock(&s->mu);
    return i;
}

void slots_put(struct slots *s, int i)
{
    pthread_mutex_lock(&s->mu);
    s->free[s->nfree++] = i;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}
