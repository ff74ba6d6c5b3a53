/* config.c - defaults, then the JSON file, then PAYCALLBACK_* environment
 * variables, then range checks. One table drives all three, so a key, its
 * environment name, its limits and its size are written once. The file is
 * read as strictly as a request body (jsonutil.c): one object, no
 * duplicate key, nothing after it, no unknown key. */
#include "config.h"

#include <stdint.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/crypto.h>

#include "array.h"
#include "jsonutil.h"
#include "netaddr.h"
#include "stdwebhook.h"
#include "validate.h"

#define CFG_FILE_MAX_BYTES (1 << 20)
#define CFG_ENV_PREFIX "PAYCALLBACK_"
#define CFG_GATEWAYS_KEY "gateways"
#define CFG_WEBHOOKS_KEY "webhooks"

enum key_type {
    KEY_INT,
    KEY_STR,
    KEY_KEYS /* the auth.keys list */,
    KEY_SHARDS /* the mysql.shards list */
};

struct cfg_key {
    const char *section; /* NULL: top level */
    const char *name;
    enum key_type type;
    size_t offset;
    size_t size;   /* bytes of the field, NUL included for KEY_STR */
    long min, max; /* KEY_INT range; KEY_STR: min 1 = required */
    const char *def;
    bool reload;     /* SIGHUP applies a new value; else it needs a restart */
    const char *doc; /* what the key means: --help, the man page, docs/configuration.md */
};

#define FIELD(field) offsetof(struct config, field), sizeof(((struct config *)0)->field)
#define I(sec, name, field, lo, hi, def, doc)                     \
    {                                                             \
        sec, name, KEY_INT, FIELD(field), lo, hi, def, false, doc \
    }
#define S(sec, name, field, req, def, doc)                        \
    {                                                             \
        sec, name, KEY_STR, FIELD(field), req, 0, def, false, doc \
    }
#define K(sec, name, field, doc)                               \
    {                                                          \
        sec, name, KEY_KEYS, FIELD(field), 0, 0, "", true, doc \
    }
#define SH(sec, name, field, doc)                                 \
    {                                                             \
        sec, name, KEY_SHARDS, FIELD(field), 0, 0, "", false, doc \
    }
/* A string key that SIGHUP reloads: the secrets and the log level. */
#define SR(sec, name, field, req, def, doc)                      \
    {                                                            \
        sec, name, KEY_STR, FIELD(field), req, 0, def, true, doc \
    }

