/* check_gateway_alipay.c - POST /pay/callback/{gateway} for an alipay
 * profile, against the real binary, MariaDB and Redis: form notifications
 * signed RSA2 as Alipay documents it, with a key pair generated here, and
 * the plain "success"/"failure" answers. The driver below runs the shared
 * scenarios of gateway_scenarios.c (replays, a storm, statuses that pay
 * nothing, signature failures, another app_id, mismatches, an unknown
 * order, malformed forms, a MySQL outage); TRADE_FINISHED and empty
 * parameters are Alipay's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway_scenarios.h"
#include "harness.h"
#include "../testkeys.h"
#include "../check_main.h"

#define APP_ID "2021000000000001"
#define ROUTE "/pay/callback/alipay"
#define PRICE GW_PRICE
#define TC_TIMEOUT_S 60
#define SLOW_TIMEOUT_S 120
#define FORM_CTYPE "Content-Type: application/x-www-form-urlencoded; charset=utf-8"

static struct testkey *alipay, *impostor;
static char key_path[H_TEMP_PATH_MAX], config_path[H_TEMP_PATH_MAX];

/* Two profiles: CNY (the default) and one for HKD, the same key. */
static void server_up(void)
{
    char cfg[1024];

    alipay = testkey_create();
    impostor = testkey_create();
    h_temp_file(key_path, "");
    testkey_write_public(alipay, key_path);
    snprintf(cfg, sizeof cfg,
             "{\"gateways\": ["
             "{\"name\": \"alipay\", \"kind\": \"alipay\", \"app_id\": \"" APP_ID "\","
             " \"public_key_file\": \"%s\"},"
             "{\"name\": \"alipay-hk\", \"kind\": \"alipay\", \"app_id\": \"" APP_ID "\","
             " \"public_key_file\": \"%s\", \"currency\": \"HKD\"}]}",
             key_path, key_path);
    h_temp_file(config_path, cfg);
    h_fixture_server_up_config(config_path, NULL);
}

static void server_down(void)
{
    h_fixture_server_down();
    unlink(config_path);
    unlink(key_path);
    testkey_destroy(alipay);
    testkey_destroy(impostor);
}

/* The decoded fields of a notification, in the order Alipay sends them. */
struct field {
    const char *k, *v;
};

static int cmp_field(const void *a, const void *b)
{
    return strcmp(((const struct field *)a)->k, ((const struct field *)b)->k);
}

/* Builds the form body of fields signed by key: the signed string is every
 * field sorted by name as k=v joined by '&' (sign and sign_type left out),
 * SHA256withRSA, base64. */
static void notify_body(char *out, size_t n, const struct testkey *key, const struct field *f,
                        size_t nf)
{
    struct field sorted[32];
    char content[4096] = "", *sig, *esc;
    size_t i, pos = 0;

    memcpy(sorted, f, nf * sizeof *f);
    qsort(sorted, nf, sizeof *sorted, cmp_field);
    for (i = 0; i < nf; i++)
        if (strcmp(sorted[i].k, "sign_type") != 0)
            pos += (size_t)snprintf(content + pos, sizeof content - pos, "%s%s=%s", pos ? "&" : "",
                                    sorted[i].k, sorted[i].v);
    sig = testkey_sign_b64(key, content, strlen(content));
    out[0] = '\0';
    for (pos = 0, i = 0; i < nf; i++) {
        esc = testkey_form_escape(f[i].v);
        pos += (size_t)snprintf(out + pos, n - pos, "%s=%s&", f[i].k, esc);
        free(esc);
    }
    esc = testkey_form_escape(sig);
    snprintf(out + pos, n - pos, "sign=%s", esc);
    free(esc);
    free(sig);
}

/* A notification for order_no paid with trade_no, signed by key. */
static void trade(char *out, size_t n, const struct testkey *key, const char *app_id,
                  const char *trade_no, const char *order_no, const char *amount,
                  const char *status)
{
    const struct field f[] = {
        { "gmt_create", "2024-01-01 10:00:00" },
        { "charset", "utf-8" },
        { "gmt_payment", "2024-01-01 10:00:05" },
        { "notify_time", "2024-01-01 10:00:06" },
        { "subject", "\xe9\x9e\x8b 42" },
        { "sign_type", "RSA2" },
        { "buyer_id", "2088102116773037" },
        { "invoice_amount", amount },
        { "version", "1.0" },
        { "notify_id", "2024010100222100005018000000000001" },
        { "fund_bill_list", "[{\"amount\":\"899.00\",\"fundChannel\":\"ALIPAYACCOUNT\"}]" },
        { "notify_type", "trade_status_sync" },
        { "out_trade_no", order_no },
        { "total_amount", amount },
        { "trade_status", status },
        { "trade_no", trade_no },
        { "auth_app_id", app_id },
        { "receipt_amount", amount },
        { "point_amount", "0.00" },
        { "app_id", app_id },
        { "buyer_pay_amount", amount },
        { "seller_id", "2088102119685838" },
    };

    notify_body(out, n, key, f, sizeof f / sizeof f[0]);
}

static void post(const char *body, struct h_resp *r)
{
    const char *headers[] = { FORM_CTYPE, NULL };

    h_http(h_port(), "POST", ROUTE, headers, body, strlen(body), r);
}

/* ---- the driver of the shared scenarios ----------------------------------- */

