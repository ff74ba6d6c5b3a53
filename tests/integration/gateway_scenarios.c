/* gateway_scenarios.c - the scenarios every gateway notification route
 * passes, as one table; the request format and the answers come from the
 * driver of the suite that runs them (gateway_scenarios.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_scenarios.h"

#define STORM_TOTAL 100
#define ALERT_WAIT_MS 5000

/* The driver of this binary, set before the tests fork. */
static const struct gw_driver *drv;

static const struct gw_pay paying = { "GW-PAY-1", "O1", GW_PRICE_CENTS, NULL };

void gw_headers(struct gw_request *rq, int n)
{
    int i;

    for (i = 0; i < n && i < GW_HEADERS_MAX; i++)
        rq->headers[i] = rq->header[i];
    rq->headers[i] = NULL;
}

void gw_send(const struct gw_request *rq, struct h_resp *r)
{
    char route[128];

    if (rq->route == NULL)
        snprintf(route, sizeof route, "/pay/callback/%s", drv->name);
    else
        snprintf(route, sizeof route, "%s", rq->route);
    h_http(h_port(), "POST", route, rq->headers, rq->body, strlen(rq->body), r);
}

void gw_post(const struct gw_pay *p, enum gw_twist t, struct h_resp *r)
{
    static struct gw_request rq;

    memset(&rq, 0, sizeof rq);
    drv->build(&rq, p, t);
    gw_send(&rq, r);
}

void gw_assert_ack(const struct h_resp *r)
{
    ck_assert_msg(drv->acked(r), "%s: expected the acknowledgement, got %d: %s", drv->name,
                  r->status, r->body != NULL ? r->body : "");
}

void gw_assert_refused(const struct h_resp *r, int status, const char *code)
{
    const char *why = drv->refused(r, status, code);

    ck_assert_msg(why == NULL, "%s: %s", drv->name, why);
}

/* The value of a notification counter of gateway, 0 when absent. The
 * server lives through a test case: compare with the value before. */
static long long notifications(const char *gateway, const char *result)
{
    char series[160];
    long long v;

    snprintf(series, sizeof series,
             "paycallback_gateway_notifications_total{gateway=\"%s\",result=\"%s\"}", gateway,
             result);
    v = h_metric(series);
    return v < 0 ? 0 : v;
}

static long long rejected(const char *reason)
{
    char series[160];
    long long v;

    snprintf(series, sizeof series,
             "paycallback_gateway_rejected_total{gateway=\"%s\",reason=\"%s\"}", drv->name, reason);
    v = h_metric(series);
    return v < 0 ? 0 : v;
}

/* ---- a paying notification pays once -------------------------------------- */

START_TEST(paying_notification_pays_the_order_and_is_acknowledged)
{
    long long paid = notifications(drv->name, "PAID");
    struct h_resp r;

    h_db_insert_order_in("O1", GW_PRICE, drv->currency);
    gw_post(&paying, GW_GOOD, &r);
    gw_assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'GW-PAY-1' AND order_no = 'O1' AND amount = 899.00"));
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(2, h_order_status("O1"));
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(paid + 1, notifications(drv->name, "PAID"));
}
END_TEST

START_TEST(replayed_notification_is_acknowledged_and_written_once)
{
    long long paid = notifications(drv->name, "PAID");
    long long replays = notifications(drv->name, "REPLAY");
    struct h_resp r;
    int i;

    h_db_insert_order_in("O1", GW_PRICE, drv->currency);
    for (i = 0; i < 3; i++) {
        gw_post(&paying, GW_GOOD, &r);
        gw_assert_ack(&r);
        h_resp_free(&r);
    }
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(paid + 1, notifications(drv->name, "PAID"));
    ck_assert_int_eq(replays + 2, notifications(drv->name, "REPLAY"));
}
END_TEST

/* The acknowledgement says nothing of the order's status, so a replay of
 * any recorded payment is answered from memory once the database has
 * answered it: the same bytes, and the order moving on changes nothing. */
