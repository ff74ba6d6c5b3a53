/* check_operator_scopes.c - least privilege and the audit log, against the
 * real binary and MariaDB: a key with scopes is refused (403, nothing
 * written) on every operator route outside them and served inside them; a
 * key without scopes opens every route; every ship, finish and cancel an
 * operator key makes through the order routes is an audit row with the
 * key's name, and GET /ops/audit lists the rows with filters and pages. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define READ_KEY "read-key-0123456789abcdef"
#define SHIP_KEY "ship-key-0123456789abcdef"
#define AUDIT_KEY "audit-key-0123456789abcdef"
#define ALL_KEY "all-key-0123456789abcdef"

static void scoped_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_AUTH_KEYS=reader:" READ_KEY ":read,shipper:" SHIP_KEY ":orders,"
        "auditor:" AUDIT_KEY ":audit+read,ops:" ALL_KEY,
        NULL,
    };

    h_fixture_server_up_env(env);
}

/* Every operator route and the scope it needs. */
static const struct {
    const char *method, *path, *scope;
} routes[] = {
    { "GET", "/metrics", "metrics" },
    { "GET", "/order/SC1", "read" },
    { "POST", "/order/SC1/ship", "orders" },
    { "POST", "/order/SC1/finish", "orders" },
    { "POST", "/order/SC1/cancel", "orders" },
    { "GET", "/ops/reconcile", "read" },
    { "POST", "/ops/reconcile/query", "orders" },
    { "GET", "/ops/outbox", "read" },
    { "GET", "/ops/outbox/1", "read" },
    { "POST", "/ops/outbox/1/retry", "events" },
    { "GET", "/ops/refunds", "read" },
    { "POST", "/ops/refunds/SCP1/settle", "refunds" },
    { "POST", "/ops/orders/cancel-stale", "orders" },
    { "GET", "/ops/audit", "audit" },
    { "GET", "/ops/summary", "read" },
    { "GET", "/ops/payments/SCP1", "read" },
};
#define NROUTES (sizeof routes / sizeof routes[0])

static const char *body_of(const char *method)
{
    return strcmp(method, "POST") == 0 ? "{\"limit\":1,\"reference\":\"R1\"}" : NULL;
}

/* The reader (read only) and the shipper (orders only) on every route:
 * outside its scope 403 FORBIDDEN naming the scope, nothing written. */
