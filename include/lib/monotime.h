/* monotime.h - the monotonic clock (CLOCK_MONOTONIC) in the units the
 * service counts in, and deadlines for condition variables that wait on
 * it. For durations and deadlines only, never for dates. Thread-safe. */
#ifndef PAYCALLBACK_MONOTIME_H
#define PAYCALLBACK_MONOTIME_H

#include <time.h>

/* Now, in milliseconds and in microseconds. */
long long monotime_ms(void);
long long monotime_us(void);

/* The instant ms milliseconds (>= 0) from now, as pthread_cond_timedwait
 * takes it on a condition variable set to CLOCK_MONOTONIC
 * (pthread_condattr_setclock). */
struct timespec monotime_after_ms(long long ms);

#endif
