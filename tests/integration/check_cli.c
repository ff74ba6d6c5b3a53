/* check_cli.c - the command line of the real binary: --help, --version,
 * usage errors, configuration errors (exit 2 with a reason), and
 * --check-config against the private MariaDB and Redis (0 when MySQL
 * answers with the schema, 1 with a reason when it does not; Redis down is
 * only a warning). Nothing here serves HTTP. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "../testkeys.h"
#include "../check_main.h"

#define RUN_TIMEOUT_MS 20000
#define TC_TIMEOUT_S 60

/* A TCP port on 127.0.0.1 that nothing listens on: bound, then released. */
static int closed_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(0, bind(fd, (struct sockaddr *)&sa, sizeof sa));
    ck_assert_int_eq(0, getsockname(fd, (struct sockaddr *)&sa, &len));
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* Writes text to a new temporary config file; its path goes in path. */
static void temp_config(char path[64], const char *text)
{
    int fd;

    snprintf(path, 64, "/tmp/paycallback-cfg-XXXXXX");
    fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp: %s", strerror(errno));
    ck_assert_int_eq((ssize_t)strlen(text), write(fd, text, strlen(text)));
    close(fd);
}

#define assert_contains(hay, needle, what)                                                    \
    ck_assert_msg(strstr((hay), (needle)) != NULL, "expected %s to contain \"%s\", got:\n%s", \
                  (what), (needle), (hay))

/* ---- help and version ---------------------------------------------------- */

START_TEST(help_exits_0_and_lists_flags_and_environment_names)
{
    static const char *const args[] = { "--help", NULL };
    static const char *const wanted[] = {
        "--config",
        "--check-config",
        "--port-file",
        "--version",
        "--dev",
        "SIGTERM",
        "PAYCALLBACK_DEV",
        "PAYCALLBACK_CALLBACK_PREVIOUS_SECRET",
        "PAYCALLBACK_AUTH_KEYS",
        "PAYCALLBACK_LISTEN_ADDRESS",
        "PAYCALLBACK_LISTEN_PORT",
        "PAYCALLBACK_GRACE_S",
        "PAYCALLBACK_LOG_LEVEL",
        "PAYCALLBACK_MYSQL_HOST",
        "PAYCALLBACK_MYSQL_PASSWORD",
        "PAYCALLBACK_REDIS_HOST",
        "PAYCALLBACK_REDIS_PORT",
        "PAYCALLBACK_CALLBACK_SECRET",
    };
    struct h_run r;

    h_run(args, NULL, RUN_TIMEOUT_MS, &r);
    ck_assert_int_eq(0, r.status);
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        assert_contains(r.out, wanted[i], "--help");
    h_run_free(&r);
}
END_TEST

START_TEST(short_help_is_the_same_as_long)
{
    static const char *const shrt[] = { "-h", NULL }, *const lng[] = { "--help", NULL };
    struct h_run a, b;

    h_run(shrt, NULL, RUN_TIMEOUT_MS, &a);
    h_run(lng, NULL, RUN_TIMEOUT_MS, &b);
    ck_assert_int_eq(0, a.status);
    ck_assert_str_eq(b.out, a.out);
    h_run_free(&a);
    h_run_free(&b);
}
END_TEST

START_TEST(version_prints_name_and_version)
{
    static const char *const args[] = { "--version", NULL };
    struct h_run r;
    unsigned int maj, min, patch;

    h_run(args, NULL, RUN_TIMEOUT_MS, &r);
    ck_assert_int_eq(0, r.status);
    ck_assert_msg(sscanf(r.out, "paycallback %u.%u.%u", &maj, &min, &patch) == 3,
                  "expected \"paycallback X.Y.Z\", got \"%s\"", r.out);
    h_run_free(&r);
}
END_TEST

START_TEST(unknown_flag_exits_2_with_usage)
{
    static const char *const args[] = { "--frobnicate", NULL };
    struct h_run r;

    h_run(args, NULL, RUN_TIMEOUT_MS, &r);
    ck_assert_int_eq(2, r.status);
    assert_contains(r.err, "usage:", "stderr");
    h_run_free(&r);
}
END_TEST

START_TEST(stray_argument_exits_2_naming_it)
{
    static const char *const args[] = { "serve", NULL };
    struct h_run r;

    h_run(args, NULL, RUN_TIMEOUT_MS, &r);
    ck_assert_int_eq(2, r.status);
    assert_contains(r.err, "serve", "stderr");
    h_run_free(&r);
}
END_TEST

/* ---- bad configuration: exit 2 with the reason --------------------------- */

