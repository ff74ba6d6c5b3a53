/* check_config.c - unit tests for config.c: the file is read as strictly
 * as a request body (one object, no duplicate key, nothing after it),
 * numbers are range-checked before conversion, strings against their own
 * field's size, and every PAYCALLBACK_* environment name must be a key.
 * Each case writes a temporary file and passes its own environment, so
 * nothing here depends on the environment of the test run. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "../check_main.h"

#define ERR_MAX 512
#define OPS_KEY "0123456789abcdef0123" /* 20 characters: a valid operator key */
#define SHOP_KEY "shop-key-AAAAAAAAAAAA+/=="
#define WITH_KEYS \
    "{\"callback\": {\"secret\": \"s-0123456789abcdef0123456789abcdef\"}, \"auth\": {\"keys\": "

static char cfg_path[64];
static char err[ERR_MAX];

/* Writes text to a new temporary file named in cfg_path. */
static void write_config(const char *text)
{
    int fd;

    snprintf(cfg_path, sizeof cfg_path, "/tmp/paycallback-unit-XXXXXX");
    fd = mkstemp(cfg_path);
    ck_assert_msg(fd >= 0, "mkstemp: %s", strerror(errno));
    ck_assert_int_eq((ssize_t)strlen(text), write(fd, text, strlen(text)));
    close(fd);
}

/* Loads text with the environment envp (NULL-terminated, may be NULL) and
 * flags. Returns what cfg_load returns; the reason is in err. */
static int load_flags(struct config *cfg, const char *text, const char *const *envp, unsigned flags)
{
    int rc;

    err[0] = '\0';
    write_config(text);
    rc = cfg_load(cfg, cfg_path, envp, flags, err, sizeof err);
    unlink(cfg_path);
    return rc;
}

/* The strictness cases run with the development switch, so that they do
 * not depend on the secret rules, which have cases of their own. */
static int load(struct config *cfg, const char *text, const char *const *envp)
{
    return load_flags(cfg, text, envp, CFG_LOAD_DEV);
}

/* Expects text (with envp and flags) to be refused with a one-line reason
 * containing why. */
static void refused_flags(const char *text, const char *const *envp, unsigned flags,
                          const char *why)
{
    struct config cfg;

    ck_assert_msg(load_flags(&cfg, text, envp, flags) == -1, "accepted: %s", text);
    ck_assert_msg(strstr(err, why) != NULL, "expected \"%s\" in the reason, got \"%s\"", why, err);
    ck_assert_msg(strchr(err, '\n') == NULL, "the reason is not one line: %s", err);
}

static void refused(const char *text, const char *const *envp, const char *why)
{
    refused_flags(text, envp, CFG_LOAD_DEV, why);
}

/* ---- accepted ------------------------------------------------------------ */

START_TEST(cfg_load_accepts_an_empty_object_with_defaults)
{
    struct config cfg;

    ck_assert_int_eq(0, load(&cfg, "{}", NULL));
    ck_assert_int_eq(16, cfg.workers);
    ck_assert_str_eq("info", cfg.log_level);
    ck_assert_int_eq(3306, cfg.mysql_port);
}
END_TEST

START_TEST(cfg_load_reads_every_kind_of_value)
{
    struct config cfg;

    ck_assert_int_eq(0, load(&cfg,
                             "{\"workers\": 4, \"log_level\": \"warn\",\n"
                             " \"mysql\": {\"port\": 3399, \"host\": \"10.0.0.7\"}}\n",
                             NULL));
    ck_assert_int_eq(4, cfg.workers);
    ck_assert_str_eq("warn", cfg.log_level);
    ck_assert_int_eq(3399, cfg.mysql_port);
    ck_assert_str_eq("10.0.0.7", cfg.mysql_host);
}
END_TEST

START_TEST(cfg_load_lets_the_environment_win)
{
    const char *env[] = { "PAYCALLBACK_WORKERS=7", "PAYCALLBACK_MYSQL_HOST=10.1.1.1", "HOME=/root",
                          NULL };
    struct config cfg;

    ck_assert_int_eq(0, load(&cfg, "{\"workers\": 4}", env));
    ck_assert_int_eq(7, cfg.workers);
    ck_assert_str_eq("10.1.1.1", cfg.mysql_host);
}
END_TEST

START_TEST(cfg_load_accepts_a_string_that_fills_its_field)
{
    char text[CFG_STR_MAX + 64];
    char pw[CFG_STR_MAX];
    struct config cfg;

    memset(pw, 'p', CFG_STR_MAX - 1);
    pw[CFG_STR_MAX - 1] = '\0';
    snprintf(text, sizeof text, "{\"mysql\": {\"password\": \"%s\"}}", pw);
    ck_assert_int_eq(0, load(&cfg, text, NULL));
    ck_assert_str_eq(pw, cfg.mysql_password);
}
END_TEST

START_TEST(cfg_load_accepts_integral_numbers_written_as_floats)
{
    struct config cfg;

    ck_assert_int_eq(0, load(&cfg, "{\"workers\": 8.0, \"grace_s\": 1e1}", NULL));
    ck_assert_int_eq(8, cfg.workers);
    ck_assert_int_eq(10, cfg.grace_s);
}
END_TEST

/* ---- the document ---------------------------------------------------------- */

START_TEST(cfg_load_refuses_trailing_data)
{
    refused("{\"workers\": 4} {\"workers\": 8}", NULL, "not a JSON object");
    refused("{\"workers\": 4} x", NULL, "not a JSON object");
}
END_TEST

START_TEST(cfg_load_refuses_a_duplicate_top_level_key)
{
    refused("{\"workers\": 4, \"workers\": 8}", NULL, "\"workers\" appears twice");
}
END_TEST

START_TEST(cfg_load_refuses_a_duplicate_key_in_a_section)
{
    refused("{\"mysql\": {\"port\": 1, \"port\": 2}}", NULL, "\"mysql.port\" appears twice");
    refused("{\"mysql\": {}, \"mysql\": {\"port\": 2}}", NULL, "\"mysql\" appears twice");
}
END_TEST

START_TEST(cfg_load_refuses_a_nul_character)
{
    refused("{\"log_level\": \"info\\u0000junk\"}", NULL, "NUL");
}
END_TEST

START_TEST(cfg_load_refuses_non_objects)
{
    refused("[1, 2]", NULL, "not a JSON object");
    refused("", NULL, "not a JSON object");
    refused("{\"workers\": 4,}", NULL, "not a JSON object");
}
END_TEST

/* ---- numbers --------------------------------------------------------------- */

