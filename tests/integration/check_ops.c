/* check_ops.c - what operators see, against the real binary, MariaDB and
 * Redis: /metrics in the Prometheus text format (checked by promtool on a
 * real scrape, with the series that traffic must have moved), /readyz with
 * MySQL up, down and back, X-Request-Id accepted or generated and echoed,
 * one log line per request, alert lines carrying the ids involved, and the
 * log level. Each TCase runs its own server. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define PRICE "899.00"
#define TC_TIMEOUT_S 60
#define OUTAGE_TIMEOUT_S 120
#define LOG_WAIT_MS 3000
#define ABSENT_WAIT_MS 500 /* how long a line that must not appear is awaited */
#define READY_WAIT_MS 20000
#define VALUE_MAX 64
#define ID_MAX 65

static void warn_server_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_LOG_LEVEL=warn", NULL };

    h_fixture_server_up_env(env);
}

/* A server with one gateway profile: the gateway counters are exported
 * only where a gateway is configured, and the dashboard and the alert
 * rules query them. */
static char gateway_config[H_TEMP_PATH_MAX];

static void gateway_server_up(void)
{
    static const char *const env[] = { "TEST_STRIPE_SECRET=whsec_integration_test_secret", NULL };

    h_temp_file(gateway_config, "{\"gateways\": [{\"name\": \"stripe\", \"kind\": "
                                "\"stripe\", \"secret_env\": \"TEST_STRIPE_SECRET\"}]}");
    h_fixture_server_up_config(gateway_config, env);
    unlink(gateway_config);
}

/* An operator's session setting that a plain server accepts. */
static void init_command_server_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_MYSQL_INIT_COMMAND=SET SESSION "
                                       "wsrep_sync_wait = 1",
                                       NULL };

    h_fixture_server_up_env(env);
}

/* Unchecked teardown of the outage TCase: MySQL is up again whatever the
 * test did, or every later suite fails for the wrong reason. */
/* An identifier no earlier run has logged: the suite log is appended to. */
static void unique_id(char out[ID_MAX], const char *prefix)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(out, ID_MAX, "%s-%d-%lld%09ld", prefix, (int)getpid(), (long long)ts.tv_sec,
             ts.tv_nsec);
}

/* Asserts that some log line holds every string of parts; returns it
 * (free it). */
static char *assert_logged(const char *const *parts)
{
    char *line = h_log_find(parts, LOG_WAIT_MS);
    char want[512] = "";

    for (size_t i = 0; parts[i] != NULL; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s[%s]", i ? " " : "", parts[i]);
    ck_assert_msg(line != NULL, "no line with %s in var/test-logs/check_ops.log", want);
    return line;
}

/* ---- metrics ------------------------------------------------------------- */

/* The value of the sample "series value" in text into out, or NULL. */
static const char *value_of(const char *text, const char *series, char out[VALUE_MAX])
{
    size_t n = strlen(series);

    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *eol = strchr(line, '\n');
        size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);

        if (len > n + 1 && strncmp(line, series, n) == 0 && line[n] == ' ') {
            size_t vlen = len - n - 1 < VALUE_MAX - 1 ? len - n - 1 : VALUE_MAX - 1;
            memcpy(out, line + n + 1, vlen);
            out[vlen] = '\0';
            return out;
        }
        line = eol != NULL ? eol + 1 : NULL;
    }
    return NULL;
}

#define assert_sample(text, series, want)                                                     \
    do {                                                                                      \
        char v_[VALUE_MAX];                                                                   \
        const char *got_ = value_of((text), (series), v_);                                    \
        ck_assert_msg(got_ != NULL, "no sample %s in the scrape", (series));                  \
        ck_assert_msg(strcmp((want), got_) == 0, "%s: expected %s, got %s", (series), (want), \
                      got_);                                                                  \
    } while (0)

#define CB_REQ(code) \
    "paycallback_http_requests_total{route=\"/pay/callback\",method=\"POST\",code=\"" code "\"}"

