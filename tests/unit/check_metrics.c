/* check_metrics.c - unit tests for metrics.c: what metrics_render writes for
 * known increments. Counters by name and label, requests by route, method
 * and code, cumulative histogram buckets whose +Inf equals the count, the
 * sum in seconds, and the shape of the exposition text (one HELP and TYPE
 * per family, before its samples). No server, no promtool: the integration
 * suite runs promtool on a real scrape. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http.h"
#include "metrics.h"
#include "../check_main.h"

#define VALUE_MAX 64
#define FAMILY_MAX 128
#define FAMILIES_MAX 64
#define RACE_THREADS 8
#define RACE_INCREMENTS 100000

static const struct metrics_route routes[] = {
    { "POST", "/pay/callback" },
    { "GET", "/order/{order_no}" },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static struct metrics *m;
static char *text;

static void setup(void)
{
    m = metrics_create(routes, NROUTES);
    ck_assert_ptr_nonnull(m);
    text = NULL;
}

static void teardown(void)
{
    free(text);
    metrics_destroy(m);
}

/* Renders m into text (freed by the teardown). */
static const char *render(void)
{
    size_t len = 0;

    free(text);
    text = metrics_render(m, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(strlen(text), len);
    return text;
}

/* The value of the sample line "series value" (series with its labels,
 * exactly as rendered) into out, or NULL when there is no such line. */
static const char *value_of(const char *t, const char *series, char out[VALUE_MAX])
{
    size_t n = strlen(series);

    for (const char *line = t; line != NULL && *line != '\0';) {
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

#define assert_sample(series, want)                                                           \
    do {                                                                                      \
        char v_[VALUE_MAX];                                                                   \
        const char *got_ = value_of(render(), (series), v_);                                  \
        ck_assert_msg(got_ != NULL, "no sample %s in:\n%s", (series), text);                  \
        ck_assert_msg(strcmp((want), got_) == 0, "%s: expected %s, got %s", (series), (want), \
                      got_);                                                                  \
    } while (0)

#define REQ(route, method, code) \
    "paycallback_http_requests_total{route=\"" route "\",method=\"" method "\",code=\"" code "\"}"
#define LAT(suffix, labels) "paycallback_http_request_duration_seconds_" suffix "{" labels "}"
#define CB "route=\"/pay/callback\",method=\"POST\""
#define CB_BUCKET_PREFIX "paycallback_http_request_duration_seconds_bucket{" CB ",le=\""

/* ---- counters ------------------------------------------------------------ */

START_TEST(every_counter_is_rendered_at_zero_before_any_event)
{
    assert_sample("paycallback_double_payments_total", "0");
    assert_sample("paycallback_illegal_transitions_total", "0");
    assert_sample("paycallback_amount_mismatches_total", "0");
    assert_sample("paycallback_pay_no_conflicts_total", "0");
    assert_sample("paycallback_duplicates_absorbed_total{kind=\"callback_replay\"}", "0");
    assert_sample("paycallback_duplicates_absorbed_total{kind=\"order_dedupe\"}", "0");
    assert_sample("paycallback_duplicates_absorbed_total{kind=\"token_repeat\"}", "0");
    assert_sample("paycallback_duplicates_absorbed_total{kind=\"transition_repeat\"}", "0");
    assert_sample("paycallback_redis_degraded_operations_total", "0");
    assert_sample("paycallback_redis_errors_total", "0");
    assert_sample("paycallback_mysql_retries_total", "0");
    assert_sample("paycallback_mysql_connects_total", "0");
    assert_sample("paycallback_mysql_reconnects_total", "0");
    assert_sample("paycallback_mysql_pool_waits_total", "0");
    assert_sample("paycallback_mysql_pool_timeouts_total", "0");
    assert_sample("paycallback_redis_degraded", "0");
}
END_TEST

START_TEST(each_increment_lands_on_its_own_series)
{
    metrics_inc(m, M_DOUBLE_PAYMENT);
    metrics_inc(m, M_DOUBLE_PAYMENT);
    metrics_inc(m, M_DUP_CALLBACK);
    metrics_inc(m, M_DUP_TOKEN);
    metrics_inc(m, M_DUP_TOKEN);
    metrics_inc(m, M_DUP_TOKEN);
    metrics_inc(m, M_ILLEGAL_TRANSITION);
    metrics_inc(m, M_MYSQL_RECONNECTS);
    metrics_inc(m, M_REDIS_DEGRADED_OPS);
    assert_sample("paycallback_double_payments_total", "2");
    assert_sample("paycallback_duplicates_absorbed_total{kind=\"callback_replay\"}", "1");
    assert_sample("paycallback_duplicates_absorbed_total{kind=\"order_dedupe\"}", "0");
    assert_sample("paycallback_duplicates_absorbed_total{kind=\"token_repeat\"}", "3");
    assert_sample("paycallback_illegal_transitions_total", "1");
    assert_sample("paycallback_mysql_reconnects_total", "1");
    assert_sample("paycallback_mysql_connects_total", "0");
    assert_sample("paycallback_redis_degraded_operations_total", "1");
    assert_sample("paycallback_amount_mismatches_total", "0");
}
END_TEST

START_TEST(redis_degraded_gauge_follows_the_last_setting)
{
    metrics_set_redis_degraded(m, 1);
    assert_sample("paycallback_redis_degraded", "1");
    metrics_set_redis_degraded(m, 0);
    assert_sample("paycallback_redis_degraded", "0");
}
END_TEST

START_TEST(out_of_range_counter_is_ignored)
{
    metrics_inc(m, M_COUNT);
    metrics_inc(m, (enum metric_counter) - 1);
    assert_sample("paycallback_double_payments_total", "0");
}
END_TEST

/* Eight threads hammering one counter: relaxed atomic adds lose nothing. */
static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < RACE_INCREMENTS; i++)
        metrics_inc(m, M_DUP_CALLBACK);
    return NULL;
}

START_TEST(concurrent_increments_are_all_counted)
{
    pthread_t t[RACE_THREADS];
    char want[VALUE_MAX];

    for (int i = 0; i < RACE_THREADS; i++)
        ck_assert_int_eq(0, pthread_create(&t[i], NULL, hammer, NULL));
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(t[i], NULL);
    snprintf(want, sizeof want, "%d", RACE_THREADS * RACE_INCREMENTS);
    assert_sample("paycallback_duplicates_absorbed_total{kind=\"callback_replay\"}", want);
}
END_TEST

START_TEST(counters_are_lock_free_on_this_platform)
{
    ck_assert_int_eq(2, ATOMIC_LLONG_LOCK_FREE);
}
END_TEST

START_TEST(null_registry_is_accepted_everywhere)
{
    size_t len = 1;

    metrics_inc(NULL, M_DOUBLE_PAYMENT);
    metrics_observe(NULL, 0, 200, 10);
    metrics_set_redis_degraded(NULL, 1);
    metrics_set_ready(NULL, 1);
    metrics_set_build_info(NULL, "1", "2");
    ck_assert_ptr_null(metrics_render(NULL, &len));
    ck_assert_uint_eq(0, len);
    metrics_destroy(NULL);
}
END_TEST

/* ---- webhook endpoints ----------------------------------------------------- */

static void *count_endpoints(void *arg)
{
    static const char *const names[] = { "erp", "shop", "analytics" };

    (void)arg;
    for (int i = 0; i < RACE_INCREMENTS / 10; i++)
        metrics_endpoint(m, names[i % 3], ME_DELIVERED);
    return NULL;
}

START_TEST(endpoints_are_counted_by_name_each_in_one_slot_under_concurrency)
{
    pthread_t t[RACE_THREADS];
    char want[VALUE_MAX];
    const char *out;

    ck_assert_ptr_null(strstr(render(), "paycallback_webhook_deliveries_total"));
    for (int i = 0; i < RACE_THREADS; i++)
        ck_assert_int_eq(0, pthread_create(&t[i], NULL, count_endpoints, NULL));
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(t[i], NULL);
    metrics_endpoint(m, "erp", ME_TIMEOUT);
    metrics_endpoint(m, "erp", ME_DEAD);
    metrics_endpoint(m, "shop", ME_FAILED);
    metrics_endpoint(m, "shop", ME_COUNT); /* out of range: nothing */
    snprintf(want, sizeof want, "%d", RACE_THREADS * ((RACE_INCREMENTS / 10 + 2) / 3));
    assert_sample("paycallback_webhook_deliveries_total{endpoint=\"erp\",result=\"delivered\"}",
                  want);
    assert_sample("paycallback_webhook_deliveries_total{endpoint=\"erp\",result=\"timeout\"}", "1");
    assert_sample("paycallback_webhook_deliveries_total{endpoint=\"erp\",result=\"dead\"}", "1");
    assert_sample("paycallback_webhook_deliveries_total{endpoint=\"shop\",result=\"failed\"}", "1");
    assert_sample("paycallback_webhook_deliveries_total{endpoint=\"analytics\",result=\"dead\"}",
                  "0");
    out = render();
    /* one slot per name: each series once */
    ck_assert_ptr_null(strstr(strstr(out, "{endpoint=\"erp\",result=\"delivered\"}") + 1,
                              "{endpoint=\"erp\",result=\"delivered\"}"));
}
END_TEST

START_TEST(endpoints_past_the_maximum_are_not_counted)
{
    char name[16];

    for (int i = 0; i <= METRICS_ENDPOINTS_MAX; i++) {
        snprintf(name, sizeof name, "ep%d", i);
        metrics_endpoint(m, name, ME_DELIVERED);
    }
    metrics_endpoint(m, "a-name-longer-than-thirty-two-chars", ME_DELIVERED);
    snprintf(name, sizeof name, "ep%d", METRICS_ENDPOINTS_MAX - 1);
    ck_assert_ptr_nonnull(strstr(render(), name));
    snprintf(name, sizeof name, "\"ep%d\"", METRICS_ENDPOINTS_MAX);
    ck_assert_ptr_null(strstr(render(), name));
    ck_assert_ptr_null(strstr(render(), "thirty-two"));
}
END_TEST

/* ---- requests ------------------------------------------------------------ */

START_TEST(requests_are_counted_by_route_method_and_code)
{
    metrics_observe(m, 0, 200, 100);
    metrics_observe(m, 0, 200, 100);
    metrics_observe(m, 0, 409, 100);
    metrics_observe(m, 1, 404, 100);
    metrics_observe(m, NROUTES, 404, 100);
    assert_sample(REQ("/pay/callback", "POST", "200"), "2");
    assert_sample(REQ("/pay/callback", "POST", "409"), "1");
    assert_sample(REQ("/order/{order_no}", "GET", "404"), "1");
    assert_sample(REQ("unmatched", "other", "404"), "1");
}
END_TEST

START_TEST(codes_without_a_series_of_their_own_count_as_other)
{
    metrics_observe(m, 0, 418, 100);
    metrics_observe(m, 0, 502, 100);
    assert_sample(REQ("/pay/callback", "POST", "other"), "2");
}
END_TEST

START_TEST(route_index_past_the_table_counts_as_unmatched)
{
    metrics_observe(m, NROUTES + 7, 404, 100);
    assert_sample(REQ("unmatched", "other", "404"), "1");
}
END_TEST

START_TEST(build_info_is_one_with_version_and_commit_labels)
{
    assert_sample("paycallback_build_info{version=\"unknown\",commit=\"unknown\"}", "1");
    metrics_set_build_info(m, "1.2.3", "abc\"def");
    assert_sample("paycallback_build_info{version=\"1.2.3\",commit=\"abcdef\"}", "1");
}
END_TEST

START_TEST(ready_gauge_is_zero_until_a_probe_succeeds)
{
    assert_sample("paycallback_ready", "0");
    metrics_set_ready(m, 1);
    assert_sample("paycallback_ready", "1");
    metrics_set_ready(m, 0);
    assert_sample("paycallback_ready", "0");
}
END_TEST

/* Parses the value of a sample without labels as a double; fails when the
 * series is missing. */
static double number_of(const char *series)
{
    char v[VALUE_MAX];

    ck_assert_msg(value_of(render(), series, v) != NULL, "no sample %s", series);
    return strtod(v, NULL);
}

START_TEST(process_metrics_describe_this_process)
{
    double start = number_of("process_start_time_seconds");
    double fds_before = number_of("process_open_fds");
    FILE *f = fopen("/dev/null", "r");

    ck_assert_ptr_nonnull(f);
    ck_assert_msg(number_of("process_open_fds") == fds_before + 1,
                  "an opened file must show in process_open_fds");
    fclose(f);
    ck_assert_msg(number_of("process_resident_memory_bytes") > 0, "resident memory is 0");
    ck_assert_msg(number_of("process_virtual_memory_bytes") >=
                      number_of("process_resident_memory_bytes"),
                  "virtual below resident");
    ck_assert_msg(number_of("process_max_fds") >= fds_before, "max_fds below open fds");
    ck_assert_msg(number_of("process_cpu_seconds_total") >= 0, "negative cpu seconds");
    ck_assert_msg(start > 1.6e9 && start <= (double)time(NULL) + 1, "start time %f", start);
}
END_TEST

START_TEST(codes_never_seen_have_no_series)
{
    char v[VALUE_MAX];

    metrics_observe(m, 0, 200, 100);
    ck_assert_ptr_null(value_of(render(), REQ("/pay/callback", "POST", "503"), v));
}
END_TEST

/* ---- latency histogram --------------------------------------------------- */

START_TEST(histogram_buckets_are_cumulative_and_inf_is_the_count)
{
    metrics_observe(m, 0, 200, 500);      /* 0.0005 s */
    metrics_observe(m, 0, 200, 1000);     /* exactly on le="0.001": inside */
    metrics_observe(m, 0, 200, 1001);     /* just past it */
    metrics_observe(m, 0, 200, 3000);     /* 0.003 s */
    metrics_observe(m, 0, 503, 20000000); /* 20 s: past the last bound */
    assert_sample(LAT("bucket", CB ",le=\"0.001\""), "2");
    assert_sample(LAT("bucket", CB ",le=\"0.0025\""), "3");
    assert_sample(LAT("bucket", CB ",le=\"0.005\""), "4");
    assert_sample(LAT("bucket", CB ",le=\"1\""), "4");
    assert_sample(LAT("bucket", CB ",le=\"10\""), "4");
    assert_sample(LAT("bucket", CB ",le=\"+Inf\""), "5");
    assert_sample(LAT("count", CB), "5");
    assert_sample(LAT("sum", CB), "20.005501");
}
END_TEST

START_TEST(histogram_of_an_idle_route_is_all_zero)
{
    metrics_observe(m, 0, 200, 500);
    assert_sample(LAT("bucket", "route=\"/order/{order_no}\",method=\"GET\",le=\"+Inf\""), "0");
    assert_sample(LAT("count", "route=\"/order/{order_no}\",method=\"GET\""), "0");
    assert_sample(LAT("sum", "route=\"/order/{order_no}\",method=\"GET\""), "0.000000");
}
END_TEST

START_TEST(bucket_bounds_are_written_as_short_decimals)
{
    static const char *const bounds[] = { "0.001", "0.0025", "0.005", "0.01", "0.025",
                                          "0.05",  "0.1",    "0.25",  "0.5",  "1",
                                          "2.5",   "5",      "10",    "+Inf" };
    char series[256], v[VALUE_MAX];
    const char *t = render();

    for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
        snprintf(series, sizeof series, LAT("bucket", CB ",le=\"%s\""), bounds[i]);
        ck_assert_msg(value_of(t, series, v) != NULL, "no bucket le=\"%s\" in:\n%s", bounds[i], t);
    }
}
END_TEST

