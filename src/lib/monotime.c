/* monotime.c - CLOCK_MONOTONIC in milliseconds, microseconds and as a
 * deadline. */
#include "monotime.h"

#define NS_PER_S 1000000000L
#define NS_PER_MS 1000000L

long long monotime_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / NS_PER_MS;
}

long long monotime_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct timespec monotime_after_ms(long long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * NS_PER_MS;
    if (ts.tv_nsec >= NS_PER_S) {
        ts.tv_sec++;
        ts.tv_nsec -= NS_PER_S;
    }
    return ts;
}
