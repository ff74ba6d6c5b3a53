/* check_http_route.c - http_route_lookup, the routing decision without a
 * connection: a route and its {param}, HEAD taken as GET, 405 with Allow,
 * 404, and escapes that would reach another resource refused. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "http_route.h"
#include "router.h"
#include "../check_main.h"

static struct http_resp resp;
static char param[HTTP_PARAM_MAX], allow[64];

/* The pattern of the route chosen for method and raw, or NULL on a miss
 * (resp then holds the error reply). */
static const char *route_of(const char *method, const char *raw)
{
    size_t n;
    const struct http_route *routes = router_routes(&n);
    int r;

    free(resp.body);
    memset(&resp, 0, sizeof resp);
    param[0] = '\0';
    r = http_route_lookup(routes, n, method, raw, param, &resp, allow, sizeof allow);
    ck_assert_int_lt(r, (int)n);
    return r >= 0 ? routes[r].pattern : NULL;
}

static void teardown(void)
{
    free(resp.body);
    memset(&resp, 0, sizeof resp);
}

START_TEST(a_route_is_found_with_its_param)
{
    ck_assert_pstr_eq("/pay/callback", route_of("POST", "/pay/callback"));
    ck_assert_pstr_eq("/order/{order_no}/ship", route_of("POST", "/order/O%2D1/ship"));
    ck_assert_str_eq("O-1", param);
    ck_assert_pstr_eq("/order/{order_no}", route_of("HEAD", "/order/O1"));
}
END_TEST

START_TEST(a_wrong_method_is_405_with_allow)
{
    ck_assert_ptr_null(route_of("GET", "/order/create"));
    ck_assert_int_eq(405, resp.status);
    ck_assert_str_eq("POST", allow);
}
END_TEST

START_TEST(an_unknown_path_is_404)
{
    ck_assert_ptr_null(route_of("GET", "/nowhere"));
    ck_assert_int_eq(404, resp.status);
}
END_TEST

START_TEST(an_escaped_slash_or_nul_is_400)
{
    ck_assert_ptr_null(route_of("POST", "/order/X%2Fcancel"));
    ck_assert_int_eq(400, resp.status);
    ck_assert_ptr_null(route_of("GET", "/order/A%00junk"));
    ck_assert_int_eq(400, resp.status);
}
END_TEST

static Suite *http_route_suite(void)
{
    Suite *s = suite_create("http_route");
    TCase *tc = tcase_create("lookup");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, a_route_is_found_with_its_param);
    tcase_add_test(tc, a_wrong_method_is_405_with_allow);
    tcase_add_test(tc, an_unknown_path_is_404);
    tcase_add_test(tc, an_escaped_slash_or_nul_is_400);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(http_route_suite, NULL, NULL);