START_TEST(cfg_load_refuses_huge_numbers_before_converting_them)
{
    refused("{\"workers\": 1e34}", NULL, "workers must be in 1..1024");
    refused("{\"workers\": -1e34}", NULL, "workers must be in 1..1024");
    refused("{\"workers\": 1e400}", NULL, "workers must be in 1..1024");
    refused("{\"listen\": {\"port\": 9223372036854775808}}", NULL,
            "listen.port must be in 0..65535");
}
END_TEST

START_TEST(cfg_load_refuses_fractions_and_non_numbers)
{
    refused("{\"workers\": 4.5}", NULL, "workers must be an integer");
    refused("{\"workers\": \"4\"}", NULL, "workers must be an integer");
    refused("{\"workers\": true}", NULL, "workers must be an integer");
}
END_TEST

START_TEST(cfg_load_refuses_environment_integers_that_are_not_plain)
{
    const char *hex[] = { "PAYCALLBACK_WORKERS=0x10", NULL };
    const char *blank[] = { "PAYCALLBACK_WORKERS= 4", NULL };
    const char *huge[] = { "PAYCALLBACK_WORKERS=99999999999999999999999", NULL };
    const char *range[] = { "PAYCALLBACK_WORKERS=2000", NULL };

    refused("{}", hex, "PAYCALLBACK_WORKERS: workers must be an integer");
    refused("{}", blank, "PAYCALLBACK_WORKERS: workers must be an integer");
    refused("{}", huge, "PAYCALLBACK_WORKERS: workers must be an integer");
    refused("{}", range, "PAYCALLBACK_WORKERS: workers must be in 1..1024");
}
END_TEST

/* ---- strings --------------------------------------------------------------- */

START_TEST(cfg_load_checks_a_string_against_its_own_field)
{
    struct config cfg;

    /* 42 characters fit the generic 256-byte limit but not log_level[16]. */
    refused("{\"log_level\": \"debugdebugdebugdebugdebugdebugdebugdebugde\"}", NULL,
            "log_level is longer than 15 bytes");
    ck_assert_int_eq(sizeof cfg.log_level - 1, strlen("debugdebugdebug"));
}
END_TEST

START_TEST(cfg_load_checks_an_environment_string_against_its_field)
{
    const char *env[] = { "PAYCALLBACK_LOG_LEVEL=0123456789abcdef", NULL };

    refused("{}", env, "PAYCALLBACK_LOG_LEVEL: log_level is longer than 15 bytes");
}
END_TEST

START_TEST(cfg_load_refuses_a_string_one_byte_too_long)
{
    char text[CFG_STR_MAX + 64];
    char host[CFG_STR_MAX + 1];

    memset(host, 'h', CFG_STR_MAX);
    host[CFG_STR_MAX] = '\0';
    snprintf(text, sizeof text, "{\"mysql\": {\"host\": \"%s\"}}", host);
    refused(text, NULL, "mysql.host is longer than 255 bytes");
}
END_TEST

/* ---- environment names ------------------------------------------------------ */

START_TEST(cfg_load_refuses_an_unknown_paycallback_variable)
{
    const char *env[] = { "PATH=/bin", "PAYCALLBACK_CALLBACK_SECRT=s3cret", NULL };

    refused("{}", env, "unknown environment variable PAYCALLBACK_CALLBACK_SECRT");
}
END_TEST

START_TEST(cfg_load_refuses_a_paycallback_variable_without_a_value)
{
    const char *env[] = { "PAYCALLBACK_WORKERZ", NULL };

    refused("{}", env, "unknown environment variable PAYCALLBACK_WORKERZ");
}
END_TEST

START_TEST(cfg_load_ignores_other_prefixes)
{
    const char *env[] = { "PCB_BIN=/x", "PCB_TEST_MYSQL_PORT=1", "PAYCALLBACKX=1", NULL };
    struct config cfg;

    ck_assert_int_eq(0, load(&cfg, "{}", env));
}
END_TEST

START_TEST(cfg_load_knows_the_secret_variables_of_its_gateways)
{
    const char *env[] = { "PAYCALLBACK_GATEWAY_STRIPE_EU_SECRET=whsec_x", NULL };
    struct config *cfg = malloc(sizeof(*cfg));

    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(
        0, load(cfg, "{\"gateways\": [{\"name\": \"stripe-eu\", \"kind\": \"stripe\"}]}", env));
    ck_assert_uint_eq(1, cfg->gateways.n);
    ck_assert_str_eq("PAYCALLBACK_GATEWAY_STRIPE_EU_SECRET", cfg->gateways.profile[0].secret_env);
    refused("{}", env, "unknown environment variable PAYCALLBACK_GATEWAY_STRIPE_EU_SECRET");
    free(cfg);
}
END_TEST

START_TEST(cfg_load_checks_names_even_without_a_file)
{
    const char *env[] = { "PAYCALLBACK_LISTEN_PROT=1", NULL };
    struct config cfg;

    ck_assert_int_eq(-1, cfg_load(&cfg, NULL, env, CFG_LOAD_DEV, err, sizeof err));
    ck_assert_msg(strstr(err, "PAYCALLBACK_LISTEN_PROT") != NULL, "reason: %s", err);
}
END_TEST

/* ---- fail closed on the callback secret ------------------------------------ */

START_TEST(cfg_load_refuses_an_empty_secret_outside_development)
{
    refused_flags("{}", NULL, 0, "callback.secret is empty");
    refused_flags("{\"callback\": {\"secret\": \"\"}}", NULL, 0, "callback.secret is empty");
}
END_TEST

START_TEST(cfg_load_refuses_the_shipped_secret_outside_development)
{
    const char *env[] = { "PAYCALLBACK_CALLBACK_SECRET=" CFG_DEV_SECRET, NULL };
    const char *prev[] = { "PAYCALLBACK_CALLBACK_SECRET=a-real-one-0123456789abcdef0123456789",
                           "PAYCALLBACK_CALLBACK_PREVIOUS_SECRET=" CFG_DEV_SECRET, NULL };

    refused_flags("{\"callback\": {\"secret\": \"dev-secret\"}}", NULL, 0,
                  "shipped development value");
    refused_flags("{}", env, 0, "shipped development value");
    refused_flags("{}", prev, 0, "shipped development value");
}
END_TEST

#define LONG_SECRET "a-real-one-0123456789abcdef0123456789"
#define PROD_KEYS "PAYCALLBACK_AUTH_KEYS=ops:" OPS_KEY