START_TEST(replay_is_acknowledged_from_memory_byte_for_byte)
{
    long long hits = h_metric("paycallback_replay_cache_hits_total");
    long long replays = notifications(drv->name, "REPLAY");
    struct h_resp r, db, mem;

    ck_assert_msg(hits >= 0, "no paycallback_replay_cache_hits_total in /metrics");
    h_db_insert_order_in("O1", GW_PRICE, drv->currency);
    gw_post(&paying, GW_GOOD, &r);
    gw_assert_ack(&r);
    h_resp_free(&r);
    gw_post(&paying, GW_GOOD, &db);
    gw_assert_ack(&db);
    ck_assert_int_eq(hits, h_metric("paycallback_replay_cache_hits_total"));
    h_db_exec("UPDATE orders SET status = 3 WHERE order_no = 'O1'");
    gw_post(&paying, GW_GOOD, &mem);
    ck_assert_int_eq(hits + 1, h_metric("paycallback_replay_cache_hits_total"));
    ck_assert_int_eq(db.status, mem.status);
    ck_assert_pstr_eq(h_resp_header(&db, "Content-Type"), h_resp_header(&mem, "Content-Type"));
    ck_assert_uint_eq(db.body_len, mem.body_len);
    ck_assert_msg(memcmp(db.body, mem.body, db.body_len) == 0,
                  "from the database: %s\nfrom memory:      %s", db.body, mem.body);
    h_resp_free(&db);
    h_resp_free(&mem);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(replays + 2, notifications(drv->name, "REPLAY"));
}
END_TEST

struct storm_arg {
    struct gw_request rq;
    int acked[STORM_TOTAL];
};

static int storm_call(int i, void *p)
{
    struct storm_arg *a = p;
    struct h_resp r;

    gw_send(&a->rq, &r);
    a->acked[i] = drv->acked(&r);
    h_resp_free(&r);
    return !a->acked[i];
}

START_TEST(storm_of_identical_notifications_pays_exactly_once)
{
    static struct storm_arg a;
    const struct gw_pay p = { "GW-PAY-STORM", "OSTORM", GW_PRICE_CENTS, NULL };
    struct h_storm_stats st;
    int i, ok = 0;

    h_db_insert_order_in("OSTORM", GW_PRICE, drv->currency);
    drv->build(&a.rq, &p, GW_GOOD);
    ck_assert_int_eq(0, h_storm(STORM_TOTAL, STORM_TOTAL, storm_call, &a, &st));
    for (i = 0; i < STORM_TOTAL; i++)
        ok += a.acked[i];
    printf("%s storm: %d identical notifications, %d acknowledged, %.0f req/s\n", drv->name,
           STORM_TOTAL, ok, st.rps);
    ck_assert_int_eq(STORM_TOTAL, ok);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(2, h_order_status("OSTORM"));
}
END_TEST

START_TEST(non_paying_notifications_are_acknowledged_and_change_nothing)
{
    long long ignored = notifications(drv->name, "IGNORED");
    struct gw_pay p = paying;
    struct h_resp r;
    int n;

    h_db_insert_order_in("O1", GW_PRICE, drv->currency);
    for (n = 0; drv->idle[n] != NULL; n++) {
        p.state = drv->idle[n];
        gw_post(&p, GW_GOOD, &r);
        gw_assert_ack(&r);
        h_resp_free(&r);
    }
    ck_assert_int_gt(n, 0);
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
    ck_assert_int_eq(ignored + n, notifications(drv->name, "IGNORED"));
}
END_TEST

/* ---- unsigned notifications are refused ----------------------------------- */

/* Posts the notification of O1 twisted by t, with the order at price, and
 * asserts it is refused with status, counted under reason, and pays
 * nothing. */
static void assert_rejected(enum gw_twist t, const char *price, int status, const char *code,
                            const char *reason)
{
    struct h_resp r;
    long long before;

    h_db_insert_order_in("O1", price, drv->currency);
    before = rejected(reason);
    gw_post(&paying, t, &r);
    gw_assert_refused(&r, status, code);
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
    ck_assert_int_eq(before + 1, rejected(reason));
}

