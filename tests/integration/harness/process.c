/* harness/process.c - the server process: its environment, start, port, signals and stop. */
#include "../harness.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/prctl.h>
#include <sys/wait.h>

extern char **environ;

#define H_START_TIMEOUT_MS 15000
#define H_START_TIMEOUT_ASAN_MS 90000
#define H_STOP_TIMEOUT_MS 30000
#define H_KV_MAX 512

struct h_server {
    pid_t pid;
    pid_t owner; /* the process that forked it */
    int port;
};

/* Sets kv in e, replacing an entry with the same key. -1 on no memory. */
static int env_put(struct envv *e, const char *kv)
{
    const char *eq = strchr(kv, '=');
    size_t klen = eq != NULL ? (size_t)(eq - kv) + 1 : strlen(kv);
    char *dup = strdup(kv);

    if (dup == NULL)
        return -1;
    for (size_t i = 0; i < e->n; i++) {
        if (strncmp(e->v[i], kv, klen) == 0) {
            free(e->v[i]);
            e->v[i] = dup;
            return 0;
        }
    }
    if (e->n + 2 > e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        char **v = realloc(e->v, cap * sizeof *v);

        if (v == NULL) {
            free(dup);
            return -1;
        }
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = dup;
    e->v[e->n] = NULL;
    return 0;
}

void hi_env_free(struct envv *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
    e->v = NULL;
    e->n = e->cap = 0;
}

/* Sets key=value in e. 0 or -1. */
static int env_set(struct envv *e, const char *key, const char *value)
{
    char kv[H_KV_MAX];

    if (snprintf(kv, sizeof kv, "%s=%s", key, value) >= (int)sizeof kv)
        return -1;
    return env_put(e, kv);
}

/* Our environment with the private MySQL and Redis ports of the tests
 * (the names the server and scripts/services.sh read). 0 or -1. */
int hi_base_env(struct envv *e)
{
    char port[16];
    int rc = 0;

    for (char **p = environ; *p != NULL; p++)
        rc |= env_put(e, *p);
    snprintf(port, sizeof port, "%u", hi_test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT));
    rc |= env_set(e, "PAYCALLBACK_MYSQL_PORT", port);
    snprintf(port, sizeof port, "%u", hi_test_port("PCB_TEST_REDIS_PORT", H_REDIS_PORT));
    rc |= env_set(e, "PAYCALLBACK_REDIS_PORT", port);
    return rc == 0 ? 0 : -1;
}

/* Builds the server's environment: ours, then the test overrides, then
 * extra_env. 0 or -1. */
int hi_server_env(struct envv *e, const char *const *extra_env)
{
    int rc = hi_base_env(e);

    rc |= env_set(e, "PAYCALLBACK_LISTEN_PORT", "0");
    rc |= env_set(e, "PAYCALLBACK_MYSQL_DATABASE", hi_test_env("PCB_TEST_MYSQL_DB", H_TEST_DB));
    rc |= env_set(e, "PAYCALLBACK_MYSQL_USER", hi_test_env("PCB_TEST_MYSQL_USER", H_DB_USER));
    rc |= env_set(e, "PAYCALLBACK_MYSQL_PASSWORD",
                  hi_test_env("PCB_TEST_MYSQL_PASSWORD", H_DB_PASSWORD));
    rc |= env_set(e, "PAYCALLBACK_REDIS_DB", "9");
    rc |= env_set(e, "PAYCALLBACK_MYSQL_CLUSTER_ID", H_CLUSTER_ID); /* used once sharded */
    rc |= env_set(e, "PAYCALLBACK_DEV", "1"); /* the shipped development secret */
    /* The suites empty the database under a running server, which no
     * database does to a recorded payment: the replay cache, which
     * remembers recorded payments, is on only where a suite asks. */
    rc |= env_set(e, "PAYCALLBACK_CALLBACK_REPLAY_CACHE_ENTRIES", "0");
    for (size_t i = 0; extra_env != NULL && extra_env[i] != NULL; i++)
        rc |= env_put(e, extra_env[i]);
    return rc == 0 ? 0 : -1;
}

