/* internal.h - what the harness files share and the tests do not see: the
 * settings every part reads, the environment vector of a child process, and
 * the helpers of util.c and process.c that other parts call. The tests
 * include ../harness.h only. Nothing here uses src/: the harness tests the
 * contract. The helpers are hi_*, so that no name of src/, linked into the
 * same binaries, can ever collide with one. */
#ifndef PAYCALLBACK_TEST_HARNESS_INTERNAL_H
#define PAYCALLBACK_TEST_HARNESS_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#define H_POLL_MS 10
#define H_FD_CLOSE_MAX 65536
#define H_TEST_DB "paycallback_test"
#define H_DB_USER "paycallback"
#define H_DB_PASSWORD "paycallback"
#define H_MYSQL_PORT 3307
#define H_REDIS_PORT 6380
#define H_HOST "127.0.0.1"

/* A growable NULL-terminated environment vector of malloc'd "KEY=VAL". */
struct envv {
    char **v;
    size_t n, cap;
};

long long hi_now_us(void);
void hi_sleep_ms(int ms);
char *hi_vformat(const char *fmt, va_list ap);
void hi_copy_str(char *buf, size_t sz, const char *src);
void hi_root_dir(char *buf, size_t sz);
void hi_suite_name(char *buf, size_t sz);
int hi_open_log(void);
void hi_log_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hi_child_stdio(int logfd);
const char *hi_test_env(const char *name, const char *dflt);
unsigned int hi_test_port(const char *name, unsigned int dflt);
void hi_env_free(struct envv *e);
int hi_base_env(struct envv *e);
int hi_server_env(struct envv *e, const char *const *extra_env);
void hi_server_bin(const char *root, char *buf, size_t sz);
int hi_reap_pid(pid_t pid, int timeout_ms);
/* Empties shard_map and shard_identity in the test database and its _s2
 * twin (db.c). */
void hi_forget_shard_maps(void);

/* Runs `paycallback shards init` over the two test shards (h_shards_env):
 * gives each its identity, as an operator does before a sharded start. A
 * refusal (a test made a shard blank or foreign on purpose) is left to the
 * start that follows. */
void hi_shards_init(void);

#endif