START_TEST(notification_signed_with_another_key_is_refused)
{
    assert_rejected(GW_FOREIGN_KEY, GW_PRICE, 401, "BAD_SIGNATURE", "signature_mismatch");
}
END_TEST

/* The order is at the altered amount: only the signature stands between
 * the altered notification and a payment. */
START_TEST(altered_notification_is_refused)
{
    assert_rejected(GW_ALTERED, drv->altered_price, 401, "BAD_SIGNATURE", "signature_mismatch");
}
END_TEST

START_TEST(notification_without_its_signature_is_refused)
{
    assert_rejected(GW_UNSIGNED, GW_PRICE, 401, "BAD_SIGNATURE", "signature_missing");
}
END_TEST

START_TEST(stale_notification_is_refused)
{
    assert_rejected(GW_STALE, GW_PRICE, 401, "BAD_SIGNATURE", "timestamp_stale");
}
END_TEST

START_TEST(notification_for_another_app_is_refused)
{
    assert_rejected(GW_OTHER_APP, GW_PRICE, 403, NULL, "wrong_app");
}
END_TEST

START_TEST(malformed_notifications_are_refused)
{
    static struct gw_request rq;
    const struct gw_malformed *m;
    struct h_resp r;

    h_db_insert_order_in("O1", GW_PRICE, drv->currency);
    for (m = drv->malformed; m->body != NULL; m++) {
        memset(&rq, 0, sizeof rq);
        snprintf(rq.body, sizeof rq.body, "%s", m->body);
        drv->seal(&rq);
        gw_send(&rq, &r);
        ck_assert_msg(drv->refused(&r, m->status, "BAD_REQUEST") == NULL, "body %s: %s", m->body,
                      drv->refused(&r, m->status, "BAD_REQUEST"));
        h_resp_free(&r);
    }
    ck_assert_ptr_ne(drv->malformed, m);
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
}
END_TEST

/* A parser that stops at the \u0000 would read the paying state; the
 * service reads strings whole and refuses the notification. */
