/* check_shards.c - a sharded service (mysql.shards) against the real
 * binary and MariaDB: shard 1 is the test database, shard 2 its _s2 twin
 * on the same server (h_shards_env). This file holds what every sharded
 * path stands on: the start checks each shard's schema, /readyz and
 * /metrics report each shard, and one shard down leaves the service ready
 * while naming the shard. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60

START_TEST(readyz_lists_every_shard_up)
{
    struct h_resp r;

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r));
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "ready");
    h_assert_str(&r, "mysql", "up");
    ck_assert_msg(strstr(r.body, "\"shards\":{\"1\":\"up\",\"2\":\"up\"}") != NULL, "%s", r.body);
    h_resp_free(&r);

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=2", NULL, NULL, 0, &r));
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"shards\":{\"2\":\"up\"}") != NULL, "%s", r.body);
    h_resp_free(&r);

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=3", NULL, NULL, 0, &r));
    h_assert_error(&r, 404, "NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=x", NULL, NULL, 0, &r));
    h_assert_error(&r, 404, "NOT_FOUND");
    h_resp_free(&r);

    ck_assert_int_eq(1, h_metric("paycallback_shard_ready{shard=\"1\"}"));
    ck_assert_int_eq(1, h_metric("paycallback_shard_ready{shard=\"2\"}"));
    ck_assert_int_eq(0, h_metric("paycallback_shard_unavailable_total{shard=\"2\"}"));
}
END_TEST

START_TEST(one_shard_down_keeps_the_service_ready_and_names_it)
{
    struct h_resp r;

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r));
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "ready");
    h_assert_str(&r, "mysql", "partial");
    ck_assert_msg(strstr(r.body, "\"shards\":{\"1\":\"up\",\"2\":\"down\"}") != NULL, "%s", r.body);
    h_resp_free(&r);

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=2", NULL, NULL, 0, &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=1", NULL, NULL, 0, &r));
    h_assert_status(&r, 200);
    h_resp_free(&r);

    ck_assert_int_eq(1, h_metric("paycallback_shard_ready{shard=\"1\"}"));
    ck_assert_int_eq(0, h_metric("paycallback_shard_ready{shard=\"2\"}"));
    ck_assert_int_eq(1, h_metric("paycallback_ready"));
}
END_TEST

START_TEST(check_config_probes_every_shard)
{
    const char *env[] = { h_shards_env(), NULL };
    const char *args[] = { "--check-config", NULL };
    struct h_run run;

    h_run(args, env, 20000, &run);
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "shard 1: mysql") != NULL, "%s", run.out);
    ck_assert_msg(strstr(run.out, "shard 2: mysql") != NULL && strstr(run.out, H_SHARD2_SUFFIX),
                  "%s", run.out);
    h_run_free(&run);
}
END_TEST

/* ---- --backfill-registries -------------------------------------------------- */

/* Rows written before the database became a shard: bound in no registry. */
static void insert_legacy_rows(void)
{
    h_db_insert_order("ORD-legacy-1", "u-legacy", "899.00", 2);
    h_db_exec("INSERT INTO payment_record (pay_no, order_no, amount, status, outcome) "
              "VALUES ('PAY-legacy-1', 'ORD-legacy-1', 899.00, 1, 1)");
    h_db_exec("INSERT INTO " H_SHARD2_DB ".orders (order_no, user_id, request_id, sku, quantity, "
              "amount, status) VALUES ('S02-old-2', 'u-legacy', 'req-old-2', 'SHOE-42', 1, "
              "899.00, 2)");
    h_db_exec("INSERT INTO " H_SHARD2_DB ".payment_record (pay_no, order_no, amount, status, "
              "outcome) VALUES ('PAY-legacy-2', 'S02-old-2', 899.00, 1, 1)");
}