static const struct cfg_key keys[] = {
    S("listen", "address", listen_address, 1, "127.0.0.1", "IPv4 or IPv6 address to bind"),
    I("listen", "port", listen_port, 0, 65535, "8080", "0 picks a free port (see --port-file)"),
    I("listen", "reuse_port", listen_reuse_port, 0, 1, "0",
      "1 sets SO_REUSEPORT: several processes share the port on purpose. With 0 a "
      "second instance on a port in use exits 1 (cannot start http daemon)"),
    I(NULL, "workers", workers, 1, 1024, "16",
      "handler threads (the work pool); libmicrohttpd polls the sockets with "
      "min(workers, 4) threads of its own"),
    I(NULL, "body_max_bytes", body_max_bytes, 256, 16 << 20, "65536",
      "larger request bodies get 413"),
    I(NULL, "grace_s", grace_s, 0, 3600, "10", "bound on finishing in-flight requests at SIGTERM"),
    SR(NULL, "log_level", log_level, 1, "info",
       "debug, info, warn (alerts and problems only: no request lines) or error"),
    S(NULL, "log_format", log_format, 1, "logfmt",
      "logfmt, or json: the same lines as one JSON object each, the same keys"),
    I("http", "max_connections", http_max_connections, 16, 1000000, "1024",
      "open client connections in all; past it a new connection is closed as soon as "
      "accepted. Must fit the open-file limit with a reserve (64 + pool sizes + 4 per "
      "polling thread): the service raises its soft RLIMIT_NOFILE up to the hard one "
      "if it must, and exits 1 when even that is too small"),
    I("http", "max_connections_per_ip", http_max_connections_per_ip, 0, 1000000, "256",
      "open connections per client (an IPv6 client is its http.ipv6_prefix network; 0 "
      "= no cap); a trusted proxy (http.trusted_proxies) is not capped"),
    I("http", "reserved_percent", http_reserved_percent, 0, 90, "25",
      "share of http.max_connections (the last slots) that only clients holding fewer "
      "than http.reserved_below connections may take; 0..90"),
    I("http", "replays_inline", http_replays_inline, 0, 1, "0",
      "1: a repeat the replay cache answers as a replay is answered on the polling "
      "thread that read it, with no hand-off to a handler thread (it does no I/O: "
      "signature, body, one lookup); anything else is queued as usual. A gateway's "
      "repeats are answered there only at log_level warn or above"),
    I("http", "event_loop", http_event_loop, 0, 1, "1",
      "1: each polling thread is an event loop that also waits on MySQL: POST "
      "/pay/callback (unsharded) runs its one CALL or its repeat's read with MariaDB's "
      "non-blocking API on the loop that read the request, with no hand-off to a "
      "handler thread; every other route is queued as usual. 0: every database "
      "request runs on a handler thread (the path before the loops)"),
    I("http", "reserved_below", http_reserved_below, 1, 1000000, "8",
      "a client holding fewer connections than this is a small holder: it may take "
      "the reserved slots and, when every slot is taken, have the oldest connection "
      "still waiting for its headers of the largest holder closed to make room"),
    I("http", "ipv6_prefix", http_ipv6_prefix, 1, 128, "64",
      "IPv6 clients are counted (caps, quotas) by this many leading bits: one host is "
      "given a /64"),
    I("http", "max_connections_per_v6_56", http_max_connections_per_v6_56, 0, 1000000, "512",
      "open connections of all the IPv6 clients of one /56 together (one site or customer "
      "is often given a /56: 256 /64s); past it a new one is closed as soon as accepted; "
      "0 = no cap"),
    I("http", "max_connections_per_v6_48", http_max_connections_per_v6_48, 0, 1000000, "1024",
      "open connections of all the IPv6 clients of one /48 together, likewise"),
    I("http", "min_body_rate_bps", http_min_body_rate_bps, 0, 100000000, "1024",
      "the least a request body must arrive at, in bytes a second on average since the "
      "end of its headers, once http.body_rate_grace_ms have passed; slower, the "
      "connection is closed (a body trickled to hold a connection); 0 = none"),
    I("http", "body_rate_grace_ms", http_body_rate_grace_ms, 0, 600000, "2000",
      "how long a body may arrive at any rate before http.min_body_rate_bps applies"),
    I("http", "evict_idle_ms", http_evict_idle_ms, 0, 600000, "1000",
      "when every connection slot is taken and no client holds many more than a small "
      "holder that connects, the connection that delivers least is closed to make room, "
      "whoever holds it: the oldest still waiting for its headers, else the slowest body, "
      "of those in that phase for at least this long"),
    S("http", "trusted_proxies", http_trusted_proxies, 0, "",
      "comma-separated addresses or networks (127.0.0.1, 10.0.0.0/8) of proxies in "
      "front of the service: their connections are not capped as one client and "
      "evicted never, and the rightmost X-Forwarded-For address that is not one of "
      "them is the client for the request quotas"),
    I("http", "header_timeout_ms", http_header_timeout_ms, 100, 600000, "5000",
      "deadline for a request's whole header block, from accept (or from the end of "
      "the previous reply on a keep-alive connection); not reset by arriving bytes. "
      "Past it the connection is closed"),
    I("http", "body_timeout_ms", http_body_timeout_ms, 100, 600000, "10000",
      "deadline for the whole body, from the end of the headers; past it 408 "
      "REQUEST_TIMEOUT or a close"),
    I("http", "queue_wait_ms", http_queue_wait_ms, 10, 60000, "1000",
      "a request waits at most this long for a free handler thread, then gets 503 "
      "UNAVAILABLE with Retry-After"),
    S("mysql", "host", mysql_host, 1, "127.0.0.1",
      "the MySQL or MariaDB server (unsharded; sharded, the default host of each shard)"),
    I("mysql", "port", mysql_port, 1, 65535, "3306", "its port"),
    S("mysql", "user", mysql_user, 1, "paycallback",
      "the account; sharded, the same on every shard"),
    S("mysql", "password", mysql_password, 0, "", "its password"),
    S("mysql", "database", mysql_database, 1, "paycallback",
      "the schema (unsharded; sharded, the default database of each shard)"),
    I("mysql", "pool_size", mysql_pool_size, 1, 1024, "16",
      "connections to each database; each has its own prepared statements"),
    I("mysql", "connect_timeout_ms", mysql_connect_timeout_ms, 100, 60000, "1000",
      "per connection attempt"),
    I("mysql", "wait_ms", mysql_wait_ms, 1, 60000, "1000",
      "wait for a free pooled connection, then 503"),
    S("mysql", "init_command", mysql_init_command, 0, "",
      "SQL run on every new session, e.g. SET SESSION wsrep_sync_wait = 1 on Galera; "
      "one MySQL refuses stops the start"),
    I("mysql", "io_timeout_s", mysql_io_timeout_s, 2, 3600, "2",
      "read and write timeout of a MySQL socket; keep it well below the HTTP "
      "deadlines so a frozen database turns into 503, not a hung request. The "
      "session's lock wait timeout is set below it (min(3, io_timeout_s - 1) s)"),
    I("mysql", "probe_interval_ms", mysql_probe_interval_ms, 50, 60000, "500",
      "each shard's background prober pings it (and reads its shard map) this often "
      "over a connection of its own; /readyz and /metrics answer from what it last "
      "found, never waiting on a database"),
    I("mysql", "breaker_failures", mysql_breaker_failures, 1, 1000, "3",
      "consecutive requests that could not reach a shard (connect, read or write "
      "timeout, lost link, no free connection within mysql.wait_ms) that open its "
      "circuit breaker; a failed probe opens it too"),
    I("mysql", "breaker_open_ms", mysql_breaker_open_ms, 100, 600000, "2000",
      "how long an open breaker answers 503 at once (with X-Shard-Outage) before one "
      "request goes through as a trial; its success or a successful probe closes it"),
    I("mysql", "shard_max_inflight", mysql_shard_max_inflight, 0, 4096, "0",
      "requests in flight (holding or waiting for a connection) on one shard, counted "
      "before a request waits or calls, so a shard that hangs holds at most this many "
      "workers from its first stuck request; 0 = three quarters of workers with "
      "several shards, no cap with one database"),
    I("mysql", "shard_stall_ms", mysql_shard_stall_ms, 10, 60000, "250",
      "a shard on which no request has finished for this long while requests are in "
      "flight is stalled: a request finding mysql.shard_max_inflight reached is "
      "refused at once; before that it waits for a request in flight to end, never "
      "past this long since the shard's last progress"),
    S("mysql", "cluster_id", mysql_cluster_id, 0, "",
      "the name of the shard set, required with mysql.shards (1..64 of A-Z a-z 0-9 . _ -): "
      "`paycallback shards init` stores it with its shard id in every shard, and a shard "
      "whose stored identity is another cluster's, another shard id or none is refused "
      "(docs/sharding.md)"),
    SH("mysql", "shards", shards,
       "the databases orders are spread over (docs/scaling.md): "
       "[{\"id\":1,\"host\":...,\"port\":...,\"database\":...}] in the file, "
       "1=host:port/db,2=... in the environment; host, port and database default to "
       "mysql.*; ids 1..99, never reused"),
    S("redis", "host", redis_host, 1, "127.0.0.1",
      "the Redis server (tokens and stock locks; the service runs degraded without it)"),
    I("redis", "port", redis_port, 1, 65535, "6379", "its port"),
    I("redis", "db", redis_db, 0, 255, "0", "its database number"),
    I("redis", "pool_size", redis_pool_size, 1, 1024, "16", "connections to Redis"),
    I("redis", "timeout_ms", redis_timeout_ms, 10, 60000, "200",
      "connect and command timeout; past it, degraded mode"),
    I("redis", "token_ttl_s", token_ttl_s, 1, 86400, "300", "lifetime of an anti-resubmit token"),
    I("redis", "lock_ttl_ms", lock_ttl_ms, 100, 600000, "30000", "stock lock expiry"),
    I("redis", "lock_wait_ms", lock_wait_ms, 0, 60000, "500",
      "wait for the stock lock, then 503 BUSY"),
    SR("callback", "secret", callback_secret, 0, "",
       "HMAC-SHA256 key of the native callbacks (X-Signature); required outside "
       "development, at least 32 bytes and never dev-secret there"),
    SR("callback", "previous_secret", callback_previous_secret, 0, "",
       "the former key, still accepted while the bank rotates"),
    I("callback", "signature_tolerance_s", signature_tolerance_s, 1, 86400, "300",
      "allowed clock skew of X-Timestamp"),
    I("callback", "replay_cache_entries", callback_replay_cache_entries, 0, 1000000, "8192",
      "recorded payments whose repeats are answered from memory, without a database "
      "read, once their answer can no longer change (docs/guarantees.md); about 170 "
      "bytes each; 0 turns the cache off"),
    I("callback", "replay_cache_ttl_s", callback_replay_cache_ttl_s, 1, 86400, "3600",
      "how long such an entry answers before the database is read again"),
    S("callback", "query_url", callback_query_url, 0, "",
      "the native query endpoint; empty: not asked"),
    S("callback", "query_token", callback_query_token, 0, "",
      "its bearer token; required with the URL (exit 2 without it)"),
    I("callback", "query_timeout_ms", callback_query_timeout_ms, 100, 60000, "5000",
      "bound on one query, connect included"),
    S("webhook", "url", webhook_url, 0, "", "the shop's endpoint, http:// or https://"),
    SR("webhook", "secret", webhook_secret, 0, "",
       "key of the events' signatures, required with a URL; in the standard format a "
       "whsec_ secret (whsec_ and the base64 of its random bytes)"),
    S("webhook", "format", webhook_format, 1, CFG_WEBHOOK_STANDARD,
      "standard: the Standard Webhooks headers webhook-id, webhook-timestamp and "
      "webhook-signature; legacy: X-Timestamp and X-Signature (hex HMAC-SHA256)"),
    SR("webhook", "previous_secret", webhook_previous_secret, 0, "",
       "the former secret, which also signs each delivery until "
       "webhook.previous_secret_until while shops switch (standard format only)"),
    SR("webhook", "previous_secret_until", webhook_previous_secret_until, 0, "",
       "the UTC time (like 2026-12-03T15:00:00Z) until which the previous secret "
       "signs; set with it"),
    I("webhook", "timeout_ms", webhook_timeout_ms, 100, 60000, "5000",
      "bound on one delivery attempt, connecting included"),
    I("webhook", "max_attempts", webhook_max_attempts, 1, 1000, "15",
      "attempts before an event is DEAD (with the defaults: about 8 hours of trying)"),
    I("webhook", "backoff_base_ms", webhook_backoff_base_ms, 10, 3600000, "1000",
      "wait before the first retry of an event; each retry doubles it (with jitter)"),
    I("webhook", "backoff_max_ms", webhook_backoff_max_ms, 10, 86400000, "3600000",
      "the longest wait between two attempts of an event"),
    I("webhook", "workers", webhook_workers, 1, 16, "1",
      "relay threads per instance (sharded: per shard)"),
    I("webhook", "batch", webhook_batch, 1, 100, "16", "events one relay claims at once"),
    I("webhook", "inflight", webhook_inflight, 1, 64, "8",
      "requests one relay keeps in flight to its endpoint at once, over kept-alive "
      "connections (never two of one order)"),
    I("webhook", "poll_ms", webhook_poll_ms, 10, 60000, "200",
      "an idle relay looks for new events this often"),
    I("webhook", "replay_max", webhook_replay_max, 1, 100000, "1000",
      "events one replay request (POST /ops/outbox/replay) may read and send again"),
    I("refunds", "poll_ms", refunds_poll_ms, 10, 60000, "500",
      "an idle refund relay looks for due refunds this often (one relay per shard and "
      "gateway profile)"),
    I("refunds", "batch", refunds_batch, 1, 100, "8",
      "refunds one relay claims at once, at most as many as it has idle senders"),
    I("refunds", "inflight", refunds_inflight, 1, 64, "4",
      "refunds one relay (one per shard and gateway profile with a refund_url) has in "
      "flight at once, each on its own sender; a hung gateway holds only its own"),
    I("refunds", "backoff_base_ms", refunds_backoff_base_ms, 10, 3600000, "2000",
      "wait before a refund is submitted or asked about again; each attempt doubles it "
      "(with jitter). A refund is never given up on"),
    I("refunds", "backoff_max_ms", refunds_backoff_max_ms, 10, 86400000, "600000",
      "the longest wait between two attempts of a refund"),
    I("refunds", "sweep_s", refunds_sweep_s, 1, 86400, "5",
      "how often each refund relay looks for payments to refund that have no refund "
      "yet (a canceled paid order's payment, a double payment whose refund a crash "
      "lost)"),
    I("refunds", "unrefunded_alert_s", refunds_unrefunded_alert_s, 60, 2592000, "3600",
      "a double payment not refunded this long after it arrived alerts "
      "(paycallback_refund_unrefunded_alert_age_seconds, alert "
      "PaycallbackDoublePaymentUnrefunded)"),
    I("refunds", "approver_must_differ", refunds_approver_must_differ, 0, 1, "0",
      "1: four eyes, a refund waiting for approval is approved by another operator key "
      "than the one that asked for it (403 APPROVER_MUST_DIFFER otherwise)"),
    I("orders", "max_open_per_user", orders_max_open_per_user, 0, 100000, "20",
      "WAIT_PAY orders one user_id may hold; then 409 TOO_MANY_OPEN_ORDERS; 0: no cap"),
    I("orders", "max_quantity_per_line", orders_max_quantity_per_line, 1, 1000, "10",
      "the largest quantity one order may ask for; above it 422 QUANTITY_LIMIT, nothing "
      "written"),
    I("orders", "max_open_units_per_user_sku", orders_max_open_units_user_sku, 0, 1000000, "10",
      "units of one sku that one user_id may hold in WAIT_PAY orders (counted exactly, on the "
      "database that takes the order); past it 409 UNIT_QUOTA_EXCEEDED; 0: no cap"),
    I("orders", "max_open_units_per_user", orders_max_open_units_user, 0, 1000000, "50",
      "units of all skus that one user_id may hold in WAIT_PAY orders, likewise"),
    I("orders", "max_open_units_per_client_sku", orders_max_open_units_client_sku, 0, 1000000, "20",
      "units of one sku that one client address (IPv4 address, IPv6 http.ipv6_prefix network, "
      "or behind http.trusted_proxies the client X-Forwarded-For names) may reserve within one "
      "payment window (reconcile.payment_window_s, a day when 0), paid or not, unless the "
      "caller is a shop backend (an operator key with the orders scope); counted per instance; "
      "past it 409 UNIT_QUOTA_EXCEEDED; 0: no cap"),
    I("orders", "max_open_units_per_client", orders_max_open_units_client, 0, 1000000, "100",
      "units of all skus that one client address may reserve within one payment window, "
      "likewise"),
    I("reconcile", "interval_s", reconcile_interval_s, 1, 86400, "60",
      "time between reconciliation passes"),
    I("reconcile", "wait_pay_age_s", reconcile_wait_pay_age_s, 1, 31536000, "900",
      "a WAIT_PAY order older than this is reported, and asked about where a query "
      "endpoint is configured"),
    I("reconcile", "outbox_lag_s", reconcile_outbox_lag_s, 1, 31536000, "300",
      "an undelivered event older than this is reported"),
    I("reconcile", "query_batch", reconcile_query_batch, 1, 1000, "50",
      "stale orders one pass asks the query endpoints about"),
    I("reconcile", "payment_window_s", reconcile_payment_window_s, 0, 31536000, "1800",
      "an unpaid order older than this is closed, its stock returned (the gateways' query "
      "endpoints are asked first); shops hold stock for 15 to 30 minutes; 0: orders never "
      "expire"),
    I("reconcile", "expire_batch", reconcile_expire_batch, 1, 1000, "100",
      "orders past the payment window one pass closes, per shard"),
    I("retention", "outbox_days", retention_outbox_days, 1, 36500, "7",
      "delivered outbox events are purged after this many days"),
    I("retention", "payment_days", retention_payment_days, 0, 36500, "0",
      "0 keeps payment records forever; else at least 35 (a record is also the "
      "callback's dedupe row)"),
    I("retention", "batch", retention_batch, 1, 10000, "500", "rows per purge statement"),
    I("retention", "registry_days", retention_registry_days, 0, 36500, "0",
      "sharded: pay_no_registry and checkout_registry rows older than this are purged "
      "by the retention pass (paycallback_retention_purged_total{table}); 0 keeps "
      "them. Set it above every gateway's replay window and every client's retry "
      "horizon: past it a pay_no or a request_id is no longer guarded across shards"),
    I("retention", "orphan_checkout_s", retention_orphan_checkout_s, 0, 31536000, "3600",
      "sharded: a checkout binding this old whose order does not exist (the attempt "
      "made no order) is purged by the retention pass "
      "(table=\"checkout_registry_orphans\"); 0 keeps them. Far longer than a create "
      "takes, so a binding whose order is being made is never purged"),
    I("quota", "token_rate", quota_token_rate, 0, 1000000, "100",
      "/token/apply requests a second per client (IPv4 address, IPv6 http.ipv6_prefix "
      "network, or behind http.trusted_proxies the client X-Forwarded-For names); "
      "past it 429 RATE_LIMITED with Retry-After; 0 = no quota"),
    I("quota", "token_burst", quota_token_burst, 1, 1000000, "200",
      "/token/apply requests a client may send at once before the rate applies"),
    I("quota", "order_rate", quota_order_rate, 0, 1000000, "50",
      "/order/create requests a second per client, likewise; 0 = no quota"),
    I("quota", "order_burst", quota_order_burst, 1, 1000000, "100",
      "/order/create requests a client may send at once"),
    I("idempotency", "wait_ms", idem_wait_ms, 0, 60000, "5000",
      "how long a repeat waits for the first request with its Idempotency-Key, then 409"),
    I("idempotency", "lease_ms", idem_lease_ms, 100, 600000, "10000",
      "a first request silent this long (it died) may be taken over by a repeat"),
    I("idempotency", "ttl_s", idem_ttl_s, 1, 30L * 86400, "86400",
      "how long a key and its stored answer are kept"),
    K("auth", "keys", auth_keys,
      "operator keys: [{\"name\",\"key\",\"scopes\"}] in the file, "
      "name:key[:scope+scope],... in the environment (which replaces the file's "
      "list); at least one outside development"),
    S("console", "dir", console_dir, 0, "",
      "the directory of the operator console's files, served at /console/ "
      "(docs/console.md); read at start; empty: no console"),
};
#define NKEYS (ARRAY_SIZE(keys))

