/* check_shards_orders.c - orders of a sharded service (mysql.shards)
 * against the real binary and MariaDB: shard 1 is the test database, shard
 * 2 its _s2 twin (h_shards_env). An order is placed on its sku's shard
 * (the stock row it takes lives there), its number says so ("S0n-"), and
 * reads and status changes follow the number. A checkout (user_id,
 * request_id) makes one order across both shards, bound to the sku and
 * quantity it was first sent with; one shard down fails only what needs
 * it.
 *
 * h_db_reset seeds the same stock into both databases; sharded, only the
 * row on the sku's shard is used, so the tests assert on that one and that
 * its twin is untouched. Placement is computed by h_shard_place, as
 * shard_place_index does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define SLOW_TIMEOUT_S 180
#define NSHARDS 2
#define DEDUPE_CLIENTS 20
#define OVERSELL_STOCK 10
#define OVERSELL_CLIENTS 50
#define CLIENT_TRIES 40 /* attempts of one storm client after 503s */
#define NO_BUF 48

/* ---- placement and the two databases -------------------------------------- */

static long long stock_on(int id, const char *sku)
{
    return h_db_scalar_ll("SELECT num FROM %s.stock WHERE sku = '%s'", h_shard_db(id), sku);
}

static long long orders_on(int id)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM %s.orders", h_shard_db(id));
}

static long long rows_on(int id, const char *table, const char *order_no)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM %s.%s WHERE order_no = '%s'", h_shard_db(id), table,
                          order_no);
}

static long long checkouts(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM %s.checkout_registry", h_shard_db(1)) +
           h_db_scalar_ll("SELECT COUNT(*) FROM %s.checkout_registry", h_shard_db(2));
}

/* The seed stock of the harness, as h_db_reset writes it in both. */
static long long seed_stock(const char *sku)
{
    return strcmp(sku, "SHOE-42") == 0 ? 100 : strcmp(sku, "SOCK-01") == 0 ? 500 : 10;
}

/* A user id placed on shard id: "<prefix>-<n>" for the first n that is. */
static void user_on(int id, const char *prefix, char out[32])
{
    for (int n = 0;; n++) {
        snprintf(out, 32, "%s-%d", prefix, n);
        if (h_shard_place(out) == id)
            return;
    }
}

/* ---- requests ---------------------------------------------------------------- */

/* POST /order/create with a fresh token; asserts the exchange worked. */
static void create(const char *user_id, const char *request_id, const char *sku, int quantity,
                   struct h_resp *r)
{
    char token[H_TOKEN_BUF];

    h_token_apply(h_port(), token);
    ck_assert_int_eq(0, h_order_create(h_port(), token, user_id, request_id, sku, quantity, r));
}

/* The shop backends of the sharded server: operator keys shop-0 ...
 * shop-7 (besides the development key of the other tests). A key's
 * records are placed by its scope, "key:<name>". */
#define SHOP_KEYS 8
#define SHOP_KEY_SECRET "-key-0123456789abcdef"

static void sharded_shops_up(void)
{
    static char keys[512];
    const char *env[] = { h_shards_env(), keys, NULL };
    size_t n = (size_t)snprintf(keys, sizeof keys, "PAYCALLBACK_AUTH_KEYS=dev:" H_OPERATOR_KEY);

    for (int i = 0; i < SHOP_KEYS; i++)
        n += (size_t)snprintf(keys + n, sizeof keys - n, ",shop-%d:shop-%d" SHOP_KEY_SECRET, i, i);
    h_fixture_server_up_env(env);
}

/* The shop key whose scope "key:shop-<i>" is placed on shard id: its
 * name into name, its scope into scope. */
static void shop_on(int id, char name[16], char scope[32])
{
    for (int i = 0; i < SHOP_KEYS; i++) {
        snprintf(name, 16, "shop-%u", (unsigned)i % 100u);
        snprintf(scope, 32, "key:%s", name);
        if (h_shard_place(scope) == id)
            return;
    }
    ck_abort_msg("no shop key is placed on shard %d", id);
}

/* POST /order/create with Idempotency-Key: key and no token, from the
 * shop backend shop (its operator key). */