/* The promtool binary on PATH, into out. 0, or -1 when there is none. */
static int find_promtool(char out[PATH_MAX])
{
    const char *path = getenv("PATH");
    char dirs[4096];
    char *save = NULL;

    snprintf(dirs, sizeof dirs, "%s:/usr/bin:/usr/local/bin", path != NULL ? path : "");
    for (char *d = strtok_r(dirs, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, PATH_MAX, "%s/promtool", d);
        if (access(out, X_OK) == 0)
            return 0;
    }
    return -1;
}

/* Writes text to a temporary file and runs the shell command fmt with
 * that file's path as its one %s. Returns the command's exit status; its
 * findings go to the test's stderr. */
static int run_on_file(const char *fmt, const char *text, size_t len)
{
    char file[] = "/tmp/paycallback-metrics-XXXXXX", cmd[PATH_MAX * 4];
    int fd, st;

    ck_assert_msg((fd = mkstemp(file)) >= 0, "mkstemp: %s", strerror(errno));
    ck_assert_int_eq((ssize_t)len, write(fd, text, len));
    close(fd);
    snprintf(cmd, sizeof cmd, fmt, file);
    st = system(cmd);
    unlink(file);
    ck_assert_msg(st != -1 && WIFEXITED(st), "cannot run %s", cmd);
    return WEXITSTATUS(st);
}

/* Runs "promtool check metrics" on text. Returns its exit status. */
static int promtool_check(const char *text, size_t len)
{
    char promtool[PATH_MAX], fmt[PATH_MAX + 64];

    ck_assert_msg(find_promtool(promtool) == 0,
                  "promtool not found on PATH: install the Debian package prometheus "
                  "(scripts/deps.sh does)");
    snprintf(fmt, sizeof fmt, "'%s' check metrics < '%%s' >&2", promtool);
    return run_on_file(fmt, text, len);
}

/* Runs scripts/check-metric-names.py on the shipped dashboard and alert
 * rules with text as the scrape. Returns its exit status. */
static int metric_names_check(const char *text, size_t len)
{
    const char *root = getenv("PAYCALLBACK_ROOT");
    char fmt[PATH_MAX * 3];

    root = root != NULL && root[0] != '\0' ? root : ".";
    snprintf(fmt, sizeof fmt,
             "python3 '%s/scripts/check-metric-names.py' --metrics '%%s' "
             "'%s/deploy/grafana/paycallback.json' '%s/deploy/prometheus/alerts.yml' >&2",
             root, root, root);
    return run_on_file(fmt, text, len);
}

/* Scrapes /metrics into r and asserts the reply is Prometheus text. */
static void scrape(struct h_resp *r)
{
    const char *ct;

    h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, r);
    h_assert_status(r, 200);
    ct = h_resp_header(r, "Content-Type");
    ck_assert_msg(ct != NULL && strncmp(ct, "text/plain; version=0.0.4", 25) == 0,
                  "expected Content-Type text/plain; version=0.0.4, got %s", ct ? ct : "(none)");
}

/* One of each: a payment, its replay, a second charge (REFUND_REQUIRED),
 * an amount mismatch, a pay_no conflict, a body over the cap, an unknown
 * path. */
