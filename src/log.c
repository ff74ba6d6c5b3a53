/* log.c - logfmt lines on stderr: ts, level, msg, then the caller's pairs.
 * Each line is formatted into a stack buffer and written with one write(2),
 * so concurrent lines never interleave. No allocation, no lock. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

static atomic_int min_level = LOG_INFO;
static const char *const level_names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level lvl)
{
    atomic_store(&min_level, (int)lvl);
}

int log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void log_write(enum log_level lvl, const char *msg, const char *fmt, ...)
{
    char line[LOG_LINE_MAX];
    struct timespec ts;
    struct tm tm;
    size_t n;
    int w;
    va_list ap;

    if ((int)lvl < atomic_load_explicit(&min_level, memory_order_relaxed))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    w = snprintf(line, sizeof(line),
                 "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s msg=\"%s\"",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L, level_names[lvl], msg);
    n = w < 0 ? 0 : (size_t)w;
    if (fmt != NULL && fmt[0] != '\0' && n + 2 < sizeof(line)) {
        line[n++] = ' ';
        va_start(ap, fmt);
        w = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
        va_end(ap);
        if (w > 0)
            n += (size_t)w;
        else
            n--;                              /* nothing after the space */
    }
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2;                 /* truncated: keep the newline */
    line[n++] = '\n';
    (void)!write(STDERR_FILENO, line, n);
}