static void create_keyed(const char *shop, const char *key, const char *user_id,
                         const char *request_id, const char *sku, struct h_resp *r)
{
    char body[256], hdr[300], secret[64];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };

    snprintf(secret, sizeof secret, "%s" SHOP_KEY_SECRET, shop);
    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", key);
    snprintf(body, sizeof body,
             "{\"user_id\":\"%s\",\"request_id\":\"%s\",\"sku\":\"%s\",\"quantity\":1}", user_id,
             request_id, sku);
    ck_assert_int_eq(
        0, h_http_key(h_port(), secret, "POST", "/order/create", headers, body, strlen(body), r));
}

/* POST /order/{no}/{verb}, or GET /order/{no} when verb is NULL. */
static void order_call(const char *order_no, const char *verb, struct h_resp *r)
{
    char path[128];

    snprintf(path, sizeof path, "/order/%s%s%s", order_no, verb ? "/" : "", verb ? verb : "");
    ck_assert_int_eq(0,
                     h_http(h_port(), verb ? "POST" : "GET", path, NULL, verb ? "" : NULL, 0, r));
}

/* Creates an order that must be new; its number goes into no. */
static void create_new(const char *user_id, const char *request_id, const char *sku, int quantity,
                       char no[NO_BUF])
{
    struct h_resp r;
    char *got;

    create(user_id, request_id, sku, quantity, &r);
    h_assert_status(&r, 201);
    h_assert_bool(&r, "duplicate", 0);
    got = h_json_get_str(r.body, "order_no");
    ck_assert_ptr_nonnull(got);
    snprintf(no, NO_BUF, "%s", got);
    free(got);
    h_resp_free(&r);
}

/* ---- placement and routing ---------------------------------------------------- */

START_TEST(orders_land_on_their_skus_shard)
{
    static const char *const skus[] = { "SHOE-42", "SOCK-01", "HAT-7" };
    int seen[NSHARDS + 1] = { 0 };

    for (size_t i = 0; i < sizeof skus / sizeof skus[0]; i++) {
        int k = h_shard_place(skus[i]), other = 3 - k;
        char no[NO_BUF], prefix[8], req[32];
        struct h_resp r;

        snprintf(req, sizeof req, "land-%zu", i);
        create_new("u1001", req, skus[i], 2, no);
        snprintf(prefix, sizeof prefix, "S%02d-", k);
        ck_assert_msg(strncmp(no, prefix, 4) == 0, "%s of %s is not on shard %d", no, skus[i], k);
        ck_assert_int_eq(1, rows_on(k, "orders", no));
        ck_assert_int_eq(0, rows_on(other, "orders", no));
        ck_assert_int_eq(seed_stock(skus[i]) - 2, stock_on(k, skus[i]));
        ck_assert_int_eq(seed_stock(skus[i]), stock_on(other, skus[i]));

        order_call(no, NULL, &r);
        h_assert_status(&r, 200);
        h_assert_str(&r, "order_no", no);
        h_assert_str(&r, "sku", skus[i]);
        h_assert_str(&r, "status", "WAIT_PAY");
        h_resp_free(&r);
        seen[k]++;
    }
    ck_assert_msg(seen[1] > 0 && seen[2] > 0, "the seed skus should fall on both shards");
}
END_TEST

START_TEST(ship_and_finish_reach_the_orders_shard)
{
    int k = h_shard_place("SHOE-42");
    char no[NO_BUF];
    struct h_resp r;

    create_new("u1001", "ship-1", "SHOE-42", 1, no);
    h_db_exec("UPDATE %s.orders SET status = 2 WHERE order_no = '%s'", h_shard_db(k), no);
    order_call(no, "ship", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "SHIPPED");
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
    order_call(no, "finish", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "FINISHED");
    h_resp_free(&r);
    order_call(no, "finish", &r);
    h_assert_status(&r, 200);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    ck_assert_int_eq(
        4, h_db_scalar_ll("SELECT status FROM %s.orders WHERE order_no = '%s'", h_shard_db(k), no));
    ck_assert_int_eq(2, rows_on(k, "outbox", no));
    ck_assert_int_eq(0, rows_on(3 - k, "outbox", no));
}
END_TEST

