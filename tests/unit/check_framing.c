/* check_framing.c - header lines as libmicrohttpd hands them over, checked
 * for the shapes an ambiguous framing leaves behind. */
#include <check.h>
#include <string.h>

#include "framing.h"
#include "../check_main.h"

static enum framing_status check(const char *name, const char *value, size_t value_len)
{
    return framing_check(name, strlen(name), value, value_len);
}

START_TEST(ordinary_headers_pass)
{
    ck_assert_int_eq(FRAMING_OK, check("Content-Length", "12", 2));
    ck_assert_int_eq(FRAMING_OK, check("transfer-encoding", "chunked", 7));
    ck_assert_int_eq(FRAMING_OK, check("X-Request-Id", "a\tb c", 5)); /* HTAB and SP */
    ck_assert_int_eq(FRAMING_OK, check("X-Name", "\xe9\x9e\x8b", 3)); /* obs-text */
    ck_assert_int_eq(FRAMING_OK, check("Content-Type", "", 0));
}
END_TEST

START_TEST(names_with_whitespace_or_separators_are_refused)
{
    ck_assert_int_eq(FRAMING_BAD_NAME, check("Transfer-Encoding ", "chunked", 7));
    ck_assert_int_eq(FRAMING_BAD_NAME, check("X-A\t", "v", 1));
    ck_assert_int_eq(FRAMING_BAD_NAME, check("HostX-B: v", "x", 1)); /* a folded line */
    ck_assert_int_eq(FRAMING_BAD_NAME, check("", "x", 1));
    ck_assert_int_eq(FRAMING_BAD_NAME, framing_check("X-\0A", 4, "v", 1));
}
END_TEST

START_TEST(folded_framing_headers_are_refused)
{
    ck_assert_int_eq(FRAMING_FOLDED, check("Content-Length0", "1", 1));
    ck_assert_int_eq(FRAMING_FOLDED, check("Transfer-Encodingchunked", "gzip,", 5));
    ck_assert_int_eq(FRAMING_FOLDED, check("content-lengthx", "1", 1));
}
END_TEST

START_TEST(control_bytes_in_values_are_refused)
{
    ck_assert_int_eq(FRAMING_BAD_VALUE, check("X-A", "a\rb", 3));
    ck_assert_int_eq(FRAMING_BAD_VALUE, check("X-A", "a\nb", 3));
    ck_assert_int_eq(FRAMING_BAD_VALUE, check("X-A", "a\0b", 3));
    ck_assert_int_eq(FRAMING_BAD_VALUE, check("X-A", "a\x01", 2));
    ck_assert_int_eq(FRAMING_BAD_VALUE, check("X-A", "\x7f", 1));
    ck_assert_ptr_nonnull(strstr(framing_message(FRAMING_BAD_VALUE), "control"));
}
END_TEST

static Suite *framing_suite(void)
{
    Suite *s = suite_create("framing");
    TCase *tc = tcase_create("framing");

    tcase_add_test(tc, ordinary_headers_pass);
    tcase_add_test(tc, names_with_whitespace_or_separators_are_refused);
    tcase_add_test(tc, folded_framing_headers_are_refused);
    tcase_add_test(tc, control_bytes_in_values_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(framing_suite, NULL, NULL);
