/* check_redis_degraded.c - the service with Redis stopped under it and
 * started again, never restarting the service: tokens are issued and
 * consumed through MySQL, orders are still created once and never
 * oversold, readiness says "degraded", the switch is logged once each way,
 * and once Redis is back tokens live there again (while the ones issued
 * in MySQL meanwhile still work). Also a quick Redis restart nobody
 * noticed: the dropped links are replaced without entering degraded mode.
 * Whatever happens, Redis is started again at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 300 /* two Redis restarts, ASan builds included */
#define RECOVER_WAIT_MS 10000
#define DOWN_STOCK 5
#define DOWN_CLIENTS 20
#define MSG_DOWN "redis unreachable, degraded mode"
#define MSG_BACK "redis is back"

/* Unchecked teardown: later suites need Redis whatever happened here. */
static void redis_back(void)
{
    h_services("start-redis");
}

static void clean_state(void)
{
    h_services("start-redis"); /* a failed test may have left it down */
    h_db_reset();
    h_redis_flush();
}

/* ---- the suite log ------------------------------------------------------- */

static void log_path(char *buf, size_t sz)
{
    const char *root = getenv("PCB_ROOT");

    snprintf(buf, sz, "%s/var/test-logs/check_redis_degraded.log", root && *root ? root : ".");
}

/* The log's size now: lines written later are this test's. */
static long log_mark(void)
{
    char path[4096];
    struct stat st;

    log_path(path, sizeof path);
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* Lines after offset from that contain what. */
static int log_count(long from, const char *what)
{
    char path[4096], line[8192];
    FILE *f;
    int n = 0;

    log_path(path, sizeof path);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    if (fseek(f, from, SEEK_SET) == 0)
        while (fgets(line, sizeof line, f) != NULL)
            n += strstr(line, what) != NULL;
    fclose(f);
    return n;
}

/* ---- helpers ------------------------------------------------------------- */

static long long token_in_redis(const char *token)
{
    redisReply *r = h_redis_cmd("EXISTS idem:token:%s", token);
    long long n;

    ck_assert_msg(r != NULL && r->type == REDIS_REPLY_INTEGER, "redis EXISTS failed");
    n = r->integer;
    freeReplyObject(r);
    return n;
}

static long long token_in_mysql(const char *token)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM idem_token WHERE token = '%s'", token);
}

static void create_expect(const char *token, const char *request_id, int status, const char *code)
{
    struct h_resp r;

    h_order_create(h_port(), token, "u1001", request_id, "SHOE-42", 1, &r);
    if (code != NULL)
        h_assert_error(&r, status, code);
    else
        h_assert_status(&r, status);
    if (status == 200)
        h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
}

/* The "redis" field of /readyz ("up" or "degraded"), malloc'd. */
static char *readyz_redis(void)
{
    struct h_resp r;
    char *v;

    h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    v = h_json_get_str(r.body, "redis");
    h_resp_free(&r);
    ck_assert_ptr_nonnull(v);
    return v;
}

static int metrics_have(const char *line)
{
    struct h_resp r;
    int yes;

    h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    yes = strstr(r.body, line) != NULL;
    h_resp_free(&r);
    return yes;
}

/* Polls /readyz until Redis shows as up again. */
static void wait_redis_up(void)
{
    struct h_deadline d = h_deadline_in(RECOVER_WAIT_MS);
    char *v = NULL;

    do {
        free(v);
        v = readyz_redis();
    } while (strcmp(v, "up") != 0 && h_deadline_wait(&d));
    ck_assert_msg(v != NULL && strcmp(v, "up") == 0, "redis still \"%s\" after %d ms", v,
                  RECOVER_WAIT_MS);
    free(v);
}

struct down_storm {
    int port;
    int status[DOWN_CLIENTS];
};

/* One shopper while Redis is down: token from MySQL, no stock lock. */
static int down_storm_call(int i, void *p)
{
    struct down_storm *a = p;
    char token[H_TOKEN_BUF], request_id[32];
    struct h_resp r;

    if (h_token_try(a->port, token, NULL) != 0)
        return 1;
    snprintf(request_id, sizeof request_id, "down-%d", i);
    h_order_create(a->port, token, "u2002", request_id, "HAT-7", 1, &r);
    a->status[i] = r.status;
    h_resp_free(&r);
    return 0;
}

/* ---- the outage ---------------------------------------------------------- */

