/* config.h - the service configuration: a JSON file, then environment
 * overrides (PAYCALLBACK_<SECTION>_<KEY>). Built once at start, read-only
 * afterwards. */
#ifndef PAYCALLBACK_CONFIG_H
#define PAYCALLBACK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "gateway_cfg.h"
#include "webhook_cfg.h"
#include "netaddr.h"

#define CFG_STR_MAX 256
#define CFG_CLUSTER_ID_MAX 65 /* mysql.cluster_id: 64 bytes and the NUL */
#define CFG_TIME_MAX 21       /* "2026-12-03T15:00:00Z" and the NUL */
#define CFG_WEBHOOK_STANDARD "standard"
#define CFG_WEBHOOK_LEGACY "legacy"
#define CFG_DEFAULT_PATH "config/paycallback.json"
/* The packaged configuration marks each value its owner must fill with a
 * value starting so: the service refuses to start on any of them. */
#define CFG_PLACEHOLDER "CHANGE-ME"
#define CFG_DEV_SECRET "dev-secret" /* the shipped value: refused outside development */
#define CFG_SECRET_MIN 32           /* bytes a callback secret holds at least outside development */
#define CFG_DEV_ENV "PAYCALLBACK_DEV"

#define CFG_AUTH_KEYS_MAX 16
#define CFG_AUTH_NAME_MAX 33 /* 1..32 of [A-Za-z0-9_.-] and the NUL */
#define CFG_AUTH_KEY_MIN_LEN 16
#define CFG_AUTH_KEY_MAX 129 /* 16..128 of the bearer token alphabet and the NUL */
#define CFG_DEV_AUTH_NAME "dev"
#define CFG_DEV_AUTH_KEY "dev-operator-key" /* development only, like CFG_DEV_SECRET */

/* One operator credential: callers send "Authorization: Bearer <key>";
 * the name goes into the request log, never the key. Both fields are
 * zero-padded to their full size, which the constant-time compare of
 * auth.c relies on. */
struct cfg_auth_key {
    char name[CFG_AUTH_NAME_MAX];
    char key[CFG_AUTH_KEY_MAX];
    unsigned scopes; /* CFG_SCOPE_* the key holds; CFG_SCOPE_ALL when the
                                     configuration names none */
};

/* What an operator key may do, checked per route (http.c's route table):
 * a key without the route's scope is answered 403. */
#define CFG_SCOPE_READ (1u << 0)    /* GET orders, events, refunds, the reconciliation report */
#define CFG_SCOPE_ORDERS (1u << 1)  /* ship, finish, cancel, cancel-stale, the query of orders */
#define CFG_SCOPE_REFUNDS (1u << 2) /* settle a refund */
#define CFG_SCOPE_EVENTS (1u << 3)  /* send a dead event again */
#define CFG_SCOPE_METRICS (1u << 4) /* GET /metrics */
#define CFG_SCOPE_AUDIT (1u << 5)   /* GET /ops/audit */
#define CFG_SCOPE_ALL ((1u << 6) - 1)
#define CFG_SCOPES_N 6

/* The name of scope bit (one CFG_SCOPE_* flag): "read", "orders", ...;
 * NULL for anything else. */
const char *cfg_scope_name(unsigned bit);

#define CFG_SHARDS_MAX 8    /* mysql.shards entries */
#define CFG_SHARD_ID_MAX 99 /* a shard id is written into order numbers: 2 digits */

/* One database of a sharded service (mysql.shards). The id is chosen by
 * the operator and never reused or renumbered: order numbers carry it.
 * host, port and database default to mysql.*; user, password and every
 * other mysql.* setting are shared. */
struct cfg_shard {
    int id; /* 1..CFG_SHARD_ID_MAX, unique */
    char host[CFG_STR_MAX];
    int port;
    char database[CFG_STR_MAX];
};

