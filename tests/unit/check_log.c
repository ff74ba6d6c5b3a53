/* check_log.c - unit tests for log.c: what a log line looks like for
 * values that would break logfmt (spaces, quotes, backslashes, newlines,
 * '=' and empty strings), quoted or bare in the format, and that numbers
 * of every length modifier come out as printf writes them. stderr is
 * redirected to a file for each test. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "log.h"
#include "../check_main.h"

static FILE *capture;
static int saved_stderr = -1;
static char text[4096];

static void setup(void)
{
    capture = tmpfile();
    ck_assert_ptr_nonnull(capture);
    saved_stderr = dup(STDERR_FILENO);
    ck_assert_int_ge(saved_stderr, 0);
    ck_assert_int_eq(STDERR_FILENO, dup2(fileno(capture), STDERR_FILENO));
    log_set_level(LOG_DEBUG);
}

static void teardown(void)
{
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    fclose(capture);
}

/* Everything logged so far, past "ts=... level=... " (from msg= on). */
static const char *logged(void)
{
    size_t n;
    const char *msg;

    fflush(capture);
    rewind(capture);
    n = fread(text, 1, sizeof text - 1, capture);
    text[n] = '\0';
    msg = strstr(text, " msg=");
    ck_assert_msg(msg != NULL, "no msg in \"%s\"", text);
    return msg + 1;
}

START_TEST(bare_values_with_spaces_are_quoted)
{
    log_info("db error", "op=%s errno=%u", "SELECT a, b FROM t WHERE x = ?", 1213u);
    ck_assert_str_eq("msg=\"db error\" op=\"SELECT a, b FROM t WHERE x = ?\" errno=1213\n",
                     logged());
}
END_TEST

START_TEST(quoted_values_are_escaped_not_requoted)
{
    log_warn("bad", "error=\"%s\" n=%d", "said \"no\" \\ then\nleft", -3);
    ck_assert_str_eq("msg=\"bad\" error=\"said \\\"no\\\" \\\\ then\\nleft\" n=-3\n", logged());
}
END_TEST

START_TEST(plain_values_stay_bare)
{
    log_info("paid", "order_no=%s amount=%s", "O-1_a.b:c", "899.00");
    ck_assert_str_eq("msg=\"paid\" order_no=O-1_a.b:c amount=899.00\n", logged());
}
END_TEST

START_TEST(empty_and_equals_and_control_values_are_quoted)
{
    log_info("x", "a=%s b=%s c=%s", "", "k=v", "tab\there\x01");
    ck_assert_str_eq("msg=\"x\" a=\"\" b=\"k=v\" c=\"tab\\there?\"\n", logged());
}
END_TEST

START_TEST(a_value_cannot_forge_a_key)
{
    log_info("request", "path=%s status=%d", "/x level=error msg=forged", 404);
    ck_assert_str_eq("msg=\"request\" path=\"/x level=error msg=forged\" status=404\n", logged());
}
END_TEST

START_TEST(the_message_is_escaped)
{
    log_info("a \"quoted\"\nmessage", "%s", "");
    ck_assert_str_eq("msg=\"a \\\"quoted\\\"\\nmessage\"\n", logged());
}
END_TEST

START_TEST(numbers_of_every_length_are_formatted)
{
    log_info("n", "a=%d b=%ld c=%lld d=%u e=%lu f=%llu g=%zu h=%zd i=%x j=%05d k=%.2f l=%c m=%%",
             -1, -2L, -3LL, 4u, 5UL, 6ULL, (size_t)7, (ssize_t)-8, 255u, 42, 1.5, 'z');
    ck_assert_str_eq("msg=\"n\" a=-1 b=-2 c=-3 d=4 e=5 f=6 g=7 h=-8 i=ff j=00042 k=1.50 l=z m=%\n",
                     logged());
}
END_TEST

START_TEST(precision_limits_a_string)
{
    log_info("p", "s=%.3s t=%.*s", "abcdef", 2, "xyz");
    ck_assert_str_eq("msg=\"p\" s=abc t=xy\n", logged());
}
END_TEST

START_TEST(a_long_line_is_cut_and_still_ends_in_a_newline)
{
    char big[3000];

    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    log_info("big", "v=%s", big);
    logged();
    ck_assert_uint_le(strlen(text), 2048);
    ck_assert_int_eq('\n', text[strlen(text) - 1]);
    ck_assert_ptr_eq(text + strlen(text) - 1, strchr(text, '\n'));
}
END_TEST

START_TEST(lines_below_the_level_are_dropped)
{
    log_set_level(LOG_WARN);
    log_info("hidden", "%s", "");
    log_warn("shown", "%s", "");
    ck_assert_ptr_null(strstr(logged(), "hidden"));
    ck_assert_ptr_nonnull(strstr(text, "shown"));
}
END_TEST

/* ---- the JSON-lines format ---------------------------------------------------- */

static void json_setup(void)
{
    setup();
    ck_assert_int_eq(0, log_set_format("json"));
}

static void json_teardown(void)
{
    log_set_format("logfmt");
    teardown();
}

