/* log.c - logfmt lines on stderr: ts, level, msg, then the caller's pairs.
 * Each line is formatted into a stack buffer and written with one write(2),
 * so concurrent lines never interleave. No allocation, no lock. String
 * values are quoted and escaped here, so every line reads back as logfmt
 * whatever the values hold. In the JSON-lines format the same line is
 * rewritten as one JSON object, pair by pair: logfmt's escapes (\" \\ \n
 * \r \t, other control characters already '?') are JSON's too. */
#include "log.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "array.h"

#define LOG_LINE_MAX 2048

static atomic_int min_level = LOG_INFO;
static atomic_int json_lines; /* 0 logfmt, 1 JSON lines */
static const char *const level_names[] = { "debug", "info", "warn", "error" };

bool log_enabled(enum log_level lvl)
{
    return (int)lvl >= atomic_load(&min_level);
}

void log_set_level(enum log_level lvl)
{
    atomic_store(&min_level, (int)lvl);
}

int log_set_format(const char *name)
{
    if (strcmp(name, "logfmt") == 0)
        atomic_store(&json_lines, 0);
    else if (strcmp(name, "json") == 0)
        atomic_store(&json_lines, 1);
    else
        return -1;
    return 0;
}

int log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < ARRAY_SIZE(level_names); i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

/* The line being built: writes past cap are dropped, so a long line is
 * cut short, never overflowed. */
struct line {
    char *p;
    size_t n, cap;
};

static void put_c(struct line *l, char c)
{
    if (l->n < l->cap)
        l->p[l->n++] = c;
}

static void put_s(struct line *l, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        put_c(l, s[i]);
}

/* Whether a bare value would not read back as one value: empty, or with a
 * space, '=', a quote, a backslash or a control character. */
static bool needs_quotes(const char *s, size_t len)
{
    if (len == 0)
        return true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7f)
            return true;
    }
    return false;
}

/* The inside of a quoted value: quote, backslash, \n, \r and \t escaped
 * as in Go's strconv; other control characters become '?'. */
static void put_escaped(struct line *l, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': put_s(l, "\\\"", 2); break;
        case '\\': put_s(l, "\\\\", 2); break;
        case '\n': put_s(l, "\\n", 2); break;
        case '\r': put_s(l, "\\r", 2); break;
        case '\t': put_s(l, "\\t", 2); break;
        default: put_c(l, c < 0x20 || c == 0x7f ? '?' : (char)c);
        }
    }
}

/* A string value (a %s right after '='): escaped when the format already
 * quotes it ("%s"), else quoted only when a bare value would not read
 * back. */
static void put_value(struct line *l, const char *s, int precision, bool in_quotes)
{
    size_t len;

    if (s == NULL)
        s = "(null)";
    len = strlen(s);
    if (precision >= 0 && (size_t)precision < len)
        len = (size_t)precision;
    if (in_quotes) {
        put_escaped(l, s, len);
    } else if (needs_quotes(s, len)) {
        put_c(l, '"');
        put_escaped(l, s, len);
        put_c(l, '"');
    } else {
        put_s(l, s, len);
    }
}

enum arg_len {
    LEN_NONE,
    LEN_HH,
    LEN_H,
    LEN_L,
    LEN_LL,
    LEN_Z,
    LEN_J,
    LEN_T,
    LEN_BIG_L
};

static const char *parse_len(const char *f, enum arg_len *len)
{
    *len = LEN_NONE;
    switch (*f) {
    case 'h': *len = f[1] == 'h' ? LEN_HH : LEN_H; return f + (f[1] == 'h' ? 2 : 1);
    case 'l': *len = f[1] == 'l' ? LEN_LL : LEN_L; return f + (f[1] == 'l' ? 2 : 1);
    case 'z': *len = LEN_Z; return f + 1;
    case 'j': *len = LEN_J; return f + 1;
    case 't': *len = LEN_T; return f + 1;
    case 'L': *len = LEN_BIG_L; return f + 1;
    default: return f;
    }
}

/* Formats one numeric or character conversion (spec is its text, e.g.
 * "%lld") with the next argument of the matching type. */