START_TEST(bucket_bounds_increase_and_counts_never_decrease)
{
    const char *t;
    double prev_le = -1, le;
    unsigned long long prev_n = 0, n;
    int seen = 0;

    for (int i = 0; i < 50; i++)
        metrics_observe(m, 0, 200, (uint64_t)i * 250000u);
    t = render();
    for (const char *p = t; (p = strstr(p, CB_BUCKET_PREFIX)) != NULL; p++) {
        const char *q = p + strlen(CB_BUCKET_PREFIX);
        if (strncmp(q, "+Inf", 4) == 0)
            le = 1e300;
        else
            le = strtod(q, NULL);
        n = strtoull(strstr(q, "} ") + 2, NULL, 10);
        ck_assert_msg(le > prev_le, "bounds out of order at le=%g", le);
        ck_assert_msg(n >= prev_n, "bucket le=%g has %llu < %llu", le, n, prev_n);
        prev_le = le;
        prev_n = n;
        seen++;
    }
    ck_assert_int_eq(14, seen);
    ck_assert_uint_eq(50, prev_n);
}
END_TEST

/* ---- exposition format --------------------------------------------------- */

/* The family a sample line belongs to: its name, less the histogram
 * suffix when the family is a histogram. */
static void family_of(const char *line, const char *type_family, char out[FAMILY_MAX])
{
    size_t n = strcspn(line, "{ ");
    size_t fl = strlen(type_family);

    snprintf(out, FAMILY_MAX, "%.*s", (int)n, line);
    if (n > fl && strncmp(out, type_family, fl) == 0 &&
        (strcmp(out + fl, "_bucket") == 0 || strcmp(out + fl, "_sum") == 0 ||
         strcmp(out + fl, "_count") == 0))
        out[fl] = '\0';
}