/* Rows of a registry table for which where holds, over both shards. */
static long long registry_rows(const char *table, const char *where)
{
    return h_db_scalar_ll("SELECT (SELECT COUNT(*) FROM %s WHERE %s) + "
                          "(SELECT COUNT(*) FROM " H_SHARD2_DB ".%s WHERE %s)",
                          table, where, table, where);
}

static void backfill(struct h_run *run)
{
    const char *env[] = { h_shards_env(), NULL };
    const char *args[] = { "--backfill-registries", NULL };

    h_run(args, env, 30000, run);
}

START_TEST(backfill_binds_old_rows_once_and_a_reuse_is_then_refused)
{
    struct h_run run;
    struct h_resp r;

    insert_legacy_rows();
    backfill(&run);
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "pay_no_registry: 2 written, 0 present, 0 conflicts") != NULL,
                  "%s", run.out);
    ck_assert_msg(strstr(run.out, "checkout_registry: 2 written, 0 present, 0 conflicts") != NULL,
                  "%s", run.out);
    h_run_free(&run);
    ck_assert_int_eq(1, registry_rows("pay_no_registry",
                                      "pay_no = 'PAY-legacy-1' AND order_no = 'ORD-legacy-1'"));
    ck_assert_int_eq(
        1, registry_rows("pay_no_registry", "pay_no = 'PAY-legacy-2' AND order_no = 'S02-old-2'"));
    ck_assert_int_eq(1,
                     registry_rows("checkout_registry",
                                   "user_id = 'u-legacy' AND request_id = 'req-old-2' AND "
                                   "order_no = 'S02-old-2' AND sku = 'SHOE-42' AND quantity = 1"));

    backfill(&run); /* re-runnable */
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "pay_no_registry: 0 written, 2 present, 0 conflicts") != NULL,
                  "%s", run.out);
    h_run_free(&run);
    ck_assert_int_eq(2, registry_rows("pay_no_registry", "1"));

    /* The bank presents the old pay_no for a new order on the other shard. */
    h_db_exec("INSERT INTO " H_SHARD2_DB ".orders (order_no, user_id, request_id, sku, quantity, "
              "amount, status) VALUES ('S02-new-1', 'u2', 'req-new-1', 'SHOE-42', 1, 899.00, 1)");
    ck_assert_int_eq(0, h_callback(h_port(), "S02-new-1", "PAY-legacy-1", "899.00", &r));
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM " H_SHARD2_DB ".payment_record "
                                       "WHERE order_no = 'S02-new-1'"));
}
END_TEST

START_TEST(backfill_reports_a_binding_to_another_order_and_leaves_it)
{
    struct h_run run;

    insert_legacy_rows();
    /* Bound to another order in both databases: whichever is its place. */
    h_db_exec("INSERT INTO pay_no_registry (pay_no, order_no) VALUES ('PAY-legacy-1', 'S02-x')");
    h_db_exec("INSERT INTO " H_SHARD2_DB ".pay_no_registry (pay_no, order_no) "
              "VALUES ('PAY-legacy-1', 'S02-x')");
    backfill(&run);
    ck_assert_int_eq(1, run.status);
    ck_assert_msg(strstr(run.err, "conflict: pay_no PAY-legacy-1 is bound to S02-x") != NULL, "%s",
                  run.err);
    ck_assert_msg(strstr(run.out, "pay_no_registry: 1 written, 0 present, 1 conflicts") != NULL,
                  "%s", run.out);
    h_run_free(&run);
    ck_assert_int_eq(2, registry_rows("pay_no_registry", "order_no = 'S02-x'"));
}
END_TEST

#define BACKFILL_ROWS 3000 /* per shard, of payments and of orders: 15 pages each */

