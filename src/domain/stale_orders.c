/* stale_orders.c - the listing of WAIT_PAY orders past an age. */
#include "stale_orders.h"

#include <stdlib.h>

#include "order_state.h"
#include "stmts.h"

enum db_status stale_orders_list(struct db_conn *c, int age_s, struct stale_order *out, size_t max,
                                 size_t *n)
{
    char status[DB_INT_BUF], age[DB_INT_BUF], lim[DB_INT_BUF];
    const char *p[] = { db_param_int(status, ORDER_WAIT_PAY), db_param_int(age, age_s),
                        db_param_int(lim, (int64_t)max) };
    struct db_row *rows = calloc(max ? max : 1, sizeof(*rows));
    enum db_status st;
    size_t got = 0, i;

    *n = 0;
    if (rows == NULL)
        return db_fail(c, "reconcile: out of memory");
    st = db_query_retry(c, ST_WAIT_PAY_LIST, p, 3, rows, max, &got);
    for (i = 0; st == DB_OK && i < got; i++) {
        struct stale_order *o = &out[i];
        if (db_row_str(&rows[i], SOC_ORDER_NO, o->order_no, sizeof(o->order_no)) != 0 ||
            db_row_str(&rows[i], SOC_USER_ID, o->user_id, sizeof(o->user_id)) != 0 ||
            db_row_cents(&rows[i], SOC_AMOUNT, &o->amount_cents) != 0 ||
            db_row_str(&rows[i], SOC_CREATE_TIME, o->create_time, sizeof(o->create_time)) != 0)
            st = db_fail(c, "reconcile: malformed order row");
    }
    free(rows);
    if (st == DB_OK)
        *n = got;
    return st;
}
