/* harness.h - what the integration suites share: start the real binary on an
 * ephemeral port, talk HTTP/1.1 to it over a raw socket, sign callbacks, and
 * reach into the private MariaDB (paycallback_test) and Redis (db 9) to set
 * up and inspect state. Knows the contract, not the server's code.
 *
 * Failures of the setup helpers (SQL, Redis, scripts) are Check assertions,
 * so call them from a test or a fixture. Only h_storm runs threads; the
 * function it calls must not use ck_assert.
 *
 * The one header of the harness; its parts live in harness/ (process,
 * http, callback, json, db, redis, services, tools, log, storm, orders,
 * raw, util), sharing harness/internal.h among themselves only. */
#ifndef PAYCALLBACK_TEST_HARNESS_H
#define PAYCALLBACK_TEST_HARNESS_H

#include <stddef.h>
#include <sys/types.h>
#include <check.h>
#include <hiredis.h>

#define H_SECRET "dev-secret"             /* callback secret of the shipped config */
#define H_OPERATOR_KEY "dev-operator-key" /* the key --dev gives an empty auth.keys */
#define H_HEADERS_MAX 64
#define H_RECV_TIMEOUT_S 30
#define H_SIG_HEX_LEN 64

/* ---- the server under test ---------------------------------------------- */

struct h_server;

/* Forks and execs $PCB_BIN (default build/paycallback, relative to
 * $PCB_ROOT or the current directory) with the shipped config, an
 * ephemeral port, database paycallback_test, Redis db 9 and the private
 * MySQL/Redis ports ($PCB_TEST_MYSQL_PORT, _REDIS_PORT; defaults
 * 3307 and 6380). extra_env ("KEY=VAL" strings, NULL-terminated, may be
 * NULL) is applied last and wins. stdout and stderr are appended to
 * var/test-logs/<test binary>.log. Waits until the server has written its
 * port (15 s, 90 s for an ASan build). A server of one database (no
 * PAYCALLBACK_MYSQL_SHARDS in extra_env) first empties the test databases'
 * shard maps and identities, which a sharded server left there and on
 * which it would refuse to start; a sharded one first runs `paycallback
 * shards init` over the two test shards (h_shards_env), as an operator
 * does, with mysql.cluster_id H_CLUSTER_ID. Returns the server, or NULL with the reason on stderr. Only the calling process may signal or stop it, so a
 * server started in an unchecked fixture survives Check's forked tests. */
struct h_server *h_server_start(const char *const *extra_env);

/* Same, with the config file at config_path instead of the shipped one
 * (NULL: the shipped one). */
struct h_server *h_server_start_config(const char *config_path, const char *const *extra_env);

/* The bound TCP port and the process id. */
int h_server_port(const struct h_server *s);
pid_t h_server_pid(const struct h_server *s);

/* Sends sig to the server. 0, or -1 when it has already been reaped or the
 * caller is not the process that started it. */
int h_server_signal(struct h_server *s, int sig);

/* Sends SIGTERM, waits up to 30 s (then SIGKILL) and frees s. Returns the
 * exit code, 128 + signal number if it died from a signal, or -1 (NULL s,
 * not the owner, or it had to be killed). NULL-safe. */
int h_server_stop(struct h_server *s);

/* Waits up to timeout_ms for the server to exit on its own (after a signal
 * the test sent with h_server_signal), SIGKILLs it past that, and frees s.
 * Returns the exit code, 128 + signal number if a signal ended it, or -1
 * (NULL s, not the owner, or it had to be killed). */
int h_server_wait(struct h_server *s, int timeout_ms);

/* What one run of the binary printed and how it ended. */
struct h_run {
    int status; /* exit code, 128 + signal, or -1 (timed out, killed) */
    char *out;  /* stdout, NUL-terminated, never NULL */
    char *err;  /* stderr, likewise */
};

/* Runs $PCB_BIN once with args (NULL-terminated, after argv[0]),
 * in the project root and the environment h_server_start gives the server
 * (test database, private ports) plus extra_env; stdin is /dev/null. Waits
 * up to timeout_ms, then kills it. Fills out; free it with h_run_free.
 * Asserts that the binary could be started. */
void h_run(const char *const *args, const char *const *extra_env, int timeout_ms,
           struct h_run *out);

/* h_run, sending sig to the binary once when() returns non-zero (polled
 * every few milliseconds; a binary that ends first gets no signal). */
