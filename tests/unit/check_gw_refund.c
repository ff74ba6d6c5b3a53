/* check_gw_refund.c - unit tests for gateway_refund.c without a network:
 * the Stripe request in the currency's minor units under the key's
 * generation, the query by id or by the payment's list, which answers are
 * believed as ours (number and amount), which 500 spends a key, and the
 * CNY-only refund APIs of Alipay and WeChat Pay. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gateway.h"
#include "gateway_refund.h"
#include "../check_main.h"

static struct gateway_profile_cfg pc;
static struct gateway gw;

static const struct gateway *gateway_of(enum gateway_kind kind)
{
    memset(&pc, 0, sizeof(pc));
    memset(&gw, 0, sizeof(gw));
    pc.kind = kind;
    snprintf(pc.refund_url, sizeof(pc.refund_url), "http://127.0.0.1:9/");
    gw.cfg = &pc;
    snprintf(gw.refund_key, sizeof(gw.refund_key), "sk_test_1");
    return &gw;
}

/* A refund of 500 yen (50000 cents) of a 1500-yen payment intent. */
static struct gwr_refund refund_of(const char *currency, int64_t cents)
{
    struct gwr_refund r = { .refund_no = "R1",
                            .pay_no = "pi_1",
                            .order_no = "O1",
                            .amount_cents = cents,
                            .pay_amount_cents = 150000,
                            .currency = currency,
                            .gateway_refund_id = "",
                            .key_seq = 0 };
    return r;
}

/* 1 when call carries the header line h. */
static int has_header(const struct gwr_call *call, const char *h)
{
    for (size_t i = 0; i < call->nheaders; i++)
        if (strcmp(call->header[i], h) == 0)
            return 1;
    return 0;
}