static const struct bad_config {
    const char *text;   /* file content, or NULL: a missing file */
    const char *env;    /* an extra override, or NULL */
    const char *reason; /* expected in stderr */
} bad_configs[] = {
    { NULL, NULL, "cannot open config" },
    { "{\"workers\": 4, \"wokrers\": 8}", NULL, "unknown key \"wokrers\"" },
    { "{\"mysql\": {\"hots\": \"db\"}}", NULL, "unknown key \"mysql.hots\"" },
    { "{\"workers\": \"many\"}", NULL, "workers must be an integer" },
    { "{\"listen\": {\"port\": 8080.5}}", NULL, "listen.port must be an integer" },
    { "{\"mysql\": {\"host\": 3306}}", NULL, "mysql.host must be a string" },
    { "{\"mysql\": \"127.0.0.1\"}", NULL, "mysql must be an object" },
    { "{\"listen\": {\"port\": 70000}}", NULL, "listen.port must be in 0..65535" },
    { "{\"workers\": 4,}", NULL, "not a JSON object" },
    { "[1, 2]", NULL, "not a JSON object" },
    { "{\"log_level\": \"chatty\"}", NULL, "log_level must be" },
    { "{\"log_format\": \"xml\"}", NULL, "log_format must be logfmt or json" },
    { "{\"listen\": {\"address\": \"localhost\"}}", NULL,
      "listen.address must be an IPv4 or IPv6" },
    { "{}", "PAYCALLBACK_MYSQL_PORT=abc", "PAYCALLBACK_MYSQL_PORT" },
    { "{}", "PAYCALLBACK_WORKERS=0", "PAYCALLBACK_WORKERS" },
    { "{\"workers\": 1e34}", NULL, "workers must be in 1..1024" },
    { "{\"workers\": 4} {\"workers\": 8}", NULL, "not a JSON object" },
    { "{\"workers\": 4, \"workers\": 8}", NULL, "\"workers\" appears twice" },
    { "{\"log_level\": \"debugdebugdebugdebugdebugdebugdebugdebugde\"}", NULL,
      "log_level is longer than 15 bytes" },
    { "{}", "PAYCALLBACK_CALLBACK_SECRT=x",
      "unknown environment variable PAYCALLBACK_CALLBACK_SECRT" },
    { "{\"gateways\": {}}", NULL, "gateways must be an array" },
    { "{\"gateways\": [{\"name\": \"s\", \"kind\": \"stripe\", \"secrte_env\": \"X\"}]}", NULL,
      "unknown member \"secrte_env\"" },
    { "{\"gateways\": [{\"name\": \"a\", \"kind\": \"alipay\", \"public_key\": \"x\"}]}", NULL,
      "needs app_id" },
};

START_TEST(bad_configuration_exits_2_with_the_reason)
{
    const struct bad_config *bc = &bad_configs[_i];
    const char *env[] = { bc->env, NULL };
    const char *args[] = { "-c", NULL, NULL };
    char path[64] = "/nonexistent/paycallback.json";
    struct h_run r;

    if (bc->text != NULL)
        temp_config(path, bc->text);
    args[1] = path;
    h_run(args, env, RUN_TIMEOUT_MS, &r);
    if (bc->text != NULL)
        unlink(path);
    ck_assert_msg(r.status == 2, "config %s: expected exit 2, got %d; stderr:\n%s",
                  bc->text ? bc->text : "(missing)", r.status, r.err);
    assert_contains(r.err, bc->reason, "stderr");
    h_run_free(&r);
}
END_TEST

START_TEST(bad_configuration_fails_check_config_the_same_way)
{
    const char *args[] = { "-c", NULL, "--check-config", NULL };
    char path[64];
    struct h_run r;

    temp_config(path, "{\"callback\": {\"secert\": \"x\"}}");
    args[1] = path;
    h_run(args, NULL, RUN_TIMEOUT_MS, &r);
    unlink(path);
    ck_assert_int_eq(2, r.status);
    assert_contains(r.err, "unknown key \"callback.secert\"", "stderr");
    h_run_free(&r);
}
END_TEST

/* ---- log format ------------------------------------------------------------- */