static void put_number(struct line *l, const char *spec, char conv, enum arg_len len, va_list *ap)
{
    char tmp[64];
    int w = 0;

    if (conv == 'd' || conv == 'i') {
        switch (len) {
        case LEN_L: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, long)); break;
        case LEN_LL: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, long long)); break;
        case LEN_Z: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, ssize_t)); break;
        case LEN_J: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, intmax_t)); break;
        case LEN_T: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, ptrdiff_t)); break;
        default: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, int)); break;
        }
    } else if (strchr("ouxX", conv) != NULL) {
        switch (len) {
        case LEN_L: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, unsigned long)); break;
        case LEN_LL: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, unsigned long long)); break;
        case LEN_Z: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, size_t)); break;
        case LEN_J: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, uintmax_t)); break;
        case LEN_T: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, ptrdiff_t)); break;
        default: w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, unsigned int)); break;
        }
    } else if (strchr("fFeEgGaA", conv) != NULL) {
        if (len == LEN_BIG_L)
            w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, long double));
        else
            w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, double));
    } else if (conv == 'c') {
        tmp[0] = (char)va_arg(*ap, int);
        tmp[1] = '\0';
        put_value(l, tmp, -1, false);
        return;
    } else if (conv == 'p') {
        w = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, void *));
    }
    if (w > 0)
        put_s(l, tmp, (size_t)w < sizeof tmp ? (size_t)w : sizeof tmp - 1);
}

/* printf for the caller's key=value pairs, with every %s value made safe
 * for logfmt: a value the format quotes is escaped, a bare one (right
 * after '=') is quoted when it needs to be. So raw SQL, error texts or
 * client input can never split a line or forge a key. A %s that is not a
 * value (the "%s", "" of a line without pairs) is copied as it is.
 * Supports the conversions of C11 printf; '*' only as the precision of %s. */
static void format_pairs(struct line *l, const char *fmt, va_list *ap)
{
    char spec[32];

    for (const char *f = fmt; *f != '\0';) {
        const char *start = f;
        enum arg_len len;
        int precision = -1;
        char conv;

        if (*f != '%') {
            put_c(l, *f++);
            continue;
        }
        if (*++f == '%') {
            put_c(l, '%');
            f++;
            continue;
        }
        while (*f != '\0' && strchr("-+ #0", *f) != NULL)
            f++;
        while (isdigit((unsigned char)*f))
            f++;
        if (*f == '.') {
            f++;
            if (*f == '*') {
                precision = va_arg(*ap, int);
                f++;
            } else {
                precision = atoi(f);
                while (isdigit((unsigned char)*f))
                    f++;
            }
        }
        f = parse_len(f, &len);
        if ((conv = *f) == '\0' || (size_t)(f + 1 - start) >= sizeof spec)
            return; /* a malformed format: stop here */
        f++;
        if (conv == 's') {
            const char *v = va_arg(*ap, const char *);

            if (start > fmt && start[-1] == '"' && *f == '"')
                put_value(l, v, precision, true);
            else if (start > fmt && start[-1] == '=')
                put_value(l, v, precision, false);
            else /* not a value: "%s" of no pairs */
                put_s(l, v != NULL ? v : "",
                      v != NULL && precision >= 0 ? strnlen(v, (size_t)precision)
                      : v != NULL                 ? strlen(v)
                                                  : 0);
            continue;
        }
        memcpy(spec, start, (size_t)(f - start));
        spec[f - start] = '\0';
        put_number(l, spec, conv, len, ap);
    }
}

/* A bare value that is an integer JSON reads the same way: kept a number.
 * Anything else (amounts such as 899.00 included) becomes a string, so no
 * shipper turns money into a float. */
