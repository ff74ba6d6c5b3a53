/* check_idempotency.c - Idempotency-Key on POST /order/create and the
 * order transitions, against the real binary, MariaDB and Redis: replay
 * byte for byte, 422 on another payload, keys scoped by caller, 50
 * concurrent repeats answered alike, a first attempt held past the wait
 * bound (409, then replay), the wait across two instances on one
 * database, kill -9 during the first attempt, a 503 that is not stored,
 * expiry and purge. A first attempt is held in flight by a row lock the
 * test takes on the stock row, never by a sleep. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define STORM_CLIENTS 50
#define WAIT_MS_SHORT "300"
#define LEASE_MS_SHORT "1000"
#define AWAIT_MS 10000

static long long orders(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM orders");
}

static long long running_keys(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM idem_key WHERE state = 1");
}

/* POST /order/create with Idempotency-Key: key (no header when NULL) and
 * no token, from a shop backend (the operator key H_OPERATOR_KEY, which
 * holds the orders scope: the key's scope is that caller). No
 * assertions: safe from threads. */
static int create_keyed(int port, const char *key, const char *user_id, const char *request_id,
                        int quantity, struct h_resp *r)
{
    char body[256], hdr[300];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };

    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", key);
    if (key == NULL)
        headers[1] = NULL;
    snprintf(body, sizeof body,
             "{\"user_id\":\"%s\",\"request_id\":\"%s\",\"sku\":\"SHOE-42\",\"quantity\":%d}",
             user_id, request_id, quantity);
    return h_http_key(port, H_OPERATOR_KEY, "POST", "/order/create", headers, body, strlen(body),
                      r);
}

static void assert_replayed(const struct h_resp *r, int replayed)
{
    const char *v = h_resp_header(r, "Idempotent-Replayed");

    if (replayed)
        ck_assert_msg(v != NULL && strcmp(v, "true") == 0, "no Idempotent-Replayed: true");
    else
        ck_assert_msg(v == NULL, "a first answer marked as a replay");
}

static void assert_same_body(const struct h_resp *a, const struct h_resp *b)
{
    ck_assert_msg(a->body_len == b->body_len && memcmp(a->body, b->body, a->body_len) == 0,
                  "replay differs:\n%s\n%s", a->body, b->body);
}

/* ---- one server with the shipped settings -------------------------------- */