START_TEST(json_log_format_writes_each_line_as_one_object)
{
    const char *env[] = { "PAYCALLBACK_LOG_FORMAT=json", NULL };
    const char *parts[] = { "{\"ts\":\"", "\"msg\":\"request\"", "\"path\":\"/healthz\"",
                            "\"status\":200,", NULL };
    struct h_server *s = h_server_start(env);
    struct h_resp r;
    char *line;

    ck_assert_ptr_nonnull(s);
    h_http(h_server_port(s), "GET", "/healthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    line = h_log_find(parts, 5000);
    ck_assert_msg(line != NULL, "no JSON request line for /healthz");
    ck_assert_msg(h_json_is_object(line), "not one JSON object: %s", line);
    ck_assert_msg(strncmp(line, "{\"ts\":", 6) == 0 && strstr(line, "\"level\":\"info\"") != NULL,
                  "no ts and level: %s", line);
    free(line);
    ck_assert_int_eq(0, h_server_stop(s));
}
END_TEST

/* ---- fail closed on the callback secret ------------------------------------ */

START_TEST(start_is_refused_with_the_shipped_secret_outside_development)
{
    static const char *const args[] = { "--check-config", NULL };
    static const char *const env[] = { "PAYCALLBACK_DEV=0", NULL };
    struct h_run r;

    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 2, "expected exit 2, got %d; stderr:\n%s", r.status, r.err);
    assert_contains(r.err, "shipped development value", "stderr");
    ck_assert_msg(strchr(r.err, '\n') == strrchr(r.err, '\n'), "not one line:\n%s", r.err);
    h_run_free(&r);
}
END_TEST

START_TEST(start_is_refused_with_an_empty_secret_outside_development)
{
    static const char *const args[] = { "--check-config", NULL };
    static const char *const env[] = { "PAYCALLBACK_DEV=0", "PAYCALLBACK_CALLBACK_SECRET=", NULL };
    struct h_run r;

    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 2, "expected exit 2, got %d; stderr:\n%s", r.status, r.err);
    assert_contains(r.err, "callback.secret is empty", "stderr");
    h_run_free(&r);
}
END_TEST

START_TEST(serving_is_refused_too_not_only_the_check)
{
    char port_file[64];
    const char *args[] = { "--port-file", port_file, NULL };
    static const char *const env[] = { "PAYCALLBACK_DEV=0", NULL };
    struct h_run r;

    snprintf(port_file, sizeof port_file, "/tmp/paycallback-closed-%d", (int)getpid());
    unlink(port_file);
    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 2, "expected exit 2, got %d; stderr:\n%s", r.status, r.err);
    ck_assert_msg(access(port_file, F_OK) != 0, "the refused service wrote a port file");
    h_run_free(&r);
}
END_TEST

START_TEST(a_real_secret_starts_without_the_dev_switch)
{
    static const char *const args[] = { "--check-config", NULL };
    static const char *const env[] = {
        "PAYCALLBACK_DEV=0", "PAYCALLBACK_CALLBACK_SECRET=a-real-secret-8c1e-0123456789abcdef",
        "PAYCALLBACK_AUTH_KEYS=ops:ops-key-0123456789abcdef", NULL
    };
    struct h_run r;

    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 0, "expected exit 0, got %d; stderr:\n%s", r.status, r.err);
    h_run_free(&r);
}
END_TEST

START_TEST(start_is_refused_without_an_operator_key_outside_development)
{
    static const char *const args[] = { "--check-config", NULL };
    static const char *const env[] = {
        "PAYCALLBACK_DEV=0", "PAYCALLBACK_CALLBACK_SECRET=a-real-secret-8c1e-0123456789abcdef", NULL
    };
    struct h_run r;

    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 2, "expected exit 2, got %d; stderr:\n%s", r.status, r.err);
    assert_contains(r.err, "auth.keys is empty", "stderr");
    h_run_free(&r);
}
END_TEST

START_TEST(start_is_refused_with_the_development_operator_key)
{
    static const char *const args[] = { "--check-config", NULL };
    static const char *const env[] = {
        "PAYCALLBACK_DEV=0", "PAYCALLBACK_CALLBACK_SECRET=a-real-secret-8c1e-0123456789abcdef",
        "PAYCALLBACK_AUTH_KEYS=ops:" H_OPERATOR_KEY, NULL
    };
    struct h_run r;

    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 2, "expected exit 2, got %d; stderr:\n%s", r.status, r.err);
    assert_contains(r.err, "is the development key", "stderr");
    ck_assert_msg(strstr(r.err, H_OPERATOR_KEY) == NULL, "the key was printed:\n%s", r.err);
    h_run_free(&r);
}
END_TEST

START_TEST(the_dev_flag_allows_the_shipped_secret)
{
    static const char *const args[] = { "--dev", "--check-config", NULL };
    static const char *const env[] = { "PAYCALLBACK_DEV=0", NULL };
    struct h_run r;

    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 0, "expected exit 0, got %d; stderr:\n%s", r.status, r.err);
    assert_contains(r.err, "development mode", "stderr");
    h_run_free(&r);
}
END_TEST

