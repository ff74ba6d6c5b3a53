/* check_reload.c - SIGHUP against the real binary: a new callback secret
 * (with the old one as previous_secret) and new operator keys apply to the
 * requests that start afterwards; a request already in flight keeps the
 * secrets it started with; a file that does not load is refused whole and
 * the running secrets stay; a key that needs a restart is named in a
 * warning and keeps its running value. The secrets live in the file: the
 * environment is the one the service started with. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 90
#define RELOAD_WAIT_MS 10000
#define SECRET_A "reload-secret-a-6f1c0e"
#define SECRET_B "reload-secret-b-93d2a7"
#define SECRET_C "reload-secret-c-0b8e44"
#define KEY_1 "reload-ops-key-1-7d3a9c"
#define KEY_2 "reload-ops-key-2-e41b06"
#define OK_SERIES "paycallback_config_reloads_total{result=\"ok\"}"
#define FAILED_SERIES "paycallback_config_reloads_total{result=\"failed\"}"
#define LAST_OK_SERIES "paycallback_config_last_reload_successful"
#define IN_FLIGHT_SERIES "paycallback_http_requests_in_flight"

static char cfg_path[H_TEMP_PATH_MAX];

/* Replaces the configuration file in one rename, as an editor or a
 * configuration manager would. */
static void write_config(const char *text)
{
    char tmp[H_TEMP_PATH_MAX + 8];
    FILE *f;

    snprintf(tmp, sizeof tmp, "%s.new", cfg_path);
    f = fopen(tmp, "w");
    ck_assert_msg(f != NULL, "fopen %s: %s", tmp, strerror(errno));
    ck_assert_int_eq((int)strlen(text), (int)fwrite(text, 1, strlen(text), f));
    ck_assert_int_eq(0, fclose(f));
    ck_assert_int_eq(0, rename(tmp, cfg_path));
}

/* A configuration with the given callback secrets and one operator key
 * besides the development key the harness reads metrics with. */
static void write_secrets(const char *secret, const char *previous, const char *key_name,
                          const char *key, int workers)
{
    char text[1024];

    snprintf(text, sizeof text,
             "{\"workers\": %d,"
             " \"callback\": {\"secret\": \"%s\", \"previous_secret\": \"%s\"},"
             " \"auth\": {\"keys\": [{\"name\": \"dev\", \"key\": \"" H_OPERATOR_KEY "\"},"
             " {\"name\": \"%s\", \"key\": \"%s\"}]}}",
             workers, secret, previous, key_name, key);
    write_config(text);
}

/* A server of its own for each test (a checked fixture, run in the test's
 * process): a reload changes it for good. */
static void reload_server_up(void)
{
    h_fixture_clean();
    h_temp_file(cfg_path, "{}");
    write_secrets(SECRET_A, "", "ops1", KEY_1, 16);
    h_fixture_server_up_config(cfg_path, NULL);
}

static void reload_server_down(void)
{
    char tmp[H_TEMP_PATH_MAX + 8];

    h_fixture_server_down();
    unlink(cfg_path);
    snprintf(tmp, sizeof tmp, "%s.new", cfg_path);
    unlink(tmp);
}

/* Waits until the series counts want. */
static void await_series(const char *series, long long want)
{
    struct h_deadline d = h_deadline_in(RELOAD_WAIT_MS);

    while (h_metric(series) < want)
        ck_assert_msg(h_deadline_wait(&d), "%s did not reach %lld within %d ms", series, want,
                      RELOAD_WAIT_MS);
}

/* Sends SIGHUP and waits until the series counts want. */
static void hup_and_await(const char *series, long long want)
{
    ck_assert_int_eq(0, kill(h_server_pid(h_srv), SIGHUP));
    await_series(series, want);
}

/* Posts a callback for order_no signed with secret; its status. */
static int callback_with(const char *secret, const char *order_no, const char *pay_no)
{
    char body[256];
    size_t len = h_callback_body(body, sizeof body, order_no, pay_no, "899.00");
    struct h_resp r;
    int status;

    h_post_callback(h_port(), secret, (long long)time(NULL), body, len, &r);
    status = r.status;
    h_resp_free(&r);
    return status;
}

/* GET /order/{order_no} with the bearer key; its status. */
static int read_order_with(const char *key, const char *order_no)
{
    char path[96];
    struct h_resp r;
    int status;

    snprintf(path, sizeof path, "/order/%s", order_no);
    h_http_key(h_port(), key, "GET", path, NULL, NULL, 0, &r);
    status = r.status;
    h_resp_free(&r);
    return status;
}

