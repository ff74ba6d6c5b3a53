/* check_gw_alipay.c - unit tests for gateway_alipay.c: the signed string built
 * from a notification shaped like Alipay's documented example, RSA2
 * verification with a key generated at test time, and the trade fields. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "form.h"
#include "gateway_alipay.h"
#include "pubkey.h"
#include "../testkeys.h"
#include "../check_main.h"

#define APP_ID "2015102700040153"

/* The documented example notification, form-encoded, without sign. */
#define NOTIFY_FIELDS                                                                 \
    "total_amount=2.00&buyer_id=2088102116773037&body=%E5%A4%A7%E4%B9%90%E9%80%8F2.1" \
    "&trade_no=2016071921001003030200089909&refund_fee=0.00"                          \
    "&notify_time=2016-07-19+14%3A10%3A49&subject=%E5%A4%A7%E4%B9%90%E9%80%8F2.1"     \
    "&sign_type=RSA2&charset=utf-8&notify_type=trade_status_sync"                     \
    "&out_trade_no=0719141034-6418&gmt_close=2016-07-19+14%3A10%3A46"                 \
    "&gmt_payment=2016-07-19+14%3A10%3A47&trade_status=TRADE_SUCCESS&version=1.0"     \
    "&gmt_create=2016-07-19+14%3A10%3A44&app_id=" APP_ID                              \
    "&seller_id=2088102119685838&notify_id=4a91b7a78a503640467525113fb7d8bg8e"

/* The same parameters decoded, sorted, without sign and sign_type. */
#define SIGN_CONTENT                                                                \
    "app_id=" APP_ID "&body=\xe5\xa4\xa7\xe4\xb9\x90\xe9\x80\x8f"                   \
    "2.1"                                                                           \
    "&buyer_id=2088102116773037&charset=utf-8&gmt_close=2016-07-19 14:10:46"        \
    "&gmt_create=2016-07-19 14:10:44&gmt_payment=2016-07-19 14:10:47"               \
    "&notify_id=4a91b7a78a503640467525113fb7d8bg8e&notify_time=2016-07-19 14:10:49" \
    "&notify_type=trade_status_sync&out_trade_no=0719141034-6418&refund_fee=0.00"   \
    "&seller_id=2088102119685838&subject=\xe5\xa4\xa7\xe4\xb9\x90\xe9\x80\x8f"      \
    "2.1"                                                                           \
    "&total_amount=2.00&trade_no=2016071921001003030200089909"                      \
    "&trade_status=TRADE_SUCCESS&version=1.0"

static struct testkey *alipay, *impostor;
static struct pubkey *alipay_pub;

static struct form *parse(const char *body)
{
    struct form *f = NULL;

    ck_assert_int_eq(FORM_OK, form_parse(body, strlen(body), &f));
    return f;
}

/* fields signed by key: the body Alipay would post. Caller frees. */
static char *signed_body(const struct testkey *key, const char *fields)
{
    struct form *f = parse(fields);
    char *content = gateway_alipay_sign_content(f), *sig, *esc, *body;

    sig = testkey_sign_b64(key, content, strlen(content));
    esc = testkey_form_escape(sig);
    body = malloc(strlen(fields) + strlen(esc) + 8);
    sprintf(body, "%s&sign=%s", fields, esc);
    free(esc);
    free(sig);
    free(content);
    form_destroy(f);
    return body;
}

static enum gateway_status verify_body(const char *body)
{
    struct form *f = parse(body);
    enum gateway_status st = gateway_alipay_verify(f, alipay_pub);

    form_destroy(f);
    return st;
}

START_TEST(gateway_alipay_sign_content_sorts_decodes_and_drops_sign)
{
    struct form *f = parse(NOTIFY_FIELDS "&sign=abc%3D");
    char *content = gateway_alipay_sign_content(f);

    ck_assert_str_eq(SIGN_CONTENT, content);
    free(content);
    form_destroy(f);
}
END_TEST

START_TEST(gateway_alipay_sign_content_keeps_empty_values)
{
    struct form *f = parse("b=&a=1&sign_type=RSA2");
    char *content = gateway_alipay_sign_content(f);

    ck_assert_str_eq("a=1&b=", content);
    free(content);
    form_destroy(f);
}
END_TEST

START_TEST(gateway_alipay_verify_accepts_the_gateway_signature)
{
    char *body = signed_body(alipay, NOTIFY_FIELDS);

    ck_assert_int_eq(GATEWAY_OK, verify_body(body));
    free(body);
}
END_TEST

START_TEST(gateway_alipay_verify_refuses_another_key)
{
    char *body = signed_body(impostor, NOTIFY_FIELDS);

    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify_body(body));
    free(body);
}
END_TEST

START_TEST(gateway_alipay_verify_refuses_an_altered_field)
{
    char *body = signed_body(alipay, NOTIFY_FIELDS), *p = strstr(body, "total_amount=2.00");

    ck_assert_ptr_nonnull(p);
    p[13] = '3'; /* 2.00 -> 3.00 */
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify_body(body));
    free(body);
}
END_TEST

START_TEST(gateway_alipay_verify_refuses_an_added_field)
{
    char *body = signed_body(alipay, NOTIFY_FIELDS), *more = malloc(strlen(body) + 16);

    sprintf(more, "%s&extra=1", body);
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify_body(more));
    free(more);
    free(body);
}
END_TEST

