/* check_gateway_cfg.c - unit tests for gateway_cfg.c: the "gateways"
 * profiles of the config file, what each kind needs, and the refusals
 * (unknown members, duplicates, bad names, missing keys). */
#include <check.h>
#include <cjson/cJSON.h>
#include <string.h>

#include "gateway_cfg.h"
#include "../check_main.h"

static struct gateway_cfg cfg;
static char err[512];

/* Parses the JSON text of a gateways array; returns gateway_cfg_parse's
 * result with err filled. */
static int parse(const char *json)
{
    cJSON *arr = cJSON_Parse(json);
    int rc;

    ck_assert_msg(arr != NULL, "test JSON does not parse: %s", json);
    err[0] = '\0';
    rc = gateway_cfg_parse(arr, &cfg, "test.json", err, sizeof(err));
    cJSON_Delete(arr);
    return rc;
}

static void assert_refused(const char *json, const char *why)
{
    ck_assert_msg(parse(json) == -1, "accepted: %s", json);
    ck_assert_msg(strstr(err, why) != NULL, "reason \"%s\" lacks \"%s\"", err, why);
    ck_assert_uint_eq(0, cfg.n);
}

START_TEST(gateway_cfg_reads_the_three_kinds)
{
    ck_assert_int_eq(
        0,
        parse(
            "[{\"name\":\"alipay\",\"kind\":\"alipay\",\"app_id\":\"2021\",\"public_key_file\":\"k.pem\"},"
            " {\"name\":\"wechat\",\"kind\":\"wechatpay_v3\",\"mchid\":\"1230000109\",\"tolerance_s\":60,"
            "  \"platform_keys\":[{\"serial\":\"S1\",\"public_key\":\"MIIB\"},"
            "                    {\"serial\":\"S2\",\"public_key_file\":\"p2.pem\"}],"
            "  \"secret_env\":\"WECHAT_APIV3_KEY\"},"
            " {\"name\":\"stripe-eu\",\"kind\":\"stripe\",\"currency\":\"eur\"}]"));
    ck_assert_uint_eq(3, cfg.n);
    ck_assert_int_eq(GATEWAY_ALIPAY, cfg.profile[0].kind);
    ck_assert_str_eq("2021", cfg.profile[0].app_id);
    ck_assert_str_eq("k.pem", cfg.profile[0].keys[0].file);
    ck_assert_uint_eq(1, cfg.profile[0].nkeys);
    ck_assert_str_eq("CNY", cfg.profile[0].currency);
    ck_assert_int_eq(300, cfg.profile[0].tolerance_s);
    ck_assert_int_eq(GATEWAY_WECHATPAY_V3, cfg.profile[1].kind);
    ck_assert_uint_eq(2, cfg.profile[1].nkeys);
    ck_assert_str_eq("S2", cfg.profile[1].keys[1].serial);
    ck_assert_str_eq("MIIB", cfg.profile[1].keys[0].text);
    ck_assert_int_eq(60, cfg.profile[1].tolerance_s);
    ck_assert_str_eq("WECHAT_APIV3_KEY", cfg.profile[1].secret_env);
    ck_assert_int_eq(GATEWAY_STRIPE, cfg.profile[2].kind);
    ck_assert_str_eq("EUR", cfg.profile[2].currency);
    ck_assert_str_eq("PAYCALLBACK_GATEWAY_STRIPE_EU_SECRET", cfg.profile[2].secret_env);
}
END_TEST

START_TEST(gateway_cfg_accepts_an_empty_array)
{
    ck_assert_int_eq(0, parse("[]"));
    ck_assert_uint_eq(0, cfg.n);
}
END_TEST

START_TEST(gateway_cfg_refuses_unknown_members_and_kinds)
{
    assert_refused("{}", "must be an array");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"secret\":\"x\"}]",
                   "unknown member \"secret\"");
    assert_refused("[{\"name\":\"s\",\"kind\":\"paypal\"}]", "kind must be");
    assert_refused("[{\"name\":\"s\"}]", "kind must be");
    assert_refused("[\"stripe\"]", "must be an object");
}
END_TEST