START_TEST(repeat_replays_the_first_answer_byte_for_byte)
{
    struct h_resp a, b;

    create_keyed(h_port(), "k-replay-1", "u1", "r1", 1, &a);
    h_assert_status(&a, 201);
    assert_replayed(&a, 0);
    create_keyed(h_port(), "k-replay-1", "u1", "r1", 1, &b);
    h_assert_status(&b, 201);
    assert_replayed(&b, 1);
    assert_same_body(&a, &b);
    ck_assert_int_eq(1, orders());
    ck_assert_int_eq(99, h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'"));
    h_resp_free(&a);
    h_resp_free(&b);
}
END_TEST

START_TEST(same_key_with_another_body_is_422)
{
    struct h_resp r;

    create_keyed(h_port(), "k-mismatch", "u1", "r1", 1, &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    create_keyed(h_port(), "k-mismatch", "u1", "r1", 2, &r);
    h_assert_error(&r, 422, "IDEMPOTENCY_KEY_MISMATCH");
    h_resp_free(&r);
    ck_assert_int_eq(1, orders());
}
END_TEST

START_TEST(neither_token_nor_key_is_400_and_a_bad_key_too)
{
    static const char *const bad[] = { "", "\"unterminated", "has space", "\"a\"b",
                                       "\"bad\\escape\"" };
    char longkey[300];
    struct h_resp r;

    create_keyed(h_port(), NULL, "u1", "r1", 1, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        create_keyed(h_port(), bad[i], "u1", "r1", 1, &r);
        ck_assert_msg(r.status == 400, "key [%s]: expected 400, got %d", bad[i], r.status);
        h_resp_free(&r);
    }
    memset(longkey, 'k', 256);
    longkey[256] = '\0';
    create_keyed(h_port(), longkey, "u1", "r1", 1, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    longkey[255] = '\0';
    create_keyed(h_port(), longkey, "u1", "r1", 1, &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    create_keyed(h_port(), "\"quoted key\"", "u1", "r2", 1, &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    ck_assert_int_eq(2, orders());
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM idem_key WHERE state <> 2"));
}
END_TEST

struct storm {
    int port;
    int statuses[STORM_CLIENTS];
    char *bodies[STORM_CLIENTS];
};

static int storm_call(int i, void *arg)
{
    struct storm *s = arg;
    struct h_resp r;

    create_keyed(s->port, "k-storm", "u1", "r-storm", 1, &r);
    s->statuses[i] = r.status;
    s->bodies[i] = strdup(r.body != NULL ? r.body : "");
    h_resp_free(&r);
    return 0;
}

START_TEST(fifty_concurrent_repeats_make_one_order_and_fifty_identical_answers)
{
    static struct storm s;
    struct h_storm_stats st;
    int n409 = 0;

    memset(&s, 0, sizeof s);
    s.port = h_port();
    ck_assert_int_eq(0, h_storm(STORM_CLIENTS, STORM_CLIENTS, storm_call, &s, &st));
    for (int i = 0; i < STORM_CLIENTS; i++) {
        n409 += s.statuses[i] == 409;
        ck_assert_msg(s.statuses[i] == 201, "client %d got %d: %s", i, s.statuses[i], s.bodies[i]);
        ck_assert_str_eq(s.bodies[0], s.bodies[i]);
    }
    for (int i = 0; i < STORM_CLIENTS; i++)
        free(s.bodies[i]);
    ck_assert_int_eq(0, n409);
    ck_assert_int_eq(1, orders());
    printf("idempotency storm: %d concurrent repeats of one key: p50 %.1f ms p99 %.1f ms\n",
           STORM_CLIENTS, st.p50_us / 1000.0, st.p99_us / 1000.0);
}
END_TEST

START_TEST(a_503_is_not_stored_and_the_key_is_free_again)
{
    struct h_resp r;
    redisReply *rr = h_redis_cmd("SET idem:lock:stock:SHOE-42 someone-else PX 60000");

    ck_assert_msg(rr != NULL, "redis SET failed");
    freeReplyObject(rr);
    create_keyed(h_port(), "k-503", "u1", "r1", 1, &r);
    h_assert_status(&r, 503);
    ck_assert_msg(h_resp_header(&r, "Retry-After") != NULL, "a 503 without Retry-After");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM idem_key"));
    freeReplyObject(h_redis_cmd("DEL idem:lock:stock:SHOE-42"));
    create_keyed(h_port(), "k-503", "u1", "r1", 1, &r);
    h_assert_status(&r, 201);
    assert_replayed(&r, 0);
    h_resp_free(&r);
}
END_TEST

START_TEST(an_expired_key_runs_again)
{
    struct h_resp r;

    create_keyed(h_port(), "k-expire", "u1", "r1", 1, &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    h_db_exec("UPDATE idem_key SET expires_at = NOW(3) - INTERVAL 1 SECOND");
    create_keyed(h_port(), "k-expire", "u1", "r2", 2, &r);
    h_assert_status(&r, 201);
    assert_replayed(&r, 0);
    h_resp_free(&r);
    ck_assert_int_eq(2, orders());
}
END_TEST

START_TEST(expired_keys_are_purged_in_batches)
{
    struct h_deadline d = h_deadline_in(30000);
    char key[32], rq[32];
    struct h_resp r;
    int i = 0;

    h_db_exec("INSERT INTO idem_key (scope, idem_key, fingerprint, state, owner, lease_until, "
              "expires_at) SELECT 'user:old', CONCAT('old-', seq), REPEAT('0', 64), 2, "
              "REPEAT('0', 32), NOW(3), NOW(3) - INTERVAL 1 HOUR FROM seq_1_to_40");
    ck_assert_int_eq(40, h_db_scalar_ll("SELECT COUNT(*) FROM idem_key"));
    while (h_db_scalar_ll("SELECT COUNT(*) FROM idem_key WHERE scope = 'user:old'") > 0) {
        snprintf(key, sizeof key, "k-purge-%d", i);
        snprintf(rq, sizeof rq, "r-purge-%d", i++);
        create_keyed(h_port(), key, "u-purge", rq, 1, &r);
        h_resp_free(&r);
        h_db_exec("UPDATE stock SET num = 100 WHERE sku = 'SHOE-42'");
        ck_assert_msg(h_deadline_wait(&d), "expired keys never purged after %d claims", i);
    }
}
END_TEST

START_TEST(a_repeated_transition_replays_and_is_counted)
{
    static const char *const headers[] = { "Idempotency-Key: ship-1", NULL };
    struct h_resp a, b, m;

    h_db_insert_order("OT1", "u1", "899.00", 2);
    h_http(h_port(), "POST", "/order/OT1/ship", headers, "", 0, &a);
    h_assert_status(&a, 200);
    h_http(h_port(), "POST", "/order/OT1/ship", headers, "", 0, &b);
    h_assert_status(&b, 200);
    assert_replayed(&b, 1);
    assert_same_body(&a, &b);
    ck_assert_int_eq(1, h_json_get_bool(b.body, "duplicate") == 0);
    h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, &m);
    ck_assert_msg(strstr(m.body, "paycallback_idempotency_replays_total ") != NULL &&
                      strstr(m.body, "paycallback_idempotency_replays_total 0\n") == NULL,
                  "replays not counted");
    ck_assert_msg(strstr(m.body, "paycallback_idempotency_wait_seconds_bucket{le=\"+Inf\"}") !=
                      NULL,
                  "no wait histogram");
    h_resp_free(&a);
    h_resp_free(&b);
    h_resp_free(&m);
}
END_TEST

/* ---- two operator keys -------------------------------------------------- */

#define KEY_OPS "ops-key-0123456789abcdef"
#define KEY_ERP "erp-key-0123456789abcdef"
#define KEY_READER "reader-key-0123456789abcdef"

static void two_keys_server_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_AUTH_KEYS=ops:" KEY_OPS ",erp:" KEY_ERP
                                       ",reader:" KEY_READER ":read",
                                       NULL };

    h_fixture_server_up_env(env);
}

/* The same Idempotency-Key from two operator keys: each caller gets the
 * answer to its own request, never a 422 or a replay of the other's. */
START_TEST(transition_keys_of_two_operator_keys_do_not_collide)
{
    static const char *const headers[] = { "Idempotency-Key: batch-7", NULL };
    struct h_resp a, b, a2;

    h_db_insert_order("OK1", "u1", "899.00", 2);
    h_db_insert_order("OK2", "u1", "899.00", 2);
    h_http_key(h_port(), KEY_OPS, "POST", "/order/OK1/ship", headers, "", 0, &a);
    h_assert_status(&a, 200);
    h_http_key(h_port(), KEY_ERP, "POST", "/order/OK2/cancel", headers, "", 0, &b);
    h_assert_status(&b, 200);
    assert_replayed(&b, 0);
    h_assert_str(&b, "status", "CANCELED");
    h_http_key(h_port(), KEY_OPS, "POST", "/order/OK1/ship", headers, "", 0, &a2);
    h_assert_status(&a2, 200);
    assert_replayed(&a2, 1);
    assert_same_body(&a, &a2);
    ck_assert_int_eq(3, h_order_status("OK1"));
    ck_assert_int_eq(9, h_order_status("OK2"));
    h_resp_free(&a);
    h_resp_free(&b);
    h_resp_free(&a2);
}
END_TEST

/* POST /order/create with Idempotency-Key: key, from the caller of
 * operator key auth (NULL: anonymous). */
static void create_as(const char *auth, const char *key, const char *user_id, struct h_resp *r)
{
    char body[256], hdr[300];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };

    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", key);
    snprintf(body, sizeof body,
             "{\"user_id\":\"%s\",\"request_id\":\"r-%s\","
             "\"sku\":\"SHOE-42\",\"quantity\":1}",
             user_id, user_id);
    h_http_key(h_port(), auth, "POST", "/order/create", headers, body, strlen(body), r);
}

/* A shop backend's keys belong to its operator key, whatever user_id the
 * body names: nobody else, anonymous or another key, can claim them, and
 * its own key reused for another user is a mismatch, not a second order. */
START_TEST(a_create_key_is_scoped_by_the_authenticated_caller)
{
    struct h_resp a, b, c, d, e;

    create_as(NULL, "shop-k1", "alice", &a); /* anonymous: no key of its own */
    h_assert_error(&a, 401, "UNAUTHORIZED");
    create_as(KEY_OPS, "shop-k1", "alice", &b); /* scope key:ops */
    h_assert_status(&b, 201);
    assert_replayed(&b, 0);
    create_as(KEY_OPS, "shop-k1", "bob", &c); /* same key, another payload */
    h_assert_error(&c, 422, "IDEMPOTENCY_KEY_MISMATCH");
    create_as(KEY_ERP, "shop-k1", "bob", &d); /* another key's scope */
    h_assert_status(&d, 201);
    assert_replayed(&d, 0);
    create_as("wrong-key-0123456789abcdef", "shop-k2", "carol", &e);
    h_assert_error(&e, 401, "UNAUTHORIZED");
    ck_assert_int_eq(2, orders());
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM idem_key WHERE scope = 'key:ops'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM idem_key WHERE scope = 'key:erp'"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM idem_key WHERE scope LIKE 'user:%%'"));
    h_resp_free(&a);
    h_resp_free(&b);
    h_resp_free(&c);
    h_resp_free(&d);
    h_resp_free(&e);
}
END_TEST

