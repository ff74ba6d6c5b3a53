/* webhook_cfg.h - the "webhooks" array of the config file: the shop's
 * endpoints, each receiving the event types it names, signed with its own
 * secrets, at its own pace. Plain data, parsed and checked at start and on
 * every reload (SIGHUP adds, removes, disables endpoints). */
#ifndef PAYCALLBACK_WEBHOOK_CFG_H
#define PAYCALLBACK_WEBHOOK_CFG_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

#define WEBHOOKS_MAX 8                 /* endpoints in the file, the webhook.url one included */
#define WEBHOOK_NAME_MAX 32            /* [a-z0-9_-]{1,32} */
#define WEBHOOK_STR_MAX 256            /* url and secrets */
#define WEBHOOK_TIME_MAX 21            /* "2026-12-03T15:00:00Z" and the NUL */
#define WEBHOOK_RATE_MAX 100000        /* events per second */
#define WEBHOOK_DEFAULT_NAME "default" /* the endpoint of webhook.url */

/* The event types a shop can subscribe to. */
#define WEBHOOK_EVENT_TYPES                                                                      \
    "order.paid", "order.shipped", "order.finished", "order.canceled", "payment.double_charged", \
        "refund.succeeded", "refund.failed"
#define WEBHOOK_EVENT_TYPES_N 7

enum webhook_format {
    WEBHOOK_STANDARD, /* Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature */
    WEBHOOK_LEGACY    /* X-Timestamp and the hex X-Signature */
};

struct webhook_endpoint_cfg {
    char name[WEBHOOK_NAME_MAX + 1];
    char url[WEBHOOK_STR_MAX];
    unsigned events; /* bit i: the i-th of WEBHOOK_EVENT_TYPES; all bits when "events" is absent */
    enum webhook_format format;
    char secret[WEBHOOK_STR_MAX];
    char previous_secret[WEBHOOK_STR_MAX]; /* signs beside secret until previous_until_s */
    long long previous_until_s;            /* unix seconds; 0 without a previous secret */
    int timeout_ms;                        /* one attempt, connect included */
    int max_attempts;                      /* then the delivery is dead */
    int backoff_base_ms, backoff_max_ms;   /* the retry schedule (delivery_backoff_ms) */
    int rate_per_s;                        /* 0: as fast as the endpoint answers */
    bool disabled;                         /* events wait for it; nothing is sent */
};

struct webhook_cfg {
    struct webhook_endpoint_cfg ep[WEBHOOKS_MAX];
    size_t n;
};

/* Parses the "webhooks" JSON array into *out (reset first), each member
 * defaulting from *defaults (timeouts, attempts, backoff). Every endpoint
 * needs a unique name, an http(s) url and a secret (whsec_<base64> for the
 * standard format); "events" lists known types, at least one; a
 * previous_secret needs previous_secret_until; unknown members are
 * refused. 0, or -1 with a one-line reason in err naming file and member. */
int webhook_cfg_parse(const struct cJSON *arr, const struct webhook_endpoint_cfg *defaults,
                      struct webhook_cfg *out, const char *file, char *err, size_t errsz);

/* The bit of event type t in an endpoint's events, or 0 for an unknown type. */
unsigned webhook_event_bit(const char *t);

/* Checks one endpoint's secrets against its format (whsec_ for standard;
 * a previous secret only there). 0, or -1 with the reason in err, naming
 * the endpoint as where. */
int webhook_cfg_check_secrets(const struct webhook_endpoint_cfg *ep, const char *where, char *err,
                              size_t errsz);

/* "YYYY-MM-DDTHH:MM:SSZ" as unix seconds, or -1. */
long long webhook_parse_utc(const char *s);

#endif