START_TEST(cfg_load_refuses_a_short_secret_outside_development)
{
    const char *shortish[] = { "PAYCALLBACK_CALLBACK_SECRET=0123456789abcdef0123456789abcde",
                               PROD_KEYS, NULL };
    const char *prev[] = { "PAYCALLBACK_CALLBACK_SECRET=" LONG_SECRET,
                           "PAYCALLBACK_CALLBACK_PREVIOUS_SECRET=old-and-short", PROD_KEYS, NULL };
    const char *exact[] = { "PAYCALLBACK_CALLBACK_SECRET=0123456789abcdef0123456789abcdef",
                            PROD_KEYS, NULL };
    struct config cfg;

    refused_flags("{}", shortish, 0, "callback.secret is shorter than 32 bytes");
    refused_flags("{}", prev, 0, "callback.previous_secret is shorter than 32 bytes");
    ck_assert_int_eq(0, load_flags(&cfg, "{}", exact, 0));
    ck_assert_int_eq(0, load_flags(&cfg, "{}", shortish, CFG_LOAD_DEV));
}
END_TEST

/* A gateway's refund or query endpoint, and the native query endpoint,
 * carry credentials: http:// is refused outside development. */
START_TEST(cfg_load_refuses_plain_http_credentials_outside_development)
{
    const char *env[] = { "PAYCALLBACK_CALLBACK_SECRET=" LONG_SECRET, PROD_KEYS,
                          "TEST_GW_SECRET=whsec_x", "TEST_GW_KEY=sk_test_x", NULL };
    const char *native[] = { "PAYCALLBACK_CALLBACK_SECRET=" LONG_SECRET, PROD_KEYS,
                             "PAYCALLBACK_CALLBACK_QUERY_URL=http://bank.example/q",
                             "PAYCALLBACK_CALLBACK_QUERY_TOKEN=t", NULL };
    static const char plain[] =
        "{\"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\", \"secret_env\": "
        "\"TEST_GW_SECRET\", \"refund_url\": \"http://127.0.0.1:9\", \"refund_key_env\": "
        "\"TEST_GW_KEY\"}]}";
    static const char tls[] =
        "{\"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\", \"secret_env\": "
        "\"TEST_GW_SECRET\", \"refund_url\": \"https://api.stripe.com\", \"refund_key_env\": "
        "\"TEST_GW_KEY\"}]}";
    struct config cfg;

    refused_flags(plain, env, 0, "\"stripe\": refund_url is http://");
    refused_flags("{}", native, 0, "callback.query_url is http://");
    ck_assert_int_eq(0, load_flags(&cfg, tls, env, 0));
    ck_assert_int_eq(0, load_flags(&cfg, plain, env, CFG_LOAD_DEV));
}
END_TEST

/* A configuration file that holds a secret in force may not be readable
 * by others outside development; one whose secrets the environment
 * replaces may. */
START_TEST(cfg_load_refuses_a_file_with_secrets_readable_by_others)
{
    const char *keys_only[] = { PROD_KEYS, NULL };
    const char *all_env[] = { "PAYCALLBACK_CALLBACK_SECRET=another-0123456789abcdef0123456789",
                              PROD_KEYS, NULL };
    static const char text[] = "{\"callback\": {\"secret\": \"" LONG_SECRET "\"}}";
    struct config cfg;
    int rc;

    write_config(text);
    ck_assert_int_eq(0, chmod(cfg_path, 0644));
    rc = cfg_load(&cfg, cfg_path, keys_only, 0, err, sizeof err);
    ck_assert_int_eq(-1, rc);
    ck_assert_msg(strstr(err, "holds secrets and is readable by others (mode 0644)") != NULL,
                  "reason: %s", err);
    ck_assert_int_eq(0, cfg_load(&cfg, cfg_path, all_env, 0, err, sizeof err)); /* replaced */
    ck_assert_int_eq(0, cfg_load(&cfg, cfg_path, keys_only, CFG_LOAD_DEV, err, sizeof err));
    ck_assert_int_eq(0, chmod(cfg_path, 0640));
    ck_assert_int_eq(0, cfg_load(&cfg, cfg_path, keys_only, 0, err, sizeof err));
    unlink(cfg_path);
}
END_TEST

START_TEST(cfg_load_takes_a_real_secret_from_the_environment)
{
    const char *env[] = {
        "PAYCALLBACK_CALLBACK_SECRET=a-real-one-0123456789abcdef0123456789",
        "PAYCALLBACK_CALLBACK_PREVIOUS_SECRET=the-old-one-0123456789abcdef0123456789",
        "PAYCALLBACK_AUTH_KEYS=ops:" OPS_KEY, NULL
    };
    struct config cfg;

    ck_assert_int_eq(0, load_flags(&cfg, "{\"callback\": {\"secret\": \"dev-secret\"}}", env, 0));
    ck_assert_str_eq("a-real-one-0123456789abcdef0123456789", cfg.callback_secret);
    ck_assert_str_eq("the-old-one-0123456789abcdef0123456789", cfg.callback_previous_secret);
    ck_assert_int_eq(0, cfg.dev);
}
END_TEST

START_TEST(cfg_load_allows_the_shipped_secret_with_the_dev_switch)
{
    const char *env[] = { CFG_DEV_ENV "=1", NULL };
    struct config cfg;

    ck_assert_int_eq(0, load_flags(&cfg, "{\"callback\": {\"secret\": \"dev-secret\"}}", env, 0));
    ck_assert_int_eq(1, cfg.dev);
    ck_assert_int_eq(
        0, load_flags(&cfg, "{\"callback\": {\"secret\": \"dev-secret\"}}", NULL, CFG_LOAD_DEV));
    ck_assert_int_eq(1, cfg.dev);
}
END_TEST

START_TEST(cfg_load_never_leaves_the_secret_empty_in_development)
{
    struct config cfg;

    ck_assert_int_eq(0, load_flags(&cfg, "{}", NULL, CFG_LOAD_DEV));
    ck_assert_str_eq(CFG_DEV_SECRET, cfg.callback_secret);
}
END_TEST

START_TEST(cfg_load_reads_the_dev_switch_strictly)
{
    const char *off[] = { CFG_DEV_ENV "=0", NULL };
    const char *bad[] = { CFG_DEV_ENV "=yes", NULL };

    refused_flags("{\"callback\": {\"secret\": \"dev-secret\"}}", off, 0,
                  "shipped development value");
    refused_flags("{}", bad, 0, CFG_DEV_ENV " must be 0 or 1");
}
END_TEST

/* ---- from memory --------------------------------------------------------- */

START_TEST(cfg_load_text_reads_only_len_bytes_and_names_the_origin)
{
    static const char text[] = "{\"workers\": 3}{\"workers\": 4}";
    struct config cfg;

    ck_assert_int_eq(
        0, cfg_load_text(&cfg, "mem.json", text, 14, NULL, CFG_LOAD_DEV, err, sizeof err));
    ck_assert_int_eq(3, cfg.workers);
    ck_assert_int_eq(-1, cfg_load_text(&cfg, "mem.json", text, strlen(text), NULL, CFG_LOAD_DEV,
                                       err, sizeof err));
    ck_assert_msg(strstr(err, "mem.json") != NULL, "reason: %s", err);
}
END_TEST

