/* check_gateway.c - unit tests for gateway.c: keys loaded from files and
 * inline text, secrets from the environment, and failing closed on a
 * missing key file, a non-key, an unset secret or a short APIv3 key. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "gateway.h"
#include "../testkeys.h"
#include "../check_main.h"

#define APIV3_KEY "0123456789abcdef0123456789ABCDEF"

static struct testkey *key;
static char key_path[] = "/tmp/paycallback-gwkey-XXXXXX";
static struct config cfg;
static char err[512];

static void setup(void)
{
    memset(&cfg, 0, sizeof(cfg));
    unsetenv("PAYCALLBACK_GATEWAY_STRIPE_SECRET");
    unsetenv("WECHAT_APIV3_KEY");
}

static struct gateway_profile_cfg *add(const char *name, enum gateway_kind kind)
{
    struct gateway_profile_cfg *p = &cfg.gateways.profile[cfg.gateways.n++];

    snprintf(p->name, sizeof(p->name), "%s", name);
    p->kind = kind;
    snprintf(p->currency, sizeof(p->currency), "CNY");
    p->tolerance_s = 300;
    snprintf(p->secret_env, sizeof(p->secret_env), "%s",
             kind == GATEWAY_WECHATPAY_V3 ? "WECHAT_APIV3_KEY"
                                          : "PAYCALLBACK_GATEWAY_STRIPE_SECRET");
    return p;
}

static void add_alipay(const char *file)
{
    struct gateway_profile_cfg *p = add("alipay", GATEWAY_ALIPAY);

    snprintf(p->app_id, sizeof(p->app_id), "2021");
    snprintf(p->keys[0].file, sizeof(p->keys[0].file), "%s", file);
    p->nkeys = 1;
}

static void add_wechat(void)
{
    struct gateway_profile_cfg *p = add("wechat", GATEWAY_WECHATPAY_V3);
    char *pem = testkey_public_pem(key);

    snprintf(p->mchid, sizeof(p->mchid), "1230000109");
    snprintf(p->keys[0].serial, sizeof(p->keys[0].serial), "OLD");
    snprintf(p->keys[0].file, sizeof(p->keys[0].file), "%s", key_path);
    snprintf(p->keys[1].serial, sizeof(p->keys[1].serial), "NEW");
    snprintf(p->keys[1].text, sizeof(p->keys[1].text), "%s", pem);
    p->nkeys = 2;
    free(pem);
}

START_TEST(gateways_create_loads_keys_and_secrets)
{
    struct gateways *g;
    const struct gateway *w, *s, *a;

    add_alipay(key_path);
    add_wechat();
    add("stripe", GATEWAY_STRIPE);
    setenv("WECHAT_APIV3_KEY", APIV3_KEY, 1);
    setenv("PAYCALLBACK_GATEWAY_STRIPE_SECRET", "whsec_x", 1);
    g = gateways_create(&cfg, err, sizeof(err));
    ck_assert_msg(g != NULL, "%s", err);
    ck_assert_uint_eq(3, gateways_count(g));
    ck_assert_ptr_nonnull(a = gateways_find(g, "alipay"));
    ck_assert_ptr_nonnull(a->alipay_key);
    ck_assert_ptr_nonnull(w = gateways_find(g, "wechat"));
    ck_assert_uint_eq(2, w->nwechat_keys);
    ck_assert_str_eq("NEW", w->wechat_keys[1].serial);
    ck_assert_ptr_nonnull(w->wechat_keys[1].key);
    ck_assert_str_eq(APIV3_KEY, w->secret);
    ck_assert_ptr_nonnull(s = gateways_find(g, "stripe"));
    ck_assert_str_eq("whsec_x", s->secret);
    ck_assert_ptr_null(gateways_find(g, "paypal"));
    ck_assert_ptr_eq(s, gateways_at(g, 2));
    ck_assert_ptr_null(gateways_at(g, 3));
    gateways_destroy(g);
}
END_TEST

START_TEST(gateways_create_without_profiles_is_empty)
{
    struct gateways *g = gateways_create(&cfg, err, sizeof(err));

    ck_assert_ptr_nonnull(g);
    ck_assert_uint_eq(0, gateways_count(g));
    gateways_destroy(g);
    gateways_destroy(NULL);
}
END_TEST

START_TEST(gateways_create_fails_closed_on_a_missing_key_file)
{
    add_alipay("/nonexistent/alipay_public.pem");
    ck_assert_ptr_null(gateways_create(&cfg, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "gateway alipay"));
    ck_assert_ptr_nonnull(strstr(err, "cannot open"));
}
END_TEST

START_TEST(gateways_create_fails_closed_on_a_non_key)
{
    struct gateway_profile_cfg *p;

    add_wechat();
    p = &cfg.gateways.profile[0];
    snprintf(p->keys[1].text, sizeof(p->keys[1].text), "not a key");
    setenv("WECHAT_APIV3_KEY", APIV3_KEY, 1);
    ck_assert_ptr_null(gateways_create(&cfg, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "gateway wechat: key 1 serial NEW"));
}
END_TEST

START_TEST(gateways_create_fails_closed_on_an_unset_secret)
{
    add("stripe", GATEWAY_STRIPE);
    ck_assert_ptr_null(gateways_create(&cfg, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "PAYCALLBACK_GATEWAY_STRIPE_SECRET is not set"));
    setenv("PAYCALLBACK_GATEWAY_STRIPE_SECRET", "", 1);
    ck_assert_ptr_null(gateways_create(&cfg, err, sizeof(err)));
}
END_TEST

START_TEST(gateways_create_fails_closed_on_a_short_apiv3_key)
{
    add_wechat();
    setenv("WECHAT_APIV3_KEY", "0123456789abcdef", 1);
    ck_assert_ptr_null(gateways_create(&cfg, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "32-byte APIv3 key"));
}
END_TEST

static Suite *gateway_suite(void)
{
    Suite *s = suite_create("gateway");
    TCase *tc = tcase_create("create");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, gateways_create_loads_keys_and_secrets);
    tcase_add_test(tc, gateways_create_without_profiles_is_empty);
    suite_add_tcase(s, tc);
    tc = tcase_create("fail_closed");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, gateways_create_fails_closed_on_a_missing_key_file);
    tcase_add_test(tc, gateways_create_fails_closed_on_a_non_key);
    tcase_add_test(tc, gateways_create_fails_closed_on_an_unset_secret);
    tcase_add_test(tc, gateways_create_fails_closed_on_a_short_apiv3_key);
    suite_add_tcase(s, tc);
    return s;
}

/* One key pair for the run, its public half in a file for the profiles. */
static int key_up(void)
{
    int fd;

    key = testkey_create();
    if ((fd = mkstemp(key_path)) < 0)
        return -1;
    close(fd);
    testkey_write_public(key, key_path);
    return 0;
}

static void key_down(void)
{
    unlink(key_path);
    testkey_destroy(key);
}

CHECK_MAIN(gateway_suite, key_up, key_down);
