/* backfill.c - the registry rows of the payments and orders a database
 * held before it became a shard (see backfill.h). One connection at a
 * time, as the request paths: a page of rows is read from one shard, then
 * each binding is written on the shard its key is placed on. */
#include "backfill.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "db.h"
#include "shard.h"
#include "validate.h"

#define BACKFILL_PAGE     200
#define BACKFILL_WAIT_MS  5000

struct tally {
    unsigned long long written, present, conflicts, failures;
};

/* Binds key to order_no in the registry of key's shard: the INSERT of
 * stmt, and on a duplicate the row read back by get (whose first column
 * is the bound order_no). */
static void bind(const struct shard_set *set, const char *place_key, enum db_stmt ins,
                 const char *const *ins_params, size_t nins, enum db_stmt get,
                 const char *const *get_params, size_t nget, const char *order_no,
                 const char *what, struct tally *t, FILE *err)
{
    const struct shard *r = shard_place(set, place_key);
    struct db_conn *c = db_acquire(r->pool, BACKFILL_WAIT_MS);
    struct db_row row;
    size_t found = 0;
    enum db_status st;
    char bound[ID_BUF];

    if (c == NULL) {
        fprintf(err, "paycallback: shard %d: no free connection for %s\n", r->id, what);
        t->failures++;
        return;
    }
    if ((st = db_exec_retry(c, ins, ins_params, nins, NULL)) == DB_OK)
        t->written++;
    else if (st == DB_DUPLICATE &&
             (st = db_query_retry(c, get, get_params, nget, &row, 1, &found)) == DB_OK &&
             found == 1 && db_row_str(&row, 0, bound, sizeof(bound)) == 0) {
        if (strcmp(bound, order_no) == 0)
            t->present++;
        else {
            fprintf(err, "paycallback: conflict: %s is bound to %s on shard %d, and %s also "
                    "holds it\n", what, bound, r->id, order_no);
            t->conflicts++;
        }
    } else {
        fprintf(err, "paycallback: shard %d: %s: %s (errno %u)\n", r->id, what,
                db_errstr(c)[0] ? db_errstr(c) : db_status_str(st), db_errno(c));
        t->failures++;
    }
    db_release(r->pool, c);
}

/* Reads the page of stmt after *after_id from sh into rows; the count in
 * *n. 0, or -1 after reporting. */
static int read_page(const struct shard *sh, enum db_stmt stmt, int64_t *after_id,
                     struct db_row *rows, size_t *n, FILE *err)
{
    char after[DB_INT_BUF], limit[DB_INT_BUF];
    const char *p[] = { db_param_int(after, *after_id), db_param_int(limit, BACKFILL_PAGE) };
    struct db_conn *c = db_acquire(sh->pool, BACKFILL_WAIT_MS);
    enum db_status st;

    *n = 0;
    if (c == NULL) {
        fprintf(err, "paycallback: shard %d: no free connection\n", sh->id);
        return -1;
    }
    st = db_query_retry(c, stmt, p, 2, rows, BACKFILL_PAGE, n);
    if (st != DB_OK)
        fprintf(err, "paycallback: shard %d: cannot read: %s (errno %u)\n", sh->id,
                db_errstr(c)[0] ? db_errstr(c) : db_status_str(st), db_errno(c));
    db_release(sh->pool, c);
    if (st != DB_OK)
        return -1;
    if (*n > 0 && db_row_int(&rows[*n - 1], 0, 0, INT64_MAX, after_id) != 0) {
        fprintf(err, "paycallback: shard %d: a row id is malformed\n", sh->id);
        return -1;
    }
    return 0;
}