/* ---- --check-config ------------------------------------------------------ */

START_TEST(check_config_passes_while_mysql_and_redis_answer)
{
    static const char *const args[] = { "--check-config", NULL };
    struct h_run r;

    h_run(args, NULL, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 0, "expected exit 0, got %d; stderr:\n%s", r.status, r.err);
    assert_contains(r.out, "schema present", "stdout");
    assert_contains(r.out, "redis", "stdout");
    assert_contains(r.out, "is valid", "stdout");
    h_run_free(&r);
}
END_TEST

START_TEST(check_config_fails_when_mysql_port_is_closed)
{
    static const char *const args[] = { "--check-config", NULL };
    char env0[64];
    const char *env[] = { env0, NULL };
    struct h_run r;

    snprintf(env0, sizeof env0, "PAYCALLBACK_MYSQL_PORT=%d", closed_port());
    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 1, "expected exit 1, got %d; stderr:\n%s", r.status, r.err);
    assert_contains(r.err, "mysql 127.0.0.1:", "stderr");
    assert_contains(r.err, "cannot connect", "stderr");
    ck_assert_msg(strstr(r.out, "is valid") == NULL, "a failed check must not say valid:\n%s",
                  r.out);
    h_run_free(&r);
}
END_TEST

START_TEST(check_config_fails_with_wrong_mysql_password)
{
    static const char *const args[] = { "--check-config", NULL };
    static const char *const env[] = { "PAYCALLBACK_MYSQL_PASSWORD=not-the-password", NULL };
    struct h_run r;

    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_int_eq(1, r.status);
    assert_contains(r.err, "Access denied", "stderr");
    h_run_free(&r);
}
END_TEST

START_TEST(check_config_fails_for_a_database_it_cannot_use)
{
    static const char *const args[] = { "--check-config", NULL };
    static const char *const env[] = { "PAYCALLBACK_MYSQL_DATABASE=no_such_database", NULL };
    struct h_run r;

    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_int_eq(1, r.status);
    assert_contains(r.err, "no_such_database", "stderr");
    h_run_free(&r);
}
END_TEST

START_TEST(check_config_only_warns_when_redis_is_down)
{
    static const char *const args[] = { "--check-config", NULL };
    char env0[64];
    const char *env[] = { env0, NULL };
    struct h_run r;

    snprintf(env0, sizeof env0, "PAYCALLBACK_REDIS_PORT=%d", closed_port());
    h_run(args, env, RUN_TIMEOUT_MS, &r);
    ck_assert_msg(r.status == 0, "expected exit 0, got %d; stderr:\n%s", r.status, r.err);
    assert_contains(r.err, "warning: redis", "stderr");
    assert_contains(r.err, "degraded", "stderr");
    assert_contains(r.out, "is valid", "stdout");
    h_run_free(&r);
}
END_TEST

START_TEST(check_config_does_not_start_serving)
{
    char port_file[64];
    const char *args[] = { "--check-config", "--port-file", port_file, NULL };
    struct h_run r;

    snprintf(port_file, sizeof port_file, "/tmp/paycallback-never-%d", (int)getpid());
    unlink(port_file);
    h_run(args, NULL, RUN_TIMEOUT_MS, &r);
    ck_assert_int_eq(0, r.status);
    ck_assert_msg(access(port_file, F_OK) != 0, "--check-config wrote a port file");
    ck_assert_msg(strstr(r.err, "listening") == NULL, "--check-config listened:\n%s", r.err);
    h_run_free(&r);
}
END_TEST

/* ---- --check-config loads every gateway key ----------------------------- */

/* A config of gateways only (the rest comes from defaults and the test
 * environment) with an alipay key at key_path and a stripe profile. */
static void gateway_config(char path[64], const char *key_path)
{
    char text[1024];

    snprintf(
        text, sizeof text,
        "{\"gateways\": ["
        "{\"name\": \"alipay\", \"kind\": \"alipay\", \"app_id\": \"2021000000000001\","
        " \"public_key_file\": \"%s\"},"
        "{\"name\": \"stripe\", \"kind\": \"stripe\", \"secret_env\": \"TEST_STRIPE_SECRET\"}]}",
        key_path);
    temp_config(path, text);
}

