/* gateway_scenarios.h - what every gateway's POST /pay/callback/{gateway}
 * must do, written once: pay once under replays and a storm, acknowledge
 * what pays nothing, refuse what is not signed, refuse what does not match
 * its order, and lose nothing in a MySQL outage. Each suite
 * (check_gateway_<kind>.c) describes its gateway's request format and
 * answers in a struct gw_driver; gw_scenarios_add puts the scenarios that
 * format can express into the suite's test cases. */
#ifndef PAYCALLBACK_TEST_GATEWAY_SCENARIOS_H
#define PAYCALLBACK_TEST_GATEWAY_SCENARIOS_H

#include <check.h>

#include "harness.h"

#define GW_PRICE "899.00" /* the orders' amount */
#define GW_PRICE_CENTS 89900
#define GW_BODY_MAX 8192
#define GW_HEADERS_MAX 8
#define GW_HEADER_MAX 512

/* How a notification departs from one the gateway would send. */
enum gw_twist {
    GW_GOOD,           /* signed and sent as the gateway does */
    GW_FOREIGN_KEY,    /* signed with a key or secret that is not the profile's */
    GW_ALTERED,        /* signed, then a signed byte changed */
    GW_UNSIGNED,       /* the signature left out */
    GW_STALE,          /* signed longer ago than the profile's tolerance */
    GW_OTHER_APP,      /* signed right, for another app or merchant */
    GW_OTHER_CURRENCY, /* paid in another currency than the order's */
    GW_NUL,            /* signed, with a \u0000 cutting the paying state short */
    GW_TWISTS
};

#define GW_CAN(t) (1u << (t))

/* What a notification says. */
struct gw_pay {
    const char *pay_no; /* the gateway's transaction id */
    const char *order_no;
    long long amount_cents; /* in the profile's currency */
    const char *state;      /* NULL: the state or event type that pays */
};

/* One request to the service; the driver fills it. */
struct gw_request {
    const char *route; /* NULL: the driver's own */
    char body[GW_BODY_MAX];
    char header[GW_HEADERS_MAX][GW_HEADER_MAX];
    const char *headers[GW_HEADERS_MAX + 1]; /* NULL-terminated */
};

/* A body refused before any order is looked up, and the status. */
struct gw_malformed {
    const char *body;
    int status;
};

struct gw_driver {
    const char *name;                     /* the profile: its route and metric label */
    const char *currency;                 /* the orders' currency */
    unsigned twists;                      /* GW_CAN(t) of every twist but GW_GOOD it builds */
    const char *altered_price;            /* the order amount the GW_ALTERED body claims */
    const char *const *idle;              /* states that pay nothing, NULL-terminated */
    const struct gw_malformed *malformed; /* until a NULL body */

    /* Builds into rq the notification of p, departing from a genuine one
     * by t. */
    void (*build)(struct gw_request *rq, const struct gw_pay *p, enum gw_twist t);

    /* Signs rq->body as it stands, as the gateway would (the malformed
     * bodies are signed, so the parser refuses them, not the signature). */
    void (*seal)(struct gw_request *rq);

    /* 1 when r is the acknowledgement that stops the gateway resending.
     * Called from storm threads: no Check assertion. */
    int (*acked)(const struct h_resp *r);

    /* NULL when r refuses with status in the gateway's format, else why
     * not. code is the error code of the JSON error reply, for the formats
     * that carry it. */
    const char *(*refused)(const struct h_resp *r, int status, const char *code);
};

/* Which test case a scenario belongs in. */
enum gw_group {
    GW_PAYS,      /* a paying notification pays once */
    GW_REFUSED,   /* unsigned notifications are refused */
    GW_UNMATCHED, /* unmatched payments are refused */
    GW_OUTAGE,    /* a mysql outage loses nothing: needs h_fixture_mysql_back */
    GW_REMEMBERED /* repeats answered from memory: needs the replay cache on */
};

/* Adds to tc the scenarios of group that d can express. d must outlive
 * the run; every suite of the binary shares it. */
void gw_scenarios_add(TCase *tc, enum gw_group group, const struct gw_driver *d);

/* Builds the notification of p by the driver and posts it to its route. */
void gw_post(const struct gw_pay *p, enum gw_twist t, struct h_resp *r);

/* Posts rq to its route (the driver's when NULL). */
void gw_send(const struct gw_request *rq, struct h_resp *r);

/* Sets rq's headers from its header lines, the first n of them. */
void gw_headers(struct gw_request *rq, int n);

/* Asserts r is the driver's acknowledgement. */
void gw_assert_ack(const struct h_resp *r);

/* Asserts r refuses with status (and code, where the format carries it). */
void gw_assert_refused(const struct h_resp *r, int status, const char *code);

#endif
