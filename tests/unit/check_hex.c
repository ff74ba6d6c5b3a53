/* check_hex.c - unit tests for hex.c: every byte becomes two lowercase
 * digits, high nibble first, and the text ends with a NUL. */
#include <check.h>
#include <string.h>

#include "hex.h"
#include "../check_main.h"

START_TEST(hex_encode_writes_two_lowercase_digits_per_byte)
{
    const unsigned char in[] = { 0x00, 0x01, 0x7f, 0x80, 0xab, 0xff };
    char out[2 * sizeof(in) + 1];

    memset(out, 'x', sizeof(out));
    hex_encode(in, sizeof(in), out);
    ck_assert_str_eq(out, "00017f80abff");
}
END_TEST

START_TEST(hex_encode_of_nothing_is_the_empty_string)
{
    char out[1] = { 'x' };

    hex_encode((const unsigned char *)"", 0, out);
    ck_assert_str_eq(out, "");
}
END_TEST

static Suite *hex_suite(void)
{
    Suite *s = suite_create("hex");
    TCase *tc = tcase_create("encode");

    tcase_add_test(tc, hex_encode_writes_two_lowercase_digits_per_byte);
    tcase_add_test(tc, hex_encode_of_nothing_is_the_empty_string);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(hex_suite, NULL, NULL);
