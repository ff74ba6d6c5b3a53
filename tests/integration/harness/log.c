/* harness/log.c - the suite log: finding a line the server wrote. */
#include "../harness.h"
#include "internal.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

/* The whole suite log, malloc'd and NUL-terminated, or NULL. */
static char *read_log(void)
{
    char root[PATH_MAX], suite[128], path[PATH_MAX + 160];
    struct stat st;
    char *buf = NULL;
    ssize_t n = 0, got;
    int fd;

    hi_root_dir(root, sizeof root);
    hi_suite_name(suite, sizeof suite);
    snprintf(path, sizeof path, "%s/var/test-logs/%s.log", root, suite);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size + 1)) != NULL) {
        while (n < st.st_size && (got = read(fd, buf + n, (size_t)(st.st_size - n))) > 0)
            n += got;
        buf[n] = '\0';
    }
    close(fd);
    return buf;
}

/* The first line of log holding every string of parts, malloc'd, or NULL. */
static char *find_line(const char *log, const char *const *parts)
{
    for (const char *line = log; line != NULL && *line != '\0';) {
        const char *eol = strchr(line, '\n');
        size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);
        char *copy = strndup(line, len);
        int all = copy != NULL;

        for (size_t i = 0; all && parts[i] != NULL; i++)
            all = strstr(copy, parts[i]) != NULL;
        if (all)
            return copy;
        free(copy);
        line = eol != NULL ? eol + 1 : NULL;
    }
    return NULL;
}

char *h_log_find(const char *const *parts, int timeout_ms)
{
    long long deadline = hi_now_us() + (long long)timeout_ms * 1000;
    char *log, *line;

    for (;;) {
        log = read_log();
        line = find_line(log, parts);
        free(log);
        if (line != NULL || hi_now_us() >= deadline)
            return line;
        hi_sleep_ms(H_POLL_MS);
    }
}