/* Payments and orders on both shards, bound in no registry. */
static void insert_many_legacy_rows(void)
{
    h_db_exec("INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status) "
              "SELECT CONCAT('ORD-bf-', seq), CONCAT('u', seq %% 97), CONCAT('r', seq), "
              "'SHOE-42', 1, 899.00, 2 FROM seq_1_to_%d",
              BACKFILL_ROWS);
    h_db_exec("INSERT INTO payment_record (pay_no, order_no, amount, status, outcome) "
              "SELECT CONCAT('PAY-bf1-', seq), CONCAT('ORD-bf-', seq), 899.00, 1, 1 "
              "FROM seq_1_to_%d",
              BACKFILL_ROWS);
    h_db_exec("INSERT INTO " H_SHARD2_DB ".orders (order_no, user_id, request_id, sku, quantity, "
              "amount, status) SELECT CONCAT('S02-bf-', seq), CONCAT('v', seq %% 97), "
              "CONCAT('r', seq), 'SHOE-42', 1, 899.00, 2 FROM seq_1_to_%d",
              BACKFILL_ROWS);
    h_db_exec("INSERT INTO " H_SHARD2_DB ".payment_record (pay_no, order_no, amount, status, "
              "outcome) SELECT CONCAT('PAY-bf2-', seq), CONCAT('S02-bf-', seq), 899.00, 1, 1 "
              "FROM seq_1_to_%d",
              BACKFILL_ROWS);
}

/* Every binding of both registries on both shards, as one checksum text. */
static char *bindings(void)
{
    return h_db_scalar_str(
        "SELECT CONCAT_WS(' ', "
        "(SELECT CONCAT(COUNT(*), ':', SUM(CRC32(CONCAT(pay_no, '=', order_no)))) FROM pay_no_registry), "
        "(SELECT CONCAT(COUNT(*), ':', SUM(CRC32(CONCAT(pay_no, '=', order_no)))) "
        "FROM " H_SHARD2_DB ".pay_no_registry), "
        "(SELECT CONCAT(COUNT(*), ':', SUM(CRC32(CONCAT_WS('/', user_id, request_id, order_no, sku, "
        "quantity)))) FROM checkout_registry), "
        "(SELECT CONCAT(COUNT(*), ':', SUM(CRC32(CONCAT_WS('/', user_id, request_id, order_no, sku, "
        "quantity)))) FROM " H_SHARD2_DB ".checkout_registry))");
}

static void forget_bindings(void)
{
    h_db_exec("TRUNCATE TABLE pay_no_registry");
    h_db_exec("TRUNCATE TABLE checkout_registry");
    h_db_exec("TRUNCATE TABLE " H_SHARD2_DB ".pay_no_registry");
    h_db_exec("TRUNCATE TABLE " H_SHARD2_DB ".checkout_registry");
}

/* The backfill has saved a position past its first pages. */
static int backfill_under_way(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM backfill_progress") > 0;
}

START_TEST(backfill_stopped_by_sigterm_resumes_and_ends_with_the_same_bindings)
{
    const char *env[] = { h_shards_env(), NULL };
    const char *args[] = { "--backfill-registries", NULL };
    struct h_run run;
    char *once, *resumed;
    long long part;

    insert_many_legacy_rows();
    backfill(&run); /* one uninterrupted run */
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "rows/s") != NULL, "%s", run.out);
    h_run_free(&run);
    once = bindings();
    ck_assert_ptr_nonnull(once);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM backfill_progress"));

    forget_bindings();
    h_run_signal(args, env, 60000, backfill_under_way, SIGTERM, &run);
    ck_assert_msg(run.status == 3, "exit %d: %s %s", run.status, run.out, run.err);
    ck_assert_msg(strstr(run.out, "stopped after id") != NULL, "%s", run.out);
    h_run_free(&run);
    part = h_db_scalar_ll("SELECT (SELECT COUNT(*) FROM pay_no_registry) + "
                          "(SELECT COUNT(*) FROM " H_SHARD2_DB ".pay_no_registry)");
    ck_assert_int_gt(part, 0);
    ck_assert_int_lt(part, 2 * BACKFILL_ROWS);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM backfill_progress"));

    backfill(&run); /* resumes where it stopped */
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "resumed after id") != NULL, "%s", run.out);
    h_run_free(&run);
    resumed = bindings();
    ck_assert_ptr_nonnull(resumed);
    ck_assert_str_eq(once, resumed);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM backfill_progress"));
    free(once);
    free(resumed);
}
END_TEST

