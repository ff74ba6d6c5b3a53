/* check_jsonutil.c - unit tests for jsonutil.c: each _or_reply helper's
 * accepted inputs (no reply written) and refused ones (400 BAD_REQUEST
 * whose body names the field). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "http.h"
#include "json_reply.h"
#include "jsonutil.h"
#include "validate.h"
#include "../check_main.h"

#define SENTINEL INT64_C(424242) /* proves failures reset the out-param */

/* Checks that resp holds a 400 BAD_REQUEST whose body mentions needle,
 * then frees the body and clears resp for the next call. */
static void assert_bad_request(struct http_resp *resp, const char *needle)
{
    ck_assert_int_eq(400, resp->status);
    ck_assert_ptr_nonnull(resp->body);
    ck_assert_msg(strstr(resp->body, "BAD_REQUEST") != NULL, "no BAD_REQUEST code in %s",
                  resp->body);
    ck_assert_msg(strstr(resp->body, needle) != NULL, "\"%s\" not named in %s", needle, resp->body);
    free(resp->body);
    memset(resp, 0, sizeof(*resp));
}

static void assert_no_reply(const struct http_resp *resp)
{
    ck_assert_int_eq(0, resp->status);
    ck_assert_ptr_null(resp->body);
}

/* Parses text with json_parse_object_or_reply, expecting success. */
static cJSON *parse_ok(const char *text, size_t len)
{
    struct http_resp resp = { 0 };
    cJSON *root = json_parse_object_or_reply(text, len, &resp);

    ck_assert_msg(root != NULL, "refused: %.*s", (int)len, text);
    assert_no_reply(&resp);
    return root;
}

static cJSON *parse_ok_str(const char *text)
{
    return parse_ok(text, strlen(text));
}

/* Parses text expecting a 400 that names the body. */
static void parse_refused(const char *text, size_t len)
{
    struct http_resp resp = { 0 };

    ck_assert_ptr_null(json_parse_object_or_reply(text, len, &resp));
    assert_bad_request(&resp, "body");
}

static void parse_refused_str(const char *text)
{
    parse_refused(text, strlen(text));
}

/* Runs json_get_id_or_reply on {"order_no": <json_value>} and expects 400. */
static void id_refused(const char *json)
{
    struct http_resp resp = { 0 };
    char out[ID_BUF] = "sentinel";
    cJSON *obj = cJSON_Parse(json);

    ck_assert_ptr_nonnull(obj);
    ck_assert_int_eq(-1, json_get_id_or_reply(obj, "order_no", out, &resp));
    ck_assert_str_eq("", out);
    assert_bad_request(&resp, "order_no");
    cJSON_Delete(obj);
}

static void money_refused(const char *json)
{
    struct http_resp resp = { 0 };
    int64_t cents = SENTINEL;
    cJSON *obj = cJSON_Parse(json);

    ck_assert_ptr_nonnull(obj);
    ck_assert_int_eq(-1, json_get_money_or_reply(obj, "amount", &cents, &resp));
    ck_assert_int_eq(0, cents);
    assert_bad_request(&resp, "amount");
    cJSON_Delete(obj);
}

static void quantity_refused(const char *json)
{
    struct http_resp resp = { 0 };
    int64_t q = SENTINEL;
    cJSON *obj = cJSON_Parse(json);

    ck_assert_ptr_nonnull(obj);
    ck_assert_int_eq(-1, json_get_int_or_reply(obj, "quantity", 1, 1000, &q, &resp));
    ck_assert_int_eq(0, q);
    assert_bad_request(&resp, "quantity");
    cJSON_Delete(obj);
}

static int64_t quantity_ok(const char *json)
{
    struct http_resp resp = { 0 };
    int64_t q = SENTINEL;
    cJSON *obj = cJSON_Parse(json);

    ck_assert_ptr_nonnull(obj);
    ck_assert_int_eq(0, json_get_int_or_reply(obj, "quantity", 1, 1000, &q, &resp));
    assert_no_reply(&resp);
    cJSON_Delete(obj);
    return q;
}