/* ---- operator keys ------------------------------------------------------- */

START_TEST(cfg_load_reads_named_keys_from_the_file)
{
    struct config cfg;

    ck_assert_int_eq(0,
                     load_flags(&cfg,
                                WITH_KEYS "[{\"name\": \"ops\", \"key\": \"" OPS_KEY
                                          "\"}, {\"key\": \"" SHOP_KEY "\", \"name\": \"shop\"}]}}",
                                NULL, 0));
    ck_assert_int_eq(2, cfg.auth_nkeys);
    ck_assert_str_eq("ops", cfg.auth_keys[0].name);
    ck_assert_str_eq(OPS_KEY, cfg.auth_keys[0].key);
    ck_assert_str_eq("shop", cfg.auth_keys[1].name);
    ck_assert_str_eq(SHOP_KEY, cfg.auth_keys[1].key);
}
END_TEST

START_TEST(cfg_load_lets_the_environment_replace_the_key_list)
{
    const char *env[] = { "PAYCALLBACK_AUTH_KEYS=shop:" SHOP_KEY ",prom:" OPS_KEY "x", NULL };
    struct config cfg;

    ck_assert_int_eq(
        0, load_flags(&cfg, WITH_KEYS "[{\"name\": \"ops\", \"key\": \"" OPS_KEY "\"}]}}", env, 0));
    ck_assert_int_eq(2, cfg.auth_nkeys);
    ck_assert_str_eq("shop", cfg.auth_keys[0].name);
    ck_assert_str_eq("prom", cfg.auth_keys[1].name);
    ck_assert_str_eq(OPS_KEY "x", cfg.auth_keys[1].key);
}
END_TEST

START_TEST(cfg_load_refuses_an_empty_key_list_outside_development)
{
    const char *env[] = { "PAYCALLBACK_CALLBACK_SECRET=s-0123456789abcdef0123456789abcdef", NULL };
    const char *emptied[] = { "PAYCALLBACK_AUTH_KEYS=", NULL };

    refused_flags("{}", env, 0, "auth.keys is empty");
    refused_flags(WITH_KEYS "[]}}", NULL, 0, "auth.keys is empty");
    refused_flags(WITH_KEYS "[{\"name\": \"ops\", \"key\": \"" OPS_KEY "\"}]}}", emptied, 0,
                  "auth.keys is empty");
}
END_TEST

#define WHSEC "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

START_TEST(cfg_load_refuses_a_webhook_without_its_secret)
{
    const char *url[] = { "PAYCALLBACK_WEBHOOK_URL=http://127.0.0.1:9/hook", NULL };
    const char *both[] = { "PAYCALLBACK_WEBHOOK_URL=http://127.0.0.1:9/hook",
                           "PAYCALLBACK_WEBHOOK_SECRET=" WHSEC, NULL };
    const char *ftp[] = { "PAYCALLBACK_WEBHOOK_URL=ftp://shop/hook",
                          "PAYCALLBACK_WEBHOOK_SECRET=shop-secret", NULL };
    struct config cfg;

    refused("{}", url, "webhook.secret must be set");
    refused("{}", ftp, "webhook.url must start with http:// or https://");
    refused("{\"retention\": {\"payment_days\": 30}}", NULL, "at least 35");
    refused("{\"webhook\": {\"backoff_base_ms\": 5000, \"backoff_max_ms\": 1000}}", NULL,
            "backoff_max_ms");
    ck_assert_int_eq(0, load(&cfg, "{}", both));
    ck_assert_str_eq(WHSEC, cfg.webhook_secret);
    ck_assert_str_eq("standard", cfg.webhook_format);
    ck_assert_int_eq(0, load(&cfg, "{\"retention\": {\"payment_days\": 35}}", NULL));
    ck_assert_int_eq(35, cfg.retention_payment_days);
}
END_TEST

/* The standard format signs with whsec_ secrets a shop's library decodes;
 * a previous secret signs beside the new one only until a stated time. */
START_TEST(cfg_load_checks_webhook_secrets_for_their_format)
{
    const char *plain[] = { "PAYCALLBACK_WEBHOOK_URL=http://127.0.0.1:9/hook",
                            "PAYCALLBACK_WEBHOOK_SECRET=shop-secret", NULL };
    const char *legacy[] = { "PAYCALLBACK_WEBHOOK_URL=http://127.0.0.1:9/hook",
                             "PAYCALLBACK_WEBHOOK_SECRET=shop-secret",
                             "PAYCALLBACK_WEBHOOK_FORMAT=legacy", NULL };
    struct config cfg;

    refused("{}", plain, "webhook.secret must be whsec_");
    refused("{\"webhook\": {\"format\": \"svix\"}}", NULL, "webhook.format must be");
    refused("{\"webhook\": {\"previous_secret\": \"whsec_abc\","
            " \"previous_secret_until\": \"2026-12-03T15:00:00Z\"}}",
            NULL, "webhook.previous_secret must be whsec_");
    refused("{\"webhook\": {\"previous_secret\": \"" WHSEC "\"}}", NULL, "go together");
    refused("{\"webhook\": {\"previous_secret\": \"" WHSEC "\","
            " \"previous_secret_until\": \"2026-12-03 15:00\"}}",
            NULL, "must be a UTC time");
    ck_assert_int_eq(0, load(&cfg, "{}", legacy));
    ck_assert_str_eq("legacy", cfg.webhook_format);
    ck_assert_int_eq(0, load(&cfg,
                             "{\"webhook\": {\"previous_secret\": \"" WHSEC "\","
                             " \"previous_secret_until\": \"2026-12-03T15:00:00Z\"}}",
                             NULL));
    ck_assert_int_eq(1796310000LL, cfg.webhook_previous_until_s);
}
END_TEST

#define EP_A "{\"name\": \"erp\", \"url\": \"https://erp.example/hook\", \"secret\": \"" WHSEC "\""

/* The "webhooks" endpoints: defaults from webhook.*, filters by known
 * type, one name each, secrets for their format, nothing unknown. */
