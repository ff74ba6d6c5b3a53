/* log.h - one-line logfmt logs on stderr. Each call writes one whole line
 * with a single write(2), so lines from different threads never interleave.
 * The level is set once at start; everything else is safe from any thread. */
#ifndef PAYCALLBACK_LOG_H
#define PAYCALLBACK_LOG_H

#include <stdbool.h>

enum log_level {
    LOG_DEBUG,
    LOG_INFO,
    LOG_WARN,
    LOG_ERROR
};

/* Sets the minimum level written; safe from any thread (SIGHUP reloads it). */
void log_set_level(enum log_level lvl);

/* True when a line of lvl would be written now. */
bool log_enabled(enum log_level lvl);

/* "logfmt" (the default) or "json": the same lines as JSON objects, one per
 * line, for log shippers. Returns 0, or -1 for another name. */
int log_set_format(const char *name);

/* Parses "debug", "info", "warn", "error". Returns 0, or -1 if unknown. */
int log_level_parse(const char *s, enum log_level *out);

/* fmt is logfmt key=value pairs after the message, e.g.
 * log_info("listening", "addr=%s port=%d", addr, port). msg is quoted.
 * Every %s value is made safe: escaped when the format quotes it
 * ("error=\"%s\""), quoted and escaped when bare and it holds a space, '=',
 * a quote, a backslash or a control character (or is empty); a %s not after '=' is copied as is. Numbers are
 * written as printf writes them. A line longer than 2 KiB is cut short. */
void log_write(enum log_level lvl, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(msg, ...) log_write(LOG_DEBUG, msg, __VA_ARGS__)
#define log_info(msg, ...) log_write(LOG_INFO, msg, __VA_ARGS__)
#define log_warn(msg, ...) log_write(LOG_WARN, msg, __VA_ARGS__)
#define log_error(msg, ...) log_write(LOG_ERROR, msg, __VA_ARGS__)

/* An alert: a warning with alert=<name> that operators page on
 * (AMOUNT_MISMATCH, REFUND_REQUIRED, ILLEGAL_TRANSITION, PAY_NO_CONFLICT). */
#define log_alert(name, fmt, ...) log_write(LOG_WARN, "alert", "alert=%s " fmt, name, __VA_ARGS__)

#endif