static void drive_traffic(void)
{
    static const char too_large[] = "POST /pay/callback HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    "Connection: close\r\nContent-Length: 1000000000\r\n\r\n";
    struct h_resp r;

    h_db_insert_order("OM1", "u1", PRICE, 1);
    h_db_insert_order("OM2", "u2", PRICE, 1);
    h_callback(h_port(), "OM1", "PM1", PRICE, &r);
    h_assert_str(&r, "result", "PAID");
    h_resp_free(&r);
    h_callback(h_port(), "OM1", "PM1", PRICE, &r);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    h_callback(h_port(), "OM1", "PM2", PRICE, &r);
    h_assert_str(&r, "result", "REFUND_REQUIRED");
    h_resp_free(&r);
    h_callback(h_port(), "OM2", "PM3", "1.00", &r);
    h_assert_error(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    h_callback(h_port(), "OM2", "PM1", PRICE, &r);
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    h_http_raw(h_port(), too_large, strlen(too_large), &r);
    h_assert_error(&r, 413, "PAYLOAD_TOO_LARGE");
    h_resp_free(&r);
    h_http(h_port(), "GET", "/no/such/route", NULL, NULL, 0, &r);
    h_assert_status(&r, 404);
    h_resp_free(&r);
}

START_TEST(scrape_after_traffic_passes_promtool_and_counts_it)
{
    struct h_resp r;

    drive_traffic();
    scrape(&r);
    ck_assert_msg(promtool_check(r.body, r.body_len) == 0,
                  "promtool check metrics failed (its findings are above)");
    assert_sample(r.body, "paycallback_double_payments_total", "1");
    assert_sample(r.body, "paycallback_duplicates_absorbed_total{kind=\"callback_replay\"}", "1");
    assert_sample(r.body, "paycallback_amount_mismatches_total", "1");
    assert_sample(r.body, "paycallback_pay_no_conflicts_total", "1");
    assert_sample(r.body, "paycallback_illegal_transitions_total", "0");
    assert_sample(r.body, CB_REQ("200"), "3");
    assert_sample(r.body, CB_REQ("409"), "1");
    assert_sample(r.body, CB_REQ("422"), "1");
    assert_sample(r.body, CB_REQ("413"), "1"); /* counted on its route */
    assert_sample(
        r.body,
        "paycallback_http_requests_total{route=\"unmatched\",method=\"other\",code=\"404\"}", "1");
    assert_sample(
        r.body,
        "paycallback_http_request_duration_seconds_count{route=\"/pay/callback\",method=\"POST\"}",
        "6");
    assert_sample(
        r.body,
        "paycallback_http_request_duration_seconds_bucket{route=\"/pay/callback\",method=\"POST\",le=\"+Inf\"}",
        "6");
    assert_sample(r.body, "paycallback_redis_degraded", "0");
    h_resp_free(&r);
}
END_TEST

START_TEST(dashboard_and_alert_rules_query_only_exported_metrics)
{
    struct h_resp r;

    drive_traffic();
    scrape(&r);
    ck_assert_msg(metric_names_check(r.body, r.body_len) == 0,
                  "the dashboard or the alert rules name a metric /metrics lacks (above)");
    h_resp_free(&r);
}
END_TEST

START_TEST(build_info_process_and_ready_are_exported)
{
    struct h_resp r;
    char v[VALUE_MAX];

    scrape(&r);
    ck_assert_msg(strstr(r.body, "\npaycallback_build_info{version=\"") != NULL,
                  "no paycallback_build_info");
    ck_assert_msg(strstr(r.body, "commit=\"unknown\"") == NULL, "build_info without a commit");
    assert_sample(r.body, "paycallback_ready", "1"); /* the scrape probed MySQL */
    for (size_t i = 0; i < 5; i++) {
        static const char *const names[] = { "process_resident_memory_bytes", "process_open_fds",
                                             "process_cpu_seconds_total",
                                             "process_start_time_seconds", "process_max_fds" };
        ck_assert_msg(value_of(r.body, names[i], v) != NULL, "no %s", names[i]);
        ck_assert_msg(strtod(v, NULL) > 0 || i == 2, "%s is %s", names[i], v);
    }
    h_resp_free(&r);
}
END_TEST

START_TEST(double_payment_is_a_counter_and_an_alert_line)
{
    char id[ID_MAX], hdr[96], body[256];
    const char *headers[] = { "Content-Type: application/json", NULL, NULL, hdr, NULL };
    const char *parts[] = { "alert=REFUND_REQUIRED", "order_no=OD1", "pay_no=PD2", NULL, NULL };
    char ts[32], sig[H_SIG_HEX_LEN + 1], ts_hdr[64], sig_hdr[96], needle[96];
    char v[VALUE_MAX];
    struct h_resp r;
    size_t len;
    char *line;

    h_db_insert_order("OD1", "u1", PRICE, 1);
    h_callback(h_port(), "OD1", "PD1", PRICE, &r);
    h_resp_free(&r);
    unique_id(id, "dbl");
    snprintf(hdr, sizeof hdr, "X-Request-Id: %s", id);
    len = h_callback_body(body, sizeof body, "OD1", "PD2", PRICE);
    snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
    h_sign(H_SECRET, ts, body, len, sig);
    snprintf(ts_hdr, sizeof ts_hdr, "X-Timestamp: %s", ts);
    snprintf(sig_hdr, sizeof sig_hdr, "X-Signature: %s", sig);
    headers[1] = ts_hdr;
    headers[2] = sig_hdr;
    h_http(h_port(), "POST", "/pay/callback", headers, body, len, &r);
    h_assert_str(&r, "result", "REFUND_REQUIRED");
    h_resp_free(&r);

    snprintf(needle, sizeof needle, "request_id=%s", id);
    parts[3] = needle;
    line = assert_logged(parts);
    ck_assert_msg(strstr(line, "level=warn") != NULL, "alerts are warnings: %s", line);
    free(line);
    scrape(&r);
    ck_assert_msg(value_of(r.body, "paycallback_double_payments_total", v) != NULL &&
                      strcmp(v, "0") != 0,
                  "paycallback_double_payments_total did not move");
    h_resp_free(&r);
}
END_TEST

START_TEST(idle_scrape_passes_promtool_with_a_histogram_per_route)
{
    struct h_resp r;

    scrape(&r);
    ck_assert_msg(promtool_check(r.body, r.body_len) == 0, "promtool check metrics failed");
    assert_sample(
        r.body,
        "paycallback_http_request_duration_seconds_count{route=\"/healthz\",method=\"GET\"}", "0");
    assert_sample(
        r.body, "paycallback_http_request_duration_seconds_count{route=\"/readyz\",method=\"GET\"}",
        "0");
    assert_sample(
        r.body,
        "paycallback_http_request_duration_seconds_count{route=\"/pay/callback\",method=\"POST\"}",
        "0");
    h_resp_free(&r);
}
END_TEST

/* ---- readiness ----------------------------------------------------------- */

START_TEST(readyz_is_200_with_mysql_and_redis_up)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_json(&r);
    h_assert_str(&r, "status", "ready");
    h_assert_str(&r, "mysql", "up");
    h_assert_str(&r, "redis", "up");
    h_resp_free(&r);
}
END_TEST

