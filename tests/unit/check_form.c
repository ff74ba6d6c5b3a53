/* check_form.c - unit tests for form.c: exact percent-decoding, '+' as a
 * space, and the refusals (bad escapes, %00, duplicates, empty pairs). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "form.h"
#include "../check_main.h"

static struct form *parse_ok(const char *body)
{
    struct form *f = NULL;

    ck_assert_msg(form_parse(body, strlen(body), &f) == FORM_OK, "\"%s\" refused", body);
    ck_assert_ptr_nonnull(f);
    return f;
}

static void assert_status(enum form_status want, const char *body)
{
    struct form *f = (struct form *)1;

    ck_assert_msg(form_parse(body, strlen(body), &f) == want, "\"%s\": wrong status", body);
    ck_assert_ptr_null(f);
}

START_TEST(form_parse_decodes_percent_and_plus)
{
    struct form *f = parse_ok("subject=%E5%A4%A7%E4%B9%90%E9%80%8F+2&gmt=2024-01-01+10%3A00%3A00"
                              "&sign=ab%2Bc%2F%3D");

    ck_assert_uint_eq(3, f->n);
    ck_assert_str_eq("\xe5\xa4\xa7\xe4\xb9\x90\xe9\x80\x8f 2", form_get(f, "subject"));
    ck_assert_str_eq("2024-01-01 10:00:00", form_get(f, "gmt"));
    ck_assert_str_eq("ab+c/=", form_get(f, "sign"));
    ck_assert_ptr_null(form_get(f, "missing"));
    form_destroy(f);
}
END_TEST

START_TEST(form_parse_keeps_order_and_empty_values)
{
    struct form *f = parse_ok("b=2&a=&c=%61");

    ck_assert_uint_eq(3, f->n);
    ck_assert_str_eq("b", f->field[0].key);
    ck_assert_str_eq("a", f->field[1].key);
    ck_assert_str_eq("", form_get(f, "a"));
    ck_assert_str_eq("a", form_get(f, "c"));
    form_destroy(f);
}
END_TEST

START_TEST(form_parse_accepts_either_hex_case)
{
    struct form *f = parse_ok("k=%2f%2F");

    ck_assert_str_eq("//", form_get(f, "k"));
    form_destroy(f);
}
END_TEST

START_TEST(form_parse_refuses_bad_escapes)
{
    assert_status(FORM_MALFORMED, "k=%");
    assert_status(FORM_MALFORMED, "k=%4");
    assert_status(FORM_MALFORMED, "k=%G1");
    assert_status(FORM_MALFORMED, "k=a%00b");
    assert_status(FORM_MALFORMED, "k%=1");
}
END_TEST

START_TEST(form_parse_refuses_empty_pairs_and_keys)
{
    assert_status(FORM_MALFORMED, "");
    assert_status(FORM_MALFORMED, "a=1&&b=2");
    assert_status(FORM_MALFORMED, "a=1&");
    assert_status(FORM_MALFORMED, "=1");
    assert_status(FORM_MALFORMED, "novalue");
    assert_status(FORM_MALFORMED, "%61%62");
}
END_TEST

START_TEST(form_parse_refuses_duplicate_keys)
{
    assert_status(FORM_DUPLICATE, "a=1&b=2&a=1");
    assert_status(FORM_DUPLICATE, "a=1&%61=2"); /* same key once decoded */
}
END_TEST

START_TEST(form_parse_refuses_too_many_fields)
{
    char body[FORM_FIELDS_MAX * 8 + 16];
    size_t i, pos = 0;
    struct form *f = NULL;

    for (i = 0; i <= FORM_FIELDS_MAX; i++)
        pos += (size_t)snprintf(body + pos, sizeof(body) - pos, "%sk%zu=1", i ? "&" : "", i);
    ck_assert_int_eq(FORM_TOO_MANY, form_parse(body, pos, &f));
    ck_assert_ptr_null(f);
}
END_TEST

START_TEST(form_parse_reads_only_len_bytes)
{
    struct form *f = NULL;

    ck_assert_int_eq(FORM_OK, form_parse("a=1&b=2", 3, &f));
    ck_assert_uint_eq(1, f->n);
    ck_assert_ptr_null(form_get(f, "b"));
    form_destroy(f);
    form_destroy(NULL);
}
END_TEST

static Suite *form_suite(void)
{
    Suite *s = suite_create("form");
    TCase *tc = tcase_create("decode");

    tcase_add_test(tc, form_parse_decodes_percent_and_plus);
    tcase_add_test(tc, form_parse_keeps_order_and_empty_values);
    tcase_add_test(tc, form_parse_accepts_either_hex_case);
    tcase_add_test(tc, form_parse_reads_only_len_bytes);
    suite_add_tcase(s, tc);
    tc = tcase_create("refuse");
    tcase_add_test(tc, form_parse_refuses_bad_escapes);
    tcase_add_test(tc, form_parse_refuses_empty_pairs_and_keys);
    tcase_add_test(tc, form_parse_refuses_duplicate_keys);
    tcase_add_test(tc, form_parse_refuses_too_many_fields);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(form_suite, NULL, NULL);