/* cfg_load flags. */
#define CFG_LOAD_DEV (1u << 0) /* development switch (--dev), as PAYCALLBACK_DEV=1 */
#define CFG_LOAD_DB_ONLY \
    (1u << 1)                   /* for `paycallback migrate`: the callback secret and
                                         auth.keys are not required */
#define CFG_PAYMENT_DAYS_MIN 35 /* longer than any gateway retries a callback (Adyen: 30 d) */

struct config {
    char listen_address[CFG_STR_MAX];
    int listen_port;       /* 0 = pick a free port */
    int listen_reuse_port; /* 1 = SO_REUSEPORT: share the port with other processes */
    int workers;           /* handler threads (the work pool) */
    int body_max_bytes;
    int grace_s; /* graceful stop bound */
    char log_level[16];
    char log_format[16]; /* logfmt or json */

    int http_max_connections;               /* open client connections in all */
    int http_max_connections_per_ip;        /* per client (IPv6: per prefix); 0 = no cap */
    int http_reserved_percent;              /* of max_connections, kept for clients holding few */
    int http_reserved_below;                /* "few": fewer connections than this */
    int http_ipv6_prefix;                   /* IPv6 clients are counted by this many leading bits */
    int http_max_connections_per_v6_56;     /* 0: no cap; else per IPv6 /56, all its clients */
    int http_max_connections_per_v6_48;     /* ... per IPv6 /48 */
    int http_min_body_rate_bps;             /* 0: none; else the least body bytes a second */
    int http_body_rate_grace_ms;            /* before the least body rate applies */
    int http_evict_idle_ms;                 /* a connection idle or slow this long may make room */
    char http_trusted_proxies[CFG_STR_MAX]; /* "addr[/prefix], ...": proxies whose
                                               X-Forwarded-For names the client */
    struct netaddr_list http_trusted;       /* http_trusted_proxies, parsed */
    int quota_token_rate;  /* /token/apply requests a second per client; 0 = no quota */
    int quota_token_burst; /* ... that a client may send at once */
    int quota_order_rate;  /* /order/create, likewise */
    int quota_order_burst;
    int http_header_timeout_ms; /* deadline for a request's header block */
    int http_body_timeout_ms;   /* deadline for a request's body */
    int http_queue_wait_ms;     /* bound on waiting for a handler thread (then 503) */

    char mysql_host[CFG_STR_MAX];
    int mysql_port;
    char mysql_user[CFG_STR_MAX];
    char mysql_password[CFG_STR_MAX];
    char mysql_database[CFG_STR_MAX];
    int mysql_pool_size;
    int mysql_connect_timeout_ms;
    int mysql_wait_ms;                    /* bound on waiting for a pooled connection */
    char mysql_init_command[CFG_STR_MAX]; /* operator SQL run on every new session; may be empty */
    int mysql_io_timeout_s;               /* read and write timeout of a MySQL socket */
    int mysql_probe_interval_ms;          /* each shard's background readiness probe */
    int mysql_breaker_failures;           /* consecutive failures that open a shard's breaker */
    int mysql_breaker_open_ms;            /* how long an open breaker refuses before a trial */
    int mysql_shard_max_inflight;         /* requests in flight on one shard; 0: the default rule */
    int mysql_shard_stall_ms; /* no request of a shard done for this long: it is stalled */
    char mysql_cluster_id[CFG_CLUSTER_ID_MAX]; /* the shard set's name, stored in every shard */
    /* mysql.shards: 0 = one database (mysql.*), order numbers unprefixed;
     * else the databases orders are spread over (placement follows the
     * ids ascending, never the order of the list). */
    struct cfg_shard shards[CFG_SHARDS_MAX];
    int nshards;

    char redis_host[CFG_STR_MAX];
    int redis_port;
    int redis_db; /* SELECTed database index */
    int redis_pool_size;
    int redis_timeout_ms; /* connect and command timeout */
    int token_ttl_s;
    int lock_ttl_ms;
    int lock_wait_ms;