START_TEST(cancel_returns_the_stock_on_the_skus_shard)
{
    int k = h_shard_place("HAT-7");
    char no[NO_BUF];
    struct h_resp r;

    create_new("u1001", "cancel-1", "HAT-7", 3, no);
    ck_assert_int_eq(7, stock_on(k, "HAT-7"));
    order_call(no, "cancel", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "CANCELED");
    h_resp_free(&r);
    ck_assert_int_eq(10, stock_on(k, "HAT-7"));
    ck_assert_int_eq(10, stock_on(3 - k, "HAT-7"));
    ck_assert_int_eq(1, rows_on(k, "outbox", no));
}
END_TEST

START_TEST(an_order_no_of_no_shard_is_404_and_touches_nothing)
{
    static const char *const verbs[] = { NULL, "ship", "finish", "cancel" };
    struct h_resp r;

    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        order_call("S07-x", verbs[i], &r);
        h_assert_error(&r, 404, "ORDER_NOT_FOUND");
        h_resp_free(&r);
    }
    order_call("S00-x", NULL, &r);
    h_assert_error(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0, orders_on(1) + orders_on(2));
}
END_TEST

START_TEST(an_unknown_sku_binds_no_checkout)
{
    char no[NO_BUF];
    struct h_resp r;

    create("u1001", "typo-1", "SHOE-4", 1, &r);
    h_assert_error(&r, 404, "SKU_NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0, checkouts());
    create_new("u1001", "typo-1", "SOCK-01", 1, no); /* the request_id is still free */
    ck_assert_int_eq(1, checkouts());
}
END_TEST

/* ---- one checkout, one order ------------------------------------------------------ */

struct dedupe_storm {
    int port;
    const char *user_id;
    char token[DEDUPE_CLIENTS][H_TOKEN_BUF];
    int status[DEDUPE_CLIENTS];
    char order_no[DEDUPE_CLIENTS][NO_BUF];
};

static int dedupe_call(int i, void *p)
{
    struct dedupe_storm *a = p;
    struct h_resp r;
    char *no;

    h_order_create(a->port, a->token[i], a->user_id, "same-request", "SHOE-42", 1, &r);
    a->status[i] = r.status;
    no = h_json_get_str(r.body, "order_no");
    snprintf(a->order_no[i], sizeof a->order_no[i], "%s", no ? no : "");
    free(no);
    h_resp_free(&r);
    return 0;
}

/* The user's checkout row is on the other shard than the sku's: the
 * registry, not the order's unique key, is what sees every twin first. */
START_TEST(one_checkout_sent_20_times_at_once_is_one_order)
{
    static struct dedupe_storm a;
    int k = h_shard_place("SHOE-42"), created = 0, dups = 0, first = -1;
    struct h_storm_stats st;
    char user[32];

    memset(&a, 0, sizeof a);
    user_on(3 - k, "twin", user);
    a.port = h_port();
    a.user_id = user;
    for (int i = 0; i < DEDUPE_CLIENTS; i++)
        h_token_apply(h_port(), a.token[i]);
    ck_assert_int_eq(0, h_storm(DEDUPE_CLIENTS, DEDUPE_CLIENTS, dedupe_call, &a, &st));
    for (int i = 0; i < DEDUPE_CLIENTS; i++) {
        created += a.status[i] == 201;
        dups += a.status[i] == 200;
        if (a.status[i] == 201)
            first = i;
    }
    ck_assert_int_eq(1, created);
    ck_assert_int_eq(DEDUPE_CLIENTS - 1, dups);
    for (int i = 0; i < DEDUPE_CLIENTS; i++)
        ck_assert_str_eq(a.order_no[first], a.order_no[i]);
    ck_assert_int_eq(1, orders_on(1) + orders_on(2));
    ck_assert_int_eq(1, orders_on(k));
    ck_assert_int_eq(1, checkouts());
    ck_assert_int_eq(
        1, h_db_scalar_ll("SELECT COUNT(*) FROM %s.checkout_registry", h_shard_db(3 - k)));
    ck_assert_int_eq(99, stock_on(k, "SHOE-42"));
}
END_TEST

START_TEST(a_request_id_is_bound_to_its_first_sku)
{
    char no[NO_BUF], user[32];
    struct h_resp r;

    user_on(h_shard_place("SOCK-01"), "bound", user);
    create_new(user, "r1", "SHOE-42", 1, no);
    create(user, "r1", "SOCK-01", 2, &r);
    h_assert_status(&r, 200);
    h_assert_bool(&r, "duplicate", 1);
    h_assert_str(&r, "order_no", no);
    h_assert_str(&r, "sku", "SHOE-42");
    ck_assert_msg(strstr(r.body, "\"quantity\":1") != NULL, "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(1, orders_on(1) + orders_on(2));
    ck_assert_int_eq(500, stock_on(1, "SOCK-01"));
    ck_assert_int_eq(500, stock_on(2, "SOCK-01"));
    ck_assert_int_eq(99, stock_on(h_shard_place("SHOE-42"), "SHOE-42"));
}
END_TEST

/* ---- oversell ------------------------------------------------------------------------ */

struct oversell {
    int port;
    int status[OVERSELL_CLIENTS]; /* the final answer of each client */
    int out_of_stock[OVERSELL_CLIENTS];
    char order_no[OVERSELL_CLIENTS][NO_BUF];
};

/* One shopper of its own user_id; a 503 (BUSY or UNAVAILABLE) is retried
 * with a fresh token and the same request_id, as a frontend would. */
static int oversell_call(int i, void *p)
{
    struct oversell *a = p;
    char token[H_TOKEN_BUF], user[32];
    struct h_resp r;
    char *no;

    snprintf(user, sizeof user, "buyer-%d", i);
    for (int tries = 1; tries <= CLIENT_TRIES; tries++) {
        if (h_token_try(a->port, token, NULL) != 0) {
            h_client_backoff(tries, i);
            continue;
        }
        h_order_create(a->port, token, user, "hat", "HAT-7", 1, &r);
        a->status[i] = r.status;
        if (r.status != 503) {
            a->out_of_stock[i] = h_json_eq_str(r.body, "code", "OUT_OF_STOCK");
            no = h_json_get_str(r.body, "order_no");
            snprintf(a->order_no[i], sizeof a->order_no[i], "%s", no ? no : "");
            free(no);
            h_resp_free(&r);
            return 0;
        }
        h_resp_free(&r);
        h_client_backoff(tries, i);
    }
    return 1;
}

START_TEST(oversell_storm_from_users_of_both_shards_sells_exactly_the_stock)
{
    static struct oversell a;
    int k = h_shard_place("HAT-7"), n201 = 0, n409 = 0, users_on[NSHARDS + 1] = { 0 };
    struct h_storm_stats st;

    for (int i = 0; i < OVERSELL_CLIENTS; i++) {
        char user[32];

        snprintf(user, sizeof user, "buyer-%d", i);
        users_on[h_shard_place(user)]++;
    }
    ck_assert_msg(users_on[1] > 0 && users_on[2] > 0, "the buyers' checkouts should be on both");
    memset(&a, 0, sizeof a);
    a.port = h_port();
    h_db_exec("UPDATE %s.stock SET num = %d WHERE sku = 'HAT-7'", h_shard_db(k), OVERSELL_STOCK);
    ck_assert_int_eq(0, h_storm(OVERSELL_CLIENTS, OVERSELL_CLIENTS, oversell_call, &a, &st));
    for (int i = 0; i < OVERSELL_CLIENTS; i++) {
        if (a.status[i] == 201) {
            n201++;
            ck_assert_msg(a.order_no[i][2] == '0' + k, "%s not on shard %d", a.order_no[i], k);
        }
        n409 += a.status[i] == 409 && a.out_of_stock[i];
    }
    printf("sharded oversell: stock %d, %d shoppers (checkouts %d on shard 1, %d on shard 2): "
           "%.0f shoppers/s p50 %.1f ms p99 %.1f ms\n",
           OVERSELL_STOCK, OVERSELL_CLIENTS, users_on[1], users_on[2], st.rps, st.p50_us / 1000.0,
           st.p99_us / 1000.0);
    ck_assert_int_eq(0, st.errors);
    ck_assert_int_eq(OVERSELL_STOCK, n201);
    ck_assert_int_eq(OVERSELL_CLIENTS - OVERSELL_STOCK, n409);
    ck_assert_int_eq(OVERSELL_STOCK, orders_on(k));
    ck_assert_int_eq(0, orders_on(3 - k));
    ck_assert_int_eq(0, stock_on(k, "HAT-7"));
    ck_assert_int_eq(10, stock_on(3 - k, "HAT-7"));
    ck_assert_int_eq(OVERSELL_CLIENTS, checkouts());
}
END_TEST

/* ---- Idempotency-Key --------------------------------------------------------------- */

/* A key's record is placed by its scope ("key:<shop>"), the order by its
 * sku: the record on the order's shard (stored in the order's
 * transaction) and on the other one (stored after it) answer alike. */
static void keyed_create_replays_and_refuses_another_sku(int key_shard)
{
    char shop[16], scope[32];
    const char *user = "keyed-1";
    struct h_resp r, again;
    char *no;

    shop_on(key_shard, shop, scope);
    create_keyed(shop, "k-1", user, "erp-1", "SHOE-42", &r);
    h_assert_status(&r, 201);
    ck_assert_ptr_null(h_resp_header(&r, "Idempotent-Replayed"));
    create_keyed(shop, "k-1", user, "erp-1", "SHOE-42", &again);
    h_assert_status(&again, 201);
    ck_assert_str_eq(r.body, again.body);
    ck_assert_pstr_eq("true", h_resp_header(&again, "Idempotent-Replayed"));
    h_resp_free(&again);
    create_keyed(shop, "k-1", user, "erp-1", "SOCK-01", &again);
    h_assert_error(&again, 422, "IDEMPOTENCY_KEY_MISMATCH");
    h_resp_free(&again);
    no = h_json_get_str(r.body, "order_no");
    ck_assert_int_eq(1, rows_on(h_shard_place("SHOE-42"), "orders", no));
    ck_assert_int_eq(1, orders_on(1) + orders_on(2));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM %s.idem_key WHERE scope = '%s' "
                                       "AND state = 2",
                                       h_shard_db(key_shard), scope));
    ck_assert_int_eq(0,
                     h_db_scalar_ll("SELECT COUNT(*) FROM %s.idem_key", h_shard_db(3 - key_shard)));
    free(no);
    h_resp_free(&r);
}