START_TEST(backfill_needs_shards)
{
    const char *args[] = { "--backfill-registries", NULL };
    struct h_run run;

    h_run(args, NULL, 20000, &run);
    ck_assert_int_eq(2, run.status);
    ck_assert_msg(strstr(run.err, "needs mysql.shards") != NULL, "%s", run.err);
    h_run_free(&run);
}
END_TEST

/* ---- one shard map ---------------------------------------------------------- */

/* PAYCALLBACK_MYSQL_SHARDS naming the test databases: spec is a list of
 * "id:db-suffix" such as "2:_s2,1:" (shard 2 on the _s2 twin, shard 1 on
 * the test database). A static string. */
static const char *shards_env_of(const char *spec)
{
    static char env[512];
    const char *db = h_shard_db(1);
    const char *port = getenv("PCB_TEST_MYSQL_PORT");
    char one[160];
    size_t len;
    int first = 1;

    snprintf(env, sizeof env, "PAYCALLBACK_MYSQL_SHARDS=");
    while (*spec != '\0') {
        int id = 0;
        char suffix[16] = "";
        int used = 0;

        ck_assert_int_ge(sscanf(spec, "%d:%n", &id, &used), 1);
        spec += used;
        for (len = 0; spec[len] != '\0' && spec[len] != ','; len++)
            ;
        snprintf(suffix, sizeof suffix, "%.*s", (int)len, spec);
        spec += len + (spec[len] == ',');
        snprintf(one, sizeof one, "%s%d=127.0.0.1:%s/%s%s", first ? "" : ",", id,
                 port != NULL ? port : "3307", db, suffix);
        strncat(env, one, sizeof env - strlen(env) - 1);
        first = 0;
    }
    return env;
}

/* Runs the service with shards (a shards_env_of spec) for at most
 * timeout_ms: a start that is refused ends by itself with exit 2. */
static void start_with(const char *spec, int timeout_ms, struct h_run *run)
{
    const char *env[] = { shards_env_of(spec), NULL };
    const char *args[] = { "-c", "config/paycallback.json", NULL };

    h_run(args, env, timeout_ms, run);
}

START_TEST(a_reordered_shard_list_finds_the_same_bindings)
{
    const char *env[] = { shards_env_of("2:" H_SHARD2_SUFFIX ",1:"), NULL };
    struct h_server *other;
    struct h_resp r;
    char pay_no[64];
    int i;

    /* Ten pay_nos paid for orders of shard 1 through the fixture's service
     * (shards listed 1,2), then presented for orders of shard 2 to a
     * service listing the same shards as 2,1: each is the same pay_no,
     * bound once, whatever the order of the list. */
    for (i = 0; i < 10; i++) {
        char o1[32];

        snprintf(o1, sizeof o1, "S01-RO%d", i);
        snprintf(pay_no, sizeof pay_no, "PAY-RO-%d", i);
        h_db_insert_order(o1, "u-ro", "899.00", 1);
        ck_assert_int_eq(0, h_callback(h_port(), o1, pay_no, "899.00", &r));
        h_assert_status(&r, 200);
        h_resp_free(&r);
    }
    other = h_server_start(env);
    ck_assert_ptr_nonnull(other);
    for (i = 0; i < 10; i++) {
        char o2[32];

        snprintf(o2, sizeof o2, "S02-RO%d", i);
        snprintf(pay_no, sizeof pay_no, "PAY-RO-%d", i);
        h_db_exec("INSERT INTO " H_SHARD2_DB ".orders (order_no, user_id, request_id, sku, "
                  "quantity, amount, status) VALUES ('%s', 'u-ro', 'req-%s', 'SHOE-42', 1, "
                  "899.00, 1)",
                  o2, o2);
        ck_assert_int_eq(0, h_callback(h_server_port(other), o2, pay_no, "899.00", &r));
        h_assert_error(&r, 409, "PAY_NO_CONFLICT");
        h_resp_free(&r);
    }
    ck_assert_int_eq(0, h_server_stop(other));
    ck_assert_int_eq(10, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM " H_SHARD2_DB ".payment_record"));
    ck_assert_int_eq(10, registry_rows("pay_no_registry", "order_no LIKE 'S01-RO%'"));
    ck_assert_int_eq(0, registry_rows("pay_no_registry", "order_no LIKE 'S02-RO%'"));
}
END_TEST

START_TEST(a_service_missing_a_shard_of_the_map_refuses_to_start)
{
    struct h_run run;

    start_with("1:", 8000, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "shard map") != NULL, "%s", run.err);
    h_run_free(&run);
}
END_TEST