    char callback_secret[CFG_STR_MAX];          /* current; never empty after cfg_load */
    char callback_previous_secret[CFG_STR_MAX]; /* still accepted while rotating, or "" */
    int signature_tolerance_s;
    int http_replays_inline; /* 1: repeats answered from memory on the polling thread */
    int http_event_loop; /* 1: event loops own the connections; /pay/callback never blocks one */
    int callback_replay_cache_entries; /* repeats answered from memory (replays.h); 0: off */
    int callback_replay_cache_ttl_s;   /* how long such an answer is kept */
    /* Active query of stale orders in the native format: "" = not asked. */
    char callback_query_url[CFG_STR_MAX];
    char callback_query_token[CFG_STR_MAX]; /* bearer token; required with the URL */
    int callback_query_timeout_ms;

    /* outbox delivery to the shop (webhook.url empty: no delivery) */
    char console_dir[CFG_STR_MAX]; /* the operator console's documents, served under
                                      /console/; "" turns the console off */
    char webhook_url[CFG_STR_MAX];
    char webhook_secret[CFG_STR_MAX]; /* whsec_<base64> (standard) or any text (legacy) */
    /* "standard" (Standard Webhooks: webhook-id, webhook-timestamp,
     * webhook-signature) or "legacy" (X-Timestamp, X-Signature hex) */
    char webhook_format[16];
    char webhook_previous_secret[CFG_STR_MAX];        /* signs beside the secret until ... */
    char webhook_previous_secret_until[CFG_TIME_MAX]; /* ... this UTC time (RFC 3339) */
    long long webhook_previous_until_s;               /* that time in unix seconds; 0: none */
    int webhook_timeout_ms;                           /* one attempt, connect included */
    int webhook_max_attempts;                         /* then the event is dead */
    int webhook_backoff_base_ms;
    int webhook_backoff_max_ms;
    int webhook_workers;              /* relay threads */
    int webhook_batch;                /* events one relay claims at once */
    int webhook_inflight;             /* requests one relay has in flight at once */
    int webhook_poll_ms;              /* idle relay's look for new events */
    int webhook_replay_max;           /* events one replay request may read and send again */
    int refunds_poll_ms;              /* the refund relay's pause when nothing is due */
    int refunds_batch;                /* refunds one claim takes */
    int refunds_inflight;             /* refunds in flight per shard and gateway profile */
    int refunds_backoff_base_ms;      /* wait before the second attempt, doubling */
    int refunds_backoff_max_ms;       /* longest wait between attempts */
    int refunds_sweep_s;              /* look for payments to refund that have no refund */
    int refunds_unrefunded_alert_s;   /* a double payment unrefunded this long alerts */
    int refunds_approver_must_differ; /* 1: four eyes on a refund's approval */

    int orders_max_open_per_user;         /* 0: no cap; else WAIT_PAY orders one user_id may hold */
    int orders_max_quantity_per_line;     /* the largest quantity one order may ask for */
    int orders_max_open_units_user_sku;   /* 0: no cap; else WAIT_PAY units of one sku a user_id
                                            may hold */
    int orders_max_open_units_user;       /* ... of all skus together */
    int orders_max_open_units_client_sku; /* 0: no cap; else units of one sku an anonymous client
                                            address may reserve within the payment window */
    int orders_max_open_units_client;     /* ... of all skus together */

    int reconcile_interval_s;       /* the periodic reconciliation and retention pass */
    int reconcile_wait_pay_age_s;   /* a WAIT_PAY order older than this is reported */
    int reconcile_outbox_lag_s;     /* an undelivered event older than this is reported */
    int reconcile_query_batch;      /* stale orders one pass asks the query endpoints about */
    int reconcile_payment_window_s; /* 0: unpaid orders never expire; else a WAIT_PAY order
                                     older than this is closed once found unpaid */
    int reconcile_expire_batch;     /* orders past the window one pass takes per shard */