/* Polls /readyz until it answers want, for at most READY_WAIT_MS; r holds
 * the last reply. */
static void await_readyz(int want, struct h_resp *r)
{
    struct h_deadline d = h_deadline_in(READY_WAIT_MS);

    for (;;) {
        h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, r);
        if (r->status == want || !h_deadline_wait(&d))
            return;
        h_resp_free(r);
    }
}

START_TEST(readyz_is_503_while_mysql_is_down_and_200_once_it_is_back)
{
    struct h_resp r;
    const char *retry;
    char *end;
    struct timespec t0, t1;

    h_services("stop-mysql");
    /* Readiness is what the background prober last found: it turns 503
     * within a probe interval, and each answer is immediate. */
    await_readyz(503, &r);
    h_resp_free(&r);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_assert_str(&r, "status", "unavailable");
    h_assert_str(&r, "mysql", "down");
    h_assert_str(&r, "redis", "up");
    retry = h_resp_header(&r, "Retry-After");
    ck_assert_msg(retry != NULL && strtol(retry, &end, 10) > 0 && *end == '\0',
                  "expected a positive Retry-After, got %s", retry ? retry : "(none)");
    ck_assert_msg(t1.tv_sec - t0.tv_sec < 5, "readyz took %ld s with MySQL down",
                  (long)(t1.tv_sec - t0.tv_sec));
    h_resp_free(&r);

    /* Liveness does not depend on MySQL: the process still serves. */
    h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);

    h_services("start-mysql");
    await_readyz(200, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "ready");
    h_assert_str(&r, "mysql", "up");
    h_resp_free(&r);
}
END_TEST

/* ---- mysql.init_command -------------------------------------------------- */

START_TEST(init_command_runs_on_each_session_and_the_service_is_ready)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "mysql", "up");
    h_resp_free(&r);
    /* A whole transaction runs on such a session: an unknown order is a 404. */
    h_callback(h_port(), "NOPE-INIT", "PAY-INIT", "1.00", &r);
    h_assert_error(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
}
END_TEST

/* A session setting MySQL refuses fails every connection: the service
 * refuses to start and names the error, rather than serve only 503s. */
