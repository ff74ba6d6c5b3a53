/* order_view.h - an order as plain data (orders.c fills it from the
 * database) and the JSON object that order create, the status changes and
 * GET /order/{order_no} all answer with. No I/O. */
#ifndef PAYCALLBACK_ORDER_VIEW_H
#define PAYCALLBACK_ORDER_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "validate.h"

struct cJSON;

#define ORDER_TIME_BUF 40         /* "2024-05-01T12:30:45.123000Z" */

struct order_view {
    char order_no[ID_BUF];
    char user_id[ID_BUF];
    char checkout_id[ID_BUF];     /* the client's "request_id" (JSON and SQL) */
    char sku[ID_BUF];
    int64_t quantity;
    int64_t amount_cents;
    int status;                   /* enum order_status */
    char create_time[ORDER_TIME_BUF];
    char update_time[ORDER_TIME_BUF];
};

/* {"order_no","user_id","request_id","sku","quantity","amount","status"},
 * then "create_time" and "update_time" when with_times, then "duplicate"
 * when duplicate is 0 or 1 (-1 leaves it out: GET has no such notion).
 * The caller frees it with cJSON_Delete. NULL when out of memory. */
struct cJSON *order_view_json(const struct order_view *o, bool with_times, int duplicate);

#endif