    int retention_outbox_days;       /* delivered events are purged after this */
    int retention_payment_days;      /* 0: payment records are kept; else >= CFG_PAYMENT_DAYS_MIN */
    int retention_batch;             /* rows deleted per statement */
    int retention_registry_days;     /* 0: registry rows are kept; else purged after this */
    int retention_orphan_checkout_s; /* 0: kept; else a checkout binding whose order does not
                                        exist is purged once this old */

    struct cfg_auth_key auth_keys[CFG_AUTH_KEYS_MAX]; /* auth.keys: names and keys unique */
    int auth_nkeys;                                   /* >= 1 after cfg_load */

    int dev; /* development switch: the shipped values are allowed */

    int idem_wait_ms;  /* a repeat waits this long for the first attempt, then 409 */
    int idem_lease_ms; /* a first attempt silent this long may be taken over */
    int idem_ttl_s;    /* Idempotency-Key records are kept this long */

    struct gateway_cfg gateways; /* "gateways": one profile per gateway route */
    /* "webhooks": the shop's endpoints beside webhook.url's (reloadable) */
    struct webhook_cfg webhooks;
};

/* The endpoint webhook.url names (WEBHOOK_DEFAULT_NAME), from the webhook.*
 * keys: its url from running (a restart changes it), its secrets from snap
 * (a reload rotates them). False when webhook.url is empty. */
bool cfg_default_webhook(const struct config *running, const struct config *snap,
                         struct webhook_endpoint_cfg *out);

/* The databases cfg names, in the order listed (placement follows the ids
 * ascending, never this order), into out: its mysql.shards,
 * or mysql.* alone as shard 1. Returns how many (1..CFG_SHARDS_MAX). */
size_t cfg_endpoints(const struct config *cfg, struct cfg_shard out[CFG_SHARDS_MAX]);

/* Fills cfg with defaults, reads path (a JSON object of sections; NULL for
 * none), then applies the overrides found in envp ("NAME=value" strings,
 * NULL-terminated, normally environ), then validates.
 *
 * Fails closed: without the development switch (CFG_LOAD_DEV in flags, or
 * PAYCALLBACK_DEV=1 in envp) an empty callback.secret, or the shipped
 * CFG_DEV_SECRET as either callback secret, is an error. With it, an empty
 * secret becomes CFG_DEV_SECRET: signatures are always checked. Likewise
 * auth.keys (PAYCALLBACK_AUTH_KEYS="name:key,name:key", which replaces the
 * file's list) must hold a key outside development, and none may be
 * CFG_DEV_AUTH_KEY; in development an empty list gets that key, named
 * CFG_DEV_AUTH_NAME. Error messages name keys, never print them. The file is read
 * strictly: one JSON object, each key known and present once, nothing
 * after it; numbers are range-checked before conversion and strings
 * against their field's size. Every PAYCALLBACK_* name in envp must be a
 * key. On failure returns -1 with a one-line reason in err (errsz bytes);
 * cfg is then unusable. Reads no global state: safe from any thread. */
int cfg_load(struct config *cfg, const char *path, const char *const *envp, unsigned flags,
             char *err, size_t errsz);

/* cfg_load with the file's text in memory: len bytes at text (NUL not
 * needed), called name in messages. For the fuzzer and tests. */
int cfg_load_text(struct config *cfg, const char *name, const char *text, size_t len,
                  const char *const *envp, unsigned flags, char *err, size_t errsz);

/* Writes the configuration table to stdout, for --help and the man pages:
 * json key, environment name, accepted range, whether SIGHUP reloads it
 * ("reload") or it needs a restart ("-"), default. */
void cfg_print_keys(void);

/* The keys SIGHUP does not reload whose value differs between running and
 * fresh: their count, and their dotted names joined by commas into buf
 * (bufsz bytes, truncated if need be). The reloadable keys are the
 * secrets (callback.secret, callback.previous_secret, webhook.secret),
 * auth.keys, log_level and the gateways' profiles but for their query
 * endpoints (a changed one is named "gateways[i].query_*"). */
size_t cfg_restart_keys(const struct config *running, const struct config *fresh, char *buf,
                        size_t bufsz);

#endif
