/* check_netaddr.c - client addresses as the service counts them: IPv6 by
 * prefix, IPv4-mapped as IPv4, trusted-network lists, and the client a
 * trusted proxy names in X-Forwarded-For. */
#include <check.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "netaddr.h"
#include "../check_main.h"

static struct netaddr addr(const char *text)
{
    struct netaddr a;

    ck_assert_msg(netaddr_parse(text, &a) == 0, "%s", text);
    return a;
}

static const char *fmt(const struct netaddr *a)
{
    static char buf[NETADDR_TEXT_MAX];

    netaddr_format(a, buf);
    return buf;
}

START_TEST(ipv6_clients_are_keyed_by_their_prefix)
{
    struct netaddr a = addr("2001:db8:1:2:aaaa::1"), b = addr("2001:db8:1:2:ffff::9");
    struct netaddr c = addr("2001:db8:1:3::1"), ka, kb, kc;

    netaddr_key(&a, 64, &ka);
    netaddr_key(&b, 64, &kb);
    netaddr_key(&c, 64, &kc);
    ck_assert(netaddr_equal(&ka, &kb));
    ck_assert(!netaddr_equal(&ka, &kc));
    ck_assert_str_eq("2001:db8:1:2::", fmt(&ka));
    netaddr_key(&a, 128, &ka);
    netaddr_key(&b, 128, &kb);
    ck_assert(!netaddr_equal(&ka, &kb));
    netaddr_key(&a, 56, &ka);
    netaddr_key(&c, 56, &kc);
    ck_assert(netaddr_equal(&ka, &kc));
    a = addr("10.1.2.3"); /* IPv4 keeps every bit */
    netaddr_key(&a, 64, &ka);
    ck_assert_str_eq("10.1.2.3", fmt(&ka));
}
END_TEST

START_TEST(ipv4_mapped_addresses_count_as_ipv4)
{
    struct sockaddr_in6 s6 = { 0 };
    struct netaddr a, b = addr("192.0.2.7");

    s6.sin6_family = AF_INET6;
    ck_assert_int_eq(1, inet_pton(AF_INET6, "::ffff:192.0.2.7", &s6.sin6_addr));
    netaddr_from_sockaddr((const struct sockaddr *)&s6, sizeof(s6), &a);
    ck_assert(netaddr_equal(&a, &b));
    ck_assert_int_eq(4, a.len);
    ck_assert(netaddr_equal(&a, &(struct netaddr){ 0 }) == false);
    netaddr_from_sockaddr(NULL, 0, &a);
    ck_assert_int_eq(0, a.len);
    ck_assert_str_eq("-", fmt(&a));
}
END_TEST

START_TEST(lists_hold_addresses_and_networks)
{
    struct netaddr_list l;
    char err[128];
    struct netaddr a;

    ck_assert_int_eq(
        0, netaddr_list_parse(" 127.0.0.1, 10.0.0.0/8 ,2001:db8::/32,", &l, err, sizeof(err)));
    ck_assert_uint_eq(3, l.n);
    ck_assert(netaddr_list_contains(&l, (a = addr("127.0.0.1"), &a)));
    ck_assert(!netaddr_list_contains(&l, (a = addr("127.0.0.2"), &a)));
    ck_assert(netaddr_list_contains(&l, (a = addr("10.200.3.4"), &a)));
    ck_assert(!netaddr_list_contains(&l, (a = addr("11.0.0.1"), &a)));
    ck_assert(netaddr_list_contains(&l, (a = addr("2001:db8:ffff::1"), &a)));
    ck_assert(!netaddr_list_contains(&l, (a = addr("2001:db9::1"), &a)));
    ck_assert(netaddr_list_contains(&l, (a = addr("::ffff:10.9.9.9"), &a)));
    ck_assert_int_eq(0, netaddr_list_parse("::ffff:10.0.0.0/104", &l, err, sizeof(err)));
    ck_assert_uint_eq(1, l.n);
    ck_assert(netaddr_list_contains(&l, (a = addr("10.200.3.4"), &a)));
    ck_assert(!netaddr_list_contains(&l, (a = addr("11.0.0.1"), &a)));
    ck_assert_int_eq(0, netaddr_list_parse("", &l, err, sizeof(err)));
    ck_assert_uint_eq(0, l.n);
    ck_assert(!netaddr_list_contains(&l, (a = addr("127.0.0.1"), &a)));
}
END_TEST

START_TEST(lists_refuse_what_is_not_a_network)
{
    const char *bad[] = { "localhost",      "10.0.0.0/33",      "10.0.0.0/",       "10.0.0.0/-1",
                          "2001:db8::/129", "1.2.3.4,,5.6.7.8", "1.2.3.4 5.6.7.8", "10.0.0.0/8x" };
    struct netaddr_list l;
    char err[128];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(netaddr_list_parse(bad[i], &l, err, sizeof(err)) == -1, "took %s", bad[i]);
        ck_assert_uint_eq(0, l.n);
    }
}
END_TEST

START_TEST(forwarded_client_is_the_rightmost_untrusted_address)
{
    struct netaddr_list l;
    struct netaddr a;
    char err[128];

    ck_assert_int_eq(0, netaddr_list_parse("127.0.0.1, 10.0.0.0/8", &l, err, sizeof(err)));
    ck_assert_int_eq(0, netaddr_forwarded_client("192.0.2.1", &l, &a));
    ck_assert_str_eq("192.0.2.1", fmt(&a));
    /* The client wrote the left entries itself: only what our proxies
     * appended counts. */
    ck_assert_int_eq(0, netaddr_forwarded_client("6.6.6.6, 192.0.2.1, 10.1.1.1", &l, &a));
    ck_assert_str_eq("192.0.2.1", fmt(&a));
    ck_assert_int_eq(0, netaddr_forwarded_client("2001:db8::5,10.0.0.2", &l, &a));
    ck_assert_str_eq("2001:db8::5", fmt(&a));
    ck_assert_int_eq(-1, netaddr_forwarded_client("10.0.0.1, 127.0.0.1", &l, &a));
    ck_assert_int_eq(-1, netaddr_forwarded_client("192.0.2.1, junk", &l, &a));
    ck_assert_int_eq(-1, netaddr_forwarded_client("", &l, &a));
    ck_assert_int_eq(-1, netaddr_forwarded_client("192.0.2.1,", &l, &a));
    ck_assert_int_eq(-1, netaddr_forwarded_client(NULL, &l, &a));
    ck_assert_int_eq(0, a.len);
}
END_TEST

static Suite *netaddr_suite(void)
{
    Suite *s = suite_create("netaddr");
    TCase *tc = tcase_create("netaddr");

    tcase_add_test(tc, ipv6_clients_are_keyed_by_their_prefix);
    tcase_add_test(tc, ipv4_mapped_addresses_count_as_ipv4);
    tcase_add_test(tc, lists_hold_addresses_and_networks);
    tcase_add_test(tc, lists_refuse_what_is_not_a_network);
    tcase_add_test(tc, forwarded_client_is_the_rightmost_untrusted_address);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(netaddr_suite, NULL, NULL);