START_TEST(keyed_create_with_its_record_on_the_orders_shard)
{
    keyed_create_replays_and_refuses_another_sku(h_shard_place("SHOE-42"));
}
END_TEST

START_TEST(keyed_create_with_its_record_on_another_shard)
{
    keyed_create_replays_and_refuses_another_sku(3 - h_shard_place("SHOE-42"));
}
END_TEST

/* The order committed on its shard, then the process died before the
 * key's answer was stored on the other: the key is left RUNNING with a
 * lapsed lease. A repeat takes it over and gets the same order, as a
 * duplicate, never a second one (README, "Idempotency-Key"). */
START_TEST(keyed_create_that_died_before_its_answer_was_stored)
{
    int key_shard = 3 - h_shard_place("SHOE-42");
    char shop[16], scope[32];
    const char *user = "crash-1";
    struct h_resp r, again;
    char *no;

    shop_on(key_shard, shop, scope);
    create_keyed(shop, "k-crash", user, "erp-crash", "SHOE-42", &r);
    h_assert_status(&r, 201);
    h_db_exec("UPDATE %s.idem_key SET state = 1, status = NULL, body = NULL, "
              "owner = '00000000000000000000000000000000', "
              "lease_until = NOW(3) - INTERVAL 1 SECOND WHERE scope = '%s'",
              h_shard_db(key_shard), scope);

    create_keyed(shop, "k-crash", user, "erp-crash", "SHOE-42", &again);
    h_assert_status(&again, 200);
    h_assert_bool(&again, "duplicate", 1);
    no = h_json_get_str(r.body, "order_no");
    h_assert_str(&again, "order_no", no);
    h_resp_free(&again);
    create_keyed(shop, "k-crash", user, "erp-crash", "SHOE-42", &again);
    h_assert_status(&again, 200);
    ck_assert_pstr_eq("true", h_resp_header(&again, "Idempotent-Replayed"));
    h_assert_str(&again, "order_no", no);
    h_resp_free(&again);
    ck_assert_int_eq(1, orders_on(1) + orders_on(2));
    ck_assert_int_eq(99, stock_on(h_shard_place("SHOE-42"), "SHOE-42"));
    free(no);
    h_resp_free(&r);
}
END_TEST

