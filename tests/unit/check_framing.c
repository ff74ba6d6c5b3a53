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

/* A header block as libmicrohttpd 0.9.75 leaves it (the dump of a real
 * request), checked with the names and values it would hand over: name
 * at offset n of length nl, value at offset v of length vl, each pair. */
struct line_at {
    size_t n, nl, v, vl;
};

static enum framing_status block(const char *raw, size_t len, const struct line_at *lines,
                                 size_t nlines)
{
    struct framing_block b;

    framing_block_begin(&b, raw, len);
    for (size_t i = 0; i < nlines; i++)
        framing_block_line(&b, raw + lines[i].n, lines[i].nl, raw + lines[i].v, lines[i].vl);
    return framing_block_end(&b);
}

#define RLINE "GET\0/healthz\0HTTP/1.1\0\0" /* 23 bytes */

START_TEST(whole_lines_pass_and_a_line_cut_by_a_nul_is_found)
{
    /* Host: x, then X-A: ab */
    static const char ok[] = RLINE "Host\0 x\0\0X-A\0 ab\0\0\0\0";
    static const struct line_at ok_lines[] = { { 23, 4, 29, 1 }, { 32, 3, 37, 2 } };
    /* X-A: a<NUL>b: the library hands over "a". */
    static const char cut[] = RLINE "Host\0 x\0\0X-A\0 a\0b\0\0\0\0";
    static const struct line_at cut_lines[] = { { 23, 4, 29, 1 }, { 32, 3, 37, 1 } };
    /* X-A: ab<NUL>: a NUL more before the line's end. */
    static const char end[] = RLINE "Host\0 x\0\0X-A\0 ab\0\0\0\0\0";
    static const struct line_at end_lines[] = { { 23, 4, 29, 1 }, { 32, 3, 37, 2 } };
    /* Host: x<NUL>y as the only header, then a trailing blank before CR. */
    static const char host[] = RLINE "Host\0 x\0y\0\0\0\0";
    static const struct line_at host_lines[] = { { 23, 4, 29, 1 } };
    static const char blank[] = RLINE "Host\0 x \0\0\0\0";

    ck_assert_int_eq(FRAMING_OK, block(ok, sizeof ok - 1, ok_lines, 2));
    ck_assert_int_eq(FRAMING_HIDDEN, block(cut, sizeof cut - 1, cut_lines, 2));
    ck_assert_int_eq(FRAMING_HIDDEN, block(end, sizeof end - 1, end_lines, 2));
    ck_assert_int_eq(FRAMING_HIDDEN, block(host, sizeof host - 1, host_lines, 1));
    ck_assert_int_eq(FRAMING_OK, block(blank, sizeof blank - 1, host_lines, 1));
    ck_assert_int_eq(FRAMING_OK, block(RLINE, sizeof RLINE - 1, NULL, 0));
    /* A line out of order or outside the block is not the layout read. */
    {
        static const struct line_at swapped[] = { { 32, 3, 37, 2 }, { 23, 4, 29, 1 } };
        static const struct line_at outside[] = { { 23, 4, 29, 100 } };

        ck_assert_int_eq(FRAMING_HIDDEN, block(ok, sizeof ok - 1, swapped, 2));
        ck_assert_int_eq(FRAMING_HIDDEN, block(ok, sizeof ok - 1, outside, 1));
    }
    ck_assert_ptr_nonnull(strstr(framing_message(FRAMING_HIDDEN), "NUL"));
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
    tcase_add_test(tc, whole_lines_pass_and_a_line_cut_by_a_nul_is_found);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(framing_suite, NULL, NULL);