static bool json_integer(const char *s, size_t len)
{
    size_t i = len > 0 && s[0] == '-' ? 1 : 0;

    if (len <= i || len - i > 15 || (s[i] == '0' && len - i > 1))
        return false;
    for (; i < len; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* The length of the well-formed UTF-8 sequence at s (at most n bytes): 1
 * to 4, or 0 when it is not one (a stray continuation byte, an overlong
 * form, a surrogate, past U+10FFFF, or cut short at the end of the line). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len, i;
    unsigned int cp;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2, cp = s[0] & 0x1fu;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3, cp = s[0] & 0x0fu;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4, cp = s[0] & 0x07u;
    else
        return 0;
    if (len > n)
        return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

/* Copies s into out as valid UTF-8, as JSON must be: a byte that starts
 * no well-formed sequence (a client's raw bytes, or a character the 2 KiB
 * cut split) becomes '?'. */
static void put_utf8(struct line *out, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;

    for (size_t i = 0; i < len;) {
        size_t n = utf8_len(u + i, len - i);

        if (n == 0) {
            put_c(out, '?');
            i++;
        } else {
            put_s(out, s + i, n);
            i += n;
        }
    }
}

/* Rewrites the logfmt line src (n bytes, no newline) as a JSON object
 * into out. Keys are the logfmt keys; a quoted value's inside is copied
 * as it is (its escapes are JSON's), a bare one is quoted unless it is an
 * integer. A value cut short at the end of a long line is closed. */
static void to_json(const char *src, size_t n, struct line *out)
{
    size_t i = 0;
    bool first = true;

    put_c(out, '{');
    while (i < n) {
        size_t k = i, v, e;

        while (i < n && src[i] != '=' && src[i] != ' ')
            i++;
        if (i == k || i >= n || src[i] != '=') { /* not a pair: skip the word */
            while (i < n && src[i] != ' ')
                i++;
            i++;
            continue;
        }
        put_s(out, first ? "\"" : ",\"", first ? 1 : 2);
        put_utf8(out, src + k, i - k);
        put_s(out, "\":", 2);
        first = false;
        v = ++i;
        if (i < n && src[i] == '"') {
            for (v = ++i; i < n && src[i] != '"'; i++)
                if (src[i] == '\\')
                    i++;
            e = i < n ? i : n;
            if (e == n) { /* cut short: an odd run of '\\' ends it */
                size_t b = 0;
                while (e - b > v && src[e - b - 1] == '\\')
                    b++;
                e -= b % 2; /* drop the half escape */
            }
            put_c(out, '"');
            put_utf8(out, src + v, e - v);
            put_c(out, '"');
            i++;
        } else {
            while (i < n && src[i] != ' ')
                i++;
            if (json_integer(src + v, i - v)) {
                put_s(out, src + v, i - v);
            } else {
                put_c(out, '"');
                put_utf8(out, src + v, i - v);
                put_c(out, '"');
            }
        }
        while (i < n && src[i] == ' ')
            i++;
    }
    put_c(out, '}');
}

void log_write(enum log_level lvl, const char *msg, const char *fmt, ...)
{
    char buf[LOG_LINE_MAX];
    struct line l = { buf, 0, sizeof(buf) - 1 }; /* room for the newline */
    char head[64];
    struct timespec ts;
    struct tm tm;
    int w;
    va_list ap;

    if ((int)lvl < atomic_load_explicit(&min_level, memory_order_relaxed))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    w = snprintf(head, sizeof(head), "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s msg=\"",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ts.tv_nsec / 1000000L, level_names[lvl]);
    put_s(&l, head, w > 0 ? (size_t)w : 0);
    put_escaped(&l, msg, strlen(msg));
    put_c(&l, '"');
    if (fmt != NULL && fmt[0] != '\0') {
        size_t before = l.n;

        put_c(&l, ' ');
        va_start(ap, fmt);
        format_pairs(&l, fmt, &ap);
        va_end(ap);
        if (l.n == before + 1)
            l.n = before; /* no pairs after all: no trailing space */
    }
    if (atomic_load_explicit(&json_lines, memory_order_relaxed)) {
        char jbuf[LOG_LINE_MAX * 3]; /* a pair grows at most 2.4 times */
        struct line j = { jbuf, 0, sizeof(jbuf) - 1 };

        to_json(buf, l.n, &j);
        jbuf[j.n++] = '\n';
        (void)!write(STDERR_FILENO, jbuf, j.n);
        return;
    }
    buf[l.n++] = '\n';
    (void)!write(STDERR_FILENO, buf, l.n);
}