#undef FIELD
#undef I
#undef S
#undef K
#undef SH
#undef SR

/* PAYCALLBACK_<SECTION>_<NAME> in capitals, into buf. */
static void env_name(const struct cfg_key *k, char *buf, size_t n)
{
    size_t i;

    snprintf(buf, n, "PAYCALLBACK_%s%s%s", k->section ? k->section : "", k->section ? "_" : "",
             k->name);
    for (i = 0; buf[i] != '\0'; i++)
        if (buf[i] >= 'a' && buf[i] <= 'z')
            buf[i] = (char)(buf[i] - 'a' + 'A');
}

static void key_path(const struct cfg_key *k, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", k->section ? k->section : "", k->section ? "." : "", k->name);
}

/* Parses a decimal integer: an optional '-' and digits, nothing else (no
 * blanks, no '+', no hex), as an environment value must be written. */
static int parse_long(const char *text, long *out)
{
    const char *p = text[0] == '-' ? text + 1 : text;
    char *end;

    if (*p < '0' || *p > '9')
        return -1;
    errno = 0;
    *out = strtol(text, &end, 10);
    return errno != 0 || *end != '\0' ? -1 : 0;
}

/* Stores a string value, refused when it does not fit the key's own
 * field with its NUL. 0, or -1 with a reason in err. */
static int set_str(struct config *cfg, const struct cfg_key *k, const char *text,
                   const char *origin, char *err, size_t errsz)
{
    char path[64];
    size_t n = strlen(text);

    if (n >= k->size) {
        key_path(k, path, sizeof(path));
        snprintf(err, errsz, "%s: %s is longer than %zu bytes", origin, path, k->size - 1);
        return -1;
    }
    memcpy((char *)cfg + k->offset, text, n + 1);
    return 0;
}

/* Stores an integer after checking the key's range. 0, or -1. */
static int set_int(struct config *cfg, const struct cfg_key *k, long v, const char *origin,
                   char *err, size_t errsz)
{
    char path[64];

    if (v < k->min || v > k->max) {
        key_path(k, path, sizeof(path));
        snprintf(err, errsz, "%s: %s must be in %ld..%ld, got %ld", origin, path, k->min, k->max,
                 v);
        return -1;
    }
    *(int *)((char *)cfg + k->offset) = (int)v;
    return 0;
}

/* ---- auth.keys: the operator credentials --------------------------------- */

/* 1..32 of [A-Za-z0-9_.-]: it is written into log lines as it is. */
static int valid_key_name(const char *s, size_t n)
{
    size_t i;

    if (n == 0 || n >= CFG_AUTH_NAME_MAX)
        return 0;
    for (i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}

/* 16..128 characters of the bearer token alphabet (RFC 6750 b64token:
 * letters, digits, -._~+/ and trailing '='), so that any key can be sent
 * as it is and none can contain the ':' and ',' of the environment form. */
static int valid_key_value(const char *s, size_t n)
{
    size_t i = 0;

    if (n < CFG_AUTH_KEY_MIN_LEN || n >= CFG_AUTH_KEY_MAX)
        return 0;
    while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                     (s[i] >= '0' && s[i] <= '9') || strchr("-._~+/", s[i]) != NULL))
        i++;
    while (i < n && s[i] == '=')
        i++;
    return i == n && s[0] != '=';
}

static const char *const scope_names[CFG_SCOPES_N] = { "read",   "orders",  "refunds",
                                                       "events", "metrics", "audit" };

const char *cfg_scope_name(unsigned bit)
{
    for (int i = 0; i < CFG_SCOPES_N; i++)
        if (bit == (1u << i))
            return scope_names[i];
    return NULL;
}

/* Adds the scope named by the n bytes at s to *scopes. 0, or -1 with the
 * reason (naming the key by its name). */
static int add_scope(const char *s, size_t n, unsigned *scopes, const char *origin,
                     const char *key_name, char *err, size_t errsz)
{
    for (int i = 0; i < CFG_SCOPES_N; i++)
        if (strlen(scope_names[i]) == n && memcmp(scope_names[i], s, n) == 0) {
            *scopes |= 1u << i;
            return 0;
        }
    snprintf(err, errsz,
             "%s: auth key \"%s\": unknown scope \"%.*s\" (read, orders, refunds, "
             "events, metrics, audit)",
             origin, key_name, (int)(n < 32 ? n : 32), s);
    return -1;
}

/* Appends one credential after checking it; the messages name the key by
 * its name or position, never print it. 0, or -1 with the reason. The
 * key's scopes are set to CFG_SCOPE_ALL; the caller narrows them. */
static int add_auth_key(struct config *cfg, const char *name, size_t nlen, const char *key,
                        size_t klen, const char *origin, char *err, size_t errsz)
{
    struct cfg_auth_key *k;
    int i, pos = cfg->auth_nkeys + 1;

    if (cfg->auth_nkeys >= CFG_AUTH_KEYS_MAX) {
        snprintf(err, errsz, "%s: auth.keys holds more than %d keys", origin, CFG_AUTH_KEYS_MAX);
        return -1;
    }
    if (!valid_key_name(name, nlen)) {
        snprintf(err, errsz,
                 "%s: auth.keys entry %d: name must be 1..%d characters of "
                 "[A-Za-z0-9_.-]",
                 origin, pos, CFG_AUTH_NAME_MAX - 1);
        return -1;
    }
    if (!valid_key_value(key, klen)) {
        snprintf(err, errsz,
                 "%s: auth key \"%.*s\" must be %d..%d characters of "
                 "[A-Za-z0-9-._~+/] (then '=' padding)",
                 origin, (int)nlen, name, CFG_AUTH_KEY_MIN_LEN, CFG_AUTH_KEY_MAX - 1);
        return -1;
    }
    for (i = 0; i < cfg->auth_nkeys; i++) {
        k = &cfg->auth_keys[i];
        if (strlen(k->name) == nlen && memcmp(k->name, name, nlen) == 0) {
            snprintf(err, errsz, "%s: auth key name \"%.*s\" appears twice", origin, (int)nlen,
                     name);
            return -1;
        }
        if (strlen(k->key) == klen && memcmp(k->key, key, klen) == 0) {
            snprintf(err, errsz, "%s: auth keys \"%s\" and \"%.*s\" are the same key", origin,
                     k->name, (int)nlen, name);
            return -1;
        }
    }
    k = &cfg->auth_keys[cfg->auth_nkeys++];
    memset(k, 0, sizeof(*k));
    memcpy(k->name, name, nlen);
    memcpy(k->key, key, klen);
    k->scopes = CFG_SCOPE_ALL;
    return 0;
}