/* Redis goes away: every token and order operation keeps working. */
static void while_redis_is_down(const char *redis_token, char later[H_TOKEN_BUF])
{
    static struct down_storm a;
    char t2[H_TOKEN_BUF], t3[H_TOKEN_BUF];
    struct h_storm_stats st;
    int created = 0;
    char *state;

    h_token_apply(h_port(), t2);
    ck_assert_int_eq(1, token_in_mysql(t2));
    create_expect(t2, "r1", 201, NULL);
    ck_assert_int_eq(0, token_in_mysql(t2));
    create_expect(t2, "r2", 409, "REPEAT_SUBMIT"); /* single use, in MySQL too */
    h_token_apply(h_port(), t3);
    create_expect(t3, "r1", 200, NULL); /* dedupe needs no Redis */
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM orders WHERE request_id = 'r1'"));

    /* A token that lived in Redis went with it: a new one is needed. */
    create_expect(redis_token, "r3", 409, "REPEAT_SUBMIT");

    /* No stock lock now: the conditional UPDATE alone stops overselling. */
    memset(&a, 0, sizeof a);
    a.port = h_port();
    h_db_exec("UPDATE stock SET num = %d WHERE sku = 'HAT-7'", DOWN_STOCK);
    ck_assert_int_eq(0, h_storm(DOWN_CLIENTS, DOWN_CLIENTS, down_storm_call, &a, &st));
    ck_assert_int_eq(0, st.errors);
    for (int i = 0; i < DOWN_CLIENTS; i++) {
        created += a.status[i] == 201;
        ck_assert_msg(a.status[i] == 201 || a.status[i] == 409, "shopper %d got HTTP %d", i,
                      a.status[i]);
    }
    printf("oversell storm with redis down: stock %d, %d shoppers: %d orders, p50 %.1f ms "
           "p99 %.1f ms\n",
           DOWN_STOCK, DOWN_CLIENTS, created, st.p50_us / 1000.0, st.p99_us / 1000.0);
    ck_assert_int_eq(DOWN_STOCK, created);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'HAT-7'"));

    state = readyz_redis();
    ck_assert_str_eq("degraded", state);
    free(state);
    ck_assert_msg(metrics_have("\npaycallback_redis_degraded 1\n"), "gauge not 1");
    ck_assert_msg(!metrics_have("\npaycallback_redis_degraded_operations_total 0\n"),
                  "degraded operations not counted");
    h_token_apply(h_port(), later); /* kept for after the outage */
    ck_assert_int_eq(1, token_in_mysql(later));
}

START_TEST(redis_outage_keeps_orders_working_and_recovers)
{
    char t1[H_TOKEN_BUF], t4[H_TOKEN_BUF], t5[H_TOKEN_BUF];
    long mark = log_mark();
    char *state;

    h_token_apply(h_port(), t1);
    ck_assert_int_eq(1, token_in_redis(t1));
    state = readyz_redis();
    ck_assert_str_eq("up", state);
    free(state);

    h_services("stop-redis");
    while_redis_is_down(t1, t4);
    h_services("start-redis");
    wait_redis_up();

    /* Back on Redis, without a restart of the service. */
    h_token_apply(h_port(), t5);
    ck_assert_int_eq(1, token_in_redis(t5));
    ck_assert_int_eq(0, token_in_mysql(t5));
    create_expect(t5, "r5", 201, NULL);
    ck_assert_int_eq(0, token_in_redis(t5));
    /* A token issued in MySQL during the outage still works, once. */
    create_expect(t4, "r4", 201, NULL);
    create_expect(t4, "r6", 409, "REPEAT_SUBMIT");
    ck_assert_msg(metrics_have("\npaycallback_redis_degraded 0\n"), "gauge not back to 0");

    ck_assert_int_eq(1, log_count(mark, MSG_DOWN));
    ck_assert_int_eq(1, log_count(mark, MSG_BACK));
}
END_TEST

START_TEST(quick_redis_restart_is_absorbed_without_degrading)
{
    char t1[H_TOKEN_BUF], t2[H_TOKEN_BUF];
    long mark = log_mark();
    char *state;

    h_token_apply(h_port(), t1);
    create_expect(t1, "q1", 201, NULL); /* the pool holds live links now */
    h_services("stop-redis");
    h_services("start-redis");

    h_token_apply(h_port(), t2);
    ck_assert_int_eq(1, token_in_redis(t2));
    create_expect(t2, "q2", 201, NULL);
    state = readyz_redis();
    ck_assert_str_eq("up", state);
    free(state);
    ck_assert_int_eq(0, log_count(mark, MSG_DOWN));
}
END_TEST

static Suite *redis_degraded_suite(void)
{
    Suite *s = suite_create("redis_degraded");
    TCase *tc = tcase_create("redis stopped and started under a running service");

    tcase_add_unchecked_fixture(tc, h_fixture_server_up, h_fixture_server_down);
    tcase_add_unchecked_fixture(tc, NULL, redis_back);
    tcase_add_checked_fixture(tc, clean_state, NULL);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, redis_outage_keeps_orders_working_and_recovers);
    tcase_add_test(tc, quick_redis_restart_is_absorbed_without_degrading);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(redis_degraded_suite, NULL, NULL);