static const char *const idle_statuses[] = { "WAIT_BUYER_PAY", "TRADE_CLOSED", NULL };

static const struct gw_malformed malformed[] = {
    { "", 400 },        { "app_id=1&&sign=x", 400 }, { "app_id=%zz", 400 },
    { "a=1&a=2", 400 }, { "{\"json\":1}", 400 },     { NULL, 0 },
};

static void seal(struct gw_request *rq)
{
    snprintf(rq->header[0], sizeof rq->header[0], "%s", FORM_CTYPE);
    gw_headers(rq, 1);
}

/* A notification is a signed form: the twists change what is signed, or
 * the form after signing. */
static void build(struct gw_request *rq, const struct gw_pay *p, enum gw_twist t)
{
    char amount[32];
    char *at;

    snprintf(amount, sizeof amount, "%lld.%02lld", p->amount_cents / 100, p->amount_cents % 100);
    trade(rq->body, sizeof rq->body, t == GW_FOREIGN_KEY ? impostor : alipay,
          t == GW_OTHER_APP ? "2021999999999999" : APP_ID, p->pay_no, p->order_no, amount,
          p->state != NULL ? p->state : "TRADE_SUCCESS");
    if (t == GW_ALTERED) {
        ck_assert_ptr_nonnull(at = strstr(rq->body, "total_amount=899.00"));
        memcpy(at, "total_amount=001.00", 19);
    } else if (t == GW_UNSIGNED) {
        ck_assert_ptr_nonnull(at = strstr(rq->body, "&sign="));
        *at = '\0';
    } else if (t == GW_OTHER_CURRENCY) {
        rq->route = "/pay/callback/alipay-hk"; /* that profile speaks HKD */
    }
    seal(rq);
}

/* Alipay stops resending on exactly this body, and on nothing else. */
static int acked(const struct h_resp *r)
{
    const char *ct = h_resp_header(r, "Content-Type");

    return r->status == 200 && r->body != NULL && strcmp(r->body, "success") == 0 && ct != NULL &&
           strstr(ct, "text/plain") != NULL;
}

static const char *refused(const struct h_resp *r, int status, const char *code)
{
    static char why[256];

    (void)code; /* the answer carries none */
    if (r->status == status && r->body != NULL && strcmp(r->body, "failure") == 0)
        return NULL;
    snprintf(why, sizeof why, "expected %d failure, got %d: %.160s", status, r->status,
             r->body != NULL ? r->body : "");
    return why;
}

static const struct gw_driver driver = {
    .name = "alipay",
    .currency = "CNY",
    .twists = GW_CAN(GW_FOREIGN_KEY) | GW_CAN(GW_ALTERED) | GW_CAN(GW_UNSIGNED) |
              GW_CAN(GW_OTHER_APP) | GW_CAN(GW_OTHER_CURRENCY),
    .altered_price = "1.00",
    .idle = idle_statuses,
    .malformed = malformed,
    .build = build,
    .seal = seal,
    .acked = acked,
    .refused = refused,
};

/* ---- what only Alipay does ------------------------------------------------ */

/* Alipay's own verification (its SDKs' rsaCheckV1) signs every parameter
 * but sign and sign_type, an empty value as "key=": a notification with
 * an empty passback_params is Alipay's and pays. */
START_TEST(notification_with_an_empty_parameter_pays)
{
    const struct field f[] = {
        { "gmt_create", "2024-01-01 10:00:00" },
        { "charset", "utf-8" },
        { "notify_time", "2024-01-01 10:00:06" },
        { "sign_type", "RSA2" },
        { "passback_params", "" },
        { "body", "" },
        { "version", "1.0" },
        { "notify_type", "trade_status_sync" },
        { "out_trade_no", "O1" },
        { "total_amount", PRICE },
        { "trade_status", "TRADE_SUCCESS" },
        { "trade_no", "T-EMPTY" },
        { "app_id", APP_ID },
    };
    char body[8192];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    notify_body(body, sizeof body, alipay, f, sizeof f / sizeof f[0]);
    ck_assert_ptr_nonnull(strstr(body, "passback_params=&"));
    post(body, &r);
    gw_assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("O1"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'T-EMPTY'"));
}
END_TEST

START_TEST(trade_finished_pays_too)
{
    const struct gw_pay p = { "T-FIN", "O1", GW_PRICE_CENTS, "TRADE_FINISHED" };
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    gw_post(&p, GW_GOOD, &r);
    gw_assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("O1"));
}
END_TEST

static Suite *gateway_alipay_suite(void)
{
    Suite *s = suite_create("gateway_alipay");
    TCase *tc;

    tc = h_tcase_with("a paying notification pays once", TC_TIMEOUT_S, server_up, server_down);
    gw_scenarios_add(tc, GW_PAYS, &driver);
    tcase_add_test(tc, trade_finished_pays_too);
    tcase_add_test(tc, notification_with_an_empty_parameter_pays);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unsigned notifications are refused", TC_TIMEOUT_S, server_up, server_down);
    gw_scenarios_add(tc, GW_REFUSED, &driver);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unmatched payments are refused", TC_TIMEOUT_S, server_up, server_down);
    gw_scenarios_add(tc, GW_UNMATCHED, &driver);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a mysql outage loses nothing", SLOW_TIMEOUT_S, server_up, server_down);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_mysql_back);
    gw_scenarios_add(tc, GW_OUTAGE, &driver);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(gateway_alipay_suite, NULL, NULL);