START_TEST(a_scoped_key_is_refused_outside_its_scope_and_writes_nothing)
{
    static const struct {
        const char *key, *scope;
    } keys[] = { { READ_KEY, "read" }, { SHIP_KEY, "orders" } };
    struct h_resp r;
    char want[64];

    h_db_insert_order("SC1", "u1", "899.00", 2);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        for (size_t i = 0; i < NROUTES; i++) {
            const char *b = body_of(routes[i].method);

            if (strcmp(routes[i].scope, keys[k].scope) == 0)
                continue;
            h_http_key(h_port(), keys[k].key, routes[i].method, routes[i].path, NULL, b,
                       b ? strlen(b) : 0, &r);
            h_assert_error(&r, 403, "FORBIDDEN");
            snprintf(want, sizeof want, "'%s'", routes[i].scope);
            ck_assert_msg(strstr(r.body, want) != NULL, "%s %s: %s", routes[i].method,
                          routes[i].path, r.body);
            h_resp_free(&r);
        }
    }
    ck_assert_int_eq(2, h_order_status("SC1"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log"));
    ck_assert_int_eq(0, h_outbox_rows());
}
END_TEST

START_TEST(a_key_is_served_inside_its_scope_and_a_key_without_scopes_everywhere)
{
    struct h_resp r;

    h_db_insert_order("SC1", "u1", "899.00", 2);
    h_http_key(h_port(), READ_KEY, "GET", "/order/SC1", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_http_key(h_port(), SHIP_KEY, "POST", "/order/SC1/ship", NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    for (size_t i = 0; i < NROUTES; i++) {
        if (strcmp(routes[i].method, "GET") != 0)
            continue;
        h_http_key(h_port(), ALL_KEY, "GET", routes[i].path, NULL, NULL, 0, &r);
        ck_assert_msg(r.status != 403 && r.status != 401, "GET %s: %d", routes[i].path, r.status);
        h_resp_free(&r);
    }
}
END_TEST

/* The audit rows of ship, finish and cancel through the order routes. */
START_TEST(ship_finish_and_cancel_by_an_operator_key_are_audited)
{
    struct h_resp r;

    h_db_insert_order("SA1", "u1", "899.00", 2);
    h_db_insert_order("SA2", "u1", "899.00", 1);
    h_http_key(h_port(), SHIP_KEY, "POST", "/order/SA1/ship", NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_http_key(h_port(), SHIP_KEY, "POST", "/order/SA1/finish", NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_http_key(h_port(), ALL_KEY, "POST", "/order/SA2/cancel", NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    /* A repeat changes nothing and is not audited again. */
    h_http_key(h_port(), SHIP_KEY, "POST", "/order/SA1/finish", NULL, "", 0, &r);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE actor = 'shipper' "
                                       "AND action = 'order.ship' AND subject = 'SA1' AND "
                                       "detail = 'PAID -> SHIPPED' AND request_id <> ''"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE actor = 'shipper' "
                                       "AND action = 'order.finish' AND subject = 'SA1'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE actor = 'ops' "
                                       "AND action = 'order.cancel' AND subject = 'SA2' AND "
                                       "detail = 'WAIT_PAY -> CANCELED'"));
    ck_assert_int_eq(3, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log"));
}
END_TEST

START_TEST(the_audit_log_is_listed_with_filters_and_pages)
{
    struct h_resp r;
    char *next;
    char path[128];

    for (int i = 1; i <= 3; i++)
        h_db_exec("INSERT INTO audit_log (actor, action, subject, detail, request_id) VALUES "
                  "('%s', 'order.ship', 'SL%d', 'PAID -> SHIPPED', 'rq%d')",
                  i == 3 ? "ops" : "shipper", i, i);
    h_http_key(h_port(), AUDIT_KEY, "GET", "/ops/audit?actor=shipper&limit=1", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"subject\":\"SL1\"") != NULL &&
                      strstr(r.body, "\"actor\":\"shipper\"") != NULL &&
                      strstr(r.body, "\"request_id\":\"rq1\"") != NULL &&
                      strstr(r.body, "SL2") == NULL,
                  "%s", r.body);
    ck_assert_msg(strstr(r.body, "\"next_after\":") != NULL, "%s", r.body);
    next = strstr(r.body, "\"next_after\":") + strlen("\"next_after\":");
    snprintf(path, sizeof path, "/ops/audit?actor=shipper&limit=1&after=%d", atoi(next));
    h_resp_free(&r);
    h_http_key(h_port(), AUDIT_KEY, "GET", path, NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "SL2") != NULL && strstr(r.body, "SL1") == NULL &&
                      strstr(r.body, "SL3") == NULL,
                  "%s", r.body);
    h_resp_free(&r);
    h_http_key(h_port(), AUDIT_KEY, "GET", "/ops/audit?subject=SL3", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"actor\":\"ops\"") != NULL && strstr(r.body, "SL1") == NULL &&
                      strstr(r.body, "next_after") == NULL,
                  "%s", r.body);
    h_resp_free(&r);
    h_http_key(h_port(), AUDIT_KEY, "GET", "/ops/audit?limit=0", NULL, NULL, 0, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
}
END_TEST

static Suite *scopes_suite(void)
{
    Suite *s = suite_create("operator_scopes");
    TCase *tc = h_tcase_with("scoped keys", TC_TIMEOUT_S, scoped_up, h_fixture_server_down);

    tcase_add_test(tc, a_scoped_key_is_refused_outside_its_scope_and_writes_nothing);
    tcase_add_test(tc, a_key_is_served_inside_its_scope_and_a_key_without_scopes_everywhere);
    tcase_add_test(tc, ship_finish_and_cancel_by_an_operator_key_are_audited);
    tcase_add_test(tc, the_audit_log_is_listed_with_filters_and_pages);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(scopes_suite, NULL, NULL);