START_TEST(cfg_load_reads_webhook_endpoints_and_refuses_bad_ones)
{
    const char *url[] = { "PAYCALLBACK_WEBHOOK_URL=http://127.0.0.1:9/hook",
                          "PAYCALLBACK_WEBHOOK_SECRET=" WHSEC, NULL };
    struct config cfg;
    struct webhook_endpoint_cfg def;

    ck_assert_int_eq(0,
                     load(&cfg,
                          "{\"webhook\": {\"timeout_ms\": 700}, \"webhooks\": [" EP_A
                          ", \"events\": [\"order.paid\", \"payment.double_charged\"],"
                          " \"rate_per_s\": 50}, {\"name\": \"old\", \"url\": \"http://x/h\","
                          " \"secret\": \"plain\", \"format\": \"legacy\", \"disabled\": true}]}",
                          NULL));
    ck_assert_uint_eq(2, cfg.webhooks.n);
    ck_assert_str_eq("erp", cfg.webhooks.ep[0].name);
    ck_assert_int_eq(700, cfg.webhooks.ep[0].timeout_ms);
    ck_assert_int_eq(50, cfg.webhooks.ep[0].rate_per_s);
    ck_assert_uint_eq(webhook_event_bit("order.paid") | webhook_event_bit("payment.double_charged"),
                      cfg.webhooks.ep[0].events);
    ck_assert_int_eq(WEBHOOK_LEGACY, cfg.webhooks.ep[1].format);
    ck_assert(cfg.webhooks.ep[1].disabled);
    ck_assert(!cfg_default_webhook(&cfg, &cfg, &def));
    ck_assert_int_eq(0, load(&cfg, "{}", url));
    ck_assert(cfg_default_webhook(&cfg, &cfg, &def));
    ck_assert_str_eq(WEBHOOK_DEFAULT_NAME, def.name);
    refused("{\"webhooks\": [" EP_A ", \"events\": [\"order.payed\"]}]}", NULL,
            "\"order.payed\" is not an event type");
    refused("{\"webhooks\": [" EP_A "}, " EP_A "}]}", NULL, "is taken");
    refused("{\"webhooks\": [" EP_A ", \"colour\": 1}]}", NULL, "unknown member \"colour\"");
    refused("{\"webhooks\": [{\"name\": \"erp\", \"url\": \"http://x/h\", \"secret\": \"plain\"}]}",
            NULL, "must be whsec_");
    refused("{\"webhooks\": [{\"name\": \"erp\", \"url\": \"http://x/h\"}]}", NULL,
            "a secret must be set");
    refused("{\"webhooks\": [" EP_A ", \"previous_secret\": \"" WHSEC "\"}]}", NULL, "go together");
    refused("{\"webhooks\": [" EP_A ", \"rate_per_s\": -1}]}", NULL, "rate_per_s");
    refused("{\"webhooks\": [{\"name\": \"default\", \"url\": \"http://x/h\", \"secret\": \"" WHSEC
            "\"}]}",
            url, "none named so");
}
END_TEST

START_TEST(cfg_load_reads_trusted_proxies_and_refuses_what_is_not_a_network)
{
    const char *two[] = { "PAYCALLBACK_HTTP_TRUSTED_PROXIES=127.0.0.1, 10.0.0.0/8", NULL };
    const char *bad[] = { "PAYCALLBACK_HTTP_TRUSTED_PROXIES=proxy.internal", NULL };
    struct config cfg;

    ck_assert_int_eq(0, load(&cfg, "{}", NULL));
    ck_assert_uint_eq(0, cfg.http_trusted.n);
    ck_assert_int_eq(64, cfg.http_ipv6_prefix);
    ck_assert_int_eq(25, cfg.http_reserved_percent);
    ck_assert_int_eq(0, load(&cfg, "{}", two));
    ck_assert_uint_eq(2, cfg.http_trusted.n);
    refused("{}", bad, "http.trusted_proxies: \"proxy.internal\" is not an address");
    refused("{\"http\": {\"reserved_percent\": 91}}", NULL, "http.reserved_percent");
    refused("{\"http\": {\"ipv6_prefix\": 0}}", NULL, "http.ipv6_prefix");
}
END_TEST

START_TEST(cfg_load_refuses_a_query_url_without_its_token)
{
    const char *url[] = { "PAYCALLBACK_CALLBACK_QUERY_URL=https://query.example/q", NULL };
    const char *token[] = { "PAYCALLBACK_CALLBACK_QUERY_TOKEN=query-token-0123456789", NULL };
    const char *ftp[] = { "PAYCALLBACK_CALLBACK_QUERY_URL=ftp://query.example/q",
                          "PAYCALLBACK_CALLBACK_QUERY_TOKEN=query-token-0123456789", NULL };
    const char *line[] = { "PAYCALLBACK_CALLBACK_QUERY_URL=https://query.example/q",
                           "PAYCALLBACK_CALLBACK_QUERY_TOKEN=abc\r\nX-Injected: 1", NULL };
    const char *both[] = { "PAYCALLBACK_CALLBACK_QUERY_URL=https://query.example/q?shop=1",
                           "PAYCALLBACK_CALLBACK_QUERY_TOKEN=query-token-0123456789", NULL };
    struct config cfg;

    refused("{}", url, "callback.query_token is empty");
    refused("{}", token, "callback.query_url is empty");
    refused("{}", ftp, "callback.query_url must be an http");
    refused("{}", line, "callback.query_token must be characters of");
    ck_assert_msg(strstr(err, "abc") == NULL, "the token was printed: %s", err);
    refused("{\"callback\": {\"query_timeout_ms\": 50}}", NULL, "query_timeout_ms");
    ck_assert_int_eq(0, load(&cfg, "{}", both));
    ck_assert_str_eq("https://query.example/q?shop=1", cfg.callback_query_url);
    ck_assert_int_eq(5000, cfg.callback_query_timeout_ms);
    ck_assert_int_eq(50, cfg.reconcile_query_batch);
}
END_TEST

START_TEST(cfg_load_knows_the_query_token_variables_of_its_gateways)
{
    const char *env[] = { "PAYCALLBACK_GATEWAY_STRIPE_QUERY_TOKEN=query-token-0123456789", NULL };
    struct config cfg;

    refused("{\"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\"}]}", env,
            "unknown environment variable PAYCALLBACK_GATEWAY_STRIPE_QUERY_TOKEN");
    ck_assert_int_eq(0, load(&cfg,
                             "{\"gateways\": [{\"name\": \"stripe\", \"kind\": "
                             "\"stripe\", \"query_url\": \"http://10.0.0.1:8443/q\"}]}",
                             env));
    ck_assert_str_eq("PAYCALLBACK_GATEWAY_STRIPE_QUERY_TOKEN",
                     cfg.gateways.profile[0].query_token_env);
}
END_TEST

START_TEST(cfg_load_gives_development_a_development_key)
{
    struct config cfg;

    ck_assert_int_eq(0, load_flags(&cfg, "{}", NULL, CFG_LOAD_DEV));
    ck_assert_int_eq(1, cfg.auth_nkeys);
    ck_assert_str_eq(CFG_DEV_AUTH_NAME, cfg.auth_keys[0].name);
    ck_assert_str_eq(CFG_DEV_AUTH_KEY, cfg.auth_keys[0].key);
}
END_TEST

