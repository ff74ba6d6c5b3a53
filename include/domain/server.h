/* server.h - the one context every handler receives (MHD's cls). Built in
 * main before the HTTP threads start, read-only afterwards; the pools and
 * metrics inside are thread-safe by their own contracts. */
#ifndef PAYCALLBACK_SERVER_H
#define PAYCALLBACK_SERVER_H

#include "shard.h"

struct config;
struct rds_pool;
struct metrics;
struct pay_memory;
struct http_state;
struct delivery;
struct refund_relay;
struct reconcile;
struct keyslot;
struct query;
struct staticdir;

struct server {
    const struct config *cfg;
    struct shard_set shards; /* the databases; one (shard 1) unless mysql.shards is set */
    struct rds_pool *rds;    /* NULL until the Redis module is started */
    struct metrics *m;
    struct pay_memory *paid;      /* what pay_apply remembers of recorded payments */
    struct http_state *http;      /* owned by http_server.c */
    struct delivery *relay;       /* outbox delivery; NULL without webhook.url */
    struct reconcile *recon;      /* periodic reconciliation and retention */
    struct refund_relay *refunds; /* submits refunds to the gateways' refund APIs */
    struct keyslot *keys;         /* secrets and keys: the snapshot SIGHUP replaces */
    struct query *query;          /* the query endpoints of stale orders (maybe none) */
    struct staticdir *console;    /* the console's documents; NULL when console.dir is unset */
};

#endif