START_TEST(a_failing_init_command_stops_the_service_at_start)
{
    static const char *const args[] = { NULL };
    static const char *const env[] = { "PAYCALLBACK_MYSQL_INIT_COMMAND=SET SESSION "
                                       "sql_mode = 'NO_SUCH_MODE'",
                                       NULL };
    struct h_run run;

    h_run(args, env, 15000, &run);
    ck_assert_int_eq(1, run.status);
    ck_assert_msg(strstr(run.err, "NO_SUCH_MODE") != NULL, "stderr does not name the error: %s",
                  run.err);
    h_run_free(&run);
}
END_TEST

/* ---- request ids and request lines --------------------------------------- */

START_TEST(client_request_id_is_echoed_and_logged_with_the_request)
{
    char id[ID_MAX], hdr[96], needle[96];
    const char *headers[] = { hdr, NULL };
    const char *parts[] = { "msg=\"request\"",
                            "method=GET",
                            "path=\"/healthz\"",
                            "status=200",
                            "duration_us=",
                            needle,
                            NULL };
    struct h_resp r;

    unique_id(id, "abc-123");
    snprintf(hdr, sizeof hdr, "X-Request-Id: %s", id);
    snprintf(needle, sizeof needle, "request_id=%s", id);
    h_http(h_port(), "GET", "/healthz", headers, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(h_resp_header(&r, "X-Request-Id") != NULL, "no X-Request-Id in the reply");
    ck_assert_str_eq(id, h_resp_header(&r, "X-Request-Id"));
    h_resp_free(&r);
    free(assert_logged(parts));
}
END_TEST

START_TEST(plain_abc_123_is_echoed_as_given)
{
    static const char *const headers[] = { "X-Request-Id: abc-123", NULL };
    struct h_resp r;

    h_http(h_port(), "GET", "/healthz", headers, NULL, 0, &r);
    ck_assert_str_eq("abc-123", h_resp_header(&r, "X-Request-Id"));
    h_resp_free(&r);
}
END_TEST

/* 1 when s is exactly 16 lowercase hex digits. */
static int is_hex16(const char *s)
{
    size_t i;

    for (i = 0; s != NULL && s[i] != '\0'; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s != NULL && i == 16;
}

static const char *const bad_request_ids[] = {
    NULL, /* none at all */
    "X-Request-Id: ",
    "X-Request-Id: has space",
    "X-Request-Id: quote\"d",
    "X-Request-Id: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", /* 65 */
    "X-Request-Id: id=forged level=error",
};

START_TEST(missing_or_invalid_request_id_is_replaced_by_16_hex)
{
    const char *headers[] = { bad_request_ids[_i], NULL };
    const char *id;
    char needle[64];
    const char *parts[] = { "msg=\"request\"", needle, "path=\"/readyz\"", NULL };
    struct h_resp r;

    h_http(h_port(), "GET", "/readyz", headers, NULL, 0, &r);
    h_assert_status(&r, 200);
    id = h_resp_header(&r, "X-Request-Id");
    ck_assert_msg(is_hex16(id), "%s: expected a generated id of 16 hex digits, got %s",
                  bad_request_ids[_i] ? bad_request_ids[_i] : "(no header)", id ? id : "(none)");
    snprintf(needle, sizeof needle, "request_id=%s", id);
    h_resp_free(&r);
    free(assert_logged(parts));
}
END_TEST

START_TEST(generated_ids_differ_between_requests)
{
    struct h_resp a, b;

    h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &a);
    h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &b);
    ck_assert_msg(is_hex16(h_resp_header(&a, "X-Request-Id")), "no generated id");
    ck_assert_str_ne(h_resp_header(&a, "X-Request-Id"), h_resp_header(&b, "X-Request-Id"));
    h_resp_free(&a);
    h_resp_free(&b);
}
END_TEST

START_TEST(error_replies_echo_the_id_and_log_their_code)
{
    char id[ID_MAX], hdr[96], needle[96];
    const char *headers[] = { hdr, NULL };
    const char *parts[] = { needle, "status=405", "code=METHOD_NOT_ALLOWED", "method=DELETE",
                            NULL };
    struct h_resp r;

    unique_id(id, "err");
    snprintf(hdr, sizeof hdr, "X-Request-Id: %s", id);
    snprintf(needle, sizeof needle, "request_id=%s", id);
    h_http(h_port(), "DELETE", "/metrics", headers, NULL, 0, &r);
    h_assert_error(&r, 405, "METHOD_NOT_ALLOWED");
    ck_assert_str_eq(id, h_resp_header(&r, "X-Request-Id"));
    h_resp_free(&r);
    free(assert_logged(parts));
}
END_TEST