START_TEST(check_config_loads_every_gateway_key)
{
    static const char *const env[] = { "TEST_STRIPE_SECRET=whsec_test", NULL };
    const char *args[] = { "-c", NULL, "--check-config", NULL };
    char key_path[64], path[64];
    struct testkey *k = testkey_create();
    struct h_run r;

    temp_config(key_path, "");
    testkey_write_public(k, key_path);
    gateway_config(path, key_path);
    args[1] = path;
    h_run(args, env, RUN_TIMEOUT_MS, &r);
    unlink(path);
    unlink(key_path);
    testkey_destroy(k);
    ck_assert_msg(r.status == 0, "expected exit 0, got %d; stderr:\n%s", r.status, r.err);
    assert_contains(r.out, "gateway alipay (alipay): keys ok", "stdout");
    assert_contains(r.out, "gateway stripe (stripe): keys ok", "stdout");
    h_run_free(&r);
}
END_TEST

START_TEST(check_config_fails_closed_on_a_missing_gateway_key)
{
    static const char *const env[] = { "TEST_STRIPE_SECRET=whsec_test", NULL };
    const char *args[] = { "-c", NULL, "--check-config", NULL };
    char path[64];
    struct h_run r;

    gateway_config(path, "/nonexistent/alipay_public.pem");
    args[1] = path;
    h_run(args, env, RUN_TIMEOUT_MS, &r);
    unlink(path);
    ck_assert_int_eq(2, r.status);
    assert_contains(r.err, "gateway alipay: key 0: cannot open public key file", "stderr");
    ck_assert_msg(strstr(r.out, "is valid") == NULL, "a failed check must not say valid");
    h_run_free(&r);
}
END_TEST

START_TEST(check_config_fails_closed_on_an_unset_gateway_secret)
{
    const char *args[] = { "-c", NULL, "--check-config", NULL };
    char key_path[64], path[64];
    struct testkey *k = testkey_create();
    struct h_run r;

    temp_config(key_path, "");
    testkey_write_public(k, key_path);
    gateway_config(path, key_path);
    args[1] = path;
    h_run(args, NULL, RUN_TIMEOUT_MS, &r);
    unlink(path);
    unlink(key_path);
    testkey_destroy(k);
    ck_assert_int_eq(2, r.status);
    assert_contains(r.err, "gateway stripe: TEST_STRIPE_SECRET is not set", "stderr");
    h_run_free(&r);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc;

    tc = tcase_create("help and version");
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, help_exits_0_and_lists_flags_and_environment_names);
    tcase_add_test(tc, json_log_format_writes_each_line_as_one_object);
    tcase_add_test(tc, short_help_is_the_same_as_long);
    tcase_add_test(tc, version_prints_name_and_version);
    tcase_add_test(tc, unknown_flag_exits_2_with_usage);
    tcase_add_test(tc, stray_argument_exits_2_naming_it);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad configuration exits 2");
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_loop_test(tc, bad_configuration_exits_2_with_the_reason, 0,
                        (int)(sizeof bad_configs / sizeof bad_configs[0]));
    tcase_add_test(tc, bad_configuration_fails_check_config_the_same_way);
    suite_add_tcase(s, tc);

    tc = tcase_create("fail closed on the secret and the keys");
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, start_is_refused_with_the_shipped_secret_outside_development);
    tcase_add_test(tc, start_is_refused_with_an_empty_secret_outside_development);
    tcase_add_test(tc, serving_is_refused_too_not_only_the_check);
    tcase_add_test(tc, a_real_secret_starts_without_the_dev_switch);
    tcase_add_test(tc, start_is_refused_without_an_operator_key_outside_development);
    tcase_add_test(tc, start_is_refused_with_the_development_operator_key);
    tcase_add_test(tc, the_dev_flag_allows_the_shipped_secret);
    suite_add_tcase(s, tc);

    tc = tcase_create("check-config reaches mysql and redis");
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, check_config_passes_while_mysql_and_redis_answer);
    tcase_add_test(tc, check_config_fails_when_mysql_port_is_closed);
    tcase_add_test(tc, check_config_fails_with_wrong_mysql_password);
    tcase_add_test(tc, check_config_fails_for_a_database_it_cannot_use);
    tcase_add_test(tc, check_config_only_warns_when_redis_is_down);
    tcase_add_test(tc, check_config_does_not_start_serving);
    suite_add_tcase(s, tc);

    tc = tcase_create("check-config loads gateway keys");
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, check_config_loads_every_gateway_key);
    tcase_add_test(tc, check_config_fails_closed_on_a_missing_gateway_key);
    tcase_add_test(tc, check_config_fails_closed_on_an_unset_gateway_secret);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(cli_suite, NULL, NULL);
