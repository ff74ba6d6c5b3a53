/* order_view.h - the JSON object that order create, the status changes
 * and GET /order/{order_no} all answer with, rendered from the plain order
 * of orders.h. No I/O. */
#ifndef PAYCALLBACK_ORDER_VIEW_H
#define PAYCALLBACK_ORDER_VIEW_H

#include <stdbool.h>

#include "orders.h"

struct cJSON;

/* {"order_no","user_id","request_id","sku","quantity","amount","status"},
 * then "create_time" and "update_time" when with_times, then "duplicate"
 * when duplicate is 0 or 1 (-1 leaves it out: GET has no such notion).
 * The caller frees it with cJSON_Delete. NULL when out of memory. */
struct cJSON *order_view_json(const struct order_view *o, bool with_times, int duplicate);

#endif