/* --- json_parse_object_or_reply --- */

START_TEST(json_parse_accepts_object)
{
    cJSON_Delete(parse_ok_str("{\"a\":1}"));
    cJSON_Delete(parse_ok_str("{}"));
    cJSON_Delete(parse_ok_str("{\"a\":{\"b\":[1,2]}}"));
}
END_TEST

START_TEST(json_parse_allows_surrounding_whitespace)
{
    static const char text[] = " \r\n\t{\"a\":1} \r\n\t";

    cJSON_Delete(parse_ok_str(text));
}
END_TEST

START_TEST(json_parse_reads_only_len_bytes)
{
    static const char text[] = "{\"a\":1}garbage";
    cJSON *root = parse_ok(text, 7);

    ck_assert_int_eq(1, cJSON_GetObjectItemCaseSensitive(root, "a")->valueint);
    cJSON_Delete(root);
}
END_TEST

START_TEST(json_parse_rejects_non_objects)
{
    parse_refused_str("[1,2]");
    parse_refused_str("\"text\"");
    parse_refused_str("42");
    parse_refused_str("null");
    parse_refused_str("true");
}
END_TEST

START_TEST(json_parse_rejects_empty_body)
{
    parse_refused("", 0);
    parse_refused(NULL, 0);
    parse_refused_str("   ");
}
END_TEST

START_TEST(json_parse_rejects_malformed_json)
{
    parse_refused_str("{\"a\":}");
    parse_refused_str("{\"a\":1");
    parse_refused_str("{'a':1}");
    parse_refused_str("order_no=1");
}
END_TEST

START_TEST(json_parse_rejects_trailing_garbage)
{
    parse_refused_str("{\"a\":1} x");
    parse_refused_str("{\"a\":1}{}");
    parse_refused_str("{\"a\":1},");
}
END_TEST

START_TEST(json_parse_rejects_nul_byte)
{
    static const char trailing[] = "{\"a\":\"b\"}\0";
    static const char inside[] = "{\"a\":\"b\0c\"}";

    parse_refused(trailing, sizeof(trailing) - 1);
    parse_refused(inside, sizeof(inside) - 1);
}
END_TEST

START_TEST(json_parse_rejects_escaped_nul_in_string)
{
    parse_refused_str("{\"order_no\":\"ord1\\u0000junk\"}");
    parse_refused_str("{\"order_no\\u0000x\":\"ord1\"}");
}
END_TEST

START_TEST(json_parse_accepts_escaped_backslash_before_u0000)
{
    /* The string is the six characters \u0000, not a NUL. */
    cJSON_Delete(parse_ok_str("{\"note\":\"\\\\u0000\"}"));
}
END_TEST

/* --- json_get_id_or_reply --- */

START_TEST(json_get_id_copies_valid_identifier)
{
    struct http_resp resp = { 0 };
    char out[ID_BUF];
    cJSON *obj = cJSON_Parse("{\"order_no\":\"ORD-2024.01:a_b\"}");

    ck_assert_int_eq(0, json_get_id_or_reply(obj, "order_no", out, &resp));
    ck_assert_str_eq("ORD-2024.01:a_b", out);
    assert_no_reply(&resp);
    cJSON_Delete(obj);
}
END_TEST

START_TEST(json_get_id_accepts_64_characters)
{
    struct http_resp resp = { 0 };
    char id[ID_BUF], out[ID_BUF];
    cJSON *obj = cJSON_CreateObject();

    memset(id, 'x', ID_MAX_LEN);
    id[ID_MAX_LEN] = '\0';
    cJSON_AddStringToObject(obj, "order_no", id);
    ck_assert_int_eq(0, json_get_id_or_reply(obj, "order_no", out, &resp));
    ck_assert_str_eq(id, out);
    assert_no_reply(&resp);
    cJSON_Delete(obj);
}
END_TEST

START_TEST(json_get_id_rejects_missing_field)
{
    id_refused("{\"pay_no\":\"P1\"}");
    id_refused("{\"ORDER_NO\":\"O1\"}");
}
END_TEST