/* ---- Redis down: tokens in MySQL ------------------------------------------------------ */

static long long token_rows_on(int id, const char *token)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM %s.idem_token WHERE token = '%s'", h_shard_db(id),
                          token);
}

/* Unchecked teardown: later suites need Redis whatever happened here. */
static void redis_back(void)
{
    h_services("start-redis");
}

static void clean_with_redis(void)
{
    h_services("start-redis"); /* a failed test may have left it down */
    h_fixture_clean();
}

/* With Redis down a token lives in idem_token on the shard its hash
 * places it on, and is found there when it is spent, once. */
START_TEST(with_redis_down_a_token_lives_on_its_shard)
{
    char token[NSHARDS + 1][H_TOKEN_BUF], t[H_TOKEN_BUF], req[32];
    int have[NSHARDS + 1] = { 0 };
    struct h_resp r;

    h_services("stop-redis");
    for (int n = 0; n < 64 && (!have[1] || !have[2]); n++) {
        int id;

        h_token_apply(h_port(), t);
        id = h_shard_place(t);
        ck_assert_int_eq(1, token_rows_on(id, t));
        ck_assert_int_eq(0, token_rows_on(3 - id, t));
        snprintf(token[id], H_TOKEN_BUF, "%s", t);
        have[id] = 1;
    }
    ck_assert_msg(have[1] && have[2], "64 tokens all placed on one shard");
    for (int id = 1; id <= NSHARDS; id++) {
        snprintf(req, sizeof req, "degraded-%d", id);
        ck_assert_int_eq(0, h_order_create(h_port(), token[id], "u1001", req, "SOCK-01", 1, &r));
        h_assert_status(&r, 201);
        h_resp_free(&r);
        ck_assert_int_eq(0, token_rows_on(id, token[id]));
        ck_assert_int_eq(0, h_order_create(h_port(), token[id], "u1001", req, "SOCK-01", 1, &r));
        h_assert_error(&r, 409, "REPEAT_SUBMIT");
        h_resp_free(&r);
    }
    ck_assert_int_eq(498, stock_on(h_shard_place("SOCK-01"), "SOCK-01"));
    h_services("start-redis");
}
END_TEST

