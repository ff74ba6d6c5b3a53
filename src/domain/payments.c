/* payments.c - a payment found by its pay_no on whichever shard holds it:
 * every shard is asked in turn (one connection at a time) until one has
 * it. A payment lives with its order, on the order's shard; the pay_no
 * alone does not name the shard. */
#include "payments.h"

#include <string.h>

#include "db.h"
#include "stmts.h"

struct find_job {
    const char *pay_no;
    char *order_no;
    bool found;
};

static enum route_step find_on(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct find_job *j = arg;
    const char *p[] = { j->pay_no };
    struct db_row row;
    enum db_status st;
    size_t n = 0;

    (void)sh;
    if ((st = db_query_retry(c, ST_PAY_SELECT, p, 1, &row, 1, &n)) != DB_OK)
        return route_retryable(st) ? ROUTE_MISSED : ROUTE_ERROR;
    if (n == 0)
        return ROUTE_NEXT;
    if (db_row_str(&row, PSC_ORDER_NO, j->order_no, ID_BUF) != 0) {
        db_fail(c, "a payment_record row is malformed");
        return ROUTE_ERROR;
    }
    j->found = true;
    return ROUTE_STOP;
}

enum route_result payments_route_order(const struct route *rt, const char *pay_no,
                                       char order_no[ID_BUF], bool *found, struct route_scan *sc)
{
    struct find_job j = { .pay_no = pay_no, .order_no = order_no };
    enum route_result r;

    order_no[0] = '\0';
    r = route_scan(rt, 0, "payments_find", find_on, &j, sc);
    *found = r == ROUTE_OK && j.found;
    return r;
}