START_TEST(each_family_has_one_help_and_type_before_its_samples)
{
    char family[FAMILY_MAX] = "", help[FAMILY_MAX] = "", seen[FAMILIES_MAX][FAMILY_MAX];
    size_t nseen = 0;
    const char *t;

    metrics_observe(m, 0, 200, 100);
    metrics_inc(m, M_DOUBLE_PAYMENT);
    t = render();
    ck_assert_msg(t[strlen(t) - 1] == '\n', "text must end with a newline");
    for (const char *line = t; *line != '\0';) {
        const char *eol = strchr(line, '\n');
        char cur[FAMILY_MAX];

        ck_assert_ptr_nonnull(eol);
        if (strncmp(line, "# HELP ", 7) == 0) {
            snprintf(help, sizeof help, "%.*s", (int)strcspn(line + 7, " "), line + 7);
        } else if (strncmp(line, "# TYPE ", 7) == 0) {
            snprintf(family, sizeof family, "%.*s", (int)strcspn(line + 7, " "), line + 7);
            ck_assert_msg(strcmp(help, family) == 0, "TYPE %s without its HELP just before",
                          family);
            for (size_t i = 0; i < nseen; i++)
                ck_assert_msg(strcmp(seen[i], family) != 0, "family %s declared twice", family);
            ck_assert_uint_lt(nseen, FAMILIES_MAX);
            snprintf(seen[nseen++], FAMILY_MAX, "%s", family);
        } else {
            ck_assert_msg(line[0] != '#', "unexpected comment: %.*s", (int)(eol - line), line);
            family_of(line, family, cur);
            ck_assert_msg(strcmp(cur, family) == 0, "sample %.*s outside its family (in %s)",
                          (int)(eol - line), line, family);
        }
        line = eol + 1;
    }
    ck_assert_uint_ge(nseen, 10);
}
END_TEST