START_TEST(a_service_with_the_shards_databases_swapped_refuses_to_start)
{
    struct h_run run;

    start_with("1:" H_SHARD2_SUFFIX ",2:", 8000, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "shard identity") != NULL, "%s", run.err);
    h_run_free(&run);
}
END_TEST

START_TEST(a_service_of_one_database_refuses_a_shard)
{
    const char *args[] = { "-c", "config/paycallback.json", NULL };
    struct h_run run;

    /* The fixture's start wrote the map to the test database (shard 1). */
    h_run(args, NULL, 8000, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "shard map") != NULL && strstr(run.err, "is shard 1 of shards "
                                                                          "1,2") != NULL,
                  "%s", run.err);
    h_run_free(&run);
}
END_TEST

START_TEST(the_map_is_stored_on_every_shard)
{
    ck_assert_int_eq(1,
                     h_db_scalar_ll("SELECT COUNT(*) FROM shard_map WHERE shard_id = 1 AND "
                                    "shard_ids = '1,2' AND scheme = 'sha256-mod-ascending-ids'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM " H_SHARD2_DB ".shard_map WHERE "
                                       "shard_id = 2 AND shard_ids = '1,2'"));
    ck_assert_int_eq(h_db_scalar_ll("SELECT epoch FROM shard_map"),
                     h_db_scalar_ll("SELECT epoch FROM " H_SHARD2_DB ".shard_map"));
}
END_TEST

/* ---- --write-shard-map --------------------------------------------------------- */

/* Whether the fixture's /readyz body holds text. */
static int readyz_has(const char *text)
{
    struct h_resp r;
    int has;

    h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r);
    has = r.body != NULL && strstr(r.body, text) != NULL;
    h_resp_free(&r);
    return has;
}

