/* check_db_row.c - unit tests for the typed row accessors of db.c: a
 * malformed, missing or NULL column is an error, never a silent 0. No
 * server needed: rows are built by hand as db_query would fill them. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "../check_main.h"

/* A row of n columns holding the given texts; NULL means SQL NULL. */
static struct db_row row_of(unsigned int n, const char *const *texts)
{
    struct db_row r;

    memset(&r, 0, sizeof(r));
    r.ncols = n;
    for (unsigned int i = 0; i < n; i++) {
        r.is_null[i] = texts[i] == NULL;
        snprintf(r.col[i], DB_COL_MAX, "%s", texts[i] ? texts[i] : "");
    }
    return r;
}

START_TEST(db_row_int_reads_an_integer_in_range)
{
    const char *t[] = { "42", "-7" };
    struct db_row r = row_of(2, t);
    int64_t v = 0;

    ck_assert_int_eq(0, db_row_int(&r, 0, 0, 100, &v));
    ck_assert_int_eq(42, v);
    ck_assert_int_eq(0, db_row_int(&r, 1, -10, 10, &v));
    ck_assert_int_eq(-7, v);
}
END_TEST

START_TEST(db_row_int_refuses_malformed_text_instead_of_zero)
{
    const char *t[] = { "", "abc", "12x", " 3", "1.5", "99999999999999999999" };
    struct db_row r = row_of(6, t);
    int64_t v;

    for (unsigned int i = 0; i < 6; i++) {
        v = 5;
        ck_assert_msg(db_row_int(&r, i, INT64_MIN, INT64_MAX, &v) == -1, "column %u: %s", i, t[i]);
        ck_assert_int_eq(0, v);
    }
}
END_TEST

START_TEST(db_row_int_refuses_out_of_range_null_and_missing_columns)
{
    const char *t[] = { "101", NULL };
    struct db_row r = row_of(2, t);
    int64_t v;

    ck_assert_int_eq(-1, db_row_int(&r, 0, 0, 100, &v));
    ck_assert_int_eq(-1, db_row_int(&r, 1, 0, 100, &v));
    ck_assert_int_eq(-1, db_row_int(&r, 2, 0, 100, &v)); /* past ncols */
    ck_assert_int_eq(-1, db_row_int(&r, DB_COLS_MAX, 0, 100, &v));
}
END_TEST

START_TEST(db_row_cents_reads_decimal_exactly)
{
    const char *t[] = { "899.00", "0.01", "9999999999.99" };
    struct db_row r = row_of(3, t);
    int64_t v = 0;

    ck_assert_int_eq(0, db_row_cents(&r, 0, &v));
    ck_assert_int_eq(89900, v);
    ck_assert_int_eq(0, db_row_cents(&r, 1, &v));
    ck_assert_int_eq(1, v);
    ck_assert_int_eq(0, db_row_cents(&r, 2, &v));
    ck_assert(v == INT64_C(999999999999));
}
END_TEST

START_TEST(db_row_cents_refuses_malformed_and_null)
{
    const char *t[] = { "-1.00", "1.234", "x", NULL };
    struct db_row r = row_of(4, t);
    int64_t v;

    for (unsigned int i = 0; i < 4; i++) {
        v = 5;
        ck_assert_int_eq(-1, db_row_cents(&r, i, &v));
        ck_assert_int_eq(0, v);
    }
}
END_TEST

START_TEST(db_row_str_copies_and_refuses_what_does_not_fit)
{
    const char *t[] = { "PAY-1", NULL };
    struct db_row r = row_of(2, t);
    char small[4], buf[16];

    ck_assert_int_eq(0, db_row_str(&r, 0, buf, sizeof(buf)));
    ck_assert_str_eq("PAY-1", buf);
    ck_assert_int_eq(-1, db_row_str(&r, 0, small, sizeof(small)));
    ck_assert_str_eq("", small);
    ck_assert_int_eq(-1, db_row_str(&r, 1, buf, sizeof(buf)));
    ck_assert(db_row_is_null(&r, 1));
    ck_assert(!db_row_is_null(&r, 0));
}
END_TEST

START_TEST(db_param_int_formats_statuses_and_counts)
{
    char buf[DB_INT_BUF];

    ck_assert_str_eq("2", db_param_int(buf, 2));
    ck_assert_str_eq("-9223372036854775808", db_param_int(buf, INT64_MIN));
}
END_TEST

START_TEST(db_errstr_of_no_connection_is_empty)
{
    ck_assert_int_eq(0, db_errno(NULL));
    ck_assert_str_eq("", db_errstr(NULL));
}
END_TEST

static Suite *db_row_suite(void)
{
    Suite *s = suite_create("db_row");
    TCase *tc = tcase_create("int");

    tcase_add_test(tc, db_row_int_reads_an_integer_in_range);
    tcase_add_test(tc, db_row_int_refuses_malformed_text_instead_of_zero);
    tcase_add_test(tc, db_row_int_refuses_out_of_range_null_and_missing_columns);
    suite_add_tcase(s, tc);

    tc = tcase_create("cents");
    tcase_add_test(tc, db_row_cents_reads_decimal_exactly);
    tcase_add_test(tc, db_row_cents_refuses_malformed_and_null);
    suite_add_tcase(s, tc);

    tc = tcase_create("str");
    tcase_add_test(tc, db_row_str_copies_and_refuses_what_does_not_fit);
    suite_add_tcase(s, tc);

    tc = tcase_create("params");
    tcase_add_test(tc, db_param_int_formats_statuses_and_counts);
    tcase_add_test(tc, db_errstr_of_no_connection_is_empty);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(db_row_suite, NULL, NULL);