START_TEST(sighup_rotates_the_callback_secret_and_keeps_the_previous_one)
{
    h_db_insert_order("RL1", "u1", "899.00", 1);
    h_db_insert_order("RL2", "u1", "899.00", 1);
    h_db_insert_order("RL3", "u1", "899.00", 1);
    ck_assert_int_eq(401, callback_with(SECRET_B, "RL1", "PAY-RL1")); /* not yet */
    ck_assert_int_eq(1, (int)h_metric(LAST_OK_SERIES));

    write_secrets(SECRET_B, SECRET_A, "ops1", KEY_1, 16);
    hup_and_await(OK_SERIES, 1);

    ck_assert_int_eq(200, callback_with(SECRET_B, "RL1", "PAY-RL1")); /* the new one */
    ck_assert_int_eq(200, callback_with(SECRET_A, "RL2", "PAY-RL2")); /* the previous one */
    ck_assert_int_eq(401, callback_with(SECRET_C, "RL3", "PAY-RL3")); /* neither */
    ck_assert_int_eq(1, (int)h_order_status("RL3"));
    ck_assert_int_eq(2, (int)h_payment_records());

    write_secrets(SECRET_B, "", "ops1", KEY_1, 16); /* rotation done */
    hup_and_await(OK_SERIES, 2);
    ck_assert_int_eq(401, callback_with(SECRET_A, "RL3", "PAY-RL3"));
    ck_assert_int_eq(1, (int)h_order_status("RL3"));
    ck_assert_int_eq(0, (int)h_metric(FAILED_SERIES));
}
END_TEST

START_TEST(sighup_replaces_the_operator_keys)
{
    const char *logged[] = { "path=\"/order/RL1\"", "status=200", "caller=ops2", NULL };
    const char *leak[] = { "level=", KEY_2, NULL };
    char *line;

    h_db_insert_order("RL1", "u1", "899.00", 1);
    ck_assert_int_eq(200, read_order_with(KEY_1, "RL1"));
    ck_assert_int_eq(401, read_order_with(KEY_2, "RL1"));

    write_secrets(SECRET_A, "", "ops2", KEY_2, 16);
    hup_and_await(OK_SERIES, 1);

    ck_assert_int_eq(200, read_order_with(KEY_2, "RL1"));
    ck_assert_int_eq(401, read_order_with(KEY_1, "RL1")); /* revoked */
    line = h_log_find(logged, 5000);
    ck_assert_msg(line != NULL, "no request line naming caller=ops2");
    free(line);
    line = h_log_find(leak, 0);
    ck_assert_msg(line == NULL, "the new key is in the log: %s", line);
}
END_TEST

START_TEST(a_file_that_does_not_load_is_refused_and_the_running_secrets_stay)
{
    const char *refused[] = { "reload refused", NULL };
    char *line;

    h_db_insert_order("RL1", "u1", "899.00", 1);
    h_db_insert_order("RL2", "u1", "899.00", 1);
    write_config("{\"callback\": {\"secret\": \"" SECRET_B "\"}, \"callbak\": {}}");
    hup_and_await(FAILED_SERIES, 1);
    ck_assert_int_eq(0, (int)h_metric(LAST_OK_SERIES));
    ck_assert_int_eq(0, (int)h_metric(OK_SERIES));
    line = h_log_find(refused, 5000);
    ck_assert_msg(line != NULL && strstr(line, "callbak") != NULL,
                  "the refusal does not name the unknown key: %s", line ? line : "(none)");
    free(line);
    ck_assert_int_eq(401, callback_with(SECRET_B, "RL1", "PAY-RL1")); /* nothing applied */
    ck_assert_int_eq(200, callback_with(SECRET_A, "RL1", "PAY-RL1"));
    ck_assert_int_eq(200, read_order_with(KEY_1, "RL1"));

    write_secrets(SECRET_B, "", "ops1", KEY_1, 16); /* mended */
    hup_and_await(OK_SERIES, 1);
    ck_assert_int_eq(1, (int)h_metric(LAST_OK_SERIES));
    ck_assert_int_eq(200, callback_with(SECRET_B, "RL2", "PAY-RL2"));
}
END_TEST

START_TEST(a_key_that_needs_a_restart_is_named_and_keeps_its_value)
{
    const char *warned[] = { "keep their running value until a restart", "keys=workers", NULL };
    const char *listening[] = { "msg=\"listening\"", "workers=16", NULL };
    char *line;

    write_secrets(SECRET_B, SECRET_A, "ops1", KEY_1, 4);
    hup_and_await(OK_SERIES, 1);
    line = h_log_find(warned, 5000);
    ck_assert_msg(line != NULL, "no warning naming workers");
    free(line);
    line = h_log_find(listening, 0);
    ck_assert_msg(line != NULL, "the service did not start with 16 workers");
    free(line);
    h_db_insert_order("RL1", "u1", "899.00", 1);
    ck_assert_int_eq(200, callback_with(SECRET_B, "RL1", "PAY-RL1")); /* secrets applied */
}
END_TEST

