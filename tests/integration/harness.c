/* harness.c - integration test harness: a child paycallback process, a raw
 * socket HTTP/1.1 client, HMAC signing, and direct MariaDB/Redis access for
 * fixtures and checks. Uses nothing from src/: it tests the contract. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <cJSON.h>
#include <mysql.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

extern char **environ;

#define H_START_TIMEOUT_MS      15000
#define H_START_TIMEOUT_ASAN_MS 90000
#define H_STOP_TIMEOUT_MS       30000
#define H_POLL_MS               10
#define H_RESP_MAX_BYTES        (16u << 20)
#define H_FD_CLOSE_MAX          65536
#define H_KV_MAX              512
#define H_DB_CONNECT_TIMEOUT_S  5
#define H_DB_TIMEOUT_S          30
#define H_DB_LOCK_WAIT_S        "10"     /* SQL text: seconds */
#define H_REDIS_TIMEOUT_S       5
#define H_REDIS_DB              9
#define H_TEST_DB               "paycallback_test"
#define H_DB_USER               "paycallback"
#define H_DB_PASSWORD           "paycallback"
#define H_MYSQL_PORT            3307
#define H_REDIS_PORT            6380
#define H_HOST                  "127.0.0.1"

struct h_server {
    pid_t pid;
    pid_t owner;                  /* the process that forked it */
    int port;
};

/* ---- small utilities ----------------------------------------------------- */

static long long now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

long long h_now_ms(void)
{
    return now_us() / 1000;
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
    sleep_ms(left < H_POLL_MS ? (int)left : H_POLL_MS);
    return 1;
}

void h_client_backoff(int attempt, int salt)
{
    int ms = 5 * (attempt < 8 ? attempt : 8) + (int)((unsigned)salt * 997u % 10u);

    sleep_ms(ms);
}

/* printf into a malloc'd string. NULL only when out of memory. */
static char *vformat(const char *fmt, va_list ap)
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
static void copy_str(char *buf, size_t sz, const char *src)
{
    size_t n = strlen(src);

    if (n >= sz)
        n = sz - 1;
    memcpy(buf, src, n);
    buf[n] = '\0';
}

/* The project root: $PCB_ROOT, else the current directory. */
static void root_dir(char *buf, size_t sz)
{
    const char *r = getenv("PCB_ROOT");

    if (r != NULL && r[0] != '\0')
        copy_str(buf, sz, r);
    else if (getcwd(buf, sz) == NULL)
        snprintf(buf, sz, ".");
}

/* The test binary's name ("check_pay_callback"), for the log file name. */
static void suite_name(char *buf, size_t sz)
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
    copy_str(buf, sz, slash != NULL ? slash + 1 : exe);
}

/* Opens var/test-logs/<suite>.log for appending (close-on-exec), creating
 * the directories. -1 on failure. */
static int open_log(void)
{
    char root[PATH_MAX], suite[128], path[PATH_MAX + 160];

    root_dir(root, sizeof root);
    suite_name(suite, sizeof suite);
    snprintf(path, sizeof path, "%s/var", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/var/test-logs", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/var/test-logs/%s.log", root, suite);
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static void log_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void log_line(int fd, const char *fmt, ...)
{
    char line[PATH_MAX + 256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && write(fd, line, strlen(line)) < 0)
        return;                   /* a lost log line is not a test failure */
}

/* In a freshly forked child: stdin from /dev/null, stdout and stderr to
 * logfd, every other descriptor closed. */
static void child_stdio(int logfd)
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
static const char *test_env(const char *name, const char *dflt)
{
    const char *s = getenv(name);

    return s != NULL && s[0] != '\0' ? s : dflt;
}

/* A port from a test setting, or dflt when unset or out of range. */
static unsigned int test_port(const char *name, unsigned int dflt)
{
    long v = strtol(test_env(name, "0"), NULL, 10);

    return v > 0 && v < 65536 ? (unsigned int)v : dflt;
}

/* ---- server process ------------------------------------------------------ */

/* A growable NULL-terminated environment vector of malloc'd "KEY=VAL". */
struct envv {
    char **v;
    size_t n, cap;
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

static void env_free(struct envv *e)
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
static int base_env(struct envv *e)
{
    char port[16];
    int rc = 0;

    for (char **p = environ; *p != NULL; p++)
        rc |= env_put(e, *p);
    snprintf(port, sizeof port, "%u", test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT));
    rc |= env_set(e, "PAYCALLBACK_MYSQL_PORT", port);
    snprintf(port, sizeof port, "%u", test_port("PCB_TEST_REDIS_PORT", H_REDIS_PORT));
    rc |= env_set(e, "PAYCALLBACK_REDIS_PORT", port);
    return rc == 0 ? 0 : -1;
}

/* Builds the server's environment: ours, then the test overrides, then
 * extra_env. 0 or -1. */
static int server_env(struct envv *e, const char *const *extra_env)
{
    int rc = base_env(e);

    rc |= env_set(e, "PAYCALLBACK_LISTEN_PORT", "0");
    rc |= env_set(e, "PAYCALLBACK_MYSQL_DATABASE", test_env("PCB_TEST_MYSQL_DB", H_TEST_DB));
    rc |= env_set(e, "PAYCALLBACK_MYSQL_USER", test_env("PCB_TEST_MYSQL_USER", H_DB_USER));
    rc |= env_set(e, "PAYCALLBACK_MYSQL_PASSWORD",
                  test_env("PCB_TEST_MYSQL_PASSWORD", H_DB_PASSWORD));
    rc |= env_set(e, "PAYCALLBACK_REDIS_DB", "9");
    rc |= env_set(e, "PAYCALLBACK_DEV", "1");     /* the shipped development secret */
    for (size_t i = 0; extra_env != NULL && extra_env[i] != NULL; i++)
        rc |= env_put(e, extra_env[i]);
    return rc == 0 ? 0 : -1;
}

/* Resolves the binary: $PCB_BIN or build/paycallback, relative
 * paths taken from root. */
static void server_bin(const char *root, char *buf, size_t sz)
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
    long long deadline = now_us() + (long long)timeout_ms * 1000;
    int wstatus, port = 0;
    char why[64];

    while (now_us() < deadline) {
        if ((port = read_port_file(port_file)) != 0) {
            if (port > 0)
                return port;
            fprintf(stderr, "harness: unreadable port file %s\n", port_file);
            break;
        }
        if (waitpid(pid, &wstatus, WNOHANG) == pid) {
            describe_status(wstatus, why, sizeof why);
            fprintf(stderr, "harness: server exited (%s) before writing its port; "
                    "see var/test-logs/\n", why);
            return -1;
        }
        sleep_ms(H_POLL_MS);
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

    root_dir(root, sizeof root);
    server_bin(root, bin, sizeof bin);
    if (config_path != NULL)
        snprintf(cfg, sizeof cfg, "%s", config_path);
    else
        snprintf(cfg, sizeof cfg, "%s/config/paycallback.json", root);
    timeout_ms = strstr(bin, "/asan/") != NULL ? H_START_TIMEOUT_ASAN_MS : H_START_TIMEOUT_MS;
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "harness: cannot execute %s: %s\n", bin, strerror(errno));
        return NULL;
    }
    if (mkdtemp(tmpdir) == NULL) {
        fprintf(stderr, "harness: cannot create a temporary directory: %s\n", strerror(errno));
        return NULL;
    }
    snprintf(port_file, sizeof port_file, "%s/port", tmpdir);
    if ((logfd = open_log()) < 0) {
        fprintf(stderr, "harness: cannot open var/test-logs: %s\n", strerror(errno));
        goto out;
    }
    if (server_env(&env, extra_env) != 0 || (s = calloc(1, sizeof *s)) == NULL) {
        fprintf(stderr, "harness: out of memory\n");
        goto out;
    }
    log_line(logfd, "=== harness: starting %s", bin);
    for (size_t i = 0; extra_env != NULL && extra_env[i] != NULL; i++)
        log_line(logfd, " %s", extra_env[i]);
    log_line(logfd, " ===\n");
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
        child_stdio(logfd);
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
    env_free(&env);
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
static int reap_pid(pid_t pid, int timeout_ms)
{
    long long deadline = now_us() + (long long)timeout_ms * 1000;
    int wstatus, rc = -1;
    pid_t r = 0;

    while ((r = waitpid(pid, &wstatus, WNOHANG)) == 0 && now_us() < deadline)
        sleep_ms(H_POLL_MS);
    if (r == 0) {
        fprintf(stderr, "harness: process %d still running after %d ms, killing it\n",
                (int)pid, timeout_ms);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    } else if (r == pid && WIFEXITED(wstatus)) {
        rc = WEXITSTATUS(wstatus);
    } else if (r == pid && WIFSIGNALED(wstatus)) {
        rc = 128 + WTERMSIG(wstatus);
    }
    return rc;
}