/* The scopes of the last key added, from the '+'-separated list of n
 * bytes at s (environment form). An empty list is refused: a key that
 * opens nothing is a mistake. 0, or -1. */
static int set_scopes_text(struct config *cfg, const char *s, size_t n, const char *origin,
                           char *err, size_t errsz)
{
    struct cfg_auth_key *k = &cfg->auth_keys[cfg->auth_nkeys - 1];
    const char *end = s + n, *p = s, *q;

    k->scopes = 0;
    while (p < end) {
        q = memchr(p, '+', (size_t)(end - p));
        if (q == NULL)
            q = end;
        if (add_scope(p, (size_t)(q - p), &k->scopes, origin, k->name, err, errsz) != 0)
            return -1;
        p = q + 1;
    }
    if (k->scopes == 0) {
        snprintf(err, errsz, "%s: auth key \"%s\" names no scope", origin, k->name);
        return -1;
    }
    return 0;
}

static void clear_auth_keys(struct config *cfg)
{
    memset(cfg->auth_keys, 0, sizeof(cfg->auth_keys));
    cfg->auth_nkeys = 0;
}

/* The environment form, "name:key,name:key" ("" is an empty list), each
 * entry optionally "name:key:scope+scope". It replaces the file's list as
 * a whole. */
static int set_keys_text(struct config *cfg, const char *text, const char *origin, char *err,
                         size_t errsz)
{
    const char *p = text, *end, *colon, *second;

    clear_auth_keys(cfg);
    while (*p != '\0') {
        end = p + strcspn(p, ",");
        colon = memchr(p, ':', (size_t)(end - p));
        if (colon == NULL) {
            snprintf(err, errsz, "%s: auth.keys entry %d must be name:key", origin,
                     cfg->auth_nkeys + 1);
            return -1;
        }
        second = memchr(colon + 1, ':', (size_t)(end - colon - 1));
        if (add_auth_key(cfg, p, (size_t)(colon - p), colon + 1,
                         (size_t)((second != NULL ? second : end) - colon - 1), origin, err,
                         errsz) != 0)
            return -1;
        if (second != NULL &&
            set_scopes_text(cfg, second + 1, (size_t)(end - second - 1), origin, err, errsz) != 0)
            return -1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

/* The string member name of one auth.keys object, or NULL after writing
 * the reason. */
static const char *key_member(const cJSON *entry, const char *name, int pos, const char *file,
                              char *err, size_t errsz)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(entry, name);

    if (!cJSON_IsString(m)) {
        snprintf(err, errsz, "%s: auth.keys entry %d needs a string \"%s\"", file, pos, name);
        return NULL;
    }
    return m->valuestring;
}

/* The "scopes" member of a file entry: an array of scope names, at least
 * one. 0, or -1. */
static int set_scopes_json(struct config *cfg, const cJSON *arr, const char *file, char *err,
                           size_t errsz)
{
    struct cfg_auth_key *k = &cfg->auth_keys[cfg->auth_nkeys - 1];
    const cJSON *s;

    k->scopes = 0;
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
        snprintf(err, errsz, "%s: auth key \"%s\": scopes must be a non-empty array of names", file,
                 k->name);
        return -1;
    }
    cJSON_ArrayForEach (s, arr) {
        if (!cJSON_IsString(s) || add_scope(s->valuestring, strlen(s->valuestring), &k->scopes,
                                            file, k->name, err, errsz) != 0) {
            if (!cJSON_IsString(s))
                snprintf(err, errsz, "%s: auth key \"%s\": scopes must be strings", file, k->name);
            return -1;
        }
    }
    return 0;
}

/* The file form: [{"name": "ops", "key": "...", "scopes": [...]}, ...],
 * each object with name and key, and scopes optionally (absent: every
 * scope, as before keys had scopes). */
static int set_keys_json(struct config *cfg, const cJSON *item, const char *file, char *err,
                         size_t errsz)
{
    const cJSON *entry, *m;
    const char *name, *key;
    int pos = 0;

    clear_auth_keys(cfg);
    if (!cJSON_IsArray(item)) {
        snprintf(err, errsz, "%s: auth.keys must be an array of {\"name\", \"key\"}", file);
        return -1;
    }
    cJSON_ArrayForEach (entry, item) {
        pos++;
        if (!cJSON_IsObject(entry) || json_duplicate_key(entry) != NULL) {
            snprintf(err, errsz,
                     "%s: auth.keys entry %d must be an object with each member "
                     "once",
                     file, pos);
            return -1;
        }
        cJSON_ArrayForEach (m, entry) {
            if (strcmp(m->string, "name") != 0 && strcmp(m->string, "key") != 0 &&
                strcmp(m->string, "scopes") != 0) {
                snprintf(err, errsz, "%s: unknown key \"auth.keys[%d].%.32s\"", file, pos - 1,
                         m->string);
                return -1;
            }
        }
        if ((name = key_member(entry, "name", pos, file, err, errsz)) == NULL ||
            (key = key_member(entry, "key", pos, file, err, errsz)) == NULL ||
            add_auth_key(cfg, name, strlen(name), key, strlen(key), file, err, errsz) != 0)
            return -1;
        if ((m = cJSON_GetObjectItemCaseSensitive(entry, "scopes")) != NULL &&
            set_scopes_json(cfg, m, file, err, errsz) != 0)
            return -1;
    }
    return 0;
}

/* ---- mysql.shards: the databases orders are spread over ----------------- */

static void clear_shards(struct config *cfg)
{
    memset(cfg->shards, 0, sizeof(cfg->shards));
    cfg->nshards = 0;
}

/* Appends one shard after checking it. host and database may be "" and
 * port 0: mysql.*'s, filled in by check_shards once the environment has
 * been applied. 0, or -1 with the reason. */
static int add_shard(struct config *cfg, long id, const char *host, size_t hlen, long port,
                     const char *db, size_t dlen, const char *origin, char *err, size_t errsz)
{
    struct cfg_shard *sh;
    int i, pos = cfg->nshards + 1;

    if (cfg->nshards >= CFG_SHARDS_MAX) {
        snprintf(err, errsz, "%s: mysql.shards holds more than %d shards", origin, CFG_SHARDS_MAX);
        return -1;
    }
    if (id < 1 || id > CFG_SHARD_ID_MAX) {
        snprintf(err, errsz, "%s: mysql.shards entry %d: id must be in 1..%d", origin, pos,
                 CFG_SHARD_ID_MAX);
        return -1;
    }
    if (port < 0 || port > 65535) {
        snprintf(err, errsz, "%s: mysql.shards entry %d: port must be in 1..65535", origin, pos);
        return -1;
    }
    if (hlen >= CFG_STR_MAX || dlen >= CFG_STR_MAX) {
        snprintf(err, errsz,
                 "%s: mysql.shards entry %d: host and database are at most %d "
                 "bytes",
                 origin, pos, CFG_STR_MAX - 1);
        return -1;
    }
    for (i = 0; i < cfg->nshards; i++) {
        if (cfg->shards[i].id == id) {
            snprintf(err, errsz, "%s: mysql.shards: shard id %ld appears twice", origin, id);
            return -1;
        }
    }
    sh = &cfg->shards[cfg->nshards++];
    memset(sh, 0, sizeof(*sh));
    sh->id = (int)id;
    memcpy(sh->host, host, hlen);
    sh->port = (int)port;
    memcpy(sh->database, db, dlen);
    return 0;
}

/* The environment form, "id=host:port/database,..." where host, :port and
 * /database may each be left out (mysql.*'s); "" is no shards. It replaces
 * the file's list as a whole. */