void h_run_signal(const char *const *args, const char *const *extra_env, int timeout_ms,
                  int (*when)(void), int sig, struct h_run *out);

/* Frees what r owns. NULL-safe. */
void h_run_free(struct h_run *r);

/* ---- waiting -------------------------------------------------------------- */

/* Tests never sleep a fixed time: they poll a condition until a deadline.
 *     struct h_deadline d = h_deadline_in(5000);
 *     while (!condition)
 *         ck_assert_msg(h_deadline_wait(&d), "condition never held");
 * or, for an expression, h_await(condition, 5000, "why", ...). */
struct h_deadline {
    long long end_ms; /* CLOCK_MONOTONIC */
};

/* Milliseconds on the monotonic clock. */
long long h_now_ms(void);

/* The monotonic clock in microseconds, for measured (never asserted)
 * latencies. */
long long h_now_us(void);

/* A deadline timeout_ms from now. */
struct h_deadline h_deadline_in(int timeout_ms);

/* Sleeps one poll interval (10 ms, less near the end) and returns 1, or
 * returns 0 at once when the deadline has passed. The condition is thus
 * evaluated once more at the deadline before the wait gives up. */
int h_deadline_wait(struct h_deadline *d);

/* Polls cond (an expression) until it holds; fails the test with the
 * printf-style message when timeout_ms pass first. */
#define h_await(cond, timeout_ms, ...)                          \
    do {                                                        \
        struct h_deadline h_d_ = h_deadline_in(timeout_ms);     \
        while (!(cond))                                         \
            ck_assert_msg(h_deadline_wait(&h_d_), __VA_ARGS__); \
    } while (0)

/* A retrying client's pause before attempt number attempt (1, 2, ...):
 * a few milliseconds growing with attempt, spread by salt so that clients
 * do not retry in lockstep. Pacing for load generators, never a way to
 * wait for state. */
void h_client_backoff(int attempt, int salt);

/* ---- the suite log -------------------------------------------------------- */

/* Servers and scripts write to var/test-logs/<test binary>.log. Returns the
 * first line holding every string of parts (NULL-terminated), malloc'd
 * (free it), waiting up to timeout_ms for it to appear; NULL if none did.
 * The server logs a request just after replying, hence the wait. */
char *h_log_find(const char *const *parts, int timeout_ms);

/* ---- HTTP ---------------------------------------------------------------- */

/* A parsed reply. Everything points into memory the reply owns. */
struct h_resp {
    int status; /* 0 when the exchange failed (see err) */
    size_t nheaders;
    char *hname[H_HEADERS_MAX];
    char *hvalue[H_HEADERS_MAX];
    char *head; /* header block, split in place */
    char *body; /* NUL-terminated, de-chunked; never NULL after h_http */
    size_t body_len;
    char err[128]; /* why status is 0 */
};

/* Sends one request with Connection: close and reads the reply to EOF.
 * headers are "Name: value" strings, NULL-terminated, may be NULL.
 * Content-Length is sent when body is not NULL or the method is not
 * GET/HEAD. The test client acts as the operator: unless headers carry an
 * Authorization header of their own, "Authorization: Bearer
 * H_OPERATOR_KEY" is sent (open routes ignore it). out is overwritten:
 * free an earlier reply first. Returns 0, or -1 with out->status 0 and
 * the reason in out->err. */
int h_http(int port, const char *method, const char *path, const char *const *headers,
           const char *body, size_t body_len, struct h_resp *out);

/* The same with the operator key of one's choice: "Authorization: Bearer
 * key", or no Authorization header at all when key is NULL. */
int h_http_key(int port, const char *key, const char *method, const char *path,
               const char *const *headers, const char *body, size_t body_len, struct h_resp *out);

/* Sends len bytes exactly as given (for malformed requests and chunked
 * uploads) and reads the reply like h_http. */
int h_http_raw(int port, const char *req, size_t len, struct h_resp *out);

/* Value of the first header called name (case-insensitive), or NULL. */
const char *h_resp_header(const struct h_resp *r, const char *name);

/* 1 when Content-Type is application/json (parameters allowed). */
int h_resp_is_json(const struct h_resp *r);

/* Frees what r owns and zeroes it. NULL-safe, idempotent. */
void h_resp_free(struct h_resp *r);