START_TEST(json_get_id_rejects_non_string)
{
    id_refused("{\"order_no\":12345}");
    id_refused("{\"order_no\":null}");
    id_refused("{\"order_no\":true}");
    id_refused("{\"order_no\":[\"O1\"]}");
    id_refused("{\"order_no\":{}}");
}
END_TEST

START_TEST(json_get_id_rejects_invalid_identifier)
{
    id_refused("{\"order_no\":\"\"}");
    id_refused("{\"order_no\":\"O 1\"}");
    id_refused("{\"order_no\":\"O/1\"}");
    id_refused("{\"order_no\":\"O'1\"}");
    id_refused("{\"order_no\":\"caf\xc3\xa9\"}");
    id_refused("{\"order_no\":\"12345678901234567890123456789012"
               "345678901234567890123456789012345\"}"); /* 65 chars */
}
END_TEST

START_TEST(json_get_id_rejects_duplicate_field)
{
    id_refused("{\"order_no\":\"O1\",\"order_no\":\"O2\"}");
    id_refused("{\"order_no\":\"O1\",\"order_no\":\"O1\"}");
}
END_TEST

/* --- json_get_money_or_reply --- */

START_TEST(json_get_money_reads_cents)
{
    struct http_resp resp = { 0 };
    int64_t cents = SENTINEL;
    cJSON *obj = cJSON_Parse("{\"amount\":\"899.00\",\"zero\":\"0.00\"}");

    ck_assert_int_eq(0, json_get_money_or_reply(obj, "amount", &cents, &resp));
    ck_assert_int_eq(89900, cents);
    ck_assert_int_eq(0, json_get_money_or_reply(obj, "zero", &cents, &resp));
    ck_assert_int_eq(0, cents);
    assert_no_reply(&resp);
    cJSON_Delete(obj);
}
END_TEST

START_TEST(json_get_money_rejects_json_number)
{
    money_refused("{\"amount\":899.00}");
    money_refused("{\"amount\":899}");
}
END_TEST

START_TEST(json_get_money_rejects_malformed_string)
{
    money_refused("{\"amount\":\"\"}");
    money_refused("{\"amount\":\"-1.00\"}");
    money_refused("{\"amount\":\"1e3\"}");
    money_refused("{\"amount\":\"1.000\"}");
    money_refused("{\"amount\":\"12345678901\"}");
    money_refused("{\"amount\":\" 1.00\"}");
}
END_TEST

START_TEST(json_get_money_rejects_missing_or_null)
{
    money_refused("{}");
    money_refused("{\"amount\":null}");
}
END_TEST

START_TEST(json_get_money_rejects_duplicate_field)
{
    money_refused("{\"amount\":\"1.00\",\"amount\":\"899.00\"}");
}
END_TEST

START_TEST(json_get_money_message_shows_format)
{
    struct http_resp resp = { 0 };
    int64_t cents;
    cJSON *obj = cJSON_Parse("{\"amount\":\"x\"}");

    ck_assert_int_eq(-1, json_get_money_or_reply(obj, "amount", &cents, &resp));
    ck_assert_ptr_nonnull(strstr(resp.body, "899.00"));
    assert_bad_request(&resp, "amount");
    cJSON_Delete(obj);
}
END_TEST

/* --- json_get_int_or_reply --- */

START_TEST(json_get_int_accepts_range_bounds)
{
    ck_assert_int_eq(1, quantity_ok("{\"quantity\":1}"));
    ck_assert_int_eq(1000, quantity_ok("{\"quantity\":1000}"));
    ck_assert_int_eq(42, quantity_ok("{\"quantity\":42}"));
}
END_TEST

START_TEST(json_get_int_accepts_integral_number_forms)
{
    ck_assert_int_eq(2, quantity_ok("{\"quantity\":2.0}"));
    ck_assert_int_eq(1000, quantity_ok("{\"quantity\":1e3}"));
}
END_TEST

