/* internal.h - what the harness files share and the tests do not see: the
 * settings every part reads, the environment vector of a child process, and
 * the helpers of util.c and process.c that other parts call. The tests
 * include ../harness.h only. Nothing here uses src/: the harness tests the
 * contract. */
#ifndef PAYCALLBACK_TEST_HARNESS_INTERNAL_H
#define PAYCALLBACK_TEST_HARNESS_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#define H_POLL_MS               10
#define H_FD_CLOSE_MAX          65536
#define H_TEST_DB               "paycallback_test"
#define H_DB_USER               "paycallback"
#define H_DB_PASSWORD           "paycallback"
#define H_MYSQL_PORT            3307
#define H_REDIS_PORT            6380
#define H_HOST                  "127.0.0.1"

/* A growable NULL-terminated environment vector of malloc'd "KEY=VAL". */
struct envv {
    char **v;
    size_t n, cap;
};

long long now_us(void);
void sleep_ms(int ms);
char *vformat(const char *fmt, va_list ap);
void copy_str(char *buf, size_t sz, const char *src);
void root_dir(char *buf, size_t sz);
void suite_name(char *buf, size_t sz);
int open_log(void);
void log_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void child_stdio(int logfd);
const char *test_env(const char *name, const char *dflt);
unsigned int test_port(const char *name, unsigned int dflt);
void env_free(struct envv *e);
int base_env(struct envv *e);
int server_env(struct envv *e, const char *const *extra_env);
void server_bin(const char *root, char *buf, size_t sz);
int reap_pid(pid_t pid, int timeout_ms);
/* Empties shard_map in the test database and its _s2 twin (db.c). */
void forget_shard_maps(void);

#endif