/* Every payment of sh: pay_no -> order_no in pay_no_registry. */
static void walk_payments(const struct shard_set *set, const struct shard *sh,
                          struct db_row *rows, unsigned long long *seen, struct tally *t,
                          FILE *err)
{
    int64_t after = 0;
    size_t n, i;

    do {
        if (read_page(sh, ST_PAY_PAGE, &after, rows, &n, err) != 0) {
            t->failures++;
            return;
        }
        for (i = 0; i < n; i++) {
            char pay_no[ID_BUF], order_no[ID_BUF], what[ID_BUF + 8];
            if (db_row_str(&rows[i], PPC_PAY_NO, pay_no, sizeof(pay_no)) != 0 ||
                db_row_str(&rows[i], PPC_ORDER_NO, order_no, sizeof(order_no)) != 0) {
                fprintf(err, "paycallback: shard %d: a payment_record row is malformed\n", sh->id);
                t->failures++;
                continue;
            }
            const char *ins[] = { pay_no, order_no };
            const char *get[] = { pay_no };
            snprintf(what, sizeof(what), "pay_no %s", pay_no);
            bind(set, pay_no, ST_PAY_NO_REGISTER, ins, 2, ST_PAY_NO_OWNER, get, 1, order_no,
                 what, t, err);
            ++*seen;
        }
    } while (n == BACKFILL_PAGE);
}

/* Every order of sh: (user_id, request_id) -> order_no, sku, quantity in
 * checkout_registry. */
static void walk_orders(const struct shard_set *set, const struct shard *sh,
                        struct db_row *rows, unsigned long long *seen, struct tally *t,
                        FILE *err)
{
    int64_t after = 0;
    size_t n, i;

    do {
        if (read_page(sh, ST_ORDER_PAGE, &after, rows, &n, err) != 0) {
            t->failures++;
            return;
        }
        for (i = 0; i < n; i++) {
            char user[ID_BUF], req[ID_BUF], order_no[ID_BUF], sku[ID_BUF], qty[DB_INT_BUF];
            char what[2 * ID_BUF + 32];
            if (db_row_str(&rows[i], OPC_USER_ID, user, sizeof(user)) != 0 ||
                db_row_str(&rows[i], OPC_REQUEST_ID, req, sizeof(req)) != 0 ||
                db_row_str(&rows[i], OPC_ORDER_NO, order_no, sizeof(order_no)) != 0 ||
                db_row_str(&rows[i], OPC_SKU, sku, sizeof(sku)) != 0 ||
                db_row_str(&rows[i], OPC_QUANTITY, qty, sizeof(qty)) != 0) {
                fprintf(err, "paycallback: shard %d: an orders row is malformed\n", sh->id);
                t->failures++;
                continue;
            }
            const char *ins[] = { user, req, order_no, sku, qty };
            const char *get[] = { user, req };
            snprintf(what, sizeof(what), "checkout (%s, %s)", user, req);
            bind(set, user, ST_CHECKOUT_INSERT, ins, 5, ST_CHECKOUT_GET, get, 2, order_no, what,
                 t, err);
            ++*seen;
        }
    } while (n == BACKFILL_PAGE);
}

int backfill_registries(const struct config *cfg, FILE *out, FILE *err)
{
    struct shard_set set;
    struct db_row *rows;
    struct tally pay = { 0 }, chk = { 0 };
    size_t i;

    if (cfg->nshards == 0) {
        fprintf(err, "paycallback: --backfill-registries needs mysql.shards: without it there "
                "are no registries to fill\n");
        return 2;
    }
    if ((rows = calloc(BACKFILL_PAGE, sizeof(*rows))) == NULL ||
        shard_set_open(&set, cfg, NULL) != 0) {
        fprintf(err, "paycallback: out of memory\n");
        free(rows);
        return 1;
    }
    for (i = 0; i < set.n; i++) {
        unsigned long long payments = 0, orders = 0;
        walk_payments(&set, &set.s[i], rows, &payments, &pay, err);
        walk_orders(&set, &set.s[i], rows, &orders, &chk, err);
        fprintf(out, "shard %d: %llu payments, %llu orders read\n", set.s[i].id, payments,
                orders);
    }
    fprintf(out, "pay_no_registry: %llu written, %llu present, %llu conflicts, %llu failures\n",
            pay.written, pay.present, pay.conflicts, pay.failures);
    fprintf(out, "checkout_registry: %llu written, %llu present, %llu conflicts, %llu failures\n",
            chk.written, chk.present, chk.conflicts, chk.failures);
    shard_set_close(&set);
    free(rows);
    return pay.conflicts + pay.failures + chk.conflicts + chk.failures == 0 ? 0 : 1;
}