START_TEST(json_get_int_rejects_out_of_range)
{
    quantity_refused("{\"quantity\":0}");
    quantity_refused("{\"quantity\":1001}");
    quantity_refused("{\"quantity\":-1}");
    quantity_refused("{\"quantity\":1e19}");
    quantity_refused("{\"quantity\":-1e19}");
    quantity_refused("{\"quantity\":1e400}");
}
END_TEST

START_TEST(json_get_int_rejects_fraction)
{
    quantity_refused("{\"quantity\":1.5}");
    quantity_refused("{\"quantity\":999.999}");
}
END_TEST

START_TEST(json_get_int_rejects_non_number)
{
    quantity_refused("{\"quantity\":\"1\"}");
    quantity_refused("{\"quantity\":null}");
    quantity_refused("{\"quantity\":true}");
    quantity_refused("{\"quantity\":[1]}");
    quantity_refused("{}");
}
END_TEST

START_TEST(json_get_int_rejects_nan)
{
    struct http_resp resp = { 0 };
    int64_t q = SENTINEL;
    cJSON *obj = cJSON_CreateObject();

    /* JSON cannot spell NaN, but a built object can hold one. */
    cJSON_AddNumberToObject(obj, "quantity", NAN);
    ck_assert_int_eq(-1, json_get_int_or_reply(obj, "quantity", 1, 1000, &q, &resp));
    ck_assert_int_eq(0, q);
    assert_bad_request(&resp, "quantity");
    cJSON_Delete(obj);
}
END_TEST

START_TEST(json_get_int_rejects_duplicate_field)
{
    quantity_refused("{\"quantity\":1,\"quantity\":2}");
}
END_TEST

START_TEST(json_get_int_message_states_the_range)
{
    struct http_resp resp = { 0 };
    int64_t q;
    cJSON *obj = cJSON_Parse("{\"quantity\":0}");

    ck_assert_int_eq(-1, json_get_int_or_reply(obj, "quantity", 1, 1000, &q, &resp));
    assert_bad_request(&resp, "quantity must be an integer from 1 to 1000");
    cJSON_Delete(obj);
}
END_TEST

START_TEST(json_get_int_handles_full_int64_range)
{
    struct http_resp resp = { 0 };
    int64_t v = SENTINEL;
    cJSON *obj = cJSON_Parse("{\"min\":-9223372036854775808,"
                             "\"max\":9223372036854775807}");

    ck_assert_int_eq(0, json_get_int_or_reply(obj, "min", INT64_MIN, INT64_MAX, &v, &resp));
    ck_assert_int_eq(INT64_MIN, v);
    assert_no_reply(&resp);
    /* 2^63 - 1 is not a double; it rounds to 2^63, outside int64_t. */
    ck_assert_int_eq(-1, json_get_int_or_reply(obj, "max", INT64_MIN, INT64_MAX, &v, &resp));
    assert_bad_request(&resp, "max");
    cJSON_Delete(obj);
}
END_TEST

/* --- the pure readers shared with the configuration --- */

START_TEST(json_duplicate_key_names_the_repeated_member)
{
    cJSON *root = NULL;

    ck_assert_int_eq(JSON_OK, json_parse_object("{\"a\":1,\"b\":2,\"a\":3}", 19, &root));
    ck_assert_str_eq("a", json_duplicate_key(root));
    cJSON_Delete(root);
    ck_assert_int_eq(JSON_OK, json_parse_object("{\"a\":{\"x\":1},\"b\":{\"x\":1}}", 25, &root));
    ck_assert_ptr_null(json_duplicate_key(root));
    cJSON_Delete(root);
}
END_TEST

START_TEST(json_parse_object_classifies_failures)
{
    cJSON *root = NULL;

    ck_assert_int_eq(JSON_NUL, json_parse_object("{\"a\":\"\\u0000\"}", 14, &root));
    ck_assert_ptr_null(root);
    ck_assert_int_eq(JSON_NOT_OBJECT, json_parse_object("{} {}", 5, &root));
    ck_assert_ptr_null(root);
    ck_assert_int_eq(JSON_NOT_OBJECT, json_parse_object("[]", 2, &root));
    ck_assert_ptr_null(root);
}
END_TEST