/* reap_pid for a server, then frees s. */
static int reap(struct h_server *s, int timeout_ms)
{
    int rc = reap_pid(s->pid, timeout_ms);

    free(s);
    return rc;
}

int h_server_stop(struct h_server *s)
{
    if (s == NULL || s->owner != getpid())
        return -1;                /* a forked test never stops its parent's server */
    kill(s->pid, SIGTERM);
    return reap(s, H_STOP_TIMEOUT_MS);
}

int h_server_wait(struct h_server *s, int timeout_ms)
{
    if (s == NULL || s->owner != getpid())
        return -1;
    return reap(s, timeout_ms);
}

/* ---- HTTP client --------------------------------------------------------- */

/* A connected, blocking socket to 127.0.0.1:port with send and receive
 * timeouts, or -1 with the reason in err. */
static int connect_local(int port, char *err, size_t errsz)
{
    struct timeval tv = { H_RECV_TIMEOUT_S, 0 };
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        snprintf(err, errsz, "socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    while (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno == EINTR)
            continue;
        snprintf(err, errsz, "connect to port %d: %s", port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends all of buf. A peer that closes early (EPIPE, ECONNRESET) is not an
 * error: it may have answered already, e.g. 413. 0 or -1. */
static int send_all(int fd, const char *buf, size_t len, char *err, size_t errsz)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
            return 0;
        if (n < 0) {
            snprintf(err, errsz, "send: %s", strerror(errno));
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads until EOF into a malloc'd buffer (*out, NUL-terminated). A reset
 * after some data counts as EOF. 0 or -1. */
static int recv_all(int fd, char **out, size_t *outlen, char *err, size_t errsz)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap + 1);

    if (buf == NULL) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    for (;;) {
        ssize_t n;

        if (len == cap) {
            char *nb = cap < H_RESP_MAX_BYTES ? realloc(buf, cap * 2 + 1) : NULL;

            if (nb == NULL) {
                snprintf(err, errsz, "reply larger than %u bytes", H_RESP_MAX_BYTES);
                free(buf);
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        n = recv(fd, buf + len, cap - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET && len > 0))
            break;
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                snprintf(err, errsz, "no reply within %d s", H_RECV_TIMEOUT_S);
            else
                snprintf(err, errsz, "recv: %s", strerror(errno));
            free(buf);
            return -1;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
}

/* Decodes a chunked body of len bytes into a malloc'd NUL-terminated
 * buffer. 0 or -1 when malformed or truncated. */
static int dechunk(const char *p, size_t len, char **out, size_t *outlen)
{
    char *buf = malloc(len + 1);
    size_t pos = 0, n = 0;

    if (buf == NULL)
        return -1;
    for (;;) {
        const char *eol = NULL;
        unsigned long size;
        char *end;

        for (size_t i = pos; i + 1 < len; i++) {
            if (p[i] == '\r' && p[i + 1] == '\n') {
                eol = p + i;
                break;
            }
        }
        if (eol == NULL)
            goto bad;
        size = strtoul(p + pos, &end, 16);
        if (end == p + pos || (end != eol && *end != ';'))
            goto bad;
        pos = (size_t)(eol - p) + 2;
        if (size == 0)
            break;                /* trailers, if any, are ignored */
        if (size > len - pos || len - pos - size < 2 || memcmp(p + pos + size, "\r\n", 2) != 0)
            goto bad;
        memcpy(buf + n, p + pos, size);
        n += size;
        pos += size + 2;
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return 0;
bad:
    free(buf);
    return -1;
}

/* Splits the header block in place into r->hname/hvalue. */
static void split_headers(struct h_resp *r, char *lines)
{
    char *save = NULL;

    for (char *line = strtok_r(lines, "\r\n", &save); line != NULL;
         line = strtok_r(NULL, "\r\n", &save)) {
        char *colon = strchr(line, ':');
        char *v, *e;

        if (colon == NULL || r->nheaders == H_HEADERS_MAX)
            continue;
        *colon = '\0';
        for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
            ;
        for (e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
            e[-1] = '\0';
        r->hname[r->nheaders] = line;
        r->hvalue[r->nheaders] = v;
        r->nheaders++;
    }
}

/* 1 when the comma-separated header value list contains token (any case). */
static int has_token_ci(const char *list, const char *token)
{
    size_t n = strlen(token);

    for (const char *p = list; *p != '\0'; p++)
        if (strncasecmp(p, token, n) == 0 && (p == list || p[-1] == ' ' || p[-1] == ',') &&
            (p[n] == '\0' || p[n] == ',' || p[n] == ' ' || p[n] == ';'))
            return 1;
    return 0;
}

/* Parses a whole reply (raw, len bytes) into r. 0 or -1 with r->err set. */
static int parse_reply(const char *raw, size_t len, struct h_resp *r)
{
    const char *end = NULL, *rest;
    const char *te, *cl;
    size_t hlen, avail;
    char *eol;
    int status;

    for (size_t i = 0; i + 3 < len; i++) {
        if (memcmp(raw + i, "\r\n\r\n", 4) == 0) {
            end = raw + i;
            break;
        }
    }
    if (end == NULL) {
        snprintf(r->err, sizeof r->err, "reply without a header end (%zu bytes)", len);
        return -1;
    }
    hlen = (size_t)(end - raw);
    if ((r->head = malloc(hlen + 1)) == NULL)
        goto nomem;
    memcpy(r->head, raw, hlen);
    r->head[hlen] = '\0';
    if (sscanf(r->head, "HTTP/1.%*1[01] %3d", &status) != 1 || status < 100) {
        snprintf(r->err, sizeof r->err, "bad status line");
        return -1;
    }
    if ((eol = strstr(r->head, "\r\n")) != NULL)
        split_headers(r, eol + 2);
    rest = end + 4;
    avail = len - (size_t)(rest - raw);
    te = h_resp_header(r, "Transfer-Encoding");
    cl = h_resp_header(r, "Content-Length");
    if (te != NULL && has_token_ci(te, "chunked")) {
        if (dechunk(rest, avail, &r->body, &r->body_len) != 0) {
            snprintf(r->err, sizeof r->err, "malformed chunked body");
            return -1;
        }
    } else {
        size_t want = avail;

        if (cl != NULL) {
            want = (size_t)strtoull(cl, NULL, 10);
            if (want > avail) {
                snprintf(r->err, sizeof r->err, "body truncated: %zu of %zu bytes", avail, want);
                return -1;
            }
        }
        if ((r->body = malloc(want + 1)) == NULL)
            goto nomem;
        memcpy(r->body, rest, want);
        r->body[want] = '\0';
        r->body_len = want;
    }
    r->status = status;
    return 0;
nomem:
    snprintf(r->err, sizeof r->err, "out of memory");
    return -1;
}

/* Resets out so that body is "" and status 0, keeping err. */
static int fail_reply(struct h_resp *out)
{
    char err[sizeof out->err];

    memcpy(err, out->err, sizeof err);
    h_resp_free(out);
    memcpy(out->err, err, sizeof err);
    out->body = calloc(1, 1);
    return -1;
}

int h_http_raw(int port, const char *req, size_t len, struct h_resp *out)
{
    char *raw = NULL;
    size_t rawlen = 0;
    int fd, rc = -1;

    memset(out, 0, sizeof *out);
    if ((fd = connect_local(port, out->err, sizeof out->err)) < 0)
        return fail_reply(out);
    if (send_all(fd, req, len, out->err, sizeof out->err) == 0 &&
        recv_all(fd, &raw, &rawlen, out->err, sizeof out->err) == 0)
        rc = parse_reply(raw, rawlen, out);
    close(fd);
    free(raw);
    return rc == 0 ? 0 : fail_reply(out);
}

/* 1 when headers already carry an Authorization header. */
static int has_authorization(const char *const *headers)
{
    size_t n = strlen("Authorization:");

    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        if (strncasecmp(headers[i], "Authorization:", n) == 0)
            return 1;
    return 0;
}

int h_http(int port, const char *method, const char *path,
           const char *const *headers, const char *body, size_t body_len,
           struct h_resp *out)
{
    return h_http_key(port, has_authorization(headers) ? NULL : H_OPERATOR_KEY, method, path,
                      headers, body, body_len, out);
}

int h_http_key(int port, const char *key, const char *method, const char *path,
               const char *const *headers, const char *body, size_t body_len,
               struct h_resp *out)
{
    size_t hlen = 256 + strlen(method) + strlen(path) + (key != NULL ? strlen(key) : 0);
    int with_length = body != NULL ||
                      (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0);
    char *req;
    size_t n;
    int rc;

    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        hlen += strlen(headers[i]) + 2;
    if ((req = malloc(hlen + body_len)) == NULL) {
        memset(out, 0, sizeof *out);
        snprintf(out->err, sizeof out->err, "out of memory");
        return fail_reply(out);
    }
    n = (size_t)snprintf(req, hlen, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                         "Connection: close\r\n", method, path, port);
    if (key != NULL)
        n += (size_t)snprintf(req + n, hlen - n, "Authorization: Bearer %s\r\n", key);
    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        n += (size_t)snprintf(req + n, hlen - n, "%s\r\n", headers[i]);
    if (with_length)
        n += (size_t)snprintf(req + n, hlen - n, "Content-Length: %zu\r\n", body_len);
    n += (size_t)snprintf(req + n, hlen - n, "\r\n");
    if (body != NULL && body_len > 0)
        memcpy(req + n, body, body_len);
    rc = h_http_raw(port, req, n + (body != NULL ? body_len : 0), out);
    free(req);
    return rc;
}

const char *h_resp_header(const struct h_resp *r, const char *name)
{
    for (size_t i = 0; r != NULL && i < r->nheaders; i++)
        if (strcasecmp(r->hname[i], name) == 0)
            return r->hvalue[i];
    return NULL;
}

int h_resp_is_json(const struct h_resp *r)
{
    const char *ct = h_resp_header(r, "Content-Type");
    size_t n = strlen("application/json");

    return ct != NULL && strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

void h_resp_free(struct h_resp *r)
{
    if (r == NULL)
        return;
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* ---- callbacks ----------------------------------------------------------- */

void h_sign(const char *secret, const char *ts, const char *body, size_t len,
            char out[H_SIG_HEX_LEN + 1])
{
    size_t tlen = strlen(ts);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    unsigned char *msg = malloc(tlen + 1 + len + 1);

    out[0] = '\0';
    ck_assert_msg(msg != NULL, "out of memory");
    memcpy(msg, ts, tlen);
    msg[tlen] = '.';
    if (len > 0)
        memcpy(msg + tlen + 1, body, len);
    ck_assert_msg(HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, tlen + 1 + len,
                       mac, &maclen) != NULL && maclen == 32, "HMAC-SHA256 failed");
    free(msg);
    for (unsigned int i = 0; i < maclen; i++)
        snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

int h_post_callback(int port, const char *secret, long long ts_s,
                    const char *body, size_t len, struct h_resp *out)
{
    char ts[32], sig[H_SIG_HEX_LEN + 1], ts_hdr[64], sig_hdr[96];
    const char *headers[] = { "Content-Type: application/json", ts_hdr, sig_hdr, NULL };

    snprintf(ts, sizeof ts, "%lld", ts_s);
    h_sign(secret, ts, body, len, sig);
    snprintf(ts_hdr, sizeof ts_hdr, "X-Timestamp: %s", ts);
    snprintf(sig_hdr, sizeof sig_hdr, "X-Signature: %s", sig);
    return h_http(port, "POST", "/pay/callback", headers, body, len, out);
}

size_t h_callback_body(char *buf, size_t bufsz, const char *order_no,
                       const char *pay_no, const char *amount)
{
    int n = snprintf(buf, bufsz, "{\"order_no\":\"%s\",\"pay_no\":\"%s\",\"amount\":\"%s\"}",
                     order_no, pay_no, amount);

    ck_assert_msg(n > 0 && (size_t)n < bufsz, "callback body too long");
    return (size_t)n;
}

int h_callback(int port, const char *order_no, const char *pay_no,
               const char *amount, struct h_resp *out)
{
    char body[512];
    size_t len = h_callback_body(body, sizeof body, order_no, pay_no, amount);

    return h_post_callback(port, H_SECRET, (long long)time(NULL), body, len, out);
}

/* ---- JSON bodies --------------------------------------------------------- */

char *h_json_get_str(const char *body, const char *key)
{
    cJSON *root = body != NULL ? cJSON_Parse(body) : NULL;
    const cJSON *v = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, key) : NULL;
    char *s = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;

    cJSON_Delete(root);
    return s;
}

int h_json_get_bool(const char *body, const char *key)
{
    cJSON *root = body != NULL ? cJSON_Parse(body) : NULL;
    const cJSON *v = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, key) : NULL;
    int b = cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;

    cJSON_Delete(root);
    return b;
}

int h_json_is_object(const char *body)
{
    cJSON *root = body != NULL ? cJSON_Parse(body) : NULL;
    int obj = cJSON_IsObject(root);

    cJSON_Delete(root);
    return obj;
}

int h_json_eq_str(const char *body, const char *key, const char *want)
{
    char *s = h_json_get_str(body, key);
    int eq = s != NULL && strcmp(s, want) == 0;

    free(s);
    return eq;
}

static int is_upper_snake(const char *s)
{
    if (s == NULL || !(*s >= 'A' && *s <= 'Z'))
        return 0;
    for (; *s != '\0'; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

const char *h_check_error(const struct h_resp *r, int status, const char *code)
{
    static _Thread_local char why[768];
    const char *body = r->body != NULL ? r->body : "";
    char *got_code = NULL, *msg = NULL;

    why[0] = '\0';
    if (r->status != status) {
        snprintf(why, sizeof why, "expected HTTP %d, got %d%s%s: %.400s", status,
                 r->status, r->err[0] ? " " : "", r->err, body);
        return why;
    }
    if (!h_resp_is_json(r)) {
        snprintf(why, sizeof why, "expected Content-Type application/json, got %s: %.400s",
                 h_resp_header(r, "Content-Type") ? h_resp_header(r, "Content-Type")
                                                  : "(none)", body);
        return why;
    }
    got_code = h_json_get_str(body, "code");
    msg = h_json_get_str(body, "message");
    if (code != NULL && (got_code == NULL || strcmp(got_code, code) != 0))
        snprintf(why, sizeof why, "expected code %s: %.400s", code, body);
    else if (code == NULL && !is_upper_snake(got_code))
        snprintf(why, sizeof why, "expected an UPPER_SNAKE code: %.400s", body);
    else if (msg == NULL || msg[0] == '\0')
        snprintf(why, sizeof why, "expected a non-empty message: %.400s", body);
    free(got_code);
    free(msg);
    return why[0] != '\0' ? why : NULL;
}

/* ---- MariaDB ------------------------------------------------------------- */

/* Connects to paycallback_test with bounded lock waits, so a test blocked
 * by a lock the server forgot to release fails instead of hanging. */
static MYSQL *db_open(void)
{
    unsigned int connect_s = H_DB_CONNECT_TIMEOUT_S, io_s = H_DB_TIMEOUT_S;
    char err[256];
    MYSQL *m = mysql_init(NULL);

    ck_assert_msg(m != NULL, "mysql_init: out of memory");
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    if (mysql_real_connect(m, H_HOST, test_env("PCB_TEST_MYSQL_USER", H_DB_USER),
                           test_env("PCB_TEST_MYSQL_PASSWORD", H_DB_PASSWORD),
                           test_env("PCB_TEST_MYSQL_DB", H_TEST_DB),
                           test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT), NULL, 0) == NULL ||
        mysql_query(m, "SET SESSION lock_wait_timeout = " H_DB_LOCK_WAIT_S ", "
                       "innodb_lock_wait_timeout = " H_DB_LOCK_WAIT_S) != 0) {
        snprintf(err, sizeof err, "%s", mysql_error(m));
        mysql_close(m);
        ck_abort_msg("cannot connect to mysql %s:%u/%s: %s", H_HOST,
                     test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT),
                     test_env("PCB_TEST_MYSQL_DB", H_TEST_DB), err);
    }
    return m;
}

/* Runs sql on m and asserts success; closes m first when it fails. Any
 * result set is returned (free it with mysql_free_result), else NULL. */
static MYSQL_RES *db_run(MYSQL *m, const char *sql)
{
    char err[256];
    MYSQL_RES *res;

    if (mysql_query(m, sql) != 0) {
        snprintf(err, sizeof err, "%s", mysql_error(m));
        mysql_close(m);
        ck_abort_msg("sql failed: %s: %s", sql, err);
    }
    res = mysql_store_result(m);
    if (res == NULL && mysql_field_count(m) != 0) {
        snprintf(err, sizeof err, "%s", mysql_error(m));
        mysql_close(m);
        ck_abort_msg("sql result failed: %s: %s", sql, err);
    }
    return res;
}

void h_db_exec(const char *fmt, ...)
{
    va_list ap;
    char *sql;
    MYSQL *m;

    va_start(ap, fmt);
    sql = vformat(fmt, ap);
    va_end(ap);
    ck_assert_msg(sql != NULL, "out of memory");
    m = db_open();
    mysql_free_result(db_run(m, sql));
    mysql_close(m);
    free(sql);
}

/* The first column of the first row of sql, malloc'd, or NULL. */
static char *db_scalar(const char *sql)
{
    MYSQL *m = db_open();
    MYSQL_RES *res = db_run(m, sql);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    char *s = row != NULL && row[0] != NULL ? strdup(row[0]) : NULL;

    mysql_free_result(res);
    mysql_close(m);
    return s;
}

long long h_db_scalar_ll(const char *fmt, ...)
{
    va_list ap;
    char *sql, *s;
    long long v;

    va_start(ap, fmt);
    sql = vformat(fmt, ap);
    va_end(ap);
    ck_assert_msg(sql != NULL, "out of memory");
    s = db_scalar(sql);
    free(sql);
    v = s != NULL ? strtoll(s, NULL, 10) : -1;
    free(s);
    return v;
}

char *h_db_scalar_str(const char *fmt, ...)
{
    va_list ap;
    char *sql, *s;

    va_start(ap, fmt);
    sql = vformat(fmt, ap);
    va_end(ap);
    ck_assert_msg(sql != NULL, "out of memory");
    s = db_scalar(sql);
    free(sql);
    return s;
}

void h_db_reset(void)
{
    static const char *const sql[] = {
        "TRUNCATE TABLE orders",
        "TRUNCATE TABLE payment_record",
        "TRUNCATE TABLE outbox",
        "TRUNCATE TABLE idem_token",
        "TRUNCATE TABLE audit_log",
        "TRUNCATE TABLE idem_key",
        "TRUNCATE TABLE pay_no_registry",
        "TRUNCATE TABLE checkout_registry",
        "TRUNCATE TABLE stock",
        "INSERT INTO stock (sku, price, num) VALUES "
        "('SHOE-42', 899.00, 100), ('SOCK-01', 19.90, 500), ('HAT-7', 129.50, 10)",
    };
    const char *db = test_env("PCB_TEST_MYSQL_DB", H_TEST_DB);
    char use[160];
    MYSQL *m = db_open();

    /* The second shard's database first, then back to the test database. */
    for (int pass = 0; pass < 2; pass++) {
        snprintf(use, sizeof use, pass == 0 ? "USE `%s" H_SHARD2_SUFFIX "`" : "USE `%s`", db);
        mysql_free_result(db_run(m, use));
        for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
            mysql_free_result(db_run(m, sql[i]));
    }
    mysql_close(m);
}

const char *h_shards_env(void)
{
    static char env[512];
    const char *db = test_env("PCB_TEST_MYSQL_DB", H_TEST_DB);
    unsigned int port = test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT);

    snprintf(env, sizeof env, "PAYCALLBACK_MYSQL_SHARDS=1=" H_HOST ":%u/%s,2=" H_HOST ":%u/%s"
             H_SHARD2_SUFFIX, port, db, port, db);
    return env;
}

int h_shard_place(const char *key)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    uint64_t h = 0;

    SHA256((const unsigned char *)key, strlen(key), md);
    for (int i = 0; i < 8; i++)
        h = (h << 8) | md[i];
    return (int)(h % 2) + 1;
}

const char *h_shard_db(int id)
{
    static char db1[64], db2[80];

    copy_str(db1, sizeof db1, test_env("PCB_TEST_MYSQL_DB", H_TEST_DB));
    snprintf(db2, sizeof db2, "%s" H_SHARD2_SUFFIX, db1);
    return id == 1 ? db1 : db2;
}

const char *h_shards_half_down_env(void)
{
    static char env[512];
    const char *db = test_env("PCB_TEST_MYSQL_DB", H_TEST_DB);
    unsigned int port = test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT);

    snprintf(env, sizeof env, "PAYCALLBACK_MYSQL_SHARDS=1=" H_HOST ":%u/%s,2=" H_HOST ":1/%s"
             H_SHARD2_SUFFIX, port, db, db);
    return env;
}

void h_temp_file(char path[H_TEMP_PATH_MAX], const char *text)
{
    size_t len = strlen(text);
    int fd;

    snprintf(path, H_TEMP_PATH_MAX, "/tmp/paycallback-test-XXXXXX");
    fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp: %s", strerror(errno));
    ck_assert_msg(write(fd, text, len) == (ssize_t)len, "write %s: %s", path, strerror(errno));
    close(fd);
}

void h_db_insert_order_in(const char *order_no, const char *amount, const char *currency)
{
    h_db_exec("INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, currency, "
              "status) VALUES ('%s', 'u1001', LEFT('req-%s', 64), 'SHOE-42', 1, %s, '%s', 1)",
              order_no, order_no, amount, currency);
}

void h_db_insert_order(const char *order_no, const char *user_id,
                       const char *amount, int status)
{
    h_db_exec("INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status) "
              "VALUES ('%s', '%s', LEFT('req-%s', 64), 'SHOE-42', 1, %s, %d)",
              order_no, user_id, order_no, amount, status);
}

struct h_db {
    MYSQL *m;
};

struct h_db *h_db_open(void)
{
    struct h_db *db = malloc(sizeof *db);

    ck_assert_msg(db != NULL, "out of memory");
    db->m = db_open();
    return db;
}

void h_db_sql(struct h_db *db, const char *fmt, ...)
{
    va_list ap;
    char *sql;

    va_start(ap, fmt);
    sql = vformat(fmt, ap);
    va_end(ap);
    ck_assert_msg(sql != NULL, "out of memory");
    mysql_free_result(db_run(db->m, sql));
    free(sql);
}

void h_db_close(struct h_db *db)
{
    if (db == NULL)
        return;
    mysql_close(db->m);
    free(db);
}

/* ---- Redis --------------------------------------------------------------- */

/* A context on db 9, or NULL with the reason in err. */
static redisContext *rds_open(char *err, size_t errsz)
{
    struct timeval tv = { H_REDIS_TIMEOUT_S, 0 };
    unsigned int port = test_port("PCB_TEST_REDIS_PORT", H_REDIS_PORT);
    redisContext *c = redisConnectWithTimeout(H_HOST, (int)port, tv);
    redisReply *r = NULL;

    if (c == NULL || c->err) {
        snprintf(err, errsz, "cannot connect to redis %s:%u: %s", H_HOST, port,
                 c != NULL ? c->errstr : "out of memory");
        goto fail;
    }
    redisSetTimeout(c, tv);
    r = redisCommand(c, "SELECT %d", H_REDIS_DB);
    if (r == NULL || r->type != REDIS_REPLY_STATUS) {
        snprintf(err, errsz, "redis SELECT %d failed: %s", H_REDIS_DB,
                 r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        goto fail;
    }
    freeReplyObject(r);
    return c;
fail:
    freeReplyObject(r);
    redisFree(c);
    return NULL;
}

void h_redis_flush(void)
{
    char err[256] = "";
    redisContext *c = rds_open(err, sizeof err);
    redisReply *r = c != NULL ? redisCommand(c, "FLUSHDB") : NULL;
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;

    if (c != NULL && !ok)
        snprintf(err, sizeof err, "redis FLUSHDB failed: %s",
                 r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
    freeReplyObject(r);
    redisFree(c);
    ck_assert_msg(ok, "%s", err);
}

redisReply *h_redis_cmd(const char *fmt, ...)
{
    char err[256];
    redisContext *c = rds_open(err, sizeof err);
    redisReply *r;
    va_list ap;

    if (c == NULL)
        return NULL;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

/* ---- private services ---------------------------------------------------- */

void h_services(const char *cmd)
{
    char root[PATH_MAX], script[PATH_MAX + 32];
    char *const argv[] = { script, (char *)cmd, NULL };
    struct envv env = { 0 };
    int logfd = open_log(), wstatus = 0;
    pid_t pid;

    root_dir(root, sizeof root);
    snprintf(script, sizeof script, "%s/scripts/services.sh", root);
    ck_assert_msg(logfd >= 0, "cannot open var/test-logs: %s", strerror(errno));
    ck_assert_msg(base_env(&env) == 0, "out of memory");
    log_line(logfd, "=== harness: %s %s ===\n", script, cmd);
    pid = fork();
    if (pid == 0) {
        /* Daemons it starts must not hold the runner's stdout open. */
        child_stdio(logfd);
        if (chdir(root) != 0)
            _exit(127);
        execve(script, argv, env.v);
        fprintf(stderr, "harness: cannot exec %s: %s\n", script, strerror(errno));
        _exit(127);
    }
    close(logfd);
    env_free(&env);
    ck_assert_msg(pid > 0, "fork: %s", strerror(errno));
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    ck_assert_msg(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
                  "scripts/services.sh %s failed (status 0x%x); see var/test-logs/",
                  cmd, (unsigned)wstatus);
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

void h_run(const char *const *args, const char *const *extra_env, int timeout_ms,
           struct h_run *out)
{
    char root[PATH_MAX], bin[PATH_MAX + 64];
    char *argv[H_HEADERS_MAX];
    struct envv env = { 0 };
    int ofd = temp_output(), efd = temp_output(), n = 0;
    pid_t pid;

    memset(out, 0, sizeof *out);
    root_dir(root, sizeof root);
    server_bin(root, bin, sizeof bin);
    ck_assert_msg(access(bin, X_OK) == 0, "cannot execute %s: %s", bin, strerror(errno));
    ck_assert_msg(ofd >= 0 && efd >= 0, "cannot create temporary files: %s", strerror(errno));
    ck_assert_msg(server_env(&env, extra_env) == 0, "out of memory");
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
    env_free(&env);
    ck_assert_msg(pid > 0, "fork: %s", strerror(errno));
    out->status = reap_pid(pid, timeout_ms);
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

/* ---- test tools ---------------------------------------------------------- */

#define H_TOOL_ARGS_MAX     16
#define H_TOOL_START_MS     10000

/* The number in the file at path, or 0 while it is missing or empty. */
static int read_int_file(const char *path)
{
    FILE *f = fopen(path, "r");
    int v = 0;

    if (f == NULL)
        return 0;
    if (fscanf(f, "%d", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

void h_tool_start(struct h_tool *t, const char *script, const char *const *extra_args)
{
    char root[PATH_MAX], path[PATH_MAX + 64], portfile[128];
    const char *argv[8 + H_TOOL_ARGS_MAX];
    int n = 0;

    root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/tests/tools/%s", root, script);
    snprintf(t->dir, sizeof t->dir, "/tmp/pcb-tool-XXXXXX");
    ck_assert_msg(mkdtemp(t->dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(t->log, sizeof t->log, "%s/log.jsonl", t->dir);
    snprintf(portfile, sizeof portfile, "%s/port", t->dir);
    argv[n++] = "python3";
    argv[n++] = path;
    argv[n++] = "--port-file";
    argv[n++] = portfile;
    argv[n++] = "--log";
    argv[n++] = t->log;
    for (int i = 0; extra_args != NULL && extra_args[i] != NULL; i++) {
        ck_assert_msg(i < H_TOOL_ARGS_MAX, "too many arguments for %s", script);
        argv[n++] = extra_args[i];
    }
    argv[n] = NULL;
    t->port = 0;
    t->pid = fork();
    ck_assert_int_ge(t->pid, 0);
    if (t->pid == 0) {
        execvp("python3", (char *const *)argv);
        _exit(127);
    }
    h_await((t->port = read_int_file(portfile)) > 0, H_TOOL_START_MS, "%s did not start", script);
}

void h_tool_stop(struct h_tool *t)
{
    char cmd[160];

    if (t->pid > 0) {
        kill(t->pid, SIGKILL);
        waitpid(t->pid, NULL, 0);
        t->pid = 0;
    }
    if (t->dir[0] == '\0')
        return;
    snprintf(cmd, sizeof cmd, "rm -rf %s", t->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", t->dir);
    t->dir[0] = '\0';
}

int h_tool_log_lines(const struct h_tool *t, const char *a, const char *b)
{
    FILE *f = fopen(t->log, "r");
    char line[1024];
    int n = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (strstr(line, a) != NULL && (b == NULL || strstr(line, b) != NULL))
            n++;
    fclose(f);
    return n;
}

/* ---- the suite log ------------------------------------------------------- */

/* The whole suite log, malloc'd and NUL-terminated, or NULL. */
static char *read_log(void)
{
    char root[PATH_MAX], suite[128], path[PATH_MAX + 160];
    struct stat st;
    char *buf = NULL;
    ssize_t n = 0, got;
    int fd;

    root_dir(root, sizeof root);
    suite_name(suite, sizeof suite);
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
    long long deadline = now_us() + (long long)timeout_ms * 1000;
    char *log, *line;

    for (;;) {
        log = read_log();
        line = find_line(log, parts);
        free(log);
        if (line != NULL || now_us() >= deadline)
            return line;
        sleep_ms(H_POLL_MS);
    }
}

/* ---- storms -------------------------------------------------------------- */

struct storm {
    h_storm_fn fn;
    void *arg;
    int total;
    atomic_int next;              /* next call index to hand out */
    atomic_int errors;
    long long *lat_us;            /* per call */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;                       /* 0 wait, 1 run, -1 give up */
};

/* Waits for the start signal, then takes call indices until none remain. */
static void *storm_worker(void *p)
{
    struct storm *s = p;
    int go;

    pthread_mutex_lock(&s->mu);
    while (s->go == 0)
        pthread_cond_wait(&s->cv, &s->mu);
    go = s->go;
    pthread_mutex_unlock(&s->mu);
    if (go < 0)
        return NULL;
    for (;;) {
        int i = atomic_fetch_add(&s->next, 1);
        long long t0;

        if (i >= s->total)
            break;
        t0 = now_us();
        if (s->fn(i, s->arg) != 0)
            atomic_fetch_add(&s->errors, 1);
        s->lat_us[i] = now_us() - t0;
    }
    return NULL;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile q (0..1] of n sorted values. */
static long long percentile(const long long *sorted, int n, double q)
{
    int k = (int)(q * n + 0.999999);

    if (n == 0)
        return 0;
    if (k < 1)
        k = 1;
    return sorted[(k > n ? n : k) - 1];
}

int h_storm(int threads, int total, h_storm_fn fn, void *arg,
            struct h_storm_stats *st)
{
    struct storm s = { .fn = fn, .arg = arg, .total = total };
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    int started = 0, rc = -1;
    long long t0, t1;

    memset(st, 0, sizeof *st);
    s.lat_us = calloc((size_t)(total > 0 ? total : 1), sizeof *s.lat_us);
    atomic_init(&s.next, 0);
    atomic_init(&s.errors, 0);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    if (tid == NULL || s.lat_us == NULL || threads < 1 || total < 0)
        goto out;
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, storm_worker, &s) != 0)
            break;
    pthread_mutex_lock(&s.mu);
    s.go = started == threads ? 1 : -1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    t0 = now_us();
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    t1 = now_us();
    if (started != threads)
        goto out;
    qsort(s.lat_us, (size_t)total, sizeof *s.lat_us, cmp_ll);
    st->total = total;
    st->errors = atomic_load(&s.errors);
    st->seconds = (double)(t1 - t0) / 1e6;
    st->rps = st->seconds > 0 ? total / st->seconds : 0;
    st->p50_us = percentile(s.lat_us, total, 0.50);
    st->p99_us = percentile(s.lat_us, total, 0.99);
    st->max_us = total > 0 ? s.lat_us[total - 1] : 0;
    rc = 0;
out:
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    free(s.lat_us);
    free(tid);
    return rc;
}

/* Integration suites share one test database and one Redis db, and each
 * empties them between tests, so two suites must never run at once (two
 * terminals, or a benchmark beside a test run). Every suite takes this
 * lock before main and holds it until it exits; the next one waits. */
__attribute__((constructor))
static void h_exclusive(void)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    const char *root = getenv("PCB_ROOT");
    int fd;

    snprintf(dir, sizeof(dir), "%.4000s/var", root && *root ? root : ".");
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/test.lock", dir);
    if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
        return;                                   /* no lock: run anyway */
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    /* fd stays open for the life of the process: the lock goes with it. */
}

/* ---- tokens and orders --------------------------------------------------- */

static int is_token(const char *s)
{
    size_t n = 0;

    for (; s != NULL && s[n] != '\0'; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return 0;
    return s != NULL && n == H_TOKEN_BUF - 1;
}

int h_token_try(int port, char token[H_TOKEN_BUF], int *status)
{
    struct h_resp r;
    char *t;
    int ok;

    token[0] = '\0';
    h_http(port, "GET", "/token/apply", NULL, NULL, 0, &r);
    if (status != NULL)
        *status = r.status;
    t = r.status == 200 ? h_json_get_str(r.body, "token") : NULL;
    if ((ok = is_token(t)))
        memcpy(token, t, H_TOKEN_BUF);
    free(t);
    h_resp_free(&r);
    return ok ? 0 : -1;
}

void h_token_apply(int port, char token[H_TOKEN_BUF])
{
    int status = 0;

    ck_assert_msg(h_token_try(port, token, &status) == 0,
                  "GET /token/apply: expected 200 and a 32-hex token, got HTTP %d", status);
}

int h_order_create(int port, const char *token, const char *user_id,
                   const char *request_id, const char *sku, int quantity,
                   struct h_resp *out)
{
    char body[512], hdr[96];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };
    int n = snprintf(body, sizeof body,
                     "{\"user_id\":\"%s\",\"request_id\":\"%s\",\"sku\":\"%s\",\"quantity\":%d}",
                     user_id, request_id, sku, quantity);

    snprintf(hdr, sizeof hdr, "Idempotent-Token: %s", token != NULL ? token : "");
    if (token == NULL)
        headers[1] = NULL;
    if (n < 0 || (size_t)n >= sizeof body) {
        memset(out, 0, sizeof *out);
        snprintf(out->err, sizeof out->err, "order body too long");
        return -1;
    }
    return h_http(port, "POST", "/order/create", headers, body, (size_t)n, out);
}

struct h_server *h_srv;

void h_fixture_server_up_env(const char *const *extra_env)
{
    h_srv = h_server_start(extra_env);
    ck_assert_msg(h_srv != NULL, "cannot start the server; see var/test-logs/");
}

void h_fixture_server_up_config(const char *config_path, const char *const *extra_env)
{
    h_srv = h_server_start_config(config_path, extra_env);
    ck_assert_msg(h_srv != NULL, "cannot start the server with %s; see var/test-logs/",
                  config_path);
}

void h_fixture_server_up(void)
{
    h_fixture_server_up_env(NULL);
}

void h_fixture_server_down(void)
{
    int st = h_server_stop(h_srv);

    h_srv = NULL;
    if (st != 0)
        fprintf(stderr, "server stopped with status %d\n", st);
}

int h_port(void)
{
    return h_server_port(h_srv);
}

void h_fixture_clean(void)
{
    h_db_reset();
    h_redis_flush();
}

void h_fixture_mysql_back(void)
{
    h_services("start-mysql");
}

TCase *h_tcase_with(const char *name, int timeout_s, void (*up)(void), void (*down)(void))
{
    TCase *tc = tcase_create(name);

    tcase_add_unchecked_fixture(tc, up, down);
    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_set_timeout(tc, timeout_s);
    return tc;
}

long long h_metric(const char *series)
{
    struct h_resp r;
    const char *p;
    long long v = -1;

    h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, &r);
    ck_assert_int_eq(200, r.status);
    /* A sample line starts with the series; "# HELP name ..." does not. */
    for (p = r.body; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, series, strlen(series)) == 0 && p[strlen(series)] == ' ') {
            v = strtoll(p + strlen(series) + 1, NULL, 10);
            break;
        }
    h_resp_free(&r);
    return v;
}

long long h_payment_records(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM payment_record");
}

long long h_order_status(const char *order_no)
{
    return h_db_scalar_ll("SELECT status FROM orders WHERE order_no = '%s'", order_no);
}

long long h_outbox_rows(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM outbox");
}

void h_assert_nothing_paid(void)
{
    ck_assert_int_eq(0, h_payment_records());
    ck_assert_int_eq(0, h_outbox_rows());
}

TCase *h_tcase(const char *name, int timeout_s)
{
    return h_tcase_with(name, timeout_s, h_fixture_server_up, h_fixture_server_down);
}

/* ---- raw connections ----------------------------------------------------- */

int h_raw_connect(int port, const char *src_ip, int recv_timeout_ms)
{
    struct timeval tv = { recv_timeout_ms / 1000, (recv_timeout_ms % 1000) * 1000 };
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    struct sockaddr_in src = { .sin_family = AF_INET };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (src_ip != NULL && (inet_pton(AF_INET, src_ip, &src.sin_addr) != 1 ||
                           bind(fd, (struct sockaddr *)&src, sizeof src) != 0)) {
        close(fd);
        return -1;
    }
    while (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno == EINTR)
            continue;
        close(fd);
        return -1;
    }
    return fd;
}

size_t h_raw_read_all(int fd, char *buf, size_t sz, int *eof)
{
    size_t len = 0;
    ssize_t n;

    *eof = 0;
    while (len + 1 < sz) {
        n = recv(fd, buf + len, sz - 1 - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            *eof = 1;
            break;
        }
        if (n < 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return len;
}

int h_raw_closed(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);

    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

long long h_now_us(void)
{
    return now_us();
}

void h_fixture_sharded_up(void)
{
    const char *env[] = { h_shards_env(), NULL };

    h_fixture_server_up_env(env);
}

void h_fixture_sharded_half_down_up(void)
{
    const char *env[] = { h_shards_half_down_env(), "PAYCALLBACK_MYSQL_CONNECT_TIMEOUT_MS=200",
                          NULL };

    h_fixture_server_up_env(env);
}
