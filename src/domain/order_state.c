/* order_state.c - the order state machine as one table of allowed moves,
 * and the names of order and payment statuses. It decides only; callers do
 * the SQL. Pure and thread-safe. */
#include "order_state.h"

#include <stddef.h>
#include <string.h>

struct transition {
    int from;
    int to;
};

/* The whole state machine. Anything not listed here is illegal. */
static const struct transition transitions[] = {
    { ORDER_WAIT_PAY, ORDER_PAID },    { ORDER_WAIT_PAY, ORDER_CANCELED },
    { ORDER_PAID, ORDER_SHIPPED },     { ORDER_PAID, ORDER_CANCELED },
    { ORDER_SHIPPED, ORDER_FINISHED },
};

struct state_name {
    int code;
    const char *name;
};

static const struct state_name names[] = {
    { ORDER_WAIT_PAY, "WAIT_PAY" }, { ORDER_PAID, "PAID" },         { ORDER_SHIPPED, "SHIPPED" },
    { ORDER_FINISHED, "FINISHED" }, { ORDER_CANCELED, "CANCELED" },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

bool order_state_valid(int code)
{
    size_t i;

    for (i = 0; i < COUNT(names); i++) {
        if (names[i].code == code)
            return true;
    }
    return false;
}

bool order_state_allowed(int from, int to)
{
    size_t i;

    for (i = 0; i < COUNT(transitions); i++) {
        if (transitions[i].from == from && transitions[i].to == to)
            return true;
    }
    return false;
}

bool order_state_final(int code)
{
    return code == ORDER_FINISHED || code == ORDER_CANCELED;
}

bool order_state_terminal(int code)
{
    size_t i;

    if (!order_state_valid(code))
        return false;
    for (i = 0; i < COUNT(transitions); i++) {
        if (transitions[i].from == code)
            return false;
    }
    return true;
}

const char *order_state_name(int code)
{
    size_t i;

    for (i = 0; i < COUNT(names); i++) {
        if (names[i].code == code)
            return names[i].name;
    }
    return "UNKNOWN";
}

/* Names are matched exactly: "paid" is not a status. */
int order_state_from_name(const char *name)
{
    size_t i;

    if (name == NULL)
        return -1;
    for (i = 0; i < COUNT(names); i++) {
        if (strcmp(names[i].name, name) == 0)
            return names[i].code;
    }
    return -1;
}

bool payment_status_valid(int code)
{
    return code == PAYMENT_PAID || code == PAYMENT_REFUND_REQUIRED ||
           code == PAYMENT_REFUND_SETTLED;
}

const char *payment_status_name(int code)
{
    switch (code) {
    case PAYMENT_PAID: return "PAID";
    case PAYMENT_REFUND_REQUIRED: return "REFUND_REQUIRED";
    case PAYMENT_REFUND_SETTLED: return "REFUND_SETTLED";
    default: return "UNKNOWN";
    }
}