/* Resolves the binary: $PCB_BIN or build/paycallback, relative
 * paths taken from root. */
void hi_server_bin(const char *root, char *buf, size_t sz)
{
    const char *bin = getenv("PCB_BIN");

    if (bin == NULL || bin[0] == '\0')
        bin = "build/paycallback";
    if (bin[0] == '/')
        snprintf(buf, sz, "%s", bin);
    else
        snprintf(buf, sz, "%s/%s", root, bin);
}

/* Reads a complete port line ("8080\n") from path. The port, 0 while the
 * file is missing or incomplete, -1 when it holds garbage. */
static int read_port_file(const char *path)
{
    char buf[32];
    ssize_t n;
    char *end;
    long port;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (strchr(buf, '\n') == NULL)
        return 0;
    port = strtol(buf, &end, 10);
    if (end == buf || *end != '\n' || port < 1 || port > 65535)
        return -1;
    return (int)port;
}

static void describe_status(int wstatus, char *buf, size_t sz)
{
    if (WIFEXITED(wstatus))
        snprintf(buf, sz, "exit code %d", WEXITSTATUS(wstatus));
    else if (WIFSIGNALED(wstatus))
        snprintf(buf, sz, "signal %d", WTERMSIG(wstatus));
    else
        snprintf(buf, sz, "status 0x%x", (unsigned)wstatus);
}

/* Polls for the port file of pid. The port, or -1 (reason on stderr; the
 * process has then been reaped). */