START_TEST(json_int_value_checks_range_before_converting)
{
    cJSON *n = cJSON_CreateNumber(1e34);
    int64_t v = SENTINEL;

    ck_assert_int_eq(JSON_RANGE, json_int_value(n, 1, 1024, &v));
    ck_assert_int_eq(0, v);
    cJSON_SetNumberValue(n, 9223372036854775807.0); /* rounds to 2^63 */
    ck_assert_int_eq(JSON_RANGE, json_int_value(n, INT64_MIN, INT64_MAX, &v));
    cJSON_SetNumberValue(n, NAN);
    ck_assert_int_eq(JSON_RANGE, json_int_value(n, INT64_MIN, INT64_MAX, &v));
    cJSON_SetNumberValue(n, 2.5);
    ck_assert_int_eq(JSON_FRACTION, json_int_value(n, 0, 10, &v));
    cJSON_SetNumberValue(n, 10);
    ck_assert_int_eq(JSON_OK, json_int_value(n, 0, 10, &v));
    ck_assert_int_eq(10, v);
    cJSON_Delete(n);
}
END_TEST

static Suite *jsonutil_suite(void)
{
    Suite *s = suite_create("jsonutil");
    TCase *tc;

    tc = tcase_create("parse_object");
    tcase_add_test(tc, json_parse_accepts_object);
    tcase_add_test(tc, json_parse_allows_surrounding_whitespace);
    tcase_add_test(tc, json_parse_reads_only_len_bytes);
    tcase_add_test(tc, json_parse_rejects_non_objects);
    tcase_add_test(tc, json_parse_rejects_empty_body);
    tcase_add_test(tc, json_parse_rejects_malformed_json);
    tcase_add_test(tc, json_parse_rejects_trailing_garbage);
    tcase_add_test(tc, json_parse_rejects_nul_byte);
    tcase_add_test(tc, json_parse_rejects_escaped_nul_in_string);
    tcase_add_test(tc, json_parse_accepts_escaped_backslash_before_u0000);
    suite_add_tcase(s, tc);

    tc = tcase_create("pure readers");
    tcase_add_test(tc, json_duplicate_key_names_the_repeated_member);
    tcase_add_test(tc, json_parse_object_classifies_failures);
    tcase_add_test(tc, json_int_value_checks_range_before_converting);
    suite_add_tcase(s, tc);

    tc = tcase_create("get_id");
    tcase_add_test(tc, json_get_id_copies_valid_identifier);
    tcase_add_test(tc, json_get_id_accepts_64_characters);
    tcase_add_test(tc, json_get_id_rejects_missing_field);
    tcase_add_test(tc, json_get_id_rejects_non_string);
    tcase_add_test(tc, json_get_id_rejects_invalid_identifier);
    tcase_add_test(tc, json_get_id_rejects_duplicate_field);
    suite_add_tcase(s, tc);

    tc = tcase_create("get_money");
    tcase_add_test(tc, json_get_money_reads_cents);
    tcase_add_test(tc, json_get_money_rejects_json_number);
    tcase_add_test(tc, json_get_money_rejects_malformed_string);
    tcase_add_test(tc, json_get_money_rejects_missing_or_null);
    tcase_add_test(tc, json_get_money_rejects_duplicate_field);
    tcase_add_test(tc, json_get_money_message_shows_format);
    suite_add_tcase(s, tc);

    tc = tcase_create("get_int");
    tcase_add_test(tc, json_get_int_accepts_range_bounds);
    tcase_add_test(tc, json_get_int_accepts_integral_number_forms);
    tcase_add_test(tc, json_get_int_rejects_out_of_range);
    tcase_add_test(tc, json_get_int_rejects_fraction);
    tcase_add_test(tc, json_get_int_rejects_non_number);
    tcase_add_test(tc, json_get_int_rejects_nan);
    tcase_add_test(tc, json_get_int_rejects_duplicate_field);
    tcase_add_test(tc, json_get_int_message_states_the_range);
    tcase_add_test(tc, json_get_int_handles_full_int64_range);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(jsonutil_suite, NULL, NULL);