/* ---- callbacks ----------------------------------------------------------- */

/* Lowercase hex HMAC-SHA256(secret, ts "." body) into out (65 bytes).
 * Computed here with OpenSSL, independently of src/signature.c. */
void h_sign(const char *secret, const char *ts, const char *body, size_t len,
            char out[H_SIG_HEX_LEN + 1]);

/* Posts body to /pay/callback with X-Timestamp: ts_s and the signature
 * made with secret. Returns what h_http returns. */
int h_post_callback(int port, const char *secret, long long ts_s, const char *body, size_t len,
                    struct h_resp *out);

/* Writes {"order_no":..,"pay_no":..,"amount":..} into buf. Returns its length. */
size_t h_callback_body(char *buf, size_t bufsz, const char *order_no, const char *pay_no,
                       const char *amount);

/* Posts a correctly signed callback (secret H_SECRET, timestamp now). */
int h_callback(int port, const char *order_no, const char *pay_no, const char *amount,
               struct h_resp *out);

/* ---- JSON bodies --------------------------------------------------------- */

/* The string field key of the JSON object body, malloc'd (free it), or NULL
 * when body is not an object or the field is absent or not a string. */
char *h_json_get_str(const char *body, const char *key);

/* 1 or 0 for a boolean field, -1 when absent or not a boolean. */
int h_json_get_bool(const char *body, const char *key);

/* 1 when body is a JSON object. */
int h_json_is_object(const char *body);

/* 1 when the string field key equals want. */
int h_json_eq_str(const char *body, const char *key, const char *want);

/* NULL when r is a contract error reply: HTTP status, Content-Type
 * application/json, {"code": code (any UPPER_SNAKE code when NULL),
 * "message": non-empty}. Otherwise a description of what differs (thread-
 * local buffer, valid until the next call). */
const char *h_check_error(const struct h_resp *r, int status, const char *code);

#define h_assert_status(r, want)                                                                  \
    ck_assert_msg((r)->status == (want), "expected HTTP %d, got %d%s%s: %s", (want), (r)->status, \
                  (r)->err[0] ? " " : "", (r)->err, (r)->body ? (r)->body : "")

#define h_assert_json(r)                                                                  \
    ck_assert_msg(h_resp_is_json(r), "expected application/json, got %s: %s",             \
                  h_resp_header((r), "Content-Type") ? h_resp_header((r), "Content-Type") \
                                                     : "(none)",                          \
                  (r)->body ? (r)->body : "")

#define h_assert_str(r, key, want)                                                                \
    ck_assert_msg(h_json_eq_str((r)->body, (key), (want)), "expected \"%s\":\"%s\" in %s", (key), \
                  (want), (r)->body ? (r)->body : "")

#define h_assert_bool(r, key, want)                                                               \
    ck_assert_msg(h_json_get_bool((r)->body, (key)) == (want), "expected \"%s\":%s in %s", (key), \
                  (want) ? "true" : "false", (r)->body ? (r)->body : "")

#define h_assert_error(r, status, code)                            \
    do {                                                           \
        const char *h_why_ = h_check_error((r), (status), (code)); \
        ck_assert_msg(h_why_ == NULL, "%s", h_why_);               \
    } while (0)

/* ---- MariaDB (paycallback_test) ------------------------------------------ */

/* Each call opens its own connection, so the helpers are safe in forked
 * tests and across a MySQL restart. SQL is formatted with printf rules:
 * pass trusted literals only, nothing is escaped. */