/* webhook.url needs a restart, so a file that drops the webhook section
 * would leave the running relay without a secret to sign with: refused. */
START_TEST(a_reload_never_leaves_the_running_webhook_without_its_secret)
{
    const char *refused[] = { "reload refused", "webhook.secret is empty", NULL };
    char *line;

    h_fixture_server_down();
    write_config("{\"callback\": {\"secret\": \"" SECRET_A "\"},"
                 " \"webhook\": {\"url\": \"http://127.0.0.1:9/hook\","
                 " \"secret\": \"whsec_+Waf0cCHwFHfvWZpGczYmsM7rKiUFh0DeB43KHaZ4sg=\"},"
                 " \"auth\": {\"keys\": [{\"name\": \"dev\", \"key\": \"" H_OPERATOR_KEY "\"}]}}");
    h_fixture_server_up_config(cfg_path, NULL);
    write_secrets(SECRET_B, "", "ops1", KEY_1, 16); /* no webhook section */
    hup_and_await(FAILED_SERIES, 1);
    line = h_log_find(refused, 5000);
    ck_assert_msg(line != NULL, "no refusal naming webhook.secret");
    free(line);
    ck_assert_int_eq(0, (int)h_metric(OK_SERIES));
    h_db_insert_order("RL1", "u1", "899.00", 1);
    ck_assert_int_eq(200, callback_with(SECRET_A, "RL1", "PAY-RL1")); /* A still rules */
}
END_TEST

/* The request's headers arrive before the reload and its body after: it
 * is checked against the secret it started with, A, although A is gone
 * for every request that starts afterwards. */
START_TEST(a_request_in_flight_keeps_the_secrets_it_started_with)
{
    char body[256], sig[H_SIG_HEX_LEN + 1], ts[24], head[512], reply[4096];
    size_t len, half;
    int fd, eof = 0;

    h_db_insert_order("RL1", "u1", "899.00", 1);
    h_db_insert_order("RL2", "u1", "899.00", 1);
    len = h_callback_body(body, sizeof body, "RL1", "PAY-RL1", "899.00");
    snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
    h_sign(SECRET_A, ts, body, len, sig);
    snprintf(head, sizeof head,
             "POST /pay/callback HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
             "X-Timestamp: %s\r\nX-Signature: %s\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n",
             ts, sig, len);
    half = len / 2;
    fd = h_raw_connect(h_port(), NULL, 20000);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq((int)strlen(head), (int)send(fd, head, strlen(head), 0));
    ck_assert_int_eq((int)half, (int)send(fd, body, half, 0));
    await_series(IN_FLIGHT_SERIES, 2); /* this request, and the scrape that reads it */

    write_secrets(SECRET_B, "", "ops1", KEY_1, 16); /* A is dropped */
    hup_and_await(OK_SERIES, 1);
    ck_assert_int_eq(401, callback_with(SECRET_A, "RL2", "PAY-RL2")); /* for new requests */

    ck_assert_int_eq((int)(len - half), (int)send(fd, body + half, len - half, 0));
    h_raw_read_all(fd, reply, sizeof reply, &eof);
    close(fd);
    ck_assert_msg(strncmp(reply, "HTTP/1.1 200", 12) == 0, "the request in flight got: %.80s",
                  reply);
    ck_assert_int_eq(2, (int)h_order_status("RL1"));
    ck_assert_int_eq(1, (int)h_order_status("RL2"));
}
END_TEST

static Suite *reload_suite(void)
{
    Suite *s = suite_create("reload");
    TCase *tc = tcase_create("sighup");

    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_checked_fixture(tc, reload_server_up, reload_server_down);
    tcase_add_test(tc, sighup_rotates_the_callback_secret_and_keeps_the_previous_one);
    tcase_add_test(tc, sighup_replaces_the_operator_keys);
    tcase_add_test(tc, a_file_that_does_not_load_is_refused_and_the_running_secrets_stay);
    tcase_add_test(tc, a_key_that_needs_a_restart_is_named_and_keeps_its_value);
    tcase_add_test(tc, a_request_in_flight_keeps_the_secrets_it_started_with);
    tcase_add_test(tc, a_reload_never_leaves_the_running_webhook_without_its_secret);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(reload_suite, NULL, NULL);