START_TEST(a_path_cannot_forge_log_fields)
{
    char id[ID_MAX], hdr[96], needle[96];
    const char *headers[] = { hdr, NULL };
    const char *parts[] = { needle, NULL };
    struct h_resp r;
    char *line;

    unique_id(id, "forge");
    snprintf(hdr, sizeof hdr, "X-Request-Id: %s", id);
    snprintf(needle, sizeof needle, "request_id=%s", id);
    h_http(h_port(), "GET", "/x%22%20level=error%20msg=%22forged", headers, NULL, 0, &r);
    h_assert_status(&r, 404);
    h_resp_free(&r);
    /* MHD decodes the path to  /x" level=error msg="forged  and the log
     * line must keep all of it inside one quoted value. */
    line = assert_logged(parts);
    ck_assert_msg(strstr(line, "path=\"/x_ level=error msg=_forged\" ") != NULL,
                  "the path broke out of its quotes: %s", line);
    ck_assert_msg(strncmp(strstr(line, "level="), "level=info ", 11) == 0, "%s", line);
    free(line);
}
END_TEST

/* A malformed row is refused (500), not read as a silent 0, and the one
 * log line of the failure carries the request id and the detail. */
START_TEST(malformed_row_is_a_500_logged_once_with_the_request_id)
{
    char id[ID_MAX], hdr[96], needle[96];
    const char *headers[] = { hdr, NULL };
    const char *parts[] = { "level=error",    "msg=\"mysql failure\"",
                            "op=orders_view", "malformed",
                            needle,           NULL };
    struct h_resp r;

    h_db_insert_order("OM1", "u1", PRICE, 1);
    h_db_exec("UPDATE orders SET status = 7 WHERE order_no = 'OM1'");
    unique_id(id, "malformed");
    snprintf(hdr, sizeof hdr, "X-Request-Id: %s", id);
    snprintf(needle, sizeof needle, "request_id=%s", id);
    h_http(h_port(), "GET", "/order/OM1", headers, NULL, 0, &r);
    h_assert_error(&r, 500, "INTERNAL");
    h_resp_free(&r);
    free(assert_logged(parts));
}
END_TEST

/* ---- a Galera node that is not ready -------------------------------------- */

/* Setup and unchecked teardown of the galera TCase: the trigger must not
 * outlive its test, even one that failed half-way. */
static void drop_not_ready_trigger(void)
{
    h_db_exec("DROP TRIGGER IF EXISTS t_node_not_ready");
}

/* A node outside the primary component answers 1047 to every statement;
 * a trigger makes MariaDB answer the insert of the callback that way. The
 * callback is a retryable 503, nothing is written, and the one log line
 * names the errno with the request id. */