START_TEST(gateway_alipay_verify_needs_sign_and_rsa2)
{
    char *body = signed_body(alipay, NOTIFY_FIELDS), *p = strstr(body, "sign_type=RSA2");

    ck_assert_int_eq(GATEWAY_SIG_MISSING, verify_body(NOTIFY_FIELDS));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, verify_body(NOTIFY_FIELDS "&sign="));
    ck_assert_ptr_nonnull(p);
    memcpy(p, "sign_type=RSA1", 14); /* sign_type is not signed, but checked */
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify_body(body));
    free(body);
}
END_TEST

START_TEST(gateway_alipay_notice_reads_a_paying_trade)
{
    struct form *f = parse(NOTIFY_FIELDS);
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_OK, gateway_alipay_notice(f, APP_ID, "CNY", &n));
    ck_assert(n.pays);
    ck_assert_str_eq("TRADE_SUCCESS", n.state);
    ck_assert_str_eq("2016071921001003030200089909", n.pay_no);
    ck_assert_str_eq("0719141034-6418", n.order_no);
    ck_assert_int_eq(200, n.amount_cents);
    ck_assert_str_eq("CNY", n.currency);
    form_destroy(f);
}
END_TEST

START_TEST(gateway_alipay_notice_pays_for_trade_finished_only_among_the_rest)
{
    const char *states[] = { "TRADE_FINISHED", "WAIT_BUYER_PAY", "TRADE_CLOSED" };
    const int pays[] = { 1, 0, 0 };
    char body[256];
    struct gateway_notice n;
    size_t i;

    for (i = 0; i < 3; i++) {
        struct form *f;

        snprintf(body, sizeof(body),
                 "app_id=" APP_ID "&trade_status=%s&trade_no=T1"
                 "&out_trade_no=O1&total_amount=0.01",
                 states[i]);
        f = parse(body);
        ck_assert_int_eq(GATEWAY_OK, gateway_alipay_notice(f, APP_ID, "CNY", &n));
        ck_assert_int_eq(pays[i], n.pays);
        ck_assert_str_eq(states[i], n.state);
        form_destroy(f);
    }
}
END_TEST

START_TEST(gateway_alipay_notice_refuses_another_app)
{
    struct form *f = parse(NOTIFY_FIELDS);
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_WRONG_APP, gateway_alipay_notice(f, "2021000000000000", "CNY", &n));
    ck_assert(!n.pays);
    ck_assert_str_eq("", n.pay_no);
    form_destroy(f);
}
END_TEST

START_TEST(gateway_alipay_notice_refuses_inexact_amounts)
{
    const char *amounts[] = { "2.001", "-2.00", "2e2", "", "1,00" };
    char body[256];
    struct gateway_notice n;
    size_t i;

    for (i = 0; i < sizeof(amounts) / sizeof(amounts[0]); i++) {
        struct form *f;

        snprintf(body, sizeof(body),
                 "app_id=" APP_ID "&trade_status=TRADE_SUCCESS"
                 "&trade_no=T1&out_trade_no=O1&total_amount=%s",
                 amounts[i]);
        f = parse(body);
        ck_assert_int_eq(GATEWAY_BAD_AMOUNT, gateway_alipay_notice(f, APP_ID, "CNY", &n));
        form_destroy(f);
    }
}
END_TEST

START_TEST(gateway_alipay_notice_refuses_missing_ids)
{
    struct form *f = parse("app_id=" APP_ID "&trade_status=TRADE_SUCCESS&total_amount=1.00"
                           "&out_trade_no=O1");
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_MALFORMED, gateway_alipay_notice(f, APP_ID, "CNY", &n));
    form_destroy(f);
    f = parse("app_id=" APP_ID "&total_amount=1.00");
    ck_assert_int_eq(GATEWAY_MALFORMED, gateway_alipay_notice(f, APP_ID, "CNY", &n));
    form_destroy(f);
}
END_TEST

static Suite *gateway_alipay_suite(void)
{
    Suite *s = suite_create("gateway_alipay");
    TCase *tc = tcase_create("sign_content");

    tcase_add_test(tc, gateway_alipay_sign_content_sorts_decodes_and_drops_sign);
    tcase_add_test(tc, gateway_alipay_sign_content_keeps_empty_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("verify");
    tcase_add_test(tc, gateway_alipay_verify_accepts_the_gateway_signature);
    tcase_add_test(tc, gateway_alipay_verify_refuses_another_key);
    tcase_add_test(tc, gateway_alipay_verify_refuses_an_altered_field);
    tcase_add_test(tc, gateway_alipay_verify_refuses_an_added_field);
    tcase_add_test(tc, gateway_alipay_verify_needs_sign_and_rsa2);
    suite_add_tcase(s, tc);
    tc = tcase_create("notice");
    tcase_add_test(tc, gateway_alipay_notice_reads_a_paying_trade);
    tcase_add_test(tc, gateway_alipay_notice_pays_for_trade_finished_only_among_the_rest);
    tcase_add_test(tc, gateway_alipay_notice_refuses_another_app);
    tcase_add_test(tc, gateway_alipay_notice_refuses_inexact_amounts);
    tcase_add_test(tc, gateway_alipay_notice_refuses_missing_ids);
    suite_add_tcase(s, tc);
    return s;
}

/* Alipay's key pair and an impostor's, for the run. */
static int keys_up(void)
{
    char err[256], *pem;

    alipay = testkey_create();
    impostor = testkey_create();
    pem = testkey_public_pem(alipay);
    if ((alipay_pub = pubkey_create(pem, err, sizeof(err))) == NULL) {
        fprintf(stderr, "cannot load the test key: %s\n", err);
        return -1;
    }
    free(pem);
    return 0;
}

static void keys_down(void)
{
    pubkey_destroy(alipay_pub);
    testkey_destroy(alipay);
    testkey_destroy(impostor);
}

CHECK_MAIN(gateway_alipay_suite, keys_up, keys_down);
