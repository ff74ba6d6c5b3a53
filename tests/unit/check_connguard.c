/* check_connguard.c - admission by the connection guard without sockets:
 * IPv6 clients counted by their prefix, the reserved slots, eviction of
 * the largest holder's oldest connection still waiting for its headers,
 * and trusted proxies. Descriptors are -1: nothing is ever shut down. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "connguard.h"
#include "../check_main.h"

static struct connguard *guard(int max, int per_addr, int reserved, int below, int v6_prefix,
                               const char *trusted)
{
    struct connguard_limits lim = { .max_conns = max,
                                    .max_per_addr = per_addr,
                                    .reserved = reserved,
                                    .reserved_below = below,
                                    .v6_prefix = v6_prefix,
                                    .header_ms = 60000,
                                    .body_ms = 60000 };
    char err[128];

    ck_assert_int_eq(0, netaddr_list_parse(trusted, &lim.trusted, err, sizeof(err)));
    return connguard_create(&lim, NULL);
}

static struct connguard_conn *from(struct connguard *g, const char *addr)
{
    struct sockaddr_in6 s6 = { 0 };
    struct sockaddr_in s4 = { 0 };

    if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1) {
        s4.sin_family = AF_INET;
        return connguard_accept(g, -1, (struct sockaddr *)&s4, sizeof(s4));
    }
    ck_assert_int_eq(1, inet_pton(AF_INET6, addr, &s6.sin6_addr));
    s6.sin6_family = AF_INET6;
    return connguard_accept(g, -1, (struct sockaddr *)&s6, sizeof(s6));
}

START_TEST(ipv6_clients_are_capped_by_their_prefix)
{
    struct connguard *g = guard(100, 2, 0, 1, 64, "");
    struct connguard_conn *a = from(g, "2001:db8:0:1::1"), *b = from(g, "2001:db8:0:1::2");

    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_null(from(g, "2001:db8:0:1:ffff::3")); /* the same /64: a third */
    ck_assert_ptr_nonnull(from(g, "2001:db8:0:2::1"));   /* the next /64 */
    connguard_close(g, a);
    ck_assert_ptr_nonnull(from(g, "2001:db8:0:1::9"));
    connguard_destroy(g);

    g = guard(100, 2, 0, 1, 128, ""); /* every address its own */
    ck_assert_ptr_nonnull(from(g, "2001:db8::1"));
    ck_assert_ptr_nonnull(from(g, "2001:db8::1"));
    ck_assert_ptr_nonnull(from(g, "2001:db8::2"));
    ck_assert_ptr_null(from(g, "2001:db8::1"));
    connguard_destroy(g);
}
END_TEST

START_TEST(reserved_slots_go_to_small_holders_only)
{
    struct connguard *g = guard(8, 0, 2, 2, 64, "");
    int kept = 0;

    for (int i = 0; i < 8; i++)
        kept += from(g, "10.0.0.1") != NULL;
    ck_assert_int_eq(6, kept); /* the shared part */
    ck_assert_ptr_nonnull(from(g, "10.0.0.2"));
    ck_assert_ptr_nonnull(from(g, "10.0.0.2"));
    ck_assert_int_eq(8, connguard_count(g));
    connguard_destroy(g);
}
END_TEST

START_TEST(full_guard_evicts_the_largest_holders_oldest_waiting_connection)
{
    struct connguard *g = guard(4, 0, 0, 2, 64, "");
    struct connguard_conn *busy = from(g, "10.0.0.1"), *old = from(g, "10.0.0.1");

    ck_assert_ptr_nonnull(from(g, "10.0.0.1"));
    ck_assert_ptr_nonnull(from(g, "10.0.0.2"));
    connguard_phase(busy, CONNGUARD_BODY);      /* mid-request: never cut */
    ck_assert_ptr_nonnull(from(g, "10.0.0.3")); /* room made: old went */
    ck_assert_int_eq(4, connguard_count(g));
    ck_assert_ptr_null(from(g, "10.0.0.1"));    /* the holder makes no room */
    connguard_close(g, old);                    /* closed by the library later */
    ck_assert_int_eq(4, connguard_count(g));    /* uncounted once, not twice */
    ck_assert_ptr_nonnull(from(g, "10.0.0.4")); /* 10.0.0.1 still holds 2 */
    connguard_destroy(g);
}
END_TEST

/* When no client holds many more than the newcomer, the connection that
 * delivers least goes, whoever holds it: the oldest waiting for its
 * headers, else the slowest body; never one being handled. */
