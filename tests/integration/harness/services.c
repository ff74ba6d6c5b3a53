/* harness/services.c - the private MariaDB and Redis: stop and start them from a test. */
#include "../harness.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>

void h_services(const char *cmd)
{
    char root[PATH_MAX], script[PATH_MAX + 32];
    char *const argv[] = { script, (char *)cmd, NULL };
    struct envv env = { 0 };
    int logfd = hi_open_log(), wstatus = 0;
    pid_t pid;

    hi_root_dir(root, sizeof root);
    snprintf(script, sizeof script, "%s/scripts/services.sh", root);
    ck_assert_msg(logfd >= 0, "cannot open var/test-logs: %s", strerror(errno));
    ck_assert_msg(hi_base_env(&env) == 0, "out of memory");
    hi_log_line(logfd, "=== harness: %s %s ===\n", script, cmd);
    pid = fork();
    if (pid == 0) {
        /* Daemons it starts must not hold the runner's stdout open. */
        hi_child_stdio(logfd);
        if (chdir(root) != 0)
            _exit(127);
        execve(script, argv, env.v);
        fprintf(stderr, "harness: cannot exec %s: %s\n", script, strerror(errno));
        _exit(127);
    }
    close(logfd);
    hi_env_free(&env);
    ck_assert_msg(pid > 0, "fork: %s", strerror(errno));
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    ck_assert_msg(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
                  "scripts/services.sh %s failed (status 0x%x); see var/test-logs/", cmd,
                  (unsigned)wstatus);
}

/* A temporary file for a child's output: an open descriptor, its name
 * unlinked at once. -1 on failure. */
static int temp_output(void)
{
    char path[] = "/tmp/paycallback-run-XXXXXX";
    int fd = mkstemp(path);

    if (fd >= 0)
        unlink(path);
    return fd;
}

/* The whole content of fd from its start, malloc'd and NUL-terminated. */
static char *read_all_fd(int fd)
{
    off_t size = lseek(fd, 0, SEEK_END);
    char *buf = malloc(size > 0 ? (size_t)size + 1 : 1);
    ssize_t n = 0, got;

    if (buf == NULL)
        return NULL;
    if (size > 0 && lseek(fd, 0, SEEK_SET) == 0)
        while (n < size && (got = read(fd, buf + n, (size_t)(size - n))) > 0)
            n += got;
    buf[n] = '\0';
    return buf;
}

void h_run(const char *const *args, const char *const *extra_env, int timeout_ms, struct h_run *out)
{
    h_run_signal(args, extra_env, timeout_ms, NULL, 0, out);
}

void h_run_signal(const char *const *args, const char *const *extra_env, int timeout_ms,
                  int (*when)(void), int sig, struct h_run *out)
{
    char root[PATH_MAX], bin[PATH_MAX + 64];
    char *argv[H_HEADERS_MAX];
    struct envv env = { 0 };
    int ofd = temp_output(), efd = temp_output(), n = 0;
    pid_t pid;

    memset(out, 0, sizeof *out);
    hi_root_dir(root, sizeof root);
    hi_server_bin(root, bin, sizeof bin);
    ck_assert_msg(access(bin, X_OK) == 0, "cannot execute %s: %s", bin, strerror(errno));
    ck_assert_msg(ofd >= 0 && efd >= 0, "cannot create temporary files: %s", strerror(errno));
    ck_assert_msg(hi_server_env(&env, extra_env) == 0, "out of memory");
    argv[n++] = bin;
    for (size_t i = 0; args != NULL && args[i] != NULL && n < H_HEADERS_MAX - 1; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    if ((pid = fork()) == 0) {
        int devnull = open("/dev/null", O_RDONLY);

        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        dup2(ofd, STDOUT_FILENO);
        dup2(efd, STDERR_FILENO);
        for (int fd = 3; fd < H_FD_CLOSE_MAX; fd++)
            close(fd);
        if (chdir(root) != 0)
            _exit(127);
        execve(bin, argv, env.v);
        fprintf(stderr, "harness: cannot exec %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    hi_env_free(&env);
    ck_assert_msg(pid > 0, "fork: %s", strerror(errno));
    if (when != NULL) {
        struct h_deadline d = h_deadline_in(timeout_ms);

        siginfo_t info;

        /* Until when() holds, unless the child ends first (seen, not reaped). */
        for (;;) {
            memset(&info, 0, sizeof info);
            if (when() || waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
                info.si_pid != 0 || !h_deadline_wait(&d))
                break;
        }
        if (info.si_pid == 0)
            kill(pid, sig);
    }
    out->status = hi_reap_pid(pid, timeout_ms);
    out->out = read_all_fd(ofd);
    out->err = read_all_fd(efd);
    close(ofd);
    close(efd);
    ck_assert_msg(out->out != NULL && out->err != NULL, "out of memory");
}

void h_run_free(struct h_run *r)
{
    if (r == NULL)
        return;
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}