/* The one line logged so far, parsed as JSON (the caller frees it). */
static cJSON *logged_json(void)
{
    size_t n;
    cJSON *o;

    fflush(capture);
    rewind(capture);
    n = fread(text, 1, sizeof text - 1, capture);
    text[n] = '\0';
    ck_assert_msg(n > 0 && text[n - 1] == '\n' && strchr(text, '\n') == text + n - 1,
                  "not one line: \"%s\"", text);
    o = cJSON_Parse(text);
    ck_assert_msg(cJSON_IsObject(o), "not a JSON object: %s", text);
    return o;
}

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    ck_assert_msg(cJSON_IsString(v), "%s is not a string in %s", key, text);
    return v->valuestring;
}

START_TEST(json_lines_carry_every_value_exactly)
{
    const char *nasty = "a \"quoted\" \\ back\nslash=1 x=\"y\"";
    cJSON *o;

    log_warn("db \"error\"", "op=%s errno=%u amount=%s id=%s reason=\"%s\"",
             "SELECT a FROM t WHERE x = ?", 1213u, "899.00", "007", nasty);
    o = logged_json();
    ck_assert_str_eq("warn", json_str(o, "level"));
    ck_assert_str_eq("db \"error\"", json_str(o, "msg"));
    ck_assert_msg(strlen(json_str(o, "ts")) == 24, "ts: %s", json_str(o, "ts"));
    ck_assert_str_eq("SELECT a FROM t WHERE x = ?", json_str(o, "op"));
    ck_assert_str_eq(nasty, json_str(o, "reason"));
    ck_assert_msg(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "errno")), "%s", text);
    ck_assert_int_eq(1213, cJSON_GetObjectItemCaseSensitive(o, "errno")->valueint);
    ck_assert_str_eq("899.00", json_str(o, "amount")); /* money stays text */
    ck_assert_str_eq("007", json_str(o, "id"));
    ck_assert_int_eq(8, cJSON_GetArraySize(o));
    cJSON_Delete(o);
}
END_TEST

START_TEST(a_json_line_cut_short_is_still_one_object)
{
    char big[3000];
    cJSON *o;

    memset(big, '\\', sizeof big - 1); /* every byte needs an escape */
    big[sizeof big - 1] = '\0';
    log_info("big", "v=%s", big);
    o = logged_json();
    ck_assert_str_eq("big", json_str(o, "msg"));
    ck_assert_uint_gt(strlen(json_str(o, "v")), 500);
    ck_assert_ptr_null(strchr(json_str(o, "v"), '"'));
    cJSON_Delete(o);
}
END_TEST

START_TEST(a_json_line_is_valid_utf8_whatever_the_client_sent)
{
    char big[3000];
    size_t i;
    cJSON *o;

    log_info("request", "path=\"%s\" ok=%s", "/\xff\xc3xcaf\xc3\xa9\xed\xa0\x80", "\xe2\x82");
    o = logged_json(); /* cJSON checks nothing: we do */
    ck_assert_str_eq("/??xcaf\xc3\xa9"
                     "???",
                     json_str(o, "path"));
    ck_assert_str_eq("??", json_str(o, "ok"));
    cJSON_Delete(o);

    ck_assert_int_eq(0, ftruncate(fileno(capture), 0));
    rewind(capture);
    for (i = 0; i + 2 < sizeof big; i += 2) /* é, é, ... cut mid-character */
        memcpy(big + i, "\xc3\xa9", 2);
    big[i] = '\0';
    log_info("big", "v=\"%s\"", big);
    o = logged_json();
    for (const unsigned char *p = (const unsigned char *)json_str(o, "v"); *p != '\0';) {
        if (*p == '?') {
            p++;
            continue;
        }
        ck_assert_msg(p[0] == 0xc3 && p[1] == 0xa9, "bad byte %02x", *p);
        p += 2;
    }
    cJSON_Delete(o);
}
END_TEST

START_TEST(log_set_format_knows_two_formats)
{
    ck_assert_int_eq(-1, log_set_format("xml"));
    ck_assert_int_eq(0, log_set_format("logfmt"));
    log_info("plain", "k=%d", 1);
    ck_assert_str_eq("msg=\"plain\" k=1\n", logged());
}
END_TEST

static Suite *log_suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("logfmt values");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, bare_values_with_spaces_are_quoted);
    tcase_add_test(tc, quoted_values_are_escaped_not_requoted);
    tcase_add_test(tc, plain_values_stay_bare);
    tcase_add_test(tc, empty_and_equals_and_control_values_are_quoted);
    tcase_add_test(tc, a_value_cannot_forge_a_key);
    tcase_add_test(tc, the_message_is_escaped);
    tcase_add_test(tc, numbers_of_every_length_are_formatted);
    tcase_add_test(tc, precision_limits_a_string);
    tcase_add_test(tc, a_long_line_is_cut_and_still_ends_in_a_newline);
    tcase_add_test(tc, lines_below_the_level_are_dropped);
    suite_add_tcase(s, tc);

    tc = tcase_create("json lines");
    tcase_add_checked_fixture(tc, json_setup, json_teardown);
    tcase_add_test(tc, json_lines_carry_every_value_exactly);
    tcase_add_test(tc, a_json_line_cut_short_is_still_one_object);
    tcase_add_test(tc, a_json_line_is_valid_utf8_whatever_the_client_sent);
    tcase_add_test(tc, log_set_format_knows_two_formats);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(log_suite, NULL, NULL);
