/* check_b64.c - unit tests for b64.c: RFC 4648 vectors both ways and the
 * strictness that keeps two texts from decoding to one signature. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "../check_main.h"

static void assert_decodes(const char *text, const char *want)
{
    unsigned char *out = NULL;
    size_t len = 99;

    ck_assert_int_eq(0, b64_decode(text, strlen(text), &out, &len));
    ck_assert_uint_eq(strlen(want), len);
    ck_assert_mem_eq(want, out, len);
    ck_assert_int_eq(0, out[len]);
    free(out);
}

static void assert_refused(const char *text)
{
    unsigned char *out = (unsigned char *)"sentinel";
    size_t len = 99;

    ck_assert_msg(b64_decode(text, strlen(text), &out, &len) == -1, "\"%s\" accepted", text);
    ck_assert_ptr_null(out);
    ck_assert_uint_eq(0, len);
}

START_TEST(b64_decode_matches_rfc4648_vectors)
{
    assert_decodes("", "");
    assert_decodes("Zg==", "f");
    assert_decodes("Zm8=", "fo");
    assert_decodes("Zm9v", "foo");
    assert_decodes("Zm9vYg==", "foob");
    assert_decodes("Zm9vYmE=", "fooba");
    assert_decodes("Zm9vYmFy", "foobar");
}
END_TEST

START_TEST(b64_decode_refuses_malformed_text)
{
    assert_refused("Zg=");        /* length not a multiple of 4 */
    assert_refused("Zm9v\nYmFy"); /* whitespace */
    assert_refused("Zm-_");       /* URL-safe alphabet */
    assert_refused("Z===");       /* three pads */
    assert_refused("Zg==Zg==");   /* padding in the middle */
    assert_refused("Zm9v YmE");
}
END_TEST

START_TEST(b64_encode_round_trips)
{
    const unsigned char bin[] = { 0, 1, 2, 0xfe, 0xff, 0x80, 0x7f };
    unsigned char *back = NULL;
    size_t len = 0;
    char *text = b64_encode(bin, sizeof(bin));

    ck_assert_ptr_nonnull(text);
    ck_assert_str_eq("AAEC/v+Afw==", text);
    ck_assert_int_eq(0, b64_decode(text, strlen(text), &back, &len));
    ck_assert_uint_eq(sizeof(bin), len);
    ck_assert_mem_eq(bin, back, len);
    free(back);
    free(text);
}
END_TEST

static Suite *b64_suite(void)
{
    Suite *s = suite_create("b64");
    TCase *tc = tcase_create("decode");

    tcase_add_test(tc, b64_decode_matches_rfc4648_vectors);
    tcase_add_test(tc, b64_decode_refuses_malformed_text);
    suite_add_tcase(s, tc);
    tc = tcase_create("encode");
    tcase_add_test(tc, b64_encode_round_trips);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(b64_suite, NULL, NULL);