static int set_shards_text(struct config *cfg, const char *text, const char *origin, char *err,
                           size_t errsz)
{
    const char *p = text, *end, *eq, *slash, *colon, *hend;
    long id, port;
    char num[16];

    clear_shards(cfg);
    while (*p != '\0') {
        end = p + strcspn(p, ",");
        eq = memchr(p, '=', (size_t)(end - p));
        if (eq == NULL || (size_t)(eq - p) >= sizeof(num)) {
            snprintf(err, errsz, "%s: mysql.shards entry %d must be id=host:port/database", origin,
                     cfg->nshards + 1);
            return -1;
        }
        memcpy(num, p, (size_t)(eq - p));
        num[eq - p] = '\0';
        slash = memchr(eq + 1, '/', (size_t)(end - eq - 1));
        hend = slash != NULL ? slash : end;
        colon = memchr(eq + 1, ':', (size_t)(hend - eq - 1));
        port = 0;
        if (colon != NULL) {
            char pn[16];
            size_t n = (size_t)(hend - colon - 1);
            if (n == 0 || n >= sizeof(pn)) {
                snprintf(err, errsz, "%s: mysql.shards entry %d: port must be in 1..65535", origin,
                         cfg->nshards + 1);
                return -1;
            }
            memcpy(pn, colon + 1, n);
            pn[n] = '\0';
            if (parse_long(pn, &port) != 0 || port < 1) {
                snprintf(err, errsz, "%s: mysql.shards entry %d: port must be in 1..65535", origin,
                         cfg->nshards + 1);
                return -1;
            }
        }
        if (parse_long(num, &id) != 0) {
            snprintf(err, errsz, "%s: mysql.shards entry %d: id must be in 1..%d", origin,
                     cfg->nshards + 1, CFG_SHARD_ID_MAX);
            return -1;
        }
        if (add_shard(cfg, id, eq + 1, (size_t)((colon != NULL ? colon : hend) - eq - 1), port,
                      slash != NULL ? slash + 1 : "", slash != NULL ? (size_t)(end - slash - 1) : 0,
                      origin, err, errsz) != 0)
            return -1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

/* The file form: [{"id": 1, "host": "...", "port": 3306, "database": "..."}],
 * id required, the others optional (mysql.*'s). */
static int set_shards_json(struct config *cfg, const cJSON *item, const char *file, char *err,
                           size_t errsz)
{
    const cJSON *entry, *m;
    int pos = 0;

    clear_shards(cfg);
    if (!cJSON_IsArray(item)) {
        snprintf(err, errsz,
                 "%s: mysql.shards must be an array of {\"id\", \"host\", "
                 "\"port\", \"database\"}",
                 file);
        return -1;
    }
    cJSON_ArrayForEach (entry, item) {
        const char *host = "", *db = "";
        int64_t id = 0, port = 0;

        pos++;
        if (!cJSON_IsObject(entry) || json_duplicate_key(entry) != NULL) {
            snprintf(err, errsz,
                     "%s: mysql.shards entry %d must be an object with each member "
                     "once",
                     file, pos);
            return -1;
        }
        cJSON_ArrayForEach (m, entry) {
            int ok;
            if (strcmp(m->string, "id") == 0)
                ok = json_int_value(m, 1, CFG_SHARD_ID_MAX, &id) == JSON_OK;
            else if (strcmp(m->string, "port") == 0)
                ok = json_int_value(m, 1, 65535, &port) == JSON_OK;
            else if (strcmp(m->string, "host") == 0 && cJSON_IsString(m))
                ok = (host = m->valuestring)[0] != '\0';
            else if (strcmp(m->string, "database") == 0 && cJSON_IsString(m))
                ok = (db = m->valuestring)[0] != '\0';
            else if (strcmp(m->string, "host") == 0 || strcmp(m->string, "database") == 0)
                ok = 0;
            else {
                snprintf(err, errsz, "%s: unknown key \"mysql.shards[%d].%.32s\"", file, pos - 1,
                         m->string);
                return -1;
            }
            if (!ok) {
                snprintf(err, errsz, "%s: mysql.shards entry %d: %s must be %s", file, pos,
                         m->string,
                         strcmp(m->string, "id") == 0     ? "an integer in 1..99"
                         : strcmp(m->string, "port") == 0 ? "an integer in 1..65535"
                                                          : "a non-empty string");
                return -1;
            }
        }
        if (id == 0) {
            snprintf(err, errsz, "%s: mysql.shards entry %d needs an \"id\"", file, pos);
            return -1;
        }
        if (add_shard(cfg, (long)id, host, strlen(host), (long)port, db, strlen(db), file, err,
                      errsz) != 0)
            return -1;
    }
    return 0;
}

/* mysql.cluster_id: required with mysql.shards, a short name of letters,
 * digits, '.', '_' and '-' (it is written to every shard and into logs). */
static int check_cluster_id(const struct config *cfg, unsigned flags, char *err, size_t errsz)
{
    const char *p;

    for (p = cfg->mysql_cluster_id; *p != '\0'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-')) {
            snprintf(err, errsz, "mysql.cluster_id may hold only A-Z a-z 0-9 . _ -");
            return -1;
        }
    if (cfg->nshards == 0 || (flags & CFG_LOAD_DB_ONLY))
        return 0; /* migrate needs none; shards init says so itself */
    if (cfg->mysql_cluster_id[0] == '\0') {
        snprintf(err, errsz,
                 "mysql.cluster_id is required with mysql.shards: the name every shard stores "
                 "(paycallback shards init, docs/sharding.md)");
        return -1;
    }
    return 0;
}

/* Fills each shard's endpoint left out with mysql.*'s, and refuses two
 * shards on one database: every guarantee across shards rests on them
 * being distinct. */
static int check_shards(struct config *cfg, char *err, size_t errsz)
{
    int i, j;

    for (i = 0; i < cfg->nshards; i++) {
        struct cfg_shard *sh = &cfg->shards[i];
        if (sh->host[0] == '\0')
            memcpy(sh->host, cfg->mysql_host, sizeof(sh->host));
        if (sh->port == 0)
            sh->port = cfg->mysql_port;
        if (sh->database[0] == '\0')
            memcpy(sh->database, cfg->mysql_database, sizeof(sh->database));
        for (j = 0; j < i; j++) {
            const struct cfg_shard *o = &cfg->shards[j];
            if (strcmp(o->host, sh->host) == 0 && o->port == sh->port &&
                strcmp(o->database, sh->database) == 0) {
                snprintf(err, errsz,
                         "mysql.shards: shards %d and %d are the same database "
                         "(%s:%d/%s)",
                         o->id, sh->id, sh->host, sh->port, sh->database);
                return -1;
            }
        }
    }
    return 0;
}

/* Stores text (a default or an environment value) as the value of k.
 * Returns 0, or -1 with a reason in err. */
static int set_value(struct config *cfg, const struct cfg_key *k, const char *text,
                     const char *origin, char *err, size_t errsz)
{
    char path[64];
    long v;

    if (k->type == KEY_STR)
        return set_str(cfg, k, text, origin, err, errsz);
    if (k->type == KEY_KEYS)
        return set_keys_text(cfg, text, origin, err, errsz);
    if (k->type == KEY_SHARDS)
        return set_shards_text(cfg, text, origin, err, errsz);
    if (parse_long(text, &v) != 0) {
        key_path(k, path, sizeof(path));
        snprintf(err, errsz, "%s: %s must be an integer, got \"%.32s\"", origin, path, text);
        return -1;
    }
    return set_int(cfg, k, v, origin, err, errsz);
}

/* Applies one JSON value, which must have the key's type. A number is
 * range-checked as a double before it is converted: 1e34 is out of range,
 * not undefined behaviour. */
static int set_json(struct config *cfg, const struct cfg_key *k, const cJSON *item,
                    const char *file, char *err, size_t errsz)
{
    char path[64];
    int64_t v;

    key_path(k, path, sizeof(path));
    if (k->type == KEY_KEYS)
        return set_keys_json(cfg, item, file, err, errsz);
    if (k->type == KEY_SHARDS)
        return set_shards_json(cfg, item, file, err, errsz);
    if (k->type == KEY_STR) {
        if (!cJSON_IsString(item)) {
            snprintf(err, errsz, "%s: %s must be a string", file, path);
            return -1;
        }
        return set_str(cfg, k, item->valuestring, file, err, errsz);
    }
    switch (json_int_value(item, k->min, k->max, &v)) {
    case JSON_OK: return set_int(cfg, k, (long)v, file, err, errsz);
    case JSON_RANGE:
        if (cJSON_IsNumber(item)) {
            snprintf(err, errsz, "%s: %s must be in %ld..%ld, got %g", file, path, k->min, k->max,
                     item->valuedouble);
            return -1;
        }
        break;
    default: break;
    }
    snprintf(err, errsz, "%s: %s must be an integer", file, path);
    return -1;
}

/* The whole file, NUL-terminated, its length in *len. NULL on failure. */
static char *read_file(const char *path, size_t *len, char *err, size_t errsz)
{
    FILE *f = NULL;
    char *buf = NULL;
    size_t n;

    if ((f = fopen(path, "rb")) == NULL) {
        snprintf(err, errsz, "cannot open config %s: %s", path, strerror(errno));
        return NULL;
    }
    if ((buf = malloc(CFG_FILE_MAX_BYTES + 1)) == NULL) {
        snprintf(err, errsz, "out of memory reading %s", path);
        goto out;
    }
    n = fread(buf, 1, CFG_FILE_MAX_BYTES + 1, f);
    if (n > CFG_FILE_MAX_BYTES || ferror(f)) {
        snprintf(err, errsz, "cannot read config %s: too large or unreadable", path);
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
    *len = n;
out:
    fclose(f);
    return buf;
}

/* Every key in the file must be known: a typo must not silently fall back
 * to a default (a misspelt "secret" would turn authentication off). */
static int check_unknown(const cJSON *root, const char *file, char *err, size_t errsz)
{
    const cJSON *it, *sub;
    const char *dup;
    size_t i;
    int known;

    if ((dup = json_duplicate_key(root)) != NULL) {
        snprintf(err, errsz, "%s: key \"%s\" appears twice", file, dup);
        return -1;
    }
    cJSON_ArrayForEach (it, root) {
        if (strcmp(it->string, CFG_GATEWAYS_KEY) == 0 || strcmp(it->string, CFG_WEBHOOKS_KEY) == 0)
            continue; /* checked by gateway_cfg_parse, webhook_cfg_parse */
        known = 0;
        for (i = 0; i < NKEYS && !known; i++) {
            if (keys[i].section == NULL && strcmp(keys[i].name, it->string) == 0)
                known = 1;
            else if (keys[i].section != NULL && strcmp(keys[i].section, it->string) == 0) {
                if (!cJSON_IsObject(it)) {
                    snprintf(err, errsz, "%s: %s must be an object", file, it->string);
                    return -1;
                }
                known = 1;
            }
        }
        if (!known) {
            snprintf(err, errsz, "%s: unknown key \"%s\"", file, it->string);
            return -1;
        }
        if (!cJSON_IsObject(it))
            continue;
        if ((dup = json_duplicate_key(it)) != NULL) {
            snprintf(err, errsz, "%s: key \"%s.%s\" appears twice", file, it->string, dup);
            return -1;
        }
        cJSON_ArrayForEach (sub, it) {
            for (known = 0, i = 0; i < NKEYS && !known; i++)
                known = keys[i].section && strcmp(keys[i].section, it->string) == 0 &&
                        strcmp(keys[i].name, sub->string) == 0;
            if (!known) {
                snprintf(err, errsz, "%s: unknown key \"%s.%s\"", file, it->string, sub->string);
                return -1;
            }
        }
    }
    return 0;
}

/* Applies the file named path: its text when given (len bytes), else
 * what reading path yields. */
static int apply_file(struct config *cfg, const char *path, const char *given, size_t len,
                      char *err, size_t errsz)
{
    char *read = NULL;
    const char *text = given;
    cJSON *root = NULL;
    const cJSON *item;
    size_t i;
    int rc = -1;

    if (text == NULL && (text = read = read_file(path, &len, err, errsz)) == NULL)
        return -1;
    switch (json_parse_object(text, len, &root)) {
    case JSON_OK: break;
    case JSON_NUL: snprintf(err, errsz, "%s: holds a NUL character", path); goto out;
    default: snprintf(err, errsz, "%s: not a JSON object (or data after it)", path); goto out;
    }
    if (check_unknown(root, path, err, errsz) != 0)
        goto out;
    item = cJSON_GetObjectItemCaseSensitive(root, CFG_GATEWAYS_KEY);
    if (item != NULL && gateway_cfg_parse(item, &cfg->gateways, path, err, errsz) != 0)
        goto out;
    for (i = 0; i < NKEYS; i++) {
        item = keys[i].section
                   ? cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(root, keys[i].section), keys[i].name)
                   : cJSON_GetObjectItemCaseSensitive(root, keys[i].name);
        if (item != NULL && set_json(cfg, &keys[i], item, path, err, errsz) != 0)
            goto out;
    }
    item = cJSON_GetObjectItemCaseSensitive(root, CFG_WEBHOOKS_KEY);
    if (item != NULL) {
        struct webhook_endpoint_cfg defaults;

        cfg_default_webhook(cfg, cfg, &defaults);
        if (webhook_cfg_parse(item, &defaults, &cfg->webhooks, path, err, errsz) != 0)
            goto out;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    free(read);
    return rc;
}

/* The daemon binds an address, not a name: no resolver at start. */
static int is_ip_address(const char *s)
{
    unsigned char a[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

/* The value of the variable name in envp ("NAME=value" strings, NULL-
 * terminated), or NULL. The first entry wins, as with getenv. */
static const char *env_get(const char *const *envp, const char *name)
{
    size_t n = strlen(name);

    for (; envp != NULL && *envp != NULL; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

/* True when the variable named by the first n bytes of s is one this
 * module reads, or the secret or query token of a configured gateway. */
static int env_known(const struct config *cfg, const char *s, size_t n)
{
    char name[96];
    size_t i;

    if (strlen(CFG_DEV_ENV) == n && strncmp(CFG_DEV_ENV, s, n) == 0)
        return 1;
    for (i = 0; i < NKEYS; i++) {
        env_name(&keys[i], name, sizeof(name));
        if (strlen(name) == n && strncmp(name, s, n) == 0)
            return 1;
    }
    for (i = 0; i < cfg->gateways.n; i++) {
        const struct gateway_profile_cfg *p = &cfg->gateways.profile[i];
        if (strlen(p->secret_env) == n && strncmp(p->secret_env, s, n) == 0)
            return 1;
        if (p->query_url[0] != '\0' && strlen(p->query_token_env) == n &&
            strncmp(p->query_token_env, s, n) == 0)
            return 1;
    }
    return 0;
}

/* The service owns the PAYCALLBACK_ prefix: every variable under it must
 * be one it reads, so that a misspelt PAYCALLBACK_CALLBACK_SECRT stops the
 * start instead of leaving the file's value in force. */
static int check_env_names(const struct config *cfg, const char *const *envp, char *err,
                           size_t errsz)
{
    size_t plen = strlen(CFG_ENV_PREFIX), n;
    const char *eq;

    for (; envp != NULL && *envp != NULL; envp++) {
        if (strncmp(*envp, CFG_ENV_PREFIX, plen) != 0)
            continue;
        eq = strchr(*envp, '=');
        n = eq != NULL ? (size_t)(eq - *envp) : strlen(*envp);
        if (!env_known(cfg, *envp, n)) {
            snprintf(err, errsz,
                     "unknown environment variable %.*s: not a configuration key "
                     "(paycallback --help lists them)",
                     (int)(n < 96 ? n : 96), *envp);
            return -1;
        }
    }
    return 0;
}

/* The development switch: the flag, or PAYCALLBACK_DEV=1 ("0" or empty
 * leave it off). 0 with *dev set, or -1 for any other value. */
static int dev_switch(const char *const *envp, unsigned flags, int *dev, char *err, size_t errsz)
{
    const char *v = env_get(envp, CFG_DEV_ENV);

    *dev = (flags & CFG_LOAD_DEV) != 0;
    if (v == NULL || strcmp(v, "") == 0 || strcmp(v, "0") == 0)
        return 0;
    if (strcmp(v, "1") != 0) {
        snprintf(err, errsz, "%s must be 0 or 1, got \"%.16s\"", CFG_DEV_ENV, v);
        return -1;
    }
    *dev = 1;
    return 0;
}

/* Fail closed on the callback secrets: outside development the secret
 * must be set and neither secret may be the shipped development value,
 * which is public. In development an empty secret becomes that value, so
 * that callbacks are verified in every mode. 0, or -1 with the reason. */
static int check_secrets(struct config *cfg, char *err, size_t errsz)
{
    if (cfg->dev) {
        if (cfg->callback_secret[0] == '\0')
            snprintf(cfg->callback_secret, sizeof(cfg->callback_secret), "%s", CFG_DEV_SECRET);
        return 0;
    }
    if (cfg->callback_secret[0] == '\0') {
        snprintf(err, errsz,
                 "callback.secret is empty: set PAYCALLBACK_CALLBACK_SECRET "
                 "(only --dev or %s=1 runs without one)",
                 CFG_DEV_ENV);
        return -1;
    }
    if (strcmp(cfg->callback_secret, CFG_DEV_SECRET) == 0 ||
        strcmp(cfg->callback_previous_secret, CFG_DEV_SECRET) == 0) {
        snprintf(err, errsz,
                 "callback secret is the shipped development value \"%s\": set "
                 "PAYCALLBACK_CALLBACK_SECRET (only --dev or %s=1 accepts it)",
                 CFG_DEV_SECRET, CFG_DEV_ENV);
        return -1;
    }
    /* A short shared secret can be guessed offline from one signed
     * callback: as many bytes as the HMAC-SHA256 key it becomes. */
    if (strlen(cfg->callback_secret) < CFG_SECRET_MIN ||
        (cfg->callback_previous_secret[0] != '\0' &&
         strlen(cfg->callback_previous_secret) < CFG_SECRET_MIN)) {
        snprintf(err, errsz,
                 "callback.%s is shorter than %d bytes: use a random one (openssl rand -hex 32; "
                 "only --dev or %s=1 accepts a short one)",
                 strlen(cfg->callback_secret) < CFG_SECRET_MIN ? "secret" : "previous_secret",
                 CFG_SECRET_MIN, CFG_DEV_ENV);
        return -1;
    }
    return 0;
}

/* Outside development no credential travels in clear: a gateway's refund
 * and query endpoints (which carry its secret key or token) and the native
 * query endpoint (its bearer token) must be https://. 0, or -1 with the
 * reason. */
static int check_tls_endpoints(const struct config *cfg, char *err, size_t errsz)
{
    static const char plain[] = "http://";

    if (cfg->dev)
        return 0;
    for (size_t i = 0; i < cfg->gateways.n; i++) {
        const struct gateway_profile_cfg *p = &cfg->gateways.profile[i];
        const char *what = strncmp(p->refund_url, plain, sizeof(plain) - 1) == 0  ? "refund_url"
                           : strncmp(p->query_url, plain, sizeof(plain) - 1) == 0 ? "query_url"
                                                                                  : NULL;
        if (what != NULL) {
            snprintf(err, errsz,
                     "gateways[%zu] \"%s\": %s is http://, and its credentials would travel in "
                     "clear: use https:// (only --dev or %s=1 accepts http://)",
                     i, p->name, what, CFG_DEV_ENV);
            return -1;
        }
    }
    if (strncmp(cfg->callback_query_url, plain, sizeof(plain) - 1) == 0) {
        snprintf(err, errsz,
                 "callback.query_url is http://, and its token would travel in clear: use "
                 "https:// (only --dev or %s=1 accepts http://)",
                 CFG_DEV_ENV);
        return -1;
    }
    return 0;
}

/* Fail closed on the operator keys, as on the callback secret: the order
 * transitions, order reads and /metrics always need one. */
static int check_auth_keys(struct config *cfg, char *err, size_t errsz)
{
    int i;

    if (cfg->dev) {
        if (cfg->auth_nkeys == 0)
            return add_auth_key(cfg, CFG_DEV_AUTH_NAME, strlen(CFG_DEV_AUTH_NAME), CFG_DEV_AUTH_KEY,
                                strlen(CFG_DEV_AUTH_KEY), "development", err, errsz);
        return 0;
    }
    if (cfg->auth_nkeys == 0) {
        snprintf(err, errsz,
                 "auth.keys is empty: the operator routes need a key; set "
                 "PAYCALLBACK_AUTH_KEYS=name:key (only --dev or %s=1 runs without one)",
                 CFG_DEV_ENV);
        return -1;
    }
    for (i = 0; i < cfg->auth_nkeys; i++) {
        if (strncmp(cfg->auth_keys[i].key, CFG_PLACEHOLDER, sizeof(CFG_PLACEHOLDER) - 1) == 0) {
            snprintf(err, errsz,
                     "auth key \"%s\" still holds the placeholder %s...: set it "
                     "(man 5 paycallback.json)",
                     cfg->auth_keys[i].name, CFG_PLACEHOLDER);
            return -1;
        }
        if (strcmp(cfg->auth_keys[i].key, CFG_DEV_AUTH_KEY) == 0) {
            snprintf(err, errsz,
                     "auth key \"%s\" is the development key: set a real one "
                     "(only --dev or %s=1 accepts it)",
                     cfg->auth_keys[i].name, CFG_DEV_ENV);
            return -1;
        }
    }
    return 0;
}

/* The native query endpoint: a URL the service may call, and then a
 * token it can send (fail closed: a query without its credential would be
 * refused by the endpoint on every pass, or answered by anyone). The
 * token is never printed. */
static int check_query(const struct config *cfg, char *err, size_t errsz)
{
    if (cfg->callback_query_url[0] == '\0') {
        if (cfg->callback_query_token[0] != '\0') {
            snprintf(err, errsz, "callback.query_token is set but callback.query_url is empty");
            return -1;
        }
        return 0;
    }
    if (!validate_http_url(cfg->callback_query_url)) {
        snprintf(err, errsz,
                 "callback.query_url must be an http:// or https:// URL without "
                 "user info or fragment, got \"%s\"",
                 cfg->callback_query_url);
        return -1;
    }
    if (cfg->callback_query_token[0] == '\0') {
        snprintf(err, errsz,
                 "callback.query_token is empty: callback.query_url needs it; set "
                 "PAYCALLBACK_CALLBACK_QUERY_TOKEN");
        return -1;
    }
    if (!validate_bearer_token(cfg->callback_query_token, CFG_STR_MAX - 1)) {
        snprintf(err, errsz,
                 "callback.query_token must be characters of [A-Za-z0-9-._~+/] "
                 "(then '=' padding)");
        return -1;
    }
    return 0;
}

/* Checks that need more than one key's own range. 0, or -1. */
/* The webhook format and its secrets: a standard-format secret must be a
 * whsec_ secret the shop's library can decode (checked whenever set, so
 * that a reload never brings one the running relay cannot sign with); a
 * previous secret signs beside it only until a stated time. */
static int check_webhook_secrets(struct config *cfg, char *err, size_t errsz)
{
    bool standard = strcmp(cfg->webhook_format, CFG_WEBHOOK_STANDARD) == 0;
    const char *names[] = { "webhook.secret", "webhook.previous_secret" };
    const char *vals[] = { cfg->webhook_secret, cfg->webhook_previous_secret };
    unsigned char key[SWH_KEY_MAX];
    size_t n;

    if (!standard && strcmp(cfg->webhook_format, CFG_WEBHOOK_LEGACY) != 0) {
        snprintf(err, errsz, "webhook.format must be %s or %s, got \"%s\"", CFG_WEBHOOK_STANDARD,
                 CFG_WEBHOOK_LEGACY, cfg->webhook_format);
        return -1;
    }
    for (size_t i = 0; standard && i < ARRAY_SIZE(vals); i++) {
        if (vals[i][0] != '\0' && swh_secret_decode(vals[i], key, &n) != 0) {
            snprintf(err, errsz,
                     "%s must be whsec_ and the base64 of %d to %d random bytes for the "
                     "standard format (or set webhook.format to %s to keep X-Signature)",
                     names[i], SWH_KEY_MIN, SWH_KEY_MAX, CFG_WEBHOOK_LEGACY);
            return -1;
        }
        OPENSSL_cleanse(key, sizeof(key));
    }
    cfg->webhook_previous_until_s = 0;
    if (cfg->webhook_previous_secret[0] != '\0' && !standard) {
        snprintf(err, errsz,
                 "webhook.previous_secret needs the standard format: the legacy one carries "
                 "a single signature");
        return -1;
    }
    if ((cfg->webhook_previous_secret[0] != '\0') !=
        (cfg->webhook_previous_secret_until[0] != '\0')) {
        snprintf(err, errsz,
                 "webhook.previous_secret and webhook.previous_secret_until go together: the "
                 "previous secret signs until that time");
        return -1;
    }
    if (cfg->webhook_previous_secret_until[0] != '\0' &&
        (cfg->webhook_previous_until_s = webhook_parse_utc(cfg->webhook_previous_secret_until)) <
            0) {
        snprintf(err, errsz,
                 "webhook.previous_secret_until must be a UTC time like 2026-12-03T15:00:00Z, "
                 "got \"%s\"",
                 cfg->webhook_previous_secret_until);
        return -1;
    }
    return 0;
}

static int check_values(struct config *cfg, unsigned flags, char *err, size_t errsz)
{
    char name[96], why[128];
    size_t i;

    for (i = 0; i < NKEYS; i++) {
        const char *s = (const char *)cfg + keys[i].offset;
        if (keys[i].type == KEY_STR && keys[i].min > 0 && s[0] == '\0') {
            key_path(&keys[i], name, sizeof(name));
            snprintf(err, errsz, "%s must not be empty", name);
            return -1;
        }
        /* migrate reads the mysql keys only: the others may wait. */
        if (keys[i].type == KEY_STR &&
            strncmp(s, CFG_PLACEHOLDER, sizeof(CFG_PLACEHOLDER) - 1) == 0 &&
            (!(flags & CFG_LOAD_DB_ONLY) ||
             (keys[i].section != NULL && strcmp(keys[i].section, "mysql") == 0))) {
            key_path(&keys[i], name, sizeof(name));
            snprintf(err, errsz,
                     "%s still holds the placeholder %s...: set it (man 5 "
                     "paycallback.json)",
                     name, CFG_PLACEHOLDER);
            return -1;
        }
    }
    if (strcmp(cfg->log_level, "debug") != 0 && strcmp(cfg->log_level, "info") != 0 &&
        strcmp(cfg->log_level, "warn") != 0 && strcmp(cfg->log_level, "error") != 0) {
        snprintf(err, errsz, "log_level must be debug, info, warn or error, got \"%s\"",
                 cfg->log_level);
        return -1;
    }
    if (strcmp(cfg->log_format, "logfmt") != 0 && strcmp(cfg->log_format, "json") != 0) {
        snprintf(err, errsz, "log_format must be logfmt or json, got \"%s\"", cfg->log_format);
        return -1;
    }
    if (cfg->webhook_url[0] != '\0' && cfg->webhook_secret[0] == '\0') {
        snprintf(err, errsz,
                 "webhook.secret must be set when webhook.url is: the shop could "
                 "not tell our events from forged ones");
        return -1;
    }
    if (cfg->webhook_url[0] != '\0' && strncmp(cfg->webhook_url, "http://", 7) != 0 &&
        strncmp(cfg->webhook_url, "https://", 8) != 0) {
        snprintf(err, errsz, "webhook.url must start with http:// or https://, got \"%s\"",
                 cfg->webhook_url);
        return -1;
    }
    if (check_webhook_secrets(cfg, err, errsz) != 0 || check_query(cfg, err, errsz) != 0)
        return -1;
    for (i = 0; cfg->webhook_url[0] != '\0' && i < cfg->webhooks.n; i++)
        if (strcmp(cfg->webhooks.ep[i].name, WEBHOOK_DEFAULT_NAME) == 0 ||
            cfg->webhooks.n == WEBHOOKS_MAX) {
            snprintf(err, errsz,
                     "webhooks: with webhook.url set (the endpoint \"%s\") the array holds at "
                     "most %d endpoints, none named so",
                     WEBHOOK_DEFAULT_NAME, WEBHOOKS_MAX - 1);
            return -1;
        }
    if (cfg->webhook_backoff_max_ms < cfg->webhook_backoff_base_ms) {
        snprintf(err, errsz,
                 "webhook.backoff_max_ms (%d) must not be below "
                 "webhook.backoff_base_ms (%d)",
                 cfg->webhook_backoff_max_ms, cfg->webhook_backoff_base_ms);
        return -1;
    }
    if (cfg->retention_payment_days != 0 && cfg->retention_payment_days < CFG_PAYMENT_DAYS_MIN) {
        snprintf(err, errsz,
                 "retention.payment_days must be 0 (keep) or at least %d, longer "
                 "than any gateway retries a callback; got %d",
                 CFG_PAYMENT_DAYS_MIN, cfg->retention_payment_days);
        return -1;
    }
    if (netaddr_list_parse(cfg->http_trusted_proxies, &cfg->http_trusted, why, sizeof(why)) != 0) {
        snprintf(err, errsz, "http.trusted_proxies: %s", why);
        return -1;
    }
    if (!is_ip_address(cfg->listen_address)) {
        snprintf(err, errsz, "listen.address must be an IPv4 or IPv6 address, got \"%s\"",
                 cfg->listen_address);
        return -1;
    }
    if (check_shards(cfg, err, errsz) != 0 || check_cluster_id(cfg, flags, err, errsz) != 0)
        return -1;
    if (flags & CFG_LOAD_DB_ONLY) /* only the database is reached */
        return 0;
    if (check_secrets(cfg, err, errsz) != 0)
        return -1;
    return check_auth_keys(cfg, err, errsz);
}

bool cfg_default_webhook(const struct config *running, const struct config *snap,
                         struct webhook_endpoint_cfg *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", WEBHOOK_DEFAULT_NAME);
    snprintf(out->url, sizeof(out->url), "%s", running->webhook_url);
    out->events = (1u << WEBHOOK_EVENT_TYPES_N) - 1;
    out->format = strcmp(running->webhook_format, CFG_WEBHOOK_LEGACY) == 0 ? WEBHOOK_LEGACY
                                                                           : WEBHOOK_STANDARD;
    snprintf(out->secret, sizeof(out->secret), "%s", snap->webhook_secret);
    snprintf(out->previous_secret, sizeof(out->previous_secret), "%s",
             snap->webhook_previous_secret);
    out->previous_until_s = snap->webhook_previous_until_s;
    out->timeout_ms = running->webhook_timeout_ms;
    out->max_attempts = running->webhook_max_attempts;
    out->backoff_base_ms = running->webhook_backoff_base_ms;
    out->backoff_max_ms = running->webhook_backoff_max_ms;
    return running->webhook_url[0] != '\0';
}

/* The secrets a configuration file may hold: the string keys, then the
 * operator keys and the webhooks' secrets. */
static const char *const secret_keys[][2] = {
    { "callback", "secret" }, { "callback", "previous_secret" }, { "callback", "query_token" },
    { "webhook", "secret" },  { "webhook", "previous_secret" },  { "mysql", "password" }
};
#define NSECRET_KEYS (sizeof(secret_keys) / sizeof(secret_keys[0]))

static const struct cfg_key *secret_key(size_t i)
{
    for (size_t k = 0; k < NKEYS; k++)
        if (keys[k].section != NULL && strcmp(keys[k].section, secret_keys[i][0]) == 0 &&
            strcmp(keys[k].name, secret_keys[i][1]) == 0)
            return &keys[k];
    return NULL;
}

/* Whether a secret in force came from the file: a string key the file set
 * and the environment does not, the file's operator keys when the
 * environment names none, or a webhook endpoint's secret (only the file
 * names those). Read right after the file was applied. */
static bool file_holds_secret(const struct config *cfg, const char *const *envp, bool db_only)
{
    char name[96];

    for (size_t i = 0; i < NSECRET_KEYS; i++) {
        const struct cfg_key *k = secret_key(i);

        if (k == NULL || ((const char *)cfg + k->offset)[0] == '\0' ||
            (db_only && strcmp(k->section, "mysql") != 0)) /* migrate reads no other */
            continue;
        env_name(k, name, sizeof(name));
        if (env_get(envp, name) == NULL)
            return true;
    }
    if (db_only)
        return false;
    snprintf(name, sizeof(name), "%sAUTH_KEYS", CFG_ENV_PREFIX);
    if (cfg->auth_nkeys > 0 && env_get(envp, name) == NULL)
        return true;
    return cfg->webhooks.n > 0;
}

/* Outside development a configuration file that holds a secret in force
 * may not be readable by others. 0, or -1 with the reason. */
static int check_file_mode(const struct config *cfg, const char *path, bool holds_secret, char *err,
                           size_t errsz)
{
    struct stat st;

    if (cfg->dev || !holds_secret || stat(path, &st) != 0)
        return 0;
    if (st.st_mode & S_IROTH) {
        snprintf(err, errsz,
                 "%s holds secrets and is readable by others (mode %04o): chmod o-r %s "
                 "(only --dev or %s=1 accepts it)",
                 path, (unsigned)(st.st_mode & 07777), path, CFG_DEV_ENV);
        return -1;
    }
    return 0;
}

/* cfg_load, with the file's text in memory when text is not NULL. */
static int load(struct config *cfg, const char *path, const char *text, size_t len,
                const char *const *envp, unsigned flags, char *err, size_t errsz)
{
    bool holds_secret;
    char name[96];
    const char *v;
    size_t i;

    memset(cfg, 0, sizeof(*cfg));
    for (i = 0; i < NKEYS; i++)
        if (set_value(cfg, &keys[i], keys[i].def, "default", err, errsz) != 0)
            return -1;
    if (dev_switch(envp, flags, &cfg->dev, err, errsz) != 0)
        return -1;
    if (path != NULL && apply_file(cfg, path, text, len, err, errsz) != 0)
        return -1;
    holds_secret = path != NULL && text == NULL &&
                   file_holds_secret(cfg, envp, (flags & CFG_LOAD_DB_ONLY) != 0);
    /* After the file, which names the gateways' secret variables. */
    if (check_env_names(cfg, envp, err, errsz) != 0)
        return -1;
    for (i = 0; i < NKEYS; i++) {
        env_name(&keys[i], name, sizeof(name));
        if ((v = env_get(envp, name)) != NULL && set_value(cfg, &keys[i], v, name, err, errsz) != 0)
            return -1;
    }
    if (check_values(cfg, flags, err, errsz) != 0 ||
        (!(flags & CFG_LOAD_DB_ONLY) && check_tls_endpoints(cfg, err, errsz) != 0))
        return -1;
    return holds_secret ? check_file_mode(cfg, path, true, err, errsz) : 0;
}

int cfg_load(struct config *cfg, const char *path, const char *const *envp, unsigned flags,
             char *err, size_t errsz)
{
    return load(cfg, path, NULL, 0, envp, flags, err, errsz);
}

int cfg_load_text(struct config *cfg, const char *name, const char *text, size_t len,
                  const char *const *envp, unsigned flags, char *err, size_t errsz)
{
    return load(cfg, name, text, len, envp, flags, err, errsz);
}

size_t cfg_endpoints(const struct config *cfg, struct cfg_shard out[CFG_SHARDS_MAX])
{
    if (cfg->nshards > 0) {
        memcpy(out, cfg->shards, (size_t)cfg->nshards * sizeof(*out));
        return (size_t)cfg->nshards;
    }
    memset(out, 0, sizeof(*out));
    out->id = 1;
    memcpy(out->host, cfg->mysql_host, sizeof(out->host));
    out->port = cfg->mysql_port;
    memcpy(out->database, cfg->mysql_database, sizeof(out->database));
    return 1;
}

/* The key's accepted values, without blanks (the --help table and the
 * man page split on them): "1..1024" for a number, "len<=255" or
 * "len1..255" for a string, "n<=16" for the key list. */
static void key_range(const struct cfg_key *k, char *buf, size_t n)
{
    switch (k->type) {
    case KEY_INT: snprintf(buf, n, "%ld..%ld", k->min, k->max); break;
    case KEY_STR:
        if (k->section == NULL && strcmp(k->name, "log_level") == 0)
            snprintf(buf, n, "debug|info|warn|error");
        else if (k->section == NULL && strcmp(k->name, "log_format") == 0)
            snprintf(buf, n, "logfmt|json");
        else if (k->min > 0)
            snprintf(buf, n, "len1..%zu", k->size - 1);
        else
            snprintf(buf, n, "len<=%zu", k->size - 1);
        break;
    case KEY_KEYS: snprintf(buf, n, "n<=%d", CFG_AUTH_KEYS_MAX); break;
    case KEY_SHARDS: snprintf(buf, n, "n<=%d", CFG_SHARDS_MAX); break;
    }
}

/* text as lines of at most 78 columns, each indented by 6 spaces: a key's
 * meaning under its row of the --help table (gen-man.py reads them there). */
static void print_doc(const char *text)
{
    const int width = 78 - 6;

    while (*text) {
        int n = (int)strlen(text), cut = n;

        if (n > width) {
            for (cut = width; cut > 0 && text[cut] != ' '; cut--)
                ;
            if (cut == 0)
                cut = width;
        }
        printf("      %.*s\n", cut, text);
        text += cut;
        while (*text == ' ')
            text++;
    }
}

void cfg_print_keys(void)
{
    char path[64], env[96], range[48];
    size_t i;

    printf("  %-30s %-45s %-18s %-6s %s\n", "key", "environment", "range", "sighup", "default");
    for (i = 0; i < NKEYS; i++) {
        key_path(&keys[i], path, sizeof(path));
        env_name(&keys[i], env, sizeof(env));
        key_range(&keys[i], range, sizeof(range));
        printf("  %-30s %-45s %-18s %-6s %s\n", path, env, range, keys[i].reload ? "reload" : "-",
               keys[i].def[0] ? keys[i].def : "(empty)");
        print_doc(keys[i].doc);
    }
    snprintf(range, sizeof(range), "n<=%d", GATEWAYS_MAX);
    printf("  %-30s %-45s %-18s %-6s %s\n", CFG_GATEWAYS_KEY, "-", range, "reload", "(none)");
    print_doc("the payment gateways that call POST /pay/callback/NAME, one profile each "
              "(docs/gateways.md, paycallback.json(5)); file only");
    snprintf(range, sizeof(range), "n<=%d", WEBHOOKS_MAX);
    printf("  %-30s %-45s %-18s %-6s %s\n", CFG_WEBHOOKS_KEY, "-", range, "reload", "(none)");
    print_doc("the shop's webhook endpoints beside webhook.url, each with its name, url, event "
              "types, secret(s), timeout, retry schedule and rate (docs/webhooks.md, "
              "paycallback.json(5)); a reload adds, removes or disables them; file only");
    printf("  %-30s %-45s %-18s %-6s %s\n", "-", CFG_DEV_ENV, "0..1", "-", "0; 1 = as --dev");
    print_doc("the development switch; environment only, never a key of the file");
}

/* Whether a's and b's values of k are the same. */
static bool key_equal(const struct cfg_key *k, const struct config *a, const struct config *b)
{
    const char *fa = (const char *)a + k->offset, *fb = (const char *)b + k->offset;

    switch (k->type) {
    case KEY_INT: return *(const int *)(const void *)fa == *(const int *)(const void *)fb;
    case KEY_STR: return strcmp(fa, fb) == 0;
    case KEY_SHARDS:
        return a->nshards == b->nshards && memcmp(a->shards, b->shards, sizeof(a->shards)) == 0;
    case KEY_KEYS: break;
    }
    if (a->auth_nkeys != b->auth_nkeys)
        return false;
    /* NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): configs start zeroed */
    return memcmp(a->auth_keys, b->auth_keys, sizeof(a->auth_keys)) == 0;
}

/* Appends name to the comma-separated list in buf (*used bytes of bufsz
 * so far, *n names), truncating when it does not fit. */
static void append_key(char *buf, size_t bufsz, size_t *used, size_t *n, const char *name)
{
    if (*used < bufsz) {
        int w = snprintf(buf + *used, bufsz - *used, "%s%s", *n ? "," : "", name);
        *used += w > 0 ? (size_t)w : 0;
    }
    ++*n;
}

size_t cfg_restart_keys(const struct config *running, const struct config *fresh, char *buf,
                        size_t bufsz)
{
    char path[64];
    size_t i, n = 0, used = 0;

    if (bufsz > 0)
        buf[0] = '\0';
    for (i = 0; i < NKEYS; i++) {
        if (keys[i].reload || key_equal(&keys[i], running, fresh))
            continue;
        key_path(&keys[i], path, sizeof(path));
        append_key(buf, bufsz, &used, &n, path);
    }
    /* A gateway's query endpoint is loaded once at start, like the native
     * one (callback.query_*); the rest of its profile reloads. */
    for (i = 0; i < running->gateways.n && i < fresh->gateways.n; i++) {
        const struct gateway_profile_cfg *a = &running->gateways.profile[i];
        const struct gateway_profile_cfg *b = &fresh->gateways.profile[i];

        if (strcmp(a->query_url, b->query_url) != 0 ||
            strcmp(a->query_token_env, b->query_token_env) != 0 ||
            a->query_timeout_ms != b->query_timeout_ms) {
            snprintf(path, sizeof(path), "gateways[%zu].query_*", i);
            append_key(buf, bufsz, &used, &n, path);
        }
    }
    return n;
}
