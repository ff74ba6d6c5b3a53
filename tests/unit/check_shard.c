/* check_shard.c - unit tests for shard.c's pure parts: what an order
 * number says of its shard, routing by it, and placement by hash. The
 * pools are created but never connected: no database is needed. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "shard.h"
#include "../check_main.h"

/* A set over shards ids[0..n-1] (n 0: unsharded), with distinct ports. */
static void open_set(struct shard_set *set, struct config *cfg, const int *ids, int n)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->mysql_host, sizeof(cfg->mysql_host), "127.0.0.1");
    snprintf(cfg->mysql_database, sizeof(cfg->mysql_database), "paycallback");
    cfg->mysql_port = 3306;
    cfg->mysql_pool_size = 1;
    for (int i = 0; i < n; i++) {
        cfg->shards[i].id = ids[i];
        snprintf(cfg->shards[i].host, sizeof(cfg->shards[i].host), "127.0.0.1");
        cfg->shards[i].port = 40000 + ids[i];
        snprintf(cfg->shards[i].database, sizeof(cfg->shards[i].database), "paycallback");
    }
    cfg->nshards = n;
    ck_assert_int_eq(0, shard_set_open(set, cfg, NULL));
}

START_TEST(parse_reads_two_digits_and_a_dash)
{
    int id = -1;

    ck_assert_int_eq(SHARD_PREFIXED, shard_parse_order_no("S02-O20261202170301abc", &id));
    ck_assert_int_eq(2, id);
    ck_assert_int_eq(SHARD_PREFIXED, shard_parse_order_no("S99-x", &id));
    ck_assert_int_eq(99, id);
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("S00-x", &id));
    ck_assert_int_eq(SHARD_NO_PREFIX, shard_parse_order_no("O20261202170301abc", &id));
    ck_assert_int_eq(0, id);
    ck_assert_int_eq(SHARD_NO_PREFIX, shard_parse_order_no("ORD-legacy", &id));
    ck_assert_int_eq(SHARD_NO_PREFIX, shard_parse_order_no("", &id));
    /* Anything else that starts with S or s was meant as a prefix and is
     * mistyped: never taken for a number made before sharding. */
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("S2-x", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("S1-x", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("s01-x", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("SAB-x", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("S001-x", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("S123-x", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("SA1-x", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("S01-", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("S01x", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("S0", &id));
    ck_assert_int_eq(SHARD_MALFORMED, shard_parse_order_no("S", &id));
}
END_TEST

START_TEST(unsharded_routes_everything_to_shard_1_and_adds_no_prefix)
{
    struct config cfg;
    struct shard_set set;
    char no[64];

    open_set(&set, &cfg, NULL, 0);
    ck_assert(!set.sharded);
    ck_assert_int_eq(1, (int)set.n);
    ck_assert_int_eq(1, set.s[0].id);
    ck_assert_ptr_eq(&set.s[0], shard_of_order(&set, "S05-anything"));
    ck_assert_ptr_eq(&set.s[0], shard_of_order(&set, "ORD-1"));
    ck_assert_ptr_eq(&set.s[0], shard_place(&set, "pay-1"));
    ck_assert_int_eq(0, shard_order_no(&set, &set.s[0], "O2026", no, sizeof(no)));
    ck_assert_str_eq("O2026", no);
    shard_set_close(&set);
}
END_TEST

START_TEST(sharded_routes_by_prefix_and_refuses_unknown_shards)
{
    static const int ids[] = { 3, 1, 12 };
    struct config cfg;
    struct shard_set set;
    char no[64];

    open_set(&set, &cfg, ids, 3);
    ck_assert(set.sharded);
    ck_assert_ptr_eq(&set.s[0], shard_of_order(&set, "S03-O1"));
    ck_assert_ptr_eq(&set.s[2], shard_of_order(&set, "S12-O1"));
    ck_assert_ptr_eq(&set.s[1], shard_of_order(&set, "ORD-legacy")); /* made before: shard 1 */
    ck_assert_ptr_null(shard_of_order(&set, "S04-O1"));              /* no shard 4 */
    ck_assert_ptr_null(shard_of_order(&set, "S00-O1"));
    ck_assert_ptr_null(shard_of_order(&set, "S1-O1")); /* not legacy: malformed */
    ck_assert_ptr_null(shard_of_order(&set, "s01-O1"));
    ck_assert_ptr_null(shard_of_order(&set, "SAB-O1"));
    ck_assert_ptr_null(shard_of_order(&set, "S001-O1"));
    ck_assert_int_eq(0, shard_order_no(&set, &set.s[2], "O2026", no, sizeof(no)));
    ck_assert_str_eq("S12-O2026", no);
    ck_assert_ptr_eq(&set.s[2], shard_of_order(&set, no));
    ck_assert_int_eq(-1, shard_order_no(&set, &set.s[2], "O2026", no, 9));
    shard_set_close(&set);
}
END_TEST

START_TEST(sharded_without_shard_1_refuses_unprefixed_numbers)
{
    static const int ids[] = { 2, 3 };
    struct config cfg;
    struct shard_set set;

    open_set(&set, &cfg, ids, 2);
    ck_assert_ptr_null(shard_of_order(&set, "ORD-legacy"));
    shard_set_close(&set);
}
END_TEST

START_TEST(placement_is_stable_and_spreads_keys)
{
    static const int ids[] = { 1, 2 };
    struct config cfg;
    struct shard_set set;
    char key[32];
    int count[2] = { 0, 0 };

    ck_assert_uint_eq(0, shard_place_index("anything", 1));
    ck_assert_uint_eq(0, shard_place_index("anything", 0));
    open_set(&set, &cfg, ids, 2);
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "PAY-%d", i);
        size_t a = shard_place_index(key, 2);
        ck_assert_uint_lt(a, 2);
        ck_assert_uint_eq(a, shard_place_index(key, 2));
        ck_assert_ptr_eq(set.by_id[a], shard_place(&set, key));
        count[a]++;
    }
    ck_assert_int_gt(count[0], 400); /* about half each */
    ck_assert_int_gt(count[1], 400);
    shard_set_close(&set);
}
END_TEST

START_TEST(placement_matches_sha256_prefix_modulo_n)
{
    /* SHA-256("abc") = ba7816bf8f01cfea 414140de5dae2223 ...: the first 8
     * bytes as a big-endian integer are 0xba7816bf8f01cfea. */
    const unsigned long long h = 0xba7816bf8f01cfeaULL;

    ck_assert_uint_eq(h % 2, shard_place_index("abc", 2));
    ck_assert_uint_eq(h % 3, shard_place_index("abc", 3));
    ck_assert_uint_eq(h % 7, shard_place_index("abc", 7));
}
END_TEST

START_TEST(placement_follows_ids_never_the_order_of_the_list)
{
    static const int listed[] = { 3, 1, 12 }, reordered[] = { 12, 3, 1 }, sorted[] = { 1, 3, 12 };
    struct config cfg_a, cfg_b, cfg_c;
    struct shard_set a, b, c;
    char key[32];

    open_set(&a, &cfg_a, listed, 3);
    open_set(&b, &cfg_b, reordered, 3);
    open_set(&c, &cfg_c, sorted, 3);
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "PAY-%d", i);
        int id = shard_place(&a, key)->id;

        ck_assert_int_eq(id, shard_place(&b, key)->id);
        ck_assert_int_eq(id, shard_place(&c, key)->id);
        /* ids ascending: position h % n among 1, 3, 12 */
        ck_assert_int_eq(sorted[shard_place_index(key, 3)], id);
    }
    shard_set_close(&a);
    shard_set_close(&b);
    shard_set_close(&c);
}
END_TEST

static Suite *shard_suite(void)
{
    Suite *s = suite_create("shard");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, parse_reads_two_digits_and_a_dash);
    tcase_add_test(tc, unsharded_routes_everything_to_shard_1_and_adds_no_prefix);
    tcase_add_test(tc, sharded_routes_by_prefix_and_refuses_unknown_shards);
    tcase_add_test(tc, sharded_without_shard_1_refuses_unprefixed_numbers);
    tcase_add_test(tc, placement_is_stable_and_spreads_keys);
    tcase_add_test(tc, placement_matches_sha256_prefix_modulo_n);
    tcase_add_test(tc, placement_follows_ids_never_the_order_of_the_list);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(shard_suite, NULL, NULL);