START_TEST(galera_node_not_ready_is_a_503_that_writes_nothing)
{
    char id[ID_MAX], hdr[96], body[256], needle[96];
    char ts[32], sig[H_SIG_HEX_LEN + 1], ts_hdr[64], sig_hdr[96];
    const char *headers[] = { "Content-Type: application/json", ts_hdr, sig_hdr, hdr, NULL };
    const char *parts[] = { "level=warn",   "msg=\"mysql failure\"",
                            "op=pay_apply", "errno=1047",
                            needle,         NULL };
    struct h_resp r;
    size_t len;

    h_db_insert_order("OG1", "u1", PRICE, 1);
    h_db_exec("CREATE TRIGGER t_node_not_ready BEFORE INSERT ON payment_record FOR EACH ROW "
              "SIGNAL SQLSTATE '08S01' SET MYSQL_ERRNO = 1047, "
              "MESSAGE_TEXT = 'WSREP has not yet prepared node for application use'");
    unique_id(id, "galera");
    snprintf(hdr, sizeof hdr, "X-Request-Id: %s", id);
    snprintf(needle, sizeof needle, "request_id=%s", id);
    len = h_callback_body(body, sizeof body, "OG1", "PG1", PRICE);
    snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
    h_sign(H_SECRET, ts, body, len, sig);
    snprintf(ts_hdr, sizeof ts_hdr, "X-Timestamp: %s", ts);
    snprintf(sig_hdr, sizeof sig_hdr, "X-Signature: %s", sig);
    h_http(h_port(), "POST", "/pay/callback", headers, body, len, &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_msg(h_resp_header(&r, "Retry-After") != NULL, "a 503 without Retry-After");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = 'OG1'"));
    free(assert_logged(parts));

    drop_not_ready_trigger(); /* the node is ready again: the retry pays */
    h_callback(h_port(), "OG1", "PG1", PRICE, &r);
    h_assert_str(&r, "result", "PAID");
    h_resp_free(&r);
}
END_TEST

/* ---- alerts -------------------------------------------------------------- */

START_TEST(amount_mismatch_is_an_alert_with_order_and_pay_no)
{
    const char *parts[] = { "level=warn",          "msg=\"alert\"", "alert=AMOUNT_MISMATCH",
                            "order_no=OA1",        "pay_no=PA1",    "amount=1.00",
                            "order_amount=899.00", "request_id=",   NULL };
    struct h_resp r;

    h_db_insert_order("OA1", "u1", PRICE, 1);
    h_callback(h_port(), "OA1", "PA1", "1.00", &r);
    h_assert_error(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    free(assert_logged(parts));
}
END_TEST

START_TEST(pay_no_conflict_is_an_alert_with_both_orders)
{
    const char *parts[] = { "alert=PAY_NO_CONFLICT", "pay_no=PC1", "order_no=OC2",
                            "stored_order_no=OC1", NULL };
    struct h_resp r;

    h_db_insert_order("OC1", "u1", PRICE, 1);
    h_db_insert_order("OC2", "u2", PRICE, 1);
    h_callback(h_port(), "OC1", "PC1", PRICE, &r);
    h_resp_free(&r);
    h_callback(h_port(), "OC2", "PC1", PRICE, &r);
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    free(assert_logged(parts));
}
END_TEST

START_TEST(illegal_transition_is_an_alert_and_a_counter)
{
    const char *parts[] = { "alert=ILLEGAL_TRANSITION", "order_no=OI1", "request_id=", NULL };
    char v[VALUE_MAX];
    struct h_resp r;

    h_db_insert_order("OI1", "u1", PRICE, 1); /* WAIT_PAY cannot ship */
    h_http(h_port(), "POST", "/order/OI1/ship", NULL, NULL, 0, &r);
    h_assert_error(&r, 409, "ILLEGAL_TRANSITION");
    h_resp_free(&r);
    free(assert_logged(parts));
    scrape(&r);
    ck_assert_msg(value_of(r.body, "paycallback_illegal_transitions_total", v) != NULL &&
                      strcmp(v, "0") != 0,
                  "paycallback_illegal_transitions_total did not move");
    h_resp_free(&r);
}
END_TEST

/* ---- log level ----------------------------------------------------------- */

START_TEST(warn_level_drops_request_lines_and_keeps_alerts)
{
    char id[ID_MAX], hdr[96], needle[96];
    const char *headers[] = { hdr, NULL };
    const char *req_parts[] = { needle, NULL };
    const char *alert_parts[] = { "alert=AMOUNT_MISMATCH", "order_no=OW1", "pay_no=PW1", NULL };
    struct h_resp r;
    char *line;

    unique_id(id, "quiet");
    snprintf(hdr, sizeof hdr, "X-Request-Id: %s", id);
    snprintf(needle, sizeof needle, "request_id=%s", id);
    h_http(h_port(), "GET", "/healthz", headers, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_str_eq(id, h_resp_header(&r, "X-Request-Id"));
    h_resp_free(&r);

    h_db_insert_order("OW1", "u1", PRICE, 1);
    h_callback(h_port(), "OW1", "PW1", "1.00", &r);
    h_assert_error(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    free(assert_logged(alert_parts)); /* alerts are warnings: kept */

    line = h_log_find(req_parts, ABSENT_WAIT_MS);
    ck_assert_msg(line == NULL, "an info request line was logged at level warn: %s", line);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static TCase *tcase(const char *name, void (*up)(void), int timeout_s)
{
    TCase *tc = tcase_create(name);

    tcase_add_unchecked_fixture(tc, up, h_fixture_server_down);
    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_set_timeout(tc, timeout_s);
    return tc;
}

static Suite *ops_suite(void)
{
    Suite *s = suite_create("ops");
    TCase *tc;

    /* Its own server: the exact counts below assume no other traffic. */
    tc = tcase("metrics count the traffic", h_fixture_server_up, TC_TIMEOUT_S);
    tcase_add_test(tc, scrape_after_traffic_passes_promtool_and_counts_it);
    suite_add_tcase(s, tc);

    tc = tcase("an idle scrape is valid", h_fixture_server_up, TC_TIMEOUT_S);
    tcase_add_test(tc, idle_scrape_passes_promtool_with_a_histogram_per_route);
    tcase_add_test(tc, build_info_process_and_ready_are_exported);
    suite_add_tcase(s, tc);

    tc = tcase("dashboard and alerts match the scrape", gateway_server_up, TC_TIMEOUT_S);
    tcase_add_test(tc, dashboard_and_alert_rules_query_only_exported_metrics);
    suite_add_tcase(s, tc);

    tc = tcase("readiness follows mysql", h_fixture_server_up, OUTAGE_TIMEOUT_S);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_mysql_back);
    tcase_add_test(tc, readyz_is_200_with_mysql_and_redis_up);
    tcase_add_test(tc, readyz_is_503_while_mysql_is_down_and_200_once_it_is_back);
    suite_add_tcase(s, tc);

    tc = tcase("init_command", init_command_server_up, TC_TIMEOUT_S);
    tcase_add_test(tc, init_command_runs_on_each_session_and_the_service_is_ready);
    suite_add_tcase(s, tc);

    tc = tcase_create("failing init_command");
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, a_failing_init_command_stops_the_service_at_start);
    suite_add_tcase(s, tc);

    tc = tcase("request ids and request lines", h_fixture_server_up, TC_TIMEOUT_S);
    tcase_add_test(tc, client_request_id_is_echoed_and_logged_with_the_request);
    tcase_add_test(tc, plain_abc_123_is_echoed_as_given);
    tcase_add_loop_test(tc, missing_or_invalid_request_id_is_replaced_by_16_hex, 0,
                        (int)(sizeof bad_request_ids / sizeof bad_request_ids[0]));
    tcase_add_test(tc, generated_ids_differ_between_requests);
    tcase_add_test(tc, error_replies_echo_the_id_and_log_their_code);
    tcase_add_test(tc, a_path_cannot_forge_log_fields);
    tcase_add_test(tc, malformed_row_is_a_500_logged_once_with_the_request_id);
    suite_add_tcase(s, tc);

    tc = tcase("a galera node that is not ready", h_fixture_server_up, TC_TIMEOUT_S);
    tcase_add_checked_fixture(tc, drop_not_ready_trigger, NULL);
    tcase_add_unchecked_fixture(tc, NULL, drop_not_ready_trigger);
    tcase_add_test(tc, galera_node_not_ready_is_a_503_that_writes_nothing);
    suite_add_tcase(s, tc);

    tc = tcase("alerts carry the ids", h_fixture_server_up, TC_TIMEOUT_S);
    tcase_add_test(tc, double_payment_is_a_counter_and_an_alert_line);
    tcase_add_test(tc, amount_mismatch_is_an_alert_with_order_and_pay_no);
    tcase_add_test(tc, pay_no_conflict_is_an_alert_with_both_orders);
    tcase_add_test(tc, illegal_transition_is_an_alert_and_a_counter);
    suite_add_tcase(s, tc);

    tc = tcase("log level warn", warn_server_up, TC_TIMEOUT_S);
    tcase_add_test(tc, warn_level_drops_request_lines_and_keeps_alerts);
    suite_add_tcase(s, tc);

    return s;
}

CHECK_MAIN(ops_suite, NULL, NULL);