START_TEST(cfg_load_refuses_the_development_key_outside_development)
{
    refused_flags(WITH_KEYS "[{\"name\": \"ops\", \"key\": \"" CFG_DEV_AUTH_KEY "\"}]}}", NULL, 0,
                  "auth key \"ops\" is the development key");
}
END_TEST

START_TEST(cfg_load_refuses_bad_keys_without_printing_them)
{
    refused(WITH_KEYS "[{\"name\": \"ops\", \"key\": \"short\"}]}}", NULL,
            "auth key \"ops\" must be 16..128 characters");
    ck_assert_msg(strstr(err, "short") == NULL, "the key was printed: %s", err);
    refused(WITH_KEYS "[{\"name\": \"ops\", \"key\": \"has a blank in it, long\"}]}}", NULL,
            "auth key \"ops\" must be");
    refused(WITH_KEYS "[{\"name\": \"o ps\", \"key\": \"" OPS_KEY "\"}]}}", NULL,
            "entry 1: name must be");
    refused(WITH_KEYS "[{\"name\": \"ops\"}]}}", NULL, "entry 1 needs a string \"key\"");
    refused(WITH_KEYS "[{\"name\": \"ops\", \"key\": \"" OPS_KEY "\", \"role\": \"x\"}]}}", NULL,
            "unknown key \"auth.keys[0].role\"");
    refused(WITH_KEYS "[{\"name\": \"ops\", \"name\": \"x\", \"key\": \"" OPS_KEY "\"}]}}", NULL,
            "each member once");
    refused(WITH_KEYS "{\"ops\": \"" OPS_KEY "\"}}}", NULL, "auth.keys must be an array");
}
END_TEST

START_TEST(cfg_load_refuses_duplicate_names_and_keys)
{
    const char *names[] = { "PAYCALLBACK_AUTH_KEYS=ops:" OPS_KEY ",ops:" SHOP_KEY, NULL };
    const char *keys[] = { "PAYCALLBACK_AUTH_KEYS=ops:" OPS_KEY ",shop:" OPS_KEY, NULL };
    const char *form[] = { "PAYCALLBACK_AUTH_KEYS=ops" OPS_KEY, NULL };

    refused("{}", names, "auth key name \"ops\" appears twice");
    refused("{}", keys, "auth keys \"ops\" and \"shop\" are the same key");
    refused("{}", form, "PAYCALLBACK_AUTH_KEYS: auth.keys entry 1 must be name:key");
}
END_TEST

START_TEST(cfg_load_reads_key_scopes_and_defaults_to_every_scope)
{
    const char *env[] = { "PAYCALLBACK_AUTH_KEYS=prom:" OPS_KEY ":metrics,shop:" SHOP_KEY
                          ":read+orders,all:" OPS_KEY "x",
                          NULL };
    struct config cfg;

    ck_assert_int_eq(0, load_flags(&cfg,
                                   WITH_KEYS "[{\"name\": \"ops\", \"key\": \"" OPS_KEY
                                             "\", \"scopes\": [\"refunds\", \"audit\"]}, "
                                             "{\"name\": \"any\", \"key\": \"" SHOP_KEY "\"}]}}",
                                   NULL, 0));
    ck_assert_uint_eq(CFG_SCOPE_REFUNDS | CFG_SCOPE_AUDIT, cfg.auth_keys[0].scopes);
    ck_assert_uint_eq(CFG_SCOPE_ALL, cfg.auth_keys[1].scopes);
    ck_assert_int_eq(0, load_flags(&cfg, WITH_KEYS "[]}}", env, 0));
    ck_assert_int_eq(3, cfg.auth_nkeys);
    ck_assert_str_eq(OPS_KEY, cfg.auth_keys[0].key);
    ck_assert_uint_eq(CFG_SCOPE_METRICS, cfg.auth_keys[0].scopes);
    ck_assert_uint_eq(CFG_SCOPE_READ | CFG_SCOPE_ORDERS, cfg.auth_keys[1].scopes);
    ck_assert_uint_eq(CFG_SCOPE_ALL, cfg.auth_keys[2].scopes);
    ck_assert_str_eq("audit", cfg_scope_name(CFG_SCOPE_AUDIT));
    ck_assert_ptr_null(cfg_scope_name(CFG_SCOPE_READ | CFG_SCOPE_ORDERS));
}
END_TEST

START_TEST(cfg_load_refuses_unknown_and_empty_scopes)
{
    const char *bogus[] = { "PAYCALLBACK_AUTH_KEYS=ops:" OPS_KEY ":read+admin", NULL };
    const char *empty[] = { "PAYCALLBACK_AUTH_KEYS=ops:" OPS_KEY ":", NULL };

    refused("{}", bogus, "auth key \"ops\": unknown scope \"admin\"");
    refused("{}", empty, "auth key \"ops\" names no scope");
    refused(WITH_KEYS "[{\"name\": \"ops\", \"key\": \"" OPS_KEY "\", \"scopes\": []}]}}", NULL,
            "scopes must be a non-empty array");
    refused(WITH_KEYS "[{\"name\": \"ops\", \"key\": \"" OPS_KEY "\", \"scopes\": [7]}]}}", NULL,
            "scopes must be strings");
}
END_TEST

/* ---- what SIGHUP may change -------------------------------------------------- */

/* ---- mysql.shards ---------------------------------------------------------- */

START_TEST(cfg_load_reads_shards_and_fills_their_endpoints_from_mysql)
{
    struct config cfg;

    ck_assert_int_eq(
        0,
        load(
            &cfg,
            "{\"mysql\": {\"host\": \"10.0.0.5\", \"port\": 3310, "
            "\"cluster_id\": \"eu-1\", \"database\": \"pc\", \"shards\": [{\"id\": 2, \"port\": 33412}, "
            "{\"id\": 7, \"host\": \"10.0.0.9\", \"database\": \"pc7\"}]}}",
            NULL));
    ck_assert_int_eq(2, cfg.nshards);
    ck_assert_int_eq(2, cfg.shards[0].id);
    ck_assert_str_eq("10.0.0.5", cfg.shards[0].host);
    ck_assert_int_eq(33412, cfg.shards[0].port);
    ck_assert_str_eq("pc", cfg.shards[0].database);
    ck_assert_int_eq(7, cfg.shards[1].id);
    ck_assert_str_eq("10.0.0.9", cfg.shards[1].host);
    ck_assert_int_eq(3310, cfg.shards[1].port);
    ck_assert_str_eq("pc7", cfg.shards[1].database);
    ck_assert_int_eq(0, load(&cfg, "{}", NULL));
    ck_assert_int_eq(0, cfg.nshards);
}
END_TEST