/* ---- one shard down ------------------------------------------------------------------ */

START_TEST(an_order_on_the_down_shard_is_503_and_its_token_comes_back)
{
    const char *down_sku = h_shard_place("SHOE-42") == 2 ? "SHOE-42" : "HAT-7";
    const char *up_sku = "SOCK-01";
    char token[H_TOKEN_BUF], user[32], *no;
    struct h_resp r;

    ck_assert_int_eq(2, h_shard_place(down_sku));
    ck_assert_int_eq(1, h_shard_place(up_sku));
    user_on(1, "down", user);
    h_token_apply(h_port(), token);
    ck_assert_int_eq(0, h_order_create(h_port(), token, user, "d-1", down_sku, 1, &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);
    ck_assert_msg(h_metric("paycallback_shard_unavailable_total{shard=\"2\"}") >= 1,
                  "the 503 is not counted on shard 2");

    /* The very same token again: it was given back. */
    ck_assert_int_eq(0, h_order_create(h_port(), token, user, "d-2", up_sku, 1, &r));
    h_assert_status(&r, 201);
    no = h_json_get_str(r.body, "order_no");
    ck_assert_msg(no != NULL && strncmp(no, "S01-", 4) == 0, "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(499, stock_on(1, up_sku));

    order_call(no, NULL, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    order_call("S02-O20261202170301aaaaaaaaaaaaaaaa", NULL, &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_resp_free(&r);
    free(no);
}
END_TEST

START_TEST(a_checkout_registered_on_the_down_shard_is_503)
{
    char user[32];
    struct h_resp r;

    user_on(2, "down", user);
    create(user, "d-3", "SOCK-01", 1, &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_resp_free(&r);
    ck_assert_int_eq(0, orders_on(1));
    ck_assert_int_eq(500, stock_on(1, "SOCK-01"));
}
END_TEST

/* POST /order/{no}/cancel with Idempotency-Key: key. */
static void cancel_keyed(const char *key, const char *order_no, struct h_resp *r)
{
    char path[128], hdr[300];
    const char *headers[] = { hdr, NULL };

    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", key);
    snprintf(path, sizeof path, "/order/%s/cancel", order_no);
    ck_assert_int_eq(0, h_http(h_port(), "POST", path, headers, "", 0, r));
}

/* A key used for a cancel on shard first, then for an order on the other
 * shard: the second is refused as on one database, whichever of the two
 * shards holds the key's record (placement of "key:<caller>"). */
static void transition_key_reused_across_shards(int first, const char *key)
{
    char a[NO_BUF], b[NO_BUF];
    struct h_resp r;
    int second = first == 1 ? 2 : 1;

    snprintf(a, sizeof a, "S0%d-idem-%s", first, key);
    snprintf(b, sizeof b, "S0%d-idem-%s", second, key);
    h_db_exec("INSERT INTO %s.orders (order_no, user_id, request_id, sku, quantity, amount, "
              "status) VALUES ('%s', 'u-idem', 'req-%s', 'SHOE-42', 1, 899.00, 1)",
              h_shard_db(first), a, a);
    h_db_exec("INSERT INTO %s.orders (order_no, user_id, request_id, sku, quantity, amount, "
              "status) VALUES ('%s', 'u-idem', 'req-%s', 'SHOE-42', 1, 899.00, 1)",
              h_shard_db(second), b, b);

    cancel_keyed(key, a, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "CANCELED");
    h_resp_free(&r);
    cancel_keyed(key, b, &r);
    h_assert_error(&r, 422, "IDEMPOTENCY_KEY_MISMATCH");
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT status FROM %s.orders WHERE order_no = '%s'",
                                       h_shard_db(second), b));
    cancel_keyed(key, a, &r); /* the first use replays */
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "CANCELED");
    h_resp_free(&r);
    ck_assert_int_eq(9, h_db_scalar_ll("SELECT status FROM %s.orders WHERE order_no = '%s'",
                                       h_shard_db(first), a));
}

START_TEST(a_transition_key_reused_for_an_order_on_another_shard_is_422)
{
    transition_key_reused_across_shards(1, "tk-from-1");
    transition_key_reused_across_shards(2, "tk-from-2");
}
END_TEST

static Suite *shards_orders_suite(void)
{
    Suite *s = suite_create("shards_orders");
    TCase *tc =
        h_tcase_with("orders on two shards", TC_TIMEOUT_S, sharded_shops_up, h_fixture_server_down);

    tcase_add_test(tc, orders_land_on_their_skus_shard);
    tcase_add_test(tc, ship_and_finish_reach_the_orders_shard);
    tcase_add_test(tc, cancel_returns_the_stock_on_the_skus_shard);
    tcase_add_test(tc, an_order_no_of_no_shard_is_404_and_touches_nothing);
    tcase_add_test(tc, an_unknown_sku_binds_no_checkout);
    tcase_add_test(tc, one_checkout_sent_20_times_at_once_is_one_order);
    tcase_add_test(tc, a_request_id_is_bound_to_its_first_sku);
    tcase_add_test(tc, keyed_create_with_its_record_on_the_orders_shard);
    tcase_add_test(tc, keyed_create_with_its_record_on_another_shard);
    tcase_add_test(tc, keyed_create_that_died_before_its_answer_was_stored);
    tcase_add_test(tc, a_transition_key_reused_for_an_order_on_another_shard_is_422);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("oversell on two shards", SLOW_TIMEOUT_S, h_fixture_sharded_up,
                      h_fixture_server_down);
    tcase_add_test(tc, oversell_storm_from_users_of_both_shards_sells_exactly_the_stock);
    suite_add_tcase(s, tc);

    tc = tcase_create("redis down, two shards");
    tcase_add_unchecked_fixture(tc, h_fixture_sharded_up, h_fixture_server_down);
    tcase_add_unchecked_fixture(tc, NULL, redis_back);
    tcase_add_checked_fixture(tc, clean_with_redis, NULL);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, with_redis_down_a_token_lives_on_its_shard);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("shard 2 down", TC_TIMEOUT_S, h_fixture_sharded_half_down_up,
                      h_fixture_server_down);
    tcase_add_test(tc, an_order_on_the_down_shard_is_503_and_its_token_comes_back);
    tcase_add_test(tc, a_checkout_registered_on_the_down_shard_is_503);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(shards_orders_suite, NULL, NULL);