/* An Idempotency-Key stands in for the token only for a shop backend:
 * anonymous, a key without a token is 401 and one with a token too; an
 * operator key without the orders scope is 403. None writes anything. */
START_TEST(an_idempotency_key_without_a_shop_key_is_refused)
{
    const char *body = "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\","
                       "\"quantity\":100}";
    char token[H_TOKEN_BUF], tok_hdr[64];
    const char *headers[] = { "Content-Type: application/json", "Idempotency-Key: hoard-1", NULL,
                              NULL };
    struct h_resp r;

    h_http_key(h_port(), NULL, "POST", "/order/create", headers, body, strlen(body), &r);
    h_assert_error(&r, 401, "UNAUTHORIZED");
    ck_assert_msg(h_resp_header(&r, "WWW-Authenticate") != NULL, "a 401 without a challenge");
    h_resp_free(&r);

    h_token_apply(h_port(), token);
    snprintf(tok_hdr, sizeof tok_hdr, "Idempotent-Token: %s", token);
    headers[2] = tok_hdr;
    h_http_key(h_port(), NULL, "POST", "/order/create", headers, body, strlen(body), &r);
    h_assert_error(&r, 401, "UNAUTHORIZED");
    h_resp_free(&r);
    headers[2] = NULL;

    h_http_key(h_port(), KEY_READER, "POST", "/order/create", headers, body, strlen(body), &r);
    h_assert_error(&r, 403, "FORBIDDEN");
    h_resp_free(&r);

    ck_assert_int_eq(0, orders());
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM idem_key"));
    ck_assert_int_eq(100, h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'"));
}
END_TEST

/* ---- a first attempt held in flight -------------------------------------- */

struct attempt {
    int port;
    const char *key;
    const char *user;
    struct h_resp r;
    pthread_t th;
};

static void *attempt_run(void *arg)
{
    struct attempt *a = arg;

    create_keyed(a->port, a->key, a->user, "r-held", 1, &a->r);
    return NULL;
}

static void attempt_start(struct attempt *a, int port, const char *key, const char *user)
{
    memset(&a->r, 0, sizeof a->r);
    a->port = port;
    a->key = key;
    a->user = user;
    ck_assert_int_eq(0, pthread_create(&a->th, NULL, attempt_run, a));
}

/* Holds the SHOE-42 stock row, so that an order create stops at its stock
 * update until the test lets go. */
static struct h_db *hold_stock(void)
{
    struct h_db *db = h_db_open();

    h_db_sql(db, "START TRANSACTION");
    h_db_sql(db, "SELECT num FROM stock WHERE sku = 'SHOE-42' FOR UPDATE");
    return db;
}

static const char *const short_wait_env[] = { "PAYCALLBACK_IDEMPOTENCY_WAIT_MS=" WAIT_MS_SHORT,
                                              NULL };

static void short_wait_up(void)
{
    h_fixture_server_up_env(short_wait_env);
}

START_TEST(first_attempt_held_past_the_bound_is_409_then_replayed)
{
    struct h_db *db = hold_stock();
    struct attempt a;
    struct h_resp b, c;

    attempt_start(&a, h_port(), "k-held", "u1");
    h_await(running_keys() == 1, AWAIT_MS, "the first attempt never claimed its key");
    create_keyed(h_port(), "k-held", "u1", "r-held", 1, &b);
    h_assert_error(&b, 409, "IDEMPOTENCY_KEY_IN_USE");
    ck_assert_msg(h_resp_header(&b, "Retry-After") != NULL, "a 409 without Retry-After");
    h_db_close(db); /* rolls back: the first attempt goes on */
    pthread_join(a.th, NULL);
    h_assert_status(&a.r, 201);
    create_keyed(h_port(), "k-held", "u1", "r-held", 1, &c);
    h_assert_status(&c, 201);
    assert_replayed(&c, 1);
    assert_same_body(&a.r, &c);
    ck_assert_int_eq(1, orders());
    h_resp_free(&a.r);
    h_resp_free(&b);
    h_resp_free(&c);
}
END_TEST

/* ---- two instances on one database --------------------------------------- */

/* Both instances know the development key by a name of this run only, so
 * the log line of this test's wait (scope=key:<name>) is told from any
 * other test's. */
static char two_name[48], two_env[96];

static void two_instances_up(void)
{
    static const char *env[] = { two_env, NULL };

    snprintf(two_name, sizeof two_name, "two-%d-%lld", (int)getpid(), h_now_ms());
    snprintf(two_env, sizeof two_env, "PAYCALLBACK_AUTH_KEYS=%s:" H_OPERATOR_KEY, two_name);
    h_fixture_server_up_env(env);
}

START_TEST(a_repeat_on_another_instance_waits_and_replays)
{
    static const char *env[] = { two_env, NULL };
    struct h_server *other = h_server_start(env);
    struct h_db *db;
    struct attempt a, b;
    char scope[80], *line;
    const char *parts[] = { "waiting for its first attempt", scope, NULL };

    ck_assert_msg(other != NULL, "second instance did not start");
    db = hold_stock();
    snprintf(scope, sizeof scope, "scope=key:%s ", two_name);
    attempt_start(&a, h_port(), "k-two", "u2");
    h_await(running_keys() == 1, AWAIT_MS, "the first attempt never claimed its key");
    attempt_start(&b, h_server_port(other), "k-two", "u2");
    /* The log, not /metrics: a request queued on the waiting worker thread
     * would wait with it. */
    line = h_log_find(parts, AWAIT_MS);
    ck_assert_msg(line != NULL, "the repeat on the second instance never waited");
    free(line);
    h_db_close(db);
    pthread_join(a.th, NULL);
    pthread_join(b.th, NULL);
    h_assert_status(&a.r, 201);
    h_assert_status(&b.r, 201);
    assert_replayed(&b.r, 1);
    assert_same_body(&a.r, &b.r);
    ck_assert_int_eq(1, orders());
    h_resp_free(&a.r);
    h_resp_free(&b.r);
    h_server_stop(other);
}
END_TEST

/* ---- kill -9 during the first attempt ------------------------------------ */

START_TEST(kill_9_during_the_first_attempt_then_the_retry_completes_once)
{
    static const char *const env[] = { "PAYCALLBACK_IDEMPOTENCY_LEASE_MS=" LEASE_MS_SHORT,
                                       "PAYCALLBACK_REDIS_LOCK_TTL_MS=" LEASE_MS_SHORT, NULL };
    struct h_deadline d = h_deadline_in(AWAIT_MS);
    struct h_server *s = h_server_start(env), *s2;
    struct h_db *db;
    struct attempt a;
    struct h_resp r;

    ck_assert_msg(s != NULL, "server did not start");
    db = hold_stock();
    attempt_start(&a, h_server_port(s), "k-kill", "u1");
    h_await(running_keys() == 1, AWAIT_MS, "the first attempt never claimed its key");
    ck_assert_int_eq(0, h_server_signal(s, SIGKILL));
    h_server_wait(s, 10000);
    pthread_join(a.th, NULL);
    h_resp_free(&a.r);
    h_db_close(db);
    s2 = h_server_start(env);
    ck_assert_msg(s2 != NULL, "server did not restart");
    /* A blind retry: the dead attempt's stock lock lapses too, and until
     * then the answer is a 503, which stores nothing. */
    for (;;) {
        create_keyed(h_server_port(s2), "k-kill", "u1", "r-held", 1, &r);
        if (r.status != 503)
            break;
        h_resp_free(&r);
        ck_assert_msg(h_deadline_wait(&d), "the retry never got past 503");
    }
    h_assert_status(&r, 201);
    assert_replayed(&r, 0);
    h_resp_free(&r);
    ck_assert_int_eq(1, orders());
    ck_assert_int_eq(99, h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'"));
    create_keyed(h_server_port(s2), "k-kill", "u1", "r-held", 1, &r);
    h_assert_status(&r, 201);
    assert_replayed(&r, 1);
    h_resp_free(&r);
    h_server_stop(s2);
}
END_TEST

static TCase *tcase(const char *name, void (*up)(void))
{
    TCase *tc = tcase_create(name);

    tcase_add_unchecked_fixture(tc, up, h_fixture_server_down);
    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    return tc;
}

static Suite *idempotency_suite(void)
{
    Suite *s = suite_create("idempotency");
    TCase *tc;

    tc = h_tcase("replay, mismatch, scope", TC_TIMEOUT_S);
    tcase_add_test(tc, repeat_replays_the_first_answer_byte_for_byte);
    tcase_add_test(tc, same_key_with_another_body_is_422);
    tcase_add_test(tc, neither_token_nor_key_is_400_and_a_bad_key_too);
    tcase_add_test(tc, fifty_concurrent_repeats_make_one_order_and_fifty_identical_answers);
    tcase_add_test(tc, a_503_is_not_stored_and_the_key_is_free_again);
    tcase_add_test(tc, an_expired_key_runs_again);
    tcase_add_test(tc, expired_keys_are_purged_in_batches);
    tcase_add_test(tc, a_repeated_transition_replays_and_is_counted);
    suite_add_tcase(s, tc);

    tc = tcase("a first attempt held past the wait bound", short_wait_up);
    tcase_add_test(tc, first_attempt_held_past_the_bound_is_409_then_replayed);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("two operator keys", TC_TIMEOUT_S, two_keys_server_up, h_fixture_server_down);
    tcase_add_test(tc, transition_keys_of_two_operator_keys_do_not_collide);
    tcase_add_test(tc, a_create_key_is_scoped_by_the_authenticated_caller);
    tcase_add_test(tc, an_idempotency_key_without_a_shop_key_is_refused);
    suite_add_tcase(s, tc);

    tc = tcase("two instances on one database", two_instances_up);
    tcase_add_test(tc, a_repeat_on_another_instance_waits_and_replays);
    suite_add_tcase(s, tc);

    tc = tcase_create("kill -9 during the first attempt");
    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, kill_9_during_the_first_attempt_then_the_retry_completes_once);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(idempotency_suite, NULL, NULL);