START_TEST(stripe_submits_minor_units_under_the_keys_generation)
{
    const struct gateway *g = gateway_of(GATEWAY_STRIPE);
    struct gwr_refund r = refund_of("JPY", 50000);
    struct gwr_call call;
    char err[GWR_MESSAGE_MAX];

    ck_assert_int_eq(0, gwr_submit(g, &r, &call, err, sizeof(err)));
    ck_assert_str_eq("http://127.0.0.1:9/v1/refunds", call.url);
    ck_assert_ptr_nonnull(strstr(call.body, "&amount=500&"));
    ck_assert_ptr_nonnull(strstr(call.body, "metadata%5Brefund_no%5D=R1"));
    ck_assert_int_eq(1, has_header(&call, "Idempotency-Key: R1"));
    r = refund_of("KWD", 125);
    r.key_seq = 2;
    ck_assert_int_eq(0, gwr_submit(g, &r, &call, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(call.body, "&amount=1250&"));
    ck_assert_ptr_nonnull(strstr(call.body, "metadata%5Brefund_no%5D=R1&"));
    ck_assert_int_eq(1, has_header(&call, "Idempotency-Key: R1-2"));
    r = refund_of("JPY", 10050); /* 100.50 yen */
    ck_assert_int_eq(-1, gwr_submit(g, &r, &call, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "no exact value"));
}
END_TEST

START_TEST(stripe_asks_by_id_or_by_the_payments_list)
{
    const struct gateway *g = gateway_of(GATEWAY_STRIPE);
    struct gwr_refund r = refund_of("JPY", 50000);
    struct gwr_call call;
    char err[GWR_MESSAGE_MAX];

    ck_assert_int_eq(0, gwr_query(g, &r, &call, err, sizeof(err)));
    ck_assert_str_eq("GET", call.method);
    ck_assert_str_eq("http://127.0.0.1:9/v1/refunds?payment_intent=pi_1&limit=100", call.url);
    r.pay_no = "ch_1";
    ck_assert_int_eq(0, gwr_query(g, &r, &call, err, sizeof(err)));
    ck_assert_str_eq("http://127.0.0.1:9/v1/refunds?charge=ch_1&limit=100", call.url);
    r.gateway_refund_id = "re_9";
    ck_assert_int_eq(0, gwr_query(g, &r, &call, err, sizeof(err)));
    ck_assert_str_eq("http://127.0.0.1:9/v1/refunds/re_9", call.url);
    ck_assert_int_eq(1, has_header(&call, "Authorization: Bearer sk_test_1"));
}
END_TEST

static struct gwr_answer read_stripe(int query, long status, const char *body)
{
    struct gwr_refund r = refund_of("JPY", 50000);
    struct gwr_answer a;

    gwr_read(gateway_of(GATEWAY_STRIPE), &r, query, status, "", body, strlen(body), &a);
    return a;
}

#define OTHER \
    "{\"id\":\"re_1\",\"amount\":500,\"status\":\"succeeded\",\"metadata\":{\"refund_no\":\"R0\"}}"
#define OURS \
    "{\"id\":\"re_2\",\"amount\":500,\"status\":\"succeeded\",\"metadata\":{\"refund_no\":\"R1\"}}"
#define OURS_300 \
    "{\"id\":\"re_2\",\"amount\":300,\"status\":\"succeeded\",\"metadata\":{\"refund_no\":\"R1\"}}"

START_TEST(stripe_believes_only_its_refund_with_its_amount)
{
    struct gwr_answer a;

    a = read_stripe(1, 200,
                    "{\"object\":\"list\",\"has_more\":false,\"data\":[" OTHER "," OURS "]}");
    ck_assert_int_eq(GWR_SUCCEEDED, a.outcome);
    ck_assert_str_eq("re_2", a.gateway_refund_id);
    a = read_stripe(1, 200, "{\"object\":\"list\",\"has_more\":false,\"data\":[" OTHER "]}");
    ck_assert_int_eq(GWR_NOT_FOUND, a.outcome);
    a = read_stripe(1, 200, "{\"object\":\"list\",\"has_more\":true,\"data\":[" OTHER "]}");
    ck_assert_int_eq(GWR_UNKNOWN, a.outcome); /* ours may be on a later page */
    a = read_stripe(1, 200, "{\"object\":\"list\",\"has_more\":false,\"data\":[" OURS_300 "]}");
    ck_assert_int_eq(GWR_UNKNOWN, a.outcome);
    a = read_stripe(0, 200, OTHER); /* an answer about another refund */
    ck_assert_int_eq(GWR_UNKNOWN, a.outcome);
    ck_assert_ptr_nonnull(strstr(a.message, "not ours"));
    a = read_stripe(1, 200, OURS);
    ck_assert_int_eq(GWR_SUCCEEDED, a.outcome);
}
END_TEST

START_TEST(a_stripe_500_spends_the_key_and_other_errors_do_not)
{
    struct gwr_answer a;

    a = read_stripe(0, 500, "{\"error\":{\"type\":\"api_error\"}}");
    ck_assert_int_eq(GWR_UNKNOWN, a.outcome);
    ck_assert_int_eq(1, a.key_spent);
    a = read_stripe(0, 502, "{\"error\":{\"type\":\"api_error\"}}"); /* maybe a proxy */
    ck_assert_int_eq(GWR_UNKNOWN, a.outcome);
    ck_assert_int_eq(0, a.key_spent);
    a = read_stripe(0, 500, "<html>busy</html>"); /* not the endpoint's own answer */
    ck_assert_int_eq(0, a.key_spent);
    a = read_stripe(0, 409, "{\"error\":{\"type\":\"idempotency_error\"}}");
    ck_assert_int_eq(0, a.key_spent);
    a = read_stripe(1, 500, "{\"error\":{\"type\":\"api_error\"}}"); /* a GET has no key */
    ck_assert_int_eq(0, a.key_spent);
}
END_TEST

START_TEST(alipay_and_wechat_refunds_are_in_cny_only)
{
    struct gwr_refund r = refund_of("JPY", 50000);
    struct gwr_call call;
    char err[GWR_MESSAGE_MAX];

    ck_assert_int_eq(-1, gwr_submit(gateway_of(GATEWAY_ALIPAY), &r, &call, err, sizeof(err)));
    ck_assert_str_eq("Alipay refunds are in CNY; this refund is in JPY", err);
    ck_assert_int_eq(-1, gwr_submit(gateway_of(GATEWAY_WECHATPAY_V3), &r, &call, err, sizeof(err)));
    ck_assert_str_eq("WeChat Pay refunds are in CNY; this refund is in JPY", err);
}
END_TEST

static Suite *gw_refund_suite(void)
{
    Suite *s = suite_create("gateway_refund");
    TCase *tc = tcase_create("stripe");

    tcase_add_test(tc, stripe_submits_minor_units_under_the_keys_generation);
    tcase_add_test(tc, stripe_asks_by_id_or_by_the_payments_list);
    tcase_add_test(tc, stripe_believes_only_its_refund_with_its_amount);
    tcase_add_test(tc, a_stripe_500_spends_the_key_and_other_errors_do_not);
    suite_add_tcase(s, tc);
    tc = tcase_create("cny only");
    tcase_add_test(tc, alipay_and_wechat_refunds_are_in_cny_only);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(gw_refund_suite, NULL, NULL);