START_TEST(gateway_cfg_refuses_bad_or_duplicate_names)
{
    assert_refused("[{\"name\":\"Stripe\",\"kind\":\"stripe\"}]", "name must be");
    assert_refused("[{\"name\":\"a/b\",\"kind\":\"stripe\"}]", "name must be");
    assert_refused("[{\"kind\":\"stripe\"}]", "name must be");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\"},{\"name\":\"s\",\"kind\":\"stripe\"}]",
                   "appears twice");
}
END_TEST

START_TEST(gateway_cfg_refuses_profiles_missing_what_their_kind_needs)
{
    assert_refused("[{\"name\":\"a\",\"kind\":\"alipay\",\"public_key\":\"x\"}]", "needs app_id");
    assert_refused("[{\"name\":\"a\",\"kind\":\"alipay\",\"app_id\":\"1\"}]", "exactly one of");
    assert_refused("[{\"name\":\"a\",\"kind\":\"alipay\",\"app_id\":\"1\",\"public_key\":\"x\","
                   "\"public_key_file\":\"y\"}]",
                   "exactly one of");
    assert_refused("[{\"name\":\"w\",\"kind\":\"wechatpay_v3\",\"platform_keys\":[]}]",
                   "needs mchid");
    assert_refused(
        "[{\"name\":\"w\",\"kind\":\"wechatpay_v3\",\"mchid\":\"1\",\"platform_keys\":[]}]",
        "1..4 keys");
    assert_refused("[{\"name\":\"w\",\"kind\":\"wechatpay_v3\",\"mchid\":\"1\","
                   "\"platform_keys\":[{\"public_key\":\"x\"}]}]",
                   "serial must not be empty");
    assert_refused("[{\"name\":\"w\",\"kind\":\"wechatpay_v3\",\"mchid\":\"1\","
                   "\"platform_keys\":[{\"serial\":\"S\",\"public_key\":\"x\"},"
                   "{\"serial\":\"S\",\"public_key\":\"y\"}]}]",
                   "appears twice");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"public_key\":\"x\"}]", "secret only");
}
END_TEST

START_TEST(gateway_cfg_refuses_bad_currency_and_tolerance)
{
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"currency\":\"XXY\"}]", "ISO 4217");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"tolerance_s\":0}]", "tolerance_s");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"tolerance_s\":1.5}]", "tolerance_s");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"tolerance_s\":\"300\"}]", "tolerance_s");
}
END_TEST

START_TEST(gateway_cfg_reads_a_query_endpoint)
{
    ck_assert_int_eq(
        0,
        parse(
            "[{\"name\":\"stripe-eu\",\"kind\":\"stripe\",\"query_url\":\"https://q.example:8443/pi?a=1\","
            "  \"query_timeout_ms\":1500},"
            " {\"name\":\"s2\",\"kind\":\"stripe\",\"query_url\":\"http://[::1]:9/q\","
            "  \"query_token_env\":\"S2_QUERY\"},"
            " {\"name\":\"s3\",\"kind\":\"stripe\"}]"));
    ck_assert_str_eq("https://q.example:8443/pi?a=1", cfg.profile[0].query_url);
    ck_assert_str_eq("PAYCALLBACK_GATEWAY_STRIPE_EU_QUERY_TOKEN", cfg.profile[0].query_token_env);
    ck_assert_int_eq(1500, cfg.profile[0].query_timeout_ms);
    ck_assert_str_eq("S2_QUERY", cfg.profile[1].query_token_env);
    ck_assert_int_eq(5000, cfg.profile[1].query_timeout_ms);
    ck_assert_str_eq("", cfg.profile[2].query_url);
}
END_TEST