START_TEST(nul_in_a_signed_notification_is_refused_and_pays_nothing)
{
    struct h_resp r;

    h_db_insert_order_in("O1", GW_PRICE, drv->currency);
    gw_post(&paying, GW_NUL, &r);
    gw_assert_refused(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
}
END_TEST

/* ---- unmatched payments are refused --------------------------------------- */

START_TEST(notification_in_another_currency_is_amount_mismatch)
{
    struct gw_request rq;
    struct h_resp r;
    const char *gateway;
    long long before;

    h_db_insert_order_in("O1", GW_PRICE, drv->currency);
    memset(&rq, 0, sizeof rq);
    drv->build(&rq, &paying, GW_OTHER_CURRENCY);
    gateway = rq.route != NULL ? strrchr(rq.route, '/') + 1 : drv->name;
    before = notifications(gateway, "MISMATCH");
    gw_send(&rq, &r);
    gw_assert_refused(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
    ck_assert_int_eq(before + 1, notifications(gateway, "MISMATCH"));
}
END_TEST

START_TEST(notification_with_another_amount_is_amount_mismatch)
{
    const struct gw_pay p = { "GW-PAY-1", "O1", GW_PRICE_CENTS + 1, NULL };
    char gateway[64];
    const char *parts[] = { "alert=AMOUNT_MISMATCH", gateway, "order_no=O1", "pay_no=GW-PAY-1",
                            NULL };
    struct h_resp r;
    char *line;

    h_db_insert_order_in("O1", GW_PRICE, drv->currency);
    gw_post(&p, GW_GOOD, &r);
    gw_assert_refused(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
    /* the same alert as a native callback's, naming the gateway */
    snprintf(gateway, sizeof gateway, "gateway=%s", drv->name);
    line = h_log_find(parts, ALERT_WAIT_MS);
    ck_assert_msg(line != NULL, "no AMOUNT_MISMATCH alert naming %s", drv->name);
    free(line);
}
END_TEST

START_TEST(notification_for_an_unknown_order_is_refused)
{
    const struct gw_pay p = { "GW-PAY-1", "NOPE", GW_PRICE_CENTS, NULL };
    long long before = notifications(drv->name, "NOT_FOUND");
    struct h_resp r;

    gw_post(&p, GW_GOOD, &r);
    gw_assert_refused(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(before + 1, notifications(drv->name, "NOT_FOUND"));
}
END_TEST

/* ---- a mysql outage loses nothing ----------------------------------------- */

START_TEST(mysql_outage_is_refused_for_a_retry_and_loses_nothing)
{
    struct h_resp r;
    const char *retry;

    h_db_insert_order_in("O1", GW_PRICE, drv->currency);
    h_services("stop-mysql");
    gw_post(&paying, GW_GOOD, &r);
    gw_assert_refused(&r, 503, "UNAVAILABLE");
    retry = h_resp_header(&r, "Retry-After");
    ck_assert_msg(retry != NULL && atoi(retry) > 0, "expected Retry-After: %s", r.body);
    h_resp_free(&r);
    h_services("start-mysql");
    gw_post(&paying, GW_GOOD, &r);
    gw_assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(2, h_order_status("O1"));
}
END_TEST

/* ---- the table ------------------------------------------------------------ */

#define NEEDS_IDLE (-1)      /* the driver lists states that pay nothing */
#define NEEDS_MALFORMED (-2) /* the driver lists malformed bodies */

static const struct scenario {
    enum gw_group group;
    int needs; /* an enum gw_twist, or NEEDS_* */
    const TTest *const *test;
} scenarios[] = {
    { GW_PAYS, GW_GOOD, &paying_notification_pays_the_order_and_is_acknowledged },
    { GW_PAYS, GW_GOOD, &replayed_notification_is_acknowledged_and_written_once },
    { GW_PAYS, GW_GOOD, &storm_of_identical_notifications_pays_exactly_once },
    { GW_PAYS, NEEDS_IDLE, &non_paying_notifications_are_acknowledged_and_change_nothing },
    { GW_REFUSED, GW_FOREIGN_KEY, &notification_signed_with_another_key_is_refused },
    { GW_REFUSED, GW_ALTERED, &altered_notification_is_refused },
    { GW_REFUSED, GW_UNSIGNED, &notification_without_its_signature_is_refused },
    { GW_REFUSED, GW_STALE, &stale_notification_is_refused },
    { GW_REFUSED, GW_OTHER_APP, &notification_for_another_app_is_refused },
    { GW_REFUSED, NEEDS_MALFORMED, &malformed_notifications_are_refused },
    { GW_REFUSED, GW_NUL, &nul_in_a_signed_notification_is_refused_and_pays_nothing },
    { GW_UNMATCHED, GW_OTHER_CURRENCY, &notification_in_another_currency_is_amount_mismatch },
    { GW_UNMATCHED, GW_GOOD, &notification_with_another_amount_is_amount_mismatch },
    { GW_UNMATCHED, GW_GOOD, &notification_for_an_unknown_order_is_refused },
    { GW_OUTAGE, GW_GOOD, &mysql_outage_is_refused_for_a_retry_and_loses_nothing },
    { GW_REMEMBERED, GW_GOOD, &replay_is_acknowledged_from_memory_byte_for_byte },
};

static int can(const struct gw_driver *d, int needs)
{
    switch (needs) {
    case NEEDS_IDLE: return d->idle != NULL;
    case NEEDS_MALFORMED: return d->malformed != NULL;
    case GW_GOOD: return 1;
    default: return (d->twists & GW_CAN(needs)) != 0;
    }
}

void gw_scenarios_add(TCase *tc, enum gw_group group, const struct gw_driver *d)
{
    size_t i;

    drv = d;
    for (i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (scenarios[i].group == group && can(d, scenarios[i].needs))
            tcase_add_test(tc, *scenarios[i].test);
}