START_TEST(cfg_load_lets_the_environment_replace_the_shard_list)
{
    const char *env[] = { "PAYCALLBACK_MYSQL_SHARDS=1=127.0.0.1:33411/a,3=:33413,4=db4/b", NULL };
    const char *none[] = { "PAYCALLBACK_MYSQL_SHARDS=", NULL };
    struct config cfg;

    ck_assert_int_eq(
        0, load(&cfg, "{\"mysql\": {\"cluster_id\": \"c\", \"shards\": [{\"id\": 9}]}}", env));
    ck_assert_int_eq(3, cfg.nshards);
    ck_assert_int_eq(1, cfg.shards[0].id);
    ck_assert_str_eq("127.0.0.1", cfg.shards[0].host);
    ck_assert_int_eq(33411, cfg.shards[0].port);
    ck_assert_str_eq("a", cfg.shards[0].database);
    ck_assert_int_eq(3, cfg.shards[1].id);
    ck_assert_str_eq("127.0.0.1", cfg.shards[1].host); /* mysql.host's default */
    ck_assert_int_eq(33413, cfg.shards[1].port);
    ck_assert_str_eq("paycallback", cfg.shards[1].database);
    ck_assert_str_eq("db4", cfg.shards[2].host);
    ck_assert_int_eq(3306, cfg.shards[2].port);
    ck_assert_str_eq("b", cfg.shards[2].database);
    ck_assert_int_eq(0, load(&cfg, "{\"mysql\": {\"shards\": [{\"id\": 9}]}}", none));
    ck_assert_int_eq(0, cfg.nshards);
}
END_TEST

START_TEST(cfg_load_refuses_bad_shard_lists)
{
    const char *e1[] = { "PAYCALLBACK_MYSQL_SHARDS=1=h:0", NULL };
    const char *e2[] = { "PAYCALLBACK_MYSQL_SHARDS=x=h:1", NULL };
    const char *e3[] = { "PAYCALLBACK_MYSQL_SHARDS=1h:1", NULL };
    const char *e4[] = { "PAYCALLBACK_MYSQL_SHARDS=1=h:1,1=g:2", NULL };

    refused("{\"mysql\": {\"shards\": {}}}", NULL, "mysql.shards must be an array");
    refused("{\"mysql\": {\"shards\": [{\"host\": \"h\"}]}}", NULL, "needs an \"id\"");
    refused("{\"mysql\": {\"shards\": [{\"id\": 100}]}}", NULL, "id must be an integer in 1..99");
    refused("{\"mysql\": {\"shards\": [{\"id\": 0}]}}", NULL, "id must be an integer in 1..99");
    refused("{\"mysql\": {\"shards\": [{\"id\": 1, \"port\": 70000}]}}", NULL,
            "port must be an integer in 1..65535");
    refused("{\"mysql\": {\"shards\": [{\"id\": 1, \"host\": \"\"}]}}", NULL,
            "host must be a non-empty string");
    refused("{\"mysql\": {\"shards\": [{\"id\": 1, \"hots\": \"h\"}]}}", NULL,
            "unknown key \"mysql.shards[0].hots\"");
    refused("{\"mysql\": {\"shards\": [{\"id\": 1, \"id\": 2}]}}", NULL, "each member once");
    refused("{\"mysql\": {\"shards\": [{\"id\": 1}, {\"id\": 1, \"port\": 2}]}}", NULL,
            "shard id 1 appears twice");
    refused("{\"mysql\": {\"shards\": [{\"id\": 1}, {\"id\": 2}]}}", NULL,
            "shards 1 and 2 are the same database");
    refused(
        "{\"mysql\": {\"shards\": [{\"id\":1},{\"id\":2,\"port\":2},{\"id\":3,\"port\":3},"
        "{\"id\":4,\"port\":4},{\"id\":5,\"port\":5},{\"id\":6,\"port\":6},{\"id\":7,\"port\":7},"
        "{\"id\":8,\"port\":8},{\"id\":9,\"port\":9}]}}",
        NULL, "more than 8 shards");
    refused("{}", e1, "port must be in 1..65535");
    refused("{}", e2, "id must be in 1..99");
    refused("{}", e3, "must be id=host:port/database");
    refused("{}", e4, "shard id 1 appears twice");
}
END_TEST

START_TEST(cfg_load_needs_a_cluster_id_with_shards)
{
    struct config cfg;

    refused("{\"mysql\": {\"shards\": [{\"id\": 1}]}}", NULL,
            "mysql.cluster_id is required with mysql.shards");
    refused("{\"mysql\": {\"cluster_id\": \"eu 1\", \"shards\": [{\"id\": 1}]}}", NULL,
            "mysql.cluster_id may hold only");
    ck_assert_int_eq(0, load(&cfg,
                             "{\"mysql\": {\"cluster_id\": \"eu-1.a_b\", \"shards\": "
                             "[{\"id\": 1}]}}",
                             NULL));
    ck_assert_str_eq("eu-1.a_b", cfg.mysql_cluster_id);
}
END_TEST

START_TEST(cfg_restart_keys_names_only_the_keys_a_reload_cannot_apply)
{
    static struct config a, b;
    char names[256];

    ck_assert_int_eq(0, load(&a, "{\"workers\": 8, \"mysql\": {\"host\": \"db1\"}}", NULL));
    ck_assert_int_eq(0, load(&b, "{\"workers\": 8, \"mysql\": {\"host\": \"db1\"}}", NULL));
    ck_assert_uint_eq(0, cfg_restart_keys(&a, &b, names, sizeof names));
    ck_assert_str_eq("", names);

    /* Secrets, keys and the log level reload: none of them is named. */
    ck_assert_int_eq(0, load(&b,
                             "{\"workers\": 8, \"mysql\": {\"host\": \"db1\"},"
                             " \"log_level\": \"debug\","
                             " \"callback\": {\"secret\": \"s-new-0123456789\","
                             " \"previous_secret\": \"s-old-0123456789\"},"
                             " \"auth\": {\"keys\": [{\"name\": \"ops\","
                             " \"key\": \"ops-key-0123456789abcdef\"}]}}",
                             NULL));
    ck_assert_uint_eq(0, cfg_restart_keys(&a, &b, names, sizeof names));

    ck_assert_int_eq(0, load(&b, "{\"workers\": 4, \"mysql\": {\"host\": \"db2\"}}", NULL));
    ck_assert_uint_eq(2, cfg_restart_keys(&a, &b, names, sizeof names));
    ck_assert_str_eq("workers,mysql.host", names);

    ck_assert_uint_eq(2, cfg_restart_keys(&a, &b, names, 9)); /* cut, still terminated */
    ck_assert_str_eq("workers,", names);
}
END_TEST