START_TEST(gateway_cfg_refuses_a_bad_query_endpoint)
{
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"query_url\":\"ftp://q.example/\"}]",
                   "query_url must be an http");
    assert_refused(
        "[{\"name\":\"s\",\"kind\":\"stripe\",\"query_url\":\"https://u:p@q.example/\"}]",
        "query_url must be an http");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"query_url\":\"https://q.example/a b\"}]",
                   "query_url must be an http");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"query_token_env\":\"X\"}]",
                   "need a non-empty query_url");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"query_timeout_ms\":500}]",
                   "need a non-empty query_url");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"query_url\":\"https://q.example/\","
                   "\"query_timeout_ms\":99}]",
                   "query_timeout_ms must be an integer");
}
END_TEST

START_TEST(gateway_cfg_reads_a_refund_api)
{
    ck_assert_int_eq(
        0, parse("[{\"name\":\"s1\",\"kind\":\"stripe\",\"refund_url\":\"https://api.example\","
                 "  \"refund\":\"auto\",\"refund_timeout_ms\":2500},"
                 " {\"name\":\"s2\",\"kind\":\"stripe\",\"refund_url\":\"http://127.0.0.1:9\","
                 "  \"refund_key_env\":\"S2_KEY\"},"
                 " {\"name\":\"s3\",\"kind\":\"stripe\"}]"));
    ck_assert_str_eq("https://api.example", cfg.profile[0].refund_url);
    ck_assert_int_eq(1, cfg.profile[0].refund_auto);
    ck_assert_int_eq(2500, cfg.profile[0].refund_timeout_ms);
    ck_assert_str_eq("PAYCALLBACK_GATEWAY_S1_REFUND_KEY", cfg.profile[0].refund_key_env);
    ck_assert_int_eq(0, cfg.profile[1].refund_auto); /* approval by default */
    ck_assert_str_eq("S2_KEY", cfg.profile[1].refund_key_env);
    ck_assert_int_eq(5000, cfg.profile[1].refund_timeout_ms);
    ck_assert_str_eq("", cfg.profile[2].refund_url);
}
END_TEST

START_TEST(gateway_cfg_refuses_a_bad_refund_api)
{
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"refund_url\":\"ftp://a.example/\"}]",
                   "refund_url must be an http");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"refund\":\"auto\"}]",
                   "need a non-empty refund_url");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"refund_url\":\"https://a.example\","
                   "\"refund\":\"always\"}]",
                   "refund must be");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"refund_url\":\"https://a.example\","
                   "\"refund_timeout_ms\":60001}]",
                   "refund_timeout_ms must be an integer");
    assert_refused("[{\"name\":\"a\",\"kind\":\"alipay\",\"app_id\":\"1\",\"public_key\":\"x\","
                   "\"refund_url\":\"https://a.example\"}]",
                   "need merchant_key_file");
    assert_refused("[{\"name\":\"s\",\"kind\":\"stripe\",\"merchant_key_file\":\"/k.pem\"}]",
                   "need a non-empty refund_url");
}
END_TEST

static Suite *gateway_cfg_suite(void)
{
    Suite *s = suite_create("gateway_cfg");
    TCase *tc = tcase_create("accept");

    tcase_add_test(tc, gateway_cfg_reads_the_three_kinds);
    tcase_add_test(tc, gateway_cfg_accepts_an_empty_array);
    tcase_add_test(tc, gateway_cfg_reads_a_query_endpoint);
    tcase_add_test(tc, gateway_cfg_reads_a_refund_api);
    suite_add_tcase(s, tc);
    tc = tcase_create("refuse");
    tcase_add_test(tc, gateway_cfg_refuses_unknown_members_and_kinds);
    tcase_add_test(tc, gateway_cfg_refuses_bad_or_duplicate_names);
    tcase_add_test(tc, gateway_cfg_refuses_profiles_missing_what_their_kind_needs);
    tcase_add_test(tc, gateway_cfg_refuses_bad_currency_and_tolerance);
    tcase_add_test(tc, gateway_cfg_refuses_a_bad_query_endpoint);
    tcase_add_test(tc, gateway_cfg_refuses_a_bad_refund_api);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(gateway_cfg_suite, NULL, NULL);
