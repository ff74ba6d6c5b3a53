/* harness/util.c - small utilities: clocks, deadlines, strings, the suite log
 * file and the test settings. */
#include "../harness.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

long long hi_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void hi_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

long long h_now_ms(void)
{
    return hi_now_us() / 1000;
}

long long h_now_us(void)
{
    return hi_now_us();
}

struct h_deadline h_deadline_in(int timeout_ms)
{
    struct h_deadline d = { h_now_ms() + timeout_ms };

    return d;
}

int h_deadline_wait(struct h_deadline *d)
{
    long long left = d->end_ms - h_now_ms();

    if (left <= 0)
        return 0;
    hi_sleep_ms(left < H_POLL_MS ? (int)left : H_POLL_MS);
    return 1;
}

void h_client_backoff(int attempt, int salt)
{
    int ms = 5 * (attempt < 8 ? attempt : 8) + (int)((unsigned)salt * 997u % 10u);

    hi_sleep_ms(ms);
}

/* printf into a malloc'd string. NULL only when out of memory. */
char *hi_vformat(const char *fmt, va_list ap)
{
    va_list ap2;
    char *s;
    int n;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || (s = malloc((size_t)n + 1)) == NULL)
        return NULL;
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

/* Copies src into buf, cut to fit. */
void hi_copy_str(char *buf, size_t sz, const char *src)
{
    size_t n = strlen(src);

    if (n >= sz)
        n = sz - 1;
    memcpy(buf, src, n);
    buf[n] = '\0';
}

/* The project root: $PCB_ROOT, else the current directory. */
void hi_root_dir(char *buf, size_t sz)
{
    const char *r = getenv("PCB_ROOT");

    if (r != NULL && r[0] != '\0')
        hi_copy_str(buf, sz, r);
    else if (getcwd(buf, sz) == NULL)
        snprintf(buf, sz, ".");
}

/* The test binary's name ("check_pay_callback"), for the log file name. */
void hi_suite_name(char *buf, size_t sz)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *slash;

    if (n <= 0) {
        snprintf(buf, sz, "integration");
        return;
    }
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    hi_copy_str(buf, sz, slash != NULL ? slash + 1 : exe);
}

/* Opens var/test-logs/<suite>.log for appending (close-on-exec), creating
 * the directories. -1 on failure. */
int hi_open_log(void)
{
    char root[PATH_MAX], suite[128], path[PATH_MAX + 160];

    hi_root_dir(root, sizeof root);
    hi_suite_name(suite, sizeof suite);
    snprintf(path, sizeof path, "%s/var", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/var/test-logs", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/var/test-logs/%s.log", root, suite);
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

void hi_log_line(int fd, const char *fmt, ...)
{
    char line[PATH_MAX + 256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && write(fd, line, strlen(line)) < 0)
        return; /* a lost log line is not a test failure */
}

/* In a freshly forked child: stdin from /dev/null, stdout and stderr to
 * logfd, every other descriptor closed. */
void hi_child_stdio(int logfd)
{
    int devnull = open("/dev/null", O_RDONLY);

    if (devnull >= 0)
        dup2(devnull, STDIN_FILENO);
    dup2(logfd, STDOUT_FILENO);
    dup2(logfd, STDERR_FILENO);
    for (int fd = 3; fd < H_FD_CLOSE_MAX; fd++)
        close(fd);
}

/* The value of a test setting ($PCB_TEST_*), or dflt. */
const char *hi_test_env(const char *name, const char *dflt)
{
    const char *s = getenv(name);

    return s != NULL && s[0] != '\0' ? s : dflt;
}

/* A port from a test setting, or dflt when unset or out of range. */
unsigned int hi_test_port(const char *name, unsigned int dflt)
{
    long v = strtol(hi_test_env(name, "0"), NULL, 10);

    return v > 0 && v < 65536 ? (unsigned int)v : dflt;
}