START_TEST(cfg_restart_keys_names_a_changed_gateway_query_endpoint)
{
    static struct config a, b;
    char names[256];

    ck_assert_int_eq(0, load(&a,
                             "{\"gateways\": [{\"name\": \"s\", \"kind\": \"stripe\","
                             " \"query_url\": \"https://q.example/a\"}]}",
                             NULL));
    ck_assert_int_eq(0, load(&b,
                             "{\"gateways\": [{\"name\": \"s\", \"kind\": \"stripe\","
                             " \"query_url\": \"https://q.example/a\"}]}",
                             NULL));
    ck_assert_uint_eq(0, cfg_restart_keys(&a, &b, names, sizeof names));
    ck_assert_int_eq(0, load(&b,
                             "{\"gateways\": [{\"name\": \"s\", \"kind\": \"stripe\","
                             " \"query_url\": \"https://q.example/b\"}]}",
                             NULL));
    ck_assert_uint_eq(1, cfg_restart_keys(&a, &b, names, sizeof names));
    ck_assert_str_eq("gateways[0].query_*", names);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc;

    tc = tcase_create("accepted");
    tcase_add_test(tc, cfg_load_accepts_an_empty_object_with_defaults);
    tcase_add_test(tc, cfg_load_reads_every_kind_of_value);
    tcase_add_test(tc, cfg_load_lets_the_environment_win);
    tcase_add_test(tc, cfg_load_accepts_a_string_that_fills_its_field);
    tcase_add_test(tc, cfg_load_accepts_integral_numbers_written_as_floats);
    suite_add_tcase(s, tc);

    tc = tcase_create("the document");
    tcase_add_test(tc, cfg_load_refuses_trailing_data);
    tcase_add_test(tc, cfg_load_refuses_a_duplicate_top_level_key);
    tcase_add_test(tc, cfg_load_refuses_a_duplicate_key_in_a_section);
    tcase_add_test(tc, cfg_load_refuses_a_nul_character);
    tcase_add_test(tc, cfg_load_refuses_non_objects);
    suite_add_tcase(s, tc);

    tc = tcase_create("numbers");
    tcase_add_test(tc, cfg_load_refuses_huge_numbers_before_converting_them);
    tcase_add_test(tc, cfg_load_refuses_fractions_and_non_numbers);
    tcase_add_test(tc, cfg_load_refuses_environment_integers_that_are_not_plain);
    suite_add_tcase(s, tc);

    tc = tcase_create("strings");
    tcase_add_test(tc, cfg_load_checks_a_string_against_its_own_field);
    tcase_add_test(tc, cfg_load_checks_an_environment_string_against_its_field);
    tcase_add_test(tc, cfg_load_refuses_a_string_one_byte_too_long);
    suite_add_tcase(s, tc);

    tc = tcase_create("environment names");
    tcase_add_test(tc, cfg_load_refuses_an_unknown_paycallback_variable);
    tcase_add_test(tc, cfg_load_refuses_a_paycallback_variable_without_a_value);
    tcase_add_test(tc, cfg_load_ignores_other_prefixes);
    tcase_add_test(tc, cfg_load_knows_the_secret_variables_of_its_gateways);
    tcase_add_test(tc, cfg_load_checks_names_even_without_a_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("operator keys");
    tcase_add_test(tc, cfg_load_reads_named_keys_from_the_file);
    tcase_add_test(tc, cfg_load_lets_the_environment_replace_the_key_list);
    tcase_add_test(tc, cfg_load_refuses_an_empty_key_list_outside_development);
    tcase_add_test(tc, cfg_load_refuses_a_webhook_without_its_secret);
    tcase_add_test(tc, cfg_load_checks_webhook_secrets_for_their_format);
    tcase_add_test(tc, cfg_load_reads_webhook_endpoints_and_refuses_bad_ones);
    tcase_add_test(tc, cfg_load_reads_trusted_proxies_and_refuses_what_is_not_a_network);
    tcase_add_test(tc, cfg_load_refuses_a_query_url_without_its_token);
    tcase_add_test(tc, cfg_load_knows_the_query_token_variables_of_its_gateways);
    tcase_add_test(tc, cfg_load_gives_development_a_development_key);
    tcase_add_test(tc, cfg_load_refuses_the_development_key_outside_development);
    tcase_add_test(tc, cfg_load_refuses_bad_keys_without_printing_them);
    tcase_add_test(tc, cfg_load_refuses_duplicate_names_and_keys);
    tcase_add_test(tc, cfg_load_reads_key_scopes_and_defaults_to_every_scope);
    tcase_add_test(tc, cfg_load_refuses_unknown_and_empty_scopes);
    suite_add_tcase(s, tc);

    tc = tcase_create("shards");
    tcase_add_test(tc, cfg_load_reads_shards_and_fills_their_endpoints_from_mysql);
    tcase_add_test(tc, cfg_load_lets_the_environment_replace_the_shard_list);
    tcase_add_test(tc, cfg_load_refuses_bad_shard_lists);
    tcase_add_test(tc, cfg_load_needs_a_cluster_id_with_shards);
    suite_add_tcase(s, tc);

    tc = tcase_create("fail closed on the callback secret");
    tcase_add_test(tc, cfg_load_refuses_an_empty_secret_outside_development);
    tcase_add_test(tc, cfg_load_refuses_the_shipped_secret_outside_development);
    tcase_add_test(tc, cfg_load_refuses_a_short_secret_outside_development);
    tcase_add_test(tc, cfg_load_refuses_plain_http_credentials_outside_development);
    tcase_add_test(tc, cfg_load_refuses_a_file_with_secrets_readable_by_others);
    tcase_add_test(tc, cfg_load_takes_a_real_secret_from_the_environment);
    tcase_add_test(tc, cfg_load_allows_the_shipped_secret_with_the_dev_switch);
    tcase_add_test(tc, cfg_load_never_leaves_the_secret_empty_in_development);
    tcase_add_test(tc, cfg_load_reads_the_dev_switch_strictly);
    suite_add_tcase(s, tc);

    tc = tcase_create("reload");
    tcase_add_test(tc, cfg_restart_keys_names_only_the_keys_a_reload_cannot_apply);
    tcase_add_test(tc, cfg_restart_keys_names_a_changed_gateway_query_endpoint);
    suite_add_tcase(s, tc);

    tc = tcase_create("from memory");
    tcase_add_test(tc, cfg_load_text_reads_only_len_bytes_and_names_the_origin);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(config_suite, NULL, NULL);
