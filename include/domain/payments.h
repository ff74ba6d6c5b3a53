/* payments.h - finding a payment by its pay_no wherever it lives: which
 * order it paid. The operator console's search by pay_no. Reads only. */
#ifndef PAYCALLBACK_PAYMENTS_H
#define PAYCALLBACK_PAYMENTS_H

#include <stdbool.h>

#include "validate.h"
#include "route.h"

/* The order pay_no paid, asked of every shard in turn until one has the
 * payment. ROUTE_OK with *found (and order_no) when a shard has it, or
 * without when none that answered has it (sc->missed names those that did
 * not); ROUTE_UNAVAILABLE when no shard answered, ROUTE_FAILED on an
 * error (sc->fail). */
enum route_result payments_route_order(const struct route *rt, const char *pay_no,
                                       char order_no[ID_BUF], bool *found, struct route_scan *sc);

#endif