static int wait_for_port(pid_t pid, const char *port_file, int timeout_ms)
{
    long long deadline = hi_now_us() + (long long)timeout_ms * 1000;
    int wstatus, port = 0;
    char why[64];

    while (hi_now_us() < deadline) {
        if ((port = read_port_file(port_file)) != 0) {
            if (port > 0)
                return port;
            fprintf(stderr, "harness: unreadable port file %s\n", port_file);
            break;
        }
        if (waitpid(pid, &wstatus, WNOHANG) == pid) {
            describe_status(wstatus, why, sizeof why);
            fprintf(stderr,
                    "harness: server exited (%s) before writing its port; "
                    "see var/test-logs/\n",
                    why);
            return -1;
        }
        hi_sleep_ms(H_POLL_MS);
    }
    if (port == 0)
        fprintf(stderr, "harness: server wrote no port within %d ms; see var/test-logs/\n",
                timeout_ms);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

struct h_server *h_server_start(const char *const *extra_env)
{
    return h_server_start_config(NULL, extra_env);
}

/* Whether extra_env makes the server sharded. */
static int sharded_env(const char *const *extra_env)
{
    for (size_t i = 0; extra_env != NULL && extra_env[i] != NULL; i++)
        if (strncmp(extra_env[i], "PAYCALLBACK_MYSQL_SHARDS=", 25) == 0)
            return 1;
    return 0;
}

struct h_server *h_server_start_config(const char *config_path, const char *const *extra_env)
{
    char root[PATH_MAX], bin[PATH_MAX + 64], cfg[PATH_MAX + 64];
    char tmpdir[] = "/tmp/paycallback-test-XXXXXX";
    char port_file[sizeof tmpdir + 16];
    char *const argv[] = { bin, (char *)"-c", cfg, (char *)"--port-file", port_file, NULL };
    struct envv env = { 0 };
    struct h_server *s = NULL;
    int logfd = -1, timeout_ms;
    pid_t parent = getpid(), pid;

    hi_root_dir(root, sizeof root);
    hi_server_bin(root, bin, sizeof bin);
    if (config_path != NULL)
        snprintf(cfg, sizeof cfg, "%s", config_path);
    else
        snprintf(cfg, sizeof cfg, "%s/config/paycallback.json", root);
    timeout_ms = strstr(bin, "/asan/") != NULL ? H_START_TIMEOUT_ASAN_MS : H_START_TIMEOUT_MS;
    if (!sharded_env(extra_env))
        hi_forget_shard_maps();
    else
        hi_shards_init();
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "harness: cannot execute %s: %s\n", bin, strerror(errno));
        return NULL;
    }
    if (mkdtemp(tmpdir) == NULL) {
        fprintf(stderr, "harness: cannot create a temporary directory: %s\n", strerror(errno));
        return NULL;
    }
    snprintf(port_file, sizeof port_file, "%s/port", tmpdir);
    if ((logfd = hi_open_log()) < 0) {
        fprintf(stderr, "harness: cannot open var/test-logs: %s\n", strerror(errno));
        goto out;
    }
    if (hi_server_env(&env, extra_env) != 0 || (s = calloc(1, sizeof *s)) == NULL) {
        fprintf(stderr, "harness: out of memory\n");
        goto out;
    }
    hi_log_line(logfd, "=== harness: starting %s", bin);
    for (size_t i = 0; extra_env != NULL && extra_env[i] != NULL; i++)
        hi_log_line(logfd, " %s", extra_env[i]);
    hi_log_line(logfd, " ===\n");
    if ((pid = fork()) < 0) {
        fprintf(stderr, "harness: fork: %s\n", strerror(errno));
        free(s);
        s = NULL;
        goto out;
    }
    if (pid == 0) {
        /* Dies with the test runner, even when the runner crashes. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        hi_child_stdio(logfd);
        if (chdir(root) != 0)
            _exit(127);
        execve(bin, argv, env.v);
        fprintf(stderr, "harness: cannot exec %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    s->pid = pid;
    s->owner = parent;
    if ((s->port = wait_for_port(pid, port_file, timeout_ms)) < 0) {
        free(s);
        s = NULL;
    }
out:
    unlink(port_file);
    rmdir(tmpdir);
    if (logfd >= 0)
        close(logfd);
    hi_env_free(&env);
    return s;
}

int h_server_port(const struct h_server *s)
{
    return s != NULL ? s->port : -1;
}

pid_t h_server_pid(const struct h_server *s)
{
    return s != NULL ? s->pid : -1;
}

int h_server_signal(struct h_server *s, int sig)
{
    if (s == NULL || s->owner != getpid())
        return -1;
    return kill(s->pid, sig);
}

/* Waits up to timeout_ms for child pid to exit and SIGKILLs it past that.
 * The exit code, 128 + signal, or -1 when it had to be killed. */
int hi_reap_pid(pid_t pid, int timeout_ms)
{
    long long deadline = hi_now_us() + (long long)timeout_ms * 1000;
    int wstatus, rc = -1;
    pid_t r = 0;

    while ((r = waitpid(pid, &wstatus, WNOHANG)) == 0 && hi_now_us() < deadline)
        hi_sleep_ms(H_POLL_MS);
    if (r == 0) {
        fprintf(stderr, "harness: process %d still running after %d ms, killing it\n", (int)pid,
                timeout_ms);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    } else if (r == pid && WIFEXITED(wstatus)) {
        rc = WEXITSTATUS(wstatus);
    } else if (r == pid && WIFSIGNALED(wstatus)) {
        rc = 128 + WTERMSIG(wstatus);
    }
    return rc;
}

/* hi_reap_pid for a server, then frees s. */
static int reap(struct h_server *s, int timeout_ms)
{
    int rc = hi_reap_pid(s->pid, timeout_ms);

    free(s);
    return rc;
}

int h_server_stop(struct h_server *s)
{
    if (s == NULL || s->owner != getpid())
        return -1; /* a forked test never stops its parent's server */
    kill(s->pid, SIGTERM);
    return reap(s, H_STOP_TIMEOUT_MS);
}

int h_server_wait(struct h_server *s, int timeout_ms)
{
    if (s == NULL || s->owner != getpid())
        return -1;
    return reap(s, timeout_ms);
}