/* Runs a statement and asserts it succeeded. */
void h_db_exec(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* First column of the first row as a number; -1 for no row or NULL. */
long long h_db_scalar_ll(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* First column of the first row, malloc'd (free it); NULL for no row or NULL. */
char *h_db_scalar_str(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Empties orders, payment_record, outbox, refund, idem_token and stock, then puts
 * back the seed stock (SHOE-42, SOCK-01, HAT-7). */
void h_db_reset(void);

/* The second shard of a sharded test server is a second database on the
 * same MariaDB: the test database's name + H_SHARD2_SUFFIX (qualify table
 * names with it in h_db_exec: "paycallback_test_s2.orders"). h_db_reset
 * empties both. */
#define H_SHARD2_SUFFIX "_s2"
#define H_CLUSTER_ID "paycallback-test" /* mysql.cluster_id of every test server */
#define H_SHARD2_DB "paycallback_test" H_SHARD2_SUFFIX

/* "PAYCALLBACK_MYSQL_SHARDS=1=...,2=...": the environment entry that makes
 * a test server sharded over the test database (shard 1) and its _s2
 * twin (shard 2). A static string. */
const char *h_shards_env(void);

/* The shard id (1 or 2) of the two-shard test set that key is placed on,
 * computed with OpenSSL as shard_place_index does: the first 8 bytes of
 * SHA-256(key), big-endian, modulo 2, plus 1. */
int h_shard_place(const char *key);

/* The database of shard id (1: the test database, 2: its _s2 twin), for
 * qualified table names ("%s.orders"). A static string. */
const char *h_shard_db(int id);

/* The PAYCALLBACK_MYSQL_SHARDS entry of h_shards_env with shard 2 pointed
 * at port 1, where nothing listens: a shard that is down. Callers add
 * PAYCALLBACK_MYSQL_CONNECT_TIMEOUT_MS themselves. A static string. */
const char *h_shards_half_down_env(void);

/* Unchecked fixtures of a sharded suite: its server over both shards
 * (h_shards_env), or with shard 2 down (h_shards_half_down_env and a
 * 200 ms connect timeout, so the down shard answers fast). Stop it with
 * h_fixture_server_down. */
void h_fixture_sharded_up(void);
void h_fixture_sharded_half_down_up(void);

/* Inserts an order directly: sku SHOE-42, quantity 1, request_id
 * "req-" order_no (cut to 64 chars), the given amount ("899.00") and
 * status (1 = WAIT_PAY). */
void h_db_insert_order(const char *order_no, const char *user_id, const char *amount, int status);

/* A WAIT_PAY order of amount ("899.00") in currency ("USD"). */
void h_db_insert_order_in(const char *order_no, const char *amount, const char *currency);

/* Writes text to a new file under /tmp; its path goes in path. The caller
 * unlinks it. */
#define H_TEMP_PATH_MAX 64
void h_temp_file(char path[H_TEMP_PATH_MAX], const char *text);

/* A connection of its own, kept open across calls, so a test can hold a
 * transaction and its row locks while the server works. h_db_open and
 * h_db_sql assert success; h_db_sql discards any rows. h_db_close is
 * NULL-safe and rolls back a transaction still open. */
struct h_db;
struct h_db *h_db_open(void);
void h_db_sql(struct h_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void h_db_close(struct h_db *db);
/* h_db_sql that may fail: the MySQL error number, 0 on success. */
unsigned int h_db_try(struct h_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- Redis (db 9) -------------------------------------------------------- */

/* SELECT 9 and FLUSHDB; asserts both succeeded. */
void h_redis_flush(void);

/* Runs one command on db 9 and returns the reply (free it with
 * freeReplyObject), or NULL when Redis cannot be reached. */
redisReply *h_redis_cmd(const char *fmt, ...);

/* ---- private services ---------------------------------------------------- */

/* Runs "$ROOT/scripts/services.sh cmd" (output to the suite log) and asserts
 * it exited 0. */
void h_services(const char *cmd);

/* ---- test tools ---------------------------------------------------------- */

/* A Python or node tool of tests/tools (webhook receiver, query responder) that
 * listens on an ephemeral port and logs what it receives, one JSON object
 * a line. */
struct h_tool {
    pid_t pid;     /* 0 once stopped */
    int port;      /* the port it listens on */
    char dir[64];  /* its temporary directory */
    char log[128]; /* its log, in dir */
};

/* Runs "python3 (node for a .js script) $ROOT/tests/tools/<script> --port-file <dir>/port --log
 * <dir>/log.jsonl" followed by extra_args (NULL-terminated, may be NULL)
 * in a new temporary directory, and waits up to 10 s for the port it
 * writes. Asserts that it started. */
void h_tool_start(struct h_tool *t, const char *script, const char *const *extra_args);

/* SIGKILLs the tool, reaps it and removes its directory. Safe to call
 * again. */
void h_tool_stop(struct h_tool *t);

/* Lines of the tool's log holding a (and b, unless NULL); 0 while the log
 * does not exist. */
int h_tool_log_lines(const struct h_tool *t, const char *a, const char *b);

/* ---- load ---------------------------------------------------------------- */

/* One call of a storm: i is the call's index in [0, total). Return 0 on
 * success, anything else counts as an error. Called from many threads. */
typedef int (*h_storm_fn)(int i, void *arg);

struct h_storm_stats {
    int total;        /* calls made */
    int errors;       /* calls that returned non-zero */
    double seconds;   /* wall time of the whole storm */
    double rps;       /* total / seconds */
    long long p50_us; /* per-call latency percentiles */
    long long p99_us;
    long long max_us;
};

/* Runs total calls of fn spread over threads pthreads that start together,
 * and fills st. Returns 0, or -1 when threads could not be created. Figures
 * are for printing; never assert on them. */
int h_storm(int threads, int total, h_storm_fn fn, void *arg, struct h_storm_stats *st);

/* ---- tokens and orders --------------------------------------------------- */

#define H_TOKEN_BUF 33 /* 32 hex digits and the NUL */

/* GET /token/apply. 0 with the token copied into token, or -1 with the
 * HTTP status in *status (0 when the exchange failed; status may be NULL).
 * No assertions: safe from storm threads. */
int h_token_try(int port, char token[H_TOKEN_BUF], int *status);

/* GET /token/apply, asserting 200 and a 32-lowercase-hex token. */
void h_token_apply(int port, char token[H_TOKEN_BUF]);

/* POST /order/create with "Idempotent-Token: token" (no header when token
 * is NULL) and {"user_id","request_id","sku","quantity"}. Returns what
 * h_http returns. No assertions: safe from storm threads. */
int h_order_create(int port, const char *token, const char *user_id, const char *request_id,
                   const char *sku, int quantity, struct h_resp *out);

/* ---- raw connections ----------------------------------------------------- */

/* A blocking TCP connection to 127.0.0.1:port from source address src_ip
 * (another loopback address such as "127.0.0.2" looks like another client;
 * NULL lets the kernel pick), with send and receive timeouts of
 * recv_timeout_ms. The descriptor, or -1 with errno set. */
int h_raw_connect(int port, const char *src_ip, int recv_timeout_ms);

/* Reads until EOF, a reset or the receive timeout into buf (sz bytes,
 * NUL-terminated). Returns the byte count; *eof is 1 when the peer closed
 * or reset the connection. */
size_t h_raw_read_all(int fd, char *buf, size_t sz, int *eof);

/* 1 when the peer has closed or reset fd (checked without blocking and
 * without consuming data), else 0. */
int h_raw_closed(int fd);

/* ---- suite fixtures ------------------------------------------------------ */

/* The server of the running suite. h_fixture_server_up starts it with the
 * shipped config (an unchecked fixture, so Check's forked tests share it)
 * and h_fixture_server_down stops it; h_port is its port. */
extern struct h_server *h_srv;
void h_fixture_server_up(void);

/* The same with extra environment (as h_server_start), for a fixture of
 * its own: static void small_server_up(void) { h_fixture_server_up_env(env); } */
void h_fixture_server_up_env(const char *const *extra_env);
/* A TCase whose server is started by up and stopped by down (unchecked
 * fixtures), cleaned before each test like h_tcase's. */
TCase *h_tcase_with(const char *name, int timeout_s, void (*up)(void), void (*down)(void));

/* The value of one series line of the server's /metrics ("name{labels}"),
 * or -1 when it is absent. */
long long h_metric(const char *series);
/* The same from the server listening on port. */
long long h_metric_at(int port, const char *series);

/* Rows of payment_record, the status of an order, rows of outbox; and the
 * assertion that no payment and no event were written. */
long long h_payment_records(void);
long long h_order_status(const char *order_no);
long long h_outbox_rows(void);
void h_assert_nothing_paid(void);

void h_fixture_server_up_config(const char *config_path, const char *const *extra_env);
void h_fixture_server_down(void);
int h_port(void);

/* Checked fixture: empties the test database (stock re-seeded) and Redis db 9. */
void h_fixture_clean(void);

/* A TCase sharing one server (h_fixture_server_up/down as its unchecked
 * fixture), with a clean database before each test and a timeout. */
TCase *h_tcase(const char *name, int timeout_s);

/* Teardown of outage tests: MySQL is started again whatever the test did. */
void h_fixture_mysql_back(void);

/* Teardown of tests that drop part of the schema: the tree's schema is
 * applied again (scripts/services.sh provision). */
void h_fixture_schema_back(void);

#endif