START_TEST(full_guard_evicts_the_least_delivering_connection_whoever_holds_it)
{
    struct connguard *g = guard(3, 0, 0, 2, 64, "");
    struct connguard_conn *a = from(g, "10.0.0.1"), *b = from(g, "10.0.0.2"),
                          *c = from(g, "10.0.0.3");

    connguard_phase(a, CONNGUARD_BODY);
    connguard_phase(b, CONNGUARD_BODY);
    connguard_progress(a, 100000);              /* fast */
    connguard_progress(b, 1);                   /* a trickle */
    ck_assert_ptr_nonnull(from(g, "10.0.0.4")); /* c, waiting for its headers, went */
    connguard_close(g, c);
    ck_assert_ptr_nonnull(from(g, "10.0.0.5")); /* the newcomer 10.0.0.4 is waiting too */
    ck_assert_int_eq(3, connguard_count(g));
    connguard_destroy(g);

    g = guard(2, 0, 0, 2, 64, "");
    a = from(g, "10.0.0.1");
    b = from(g, "10.0.0.2");
    connguard_phase(a, CONNGUARD_BODY);
    connguard_phase(b, CONNGUARD_BODY);
    connguard_progress(a, 100000);
    connguard_progress(b, 1);
    ck_assert_ptr_nonnull(from(g, "10.0.0.3")); /* the slow body b went */
    connguard_phase(a, CONNGUARD_BUSY);
    ck_assert_ptr_nonnull(from(g, "10.0.0.4")); /* then the newcomer waiting for headers */
    connguard_destroy(g);

    g = guard(1, 0, 0, 2, 64, "");
    a = from(g, "10.0.0.1");
    connguard_phase(a, CONNGUARD_BUSY);
    ck_assert_ptr_null(from(g, "10.0.0.2")); /* a request being handled is never cut */
    connguard_destroy(g);
}
END_TEST

START_TEST(trusted_proxies_are_not_capped_or_evicted)
{
    struct connguard *g = guard(4, 1, 0, 2, 64, "10.9.0.0/16");

    for (int i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(from(g, "10.9.1.1"));
    ck_assert_ptr_null(from(g, "10.0.0.1")); /* full, and the proxy stays */
    connguard_destroy(g);
}
END_TEST

/* Every /64 of one /56 under its own cap still counts toward the /56's,
 * and every /56 of a /48 toward the /48's; IPv4 and trusted proxies are
 * not aggregated. */
START_TEST(ipv6_networks_are_capped_per_56_and_per_48)
{
    struct connguard_limits lim = { .max_conns = 1000,
                                    .max_per_addr = 2,
                                    .reserved_below = 1,
                                    .v6_prefix = 64,
                                    .header_ms = 60000,
                                    .body_ms = 60000,
                                    .max_per_v6_56 = 3,
                                    .max_per_v6_48 = 5 };
    struct connguard *g = connguard_create(&lim, NULL);
    struct connguard_conn *first;

    ck_assert_ptr_nonnull(first = from(g, "2001:db8:0:100::1")); /* /56 2001:db8:0:100:: */
    ck_assert_ptr_nonnull(from(g, "2001:db8:0:101::1"));
    ck_assert_ptr_nonnull(from(g, "2001:db8:0:1ff::1"));
    ck_assert_ptr_null(from(g, "2001:db8:0:180::1"));    /* a fresh /64, but the /56 is full */
    ck_assert_ptr_nonnull(from(g, "2001:db8:0:200::1")); /* the next /56 of the /48 */
    ck_assert_ptr_nonnull(from(g, "2001:db8:0:300::1"));
    ck_assert_ptr_null(from(g, "2001:db8:0:400::1")); /* the /48 holds 5 */
    ck_assert_ptr_nonnull(from(g, "2001:db8:1::1"));  /* another /48 */
    connguard_close(g, first);
    ck_assert_ptr_nonnull(from(g, "2001:db8:0:180::1")); /* room again in both */
    for (int i = 0; i < 10; i++) {
        char a[32];

        snprintf(a, sizeof a, "192.0.2.%d", i);
        ck_assert_ptr_nonnull(from(g, a));
    }
    connguard_destroy(g);
}
END_TEST

static Suite *connguard_suite(void)
{
    Suite *s = suite_create("connguard");
    TCase *tc = tcase_create("admission");

    tcase_add_test(tc, ipv6_clients_are_capped_by_their_prefix);
    tcase_add_test(tc, reserved_slots_go_to_small_holders_only);
    tcase_add_test(tc, full_guard_evicts_the_largest_holders_oldest_waiting_connection);
    tcase_add_test(tc, trusted_proxies_are_not_capped_or_evicted);
    tcase_add_test(tc, ipv6_networks_are_capped_per_56_and_per_48);
    tcase_add_test(tc, full_guard_evicts_the_least_delivering_connection_whoever_holds_it);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(connguard_suite, NULL, NULL);