START_TEST(write_shard_map_moves_the_epoch_and_running_instances_stop_writing)
{
    const char *env[] = { h_shards_env(), NULL };
    const char *args[] = { "--write-shard-map", NULL };
    long long before = h_db_scalar_ll("SELECT epoch FROM shard_map");
    struct h_server *next;
    struct h_run run;
    struct h_resp r;
    char want[96];

    h_db_insert_order("S01-WM1", "u-wm", "899.00", 1);
    h_run(args, env, 20000, &run);
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    snprintf(want, sizeof want, "shard map epoch %lld: shards 1,2", before + 1);
    ck_assert_msg(strstr(run.out, want) != NULL, "%s", run.out);
    h_run_free(&run);
    ck_assert_int_eq(before + 1, h_db_scalar_ll("SELECT epoch FROM shard_map"));
    ck_assert_int_eq(before + 1, h_db_scalar_ll("SELECT epoch FROM " H_SHARD2_DB ".shard_map"));

    /* The running instance started with the old epoch: it stops taking
     * writes on both shards, says so, and writes nothing. */
    h_await(readyz_has("\"1\":\"map_changed\",\"2\":\"map_changed\""), 10000,
            "the running instance never saw the new map");
    ck_assert_int_eq(0, h_callback(h_port(), "S01-WM1", "PAY-WM-1", "899.00", &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_str_eq("1", h_resp_header(&r, "X-Shard-Outage"));
    h_resp_free(&r);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record"));
    ck_assert_int_eq(0, registry_rows("pay_no_registry", "1"));

    /* An instance started now reads the new map and pays. */
    next = h_server_start(env);
    ck_assert_ptr_nonnull(next);
    ck_assert_int_eq(0, h_callback(h_server_port(next), "S01-WM1", "PAY-WM-1", "899.00", &r));
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_server_stop(next));
}
END_TEST

START_TEST(write_shard_map_needs_every_shard_and_shards)
{
    const char *down[] = { h_shards_half_down_env(), "PAYCALLBACK_MYSQL_CONNECT_TIMEOUT_MS=200",
                           NULL };
    const char *args[] = { "--write-shard-map", NULL };
    long long before = h_db_scalar_ll("SELECT epoch FROM shard_map");
    struct h_run run;

    h_run(args, down, 20000, &run);
    ck_assert_int_eq(1, run.status);
    ck_assert_msg(strstr(run.err, "shard 2") != NULL && strstr(run.err, "nothing written"), "%s",
                  run.err);
    h_run_free(&run);
    ck_assert_int_eq(before, h_db_scalar_ll("SELECT epoch FROM shard_map"));

    h_run(args, NULL, 20000, &run);
    ck_assert_int_eq(2, run.status);
    ck_assert_msg(strstr(run.err, "needs mysql.shards") != NULL, "%s", run.err);
    h_run_free(&run);
}
END_TEST

/* ---- retention of the registries ------------------------------------------ */

static void retention_server_up(void)
{
    const char *env[] = { h_shards_env(), "PAYCALLBACK_RECONCILE_INTERVAL_S=1",
                          "PAYCALLBACK_RETENTION_ORPHAN_CHECKOUT_S=600",
                          "PAYCALLBACK_RETENTION_REGISTRY_DAYS=30", NULL };

    h_fixture_server_up_env(env);
}

/* A checkout binding on both shards (whichever is its placement), made
 * age_s seconds ago. */
static void checkout_binding(const char *user, const char *order_no, long age_s)
{
    for (int id = 1; id <= 2; id++)
        h_db_exec("INSERT INTO %s.checkout_registry (user_id, request_id, order_no, sku, "
                  "quantity, create_time) VALUES ('%s', 'r1', '%s', 'SHOE-42', 1, "
                  "NOW(3) - INTERVAL %ld SECOND)",
                  h_shard_db(id), user, order_no, age_s);
}

static long long checkout_bindings(const char *user)
{
    char where[96];

    snprintf(where, sizeof where, "user_id = '%s'", user);
    return registry_rows("checkout_registry", where);
}

START_TEST(retention_purges_orphaned_checkouts_and_bindings_past_the_window)
{
    const long hours2 = 2 * 3600, days40 = 40L * 86400;

    h_db_insert_order("S01-KEEP", "u-keep", "899.00", 1);
    h_db_insert_order("S01-OLD", "u-old", "899.00", 2);
    checkout_binding("u-orphan", "S02-NEVER", hours2); /* no order, past the grace */
    checkout_binding("u-typo", "S1-NEVER", hours2);    /* names no shard at all */
    checkout_binding("u-keep", "S01-KEEP", hours2);    /* its order exists */
    checkout_binding("u-young", "S02-SOON", 10);       /* within the grace */
    checkout_binding("u-old", "S01-OLD", days40);      /* past retention.registry_days */
    h_db_exec("INSERT INTO pay_no_registry (pay_no, order_no, create_time) VALUES "
              "('PAY-OLD', 'S01-OLD', NOW(3) - INTERVAL 40 DAY), ('PAY-NEW', 'S01-KEEP', NOW(3))");
    h_db_exec("INSERT INTO pay_no_fence (pay_no, order_no, actor, create_time) VALUES "
              "('PAY-OLD', 'S01-GONE', 'ops', NOW(3) - INTERVAL 40 DAY), "
              "('PAY-NEW', 'S01-GONE', 'ops', NOW(3))");

    h_await(checkout_bindings("u-orphan") == 0 && checkout_bindings("u-typo") == 0 &&
                checkout_bindings("u-old") == 0 &&
                registry_rows("pay_no_registry", "pay_no = 'PAY-OLD'") == 0 &&
                registry_rows("pay_no_fence", "pay_no = 'PAY-OLD'") == 0,
            20000, "the retention pass never purged the registries");
    ck_assert_int_eq(2, checkout_bindings("u-keep"));
    ck_assert_int_eq(2, checkout_bindings("u-young"));
    ck_assert_int_eq(1, registry_rows("pay_no_registry", "pay_no = 'PAY-NEW'"));
    ck_assert_int_eq(1, registry_rows("pay_no_fence", "pay_no = 'PAY-NEW'"));
    ck_assert_int_ge(h_metric("paycallback_retention_purged_total{table=\"pay_no_fence\"}"), 1);
    ck_assert_int_ge(
        h_metric("paycallback_retention_purged_total{table=\"checkout_registry_orphans\"}"), 4);
    ck_assert_int_ge(h_metric("paycallback_retention_purged_total{table=\"checkout_registry\"}"),
                     2);
    ck_assert_int_ge(h_metric("paycallback_retention_purged_total{table=\"pay_no_registry\"}"), 1);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM orders WHERE order_no = 'S01-KEEP'"));
}
END_TEST

static Suite *shards_suite(void)
{
    Suite *s = suite_create("shards");
    TCase *tc =
        h_tcase_with("two shards up", TC_TIMEOUT_S, h_fixture_sharded_up, h_fixture_server_down);

    tcase_add_test(tc, readyz_lists_every_shard_up);
    tcase_add_test(tc, check_config_probes_every_shard);
    tcase_add_test(tc, backfill_binds_old_rows_once_and_a_reuse_is_then_refused);
    tcase_add_test(tc, backfill_reports_a_binding_to_another_order_and_leaves_it);
    tcase_add_test(tc, backfill_needs_shards);
    tcase_add_test(tc, backfill_stopped_by_sigterm_resumes_and_ends_with_the_same_bindings);
    tcase_add_test(tc, a_reordered_shard_list_finds_the_same_bindings);
    tcase_add_test(tc, a_service_missing_a_shard_of_the_map_refuses_to_start);
    tcase_add_test(tc, a_service_with_the_shards_databases_swapped_refuses_to_start);
    tcase_add_test(tc, a_service_of_one_database_refuses_a_shard);
    tcase_add_test(tc, the_map_is_stored_on_every_shard);
    tcase_add_test(tc, write_shard_map_needs_every_shard_and_shards);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("retention", TC_TIMEOUT_S, retention_server_up, h_fixture_server_down);
    tcase_add_test(tc, retention_purges_orphaned_checkouts_and_bindings_past_the_window);
    suite_add_tcase(s, tc);

    /* Last: its fixture's instance is left on an old map. */
    tc = h_tcase_with("shard map changed", TC_TIMEOUT_S, h_fixture_sharded_up,
                      h_fixture_server_down);
    tcase_add_test(tc, write_shard_map_moves_the_epoch_and_running_instances_stop_writing);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("shard 2 down", TC_TIMEOUT_S, h_fixture_sharded_half_down_up,
                      h_fixture_server_down);
    tcase_add_test(tc, one_shard_down_keeps_the_service_ready_and_names_it);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(shards_suite, NULL, NULL);