START_TEST(counter_families_end_in_total)
{
    const char *t = render();

    for (const char *p = t; (p = strstr(p, "# TYPE ")) != NULL; p++) {
        const char *eol = strchr(p, '\n');
        size_t n = (size_t)(eol - p);

        if (n > 8 && strncmp(eol - 8, " counter", 8) == 0) {
            const char *name_end = eol - 8;
            ck_assert_msg(name_end - p > 13 && strncmp(name_end - 6, "_total", 6) == 0,
                          "counter without _total: %.*s", (int)n, p);
        }
    }
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc;

    tc = tcase_create("counters");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, every_counter_is_rendered_at_zero_before_any_event);
    tcase_add_test(tc, each_increment_lands_on_its_own_series);
    tcase_add_test(tc, redis_degraded_gauge_follows_the_last_setting);
    tcase_add_test(tc, out_of_range_counter_is_ignored);
    tcase_add_test(tc, concurrent_increments_are_all_counted);
    tcase_add_test(tc, counters_are_lock_free_on_this_platform);
    tcase_add_test(tc, null_registry_is_accepted_everywhere);
    tcase_add_test(tc, build_info_is_one_with_version_and_commit_labels);
    tcase_add_test(tc, ready_gauge_is_zero_until_a_probe_succeeds);
    tcase_add_test(tc, process_metrics_describe_this_process);
    suite_add_tcase(s, tc);

    tc = tcase_create("requests");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, requests_are_counted_by_route_method_and_code);
    tcase_add_test(tc, codes_without_a_series_of_their_own_count_as_other);
    tcase_add_test(tc, route_index_past_the_table_counts_as_unmatched);
    tcase_add_test(tc, codes_never_seen_have_no_series);
    suite_add_tcase(s, tc);

    tc = tcase_create("latency histogram");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, histogram_buckets_are_cumulative_and_inf_is_the_count);
    tcase_add_test(tc, histogram_of_an_idle_route_is_all_zero);
    tcase_add_test(tc, bucket_bounds_are_written_as_short_decimals);
    tcase_add_test(tc, bucket_bounds_increase_and_counts_never_decrease);
    suite_add_tcase(s, tc);

    tc = tcase_create("exposition format");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, each_family_has_one_help_and_type_before_its_samples);
    tcase_add_test(tc, counter_families_end_in_total);
    tcase_add_test(tc, endpoints_are_counted_by_name_each_in_one_slot_under_concurrency);
    tcase_add_test(tc, endpoints_past_the_maximum_are_not_counted);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(metrics_suite, NULL, NULL);
