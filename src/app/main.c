/* main.c - flags, configuration, signals, start and graceful stop.
 * Signals are blocked before any thread starts and taken with sigwait, so
 * no code runs in a signal handler. */
#include <errno.h>
#include <getopt.h>
#include <curl/curl.h>
#include <hiredis.h>
#include <mysql.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "build_info.h" /* generated: version and commit */
#include "config.h"
#include "db.h"
#include "delivery.h"
#include "gateway.h"
#include "http_server.h"
#include "keyring.h"
#include "log.h"
#include "metrics.h"
#include "migrate.h"
#include "pay.h"
#include "query.h"
#include "reconcile.h"
#include "refund_relay.h"
#include "redis.h"
#include "router.h"
#include "replays.h"
#include "seen.h"
#include "backfill.h"
#include "server.h"
#include "shard.h"
#include "shardmap.h"
#include "staticdir.h"

extern char **environ;

#define STOP_POLL_MS 20

static void usage(FILE *f)
{
    fprintf(f,
            "usage: paycallback [-c PATH] [--port-file PATH] [--check-config] [--dev]\n"
            "       paycallback [-c PATH] --backfill-registries\n"
            "       paycallback [-c PATH] migrate\n"
            "       paycallback [-c PATH] --write-shard-map\n"
            "       paycallback [-c PATH] shards init\n"
            "\n"
            "Idempotent payment callbacks, anti-resubmit tokens and order state changes\n"
            "over HTTP, on MySQL/MariaDB and Redis.\n"
            "\n"
            "  -c, --config PATH   JSON configuration (default %s)\n"
            "      --port-file PATH  write the bound port there once listening\n"
            "      --check-config  validate the configuration, reach MySQL (and its schema)\n"
            "                      and Redis, then exit; Redis down is only a warning\n"
            "      --backfill-registries  with mysql.shards: bind every payment and order\n"
            "                      already in the shards in pay_no_registry and\n"
            "                      checkout_registry, then exit (run once before a database\n"
            "                      made before sharding takes sharded traffic; re-runnable;\n"
            "                      SIGTERM or SIGINT stops it between two pages with exit\n"
            "                      status 3, and the next run resumes there)\n"
            "      --write-shard-map  with mysql.shards: store this shard list as the shard\n"
            "                      map, with the next epoch, on every shard, then exit (the\n"
            "                      one way to change the list; docs/sharding.md)\n"
            "  shards init         with mysql.shards and mysql.cluster_id: give every\n"
            "                      shard's database its identity (the cluster and its shard\n"
            "                      id), then exit; a database with none is never served.\n"
            "                      Every shard must answer; refused, writing nothing, for a\n"
            "                      database that is another cluster's or another shard's,\n"
            "                      or a blank one for a shard id the cluster already has. A\n"
            "                      database holding this shard's map is adopted; in a new\n"
            "                      cluster it writes the first shard map. Re-runnable\n"
            "  migrate             bring the schema of every database of the configuration\n"
            "                      to the version of this build (the migrations embedded\n"
            "                      in it, sql/migrations/), then exit; re-runnable. Needs\n"
            "                      only the mysql keys. The service never changes a schema\n"
            "                      itself and refuses to start on another version\n"
            "      --dev           development switch (as PAYCALLBACK_DEV=1): accept the\n"
            "                      shipped development secret; never in production\n"
            "  -h, --help          this text\n"
            "  -V, --version       print the version\n"
            "\n"
            "SIGTERM or SIGINT stops the service: it stops accepting connections, lets the\n"
            "requests in flight finish for up to grace_s seconds, closes its pools and\n"
            "exits 0. A second signal stops the wait. SIGHUP re-reads the configuration\n"
            "file (with the environment of the start) and applies its secrets and keys\n"
            "(callback.secret, callback.previous_secret, webhook.secret, auth.keys, the\n"
            "gateway profiles but their query_* keys) and log_level to every request that\n"
            "starts afterwards; a request in flight keeps the ones it started with. A file\n"
            "that does not load is refused whole and the running values stay; any other\n"
            "changed key is logged and waits for a restart.\n"
            "\n"
            "Exit status: 0 clean stop or passed check; 1 runtime failure (MySQL not\n"
            "reachable for --check-config or migrate, a migration that failed, cannot\n"
            "listen, requests cut by the grace period); 2 bad flags or configuration, or\n"
            "a database at another schema version than this build's (run migrate, or\n"
            "upgrade the binary), or a shard whose identity or map is not the\n"
            "configuration's: a restart cannot fix these; 3 --backfill-registries\n"
            "stopped by SIGTERM or SIGINT (run it again to resume).\n"
            "\n"
            "Logs are logfmt lines on stderr (log_format json: one JSON object per line,\n"
            "the same keys). Every key can be overridden by an\n"
            "environment variable; any other PAYCALLBACK_* variable is an error:\n",
            CFG_DEFAULT_PATH);
}

struct opts {
    const char *config;
    const char *port_file;
    int check_only;
    int backfill;
    int migrate;
    int shards_init;
    int write_map;
    int dev;
};

/* Whether SIGTERM or SIGINT is pending: every thread blocks them, so a
 * one-shot command (--backfill-registries) polls at its safe points. */
static bool stop_requested(void)
{
    sigset_t pending;

    return sigpending(&pending) == 0 &&
           (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
}

/* Returns -1 to exit 0 (help/version), 1 on a usage error, 0 to go on. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "config", required_argument, NULL, 'c' },
        { "port-file", required_argument, NULL, 'p' },
        { "check-config", no_argument, NULL, 'k' },
        { "backfill-registries", no_argument, NULL, 'b' },
        { "write-shard-map", no_argument, NULL, 'w' },
        { "dev", no_argument, NULL, 'd' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    int ch;

    o->config = CFG_DEFAULT_PATH;
    while ((ch = getopt_long(argc, argv, "c:hV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c': o->config = optarg; break;
        case 'p': o->port_file = optarg; break;
        case 'k': o->check_only = 1; break;
        case 'b': o->backfill = 1; break;
        case 'w': o->write_map = 1; break;
        case 'd': o->dev = 1; break;
        case 'h':
            usage(stdout);
            cfg_print_keys();
            return -1;
        case 'V':
            printf("paycallback %s (%s)\n", PAYCALLBACK_VERSION, PAYCALLBACK_COMMIT);
            return -1;
        default: usage(stderr); return 1;
        }
    }
    if (optind < argc && strcmp(argv[optind], "migrate") == 0) {
        o->migrate = 1;
        optind++;
    } else if (optind + 1 < argc && strcmp(argv[optind], "shards") == 0 &&
               strcmp(argv[optind + 1], "init") == 0) {
        o->shards_init = 1;
        optind += 2;
    }
    if (optind != argc) {
        fprintf(stderr, "paycallback: unexpected argument '%s'\n", argv[optind]);
        return 1;
    }
    return 0;
}

static int write_port_file(const char *path, int port)
{
    char tmp[4096];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if ((f = fopen(tmp, "w")) == NULL)
        return -1;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path); /* readers never see a half file */
}

static long ms_since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000L + (now.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* Stops accepting, lets the requests in flight finish within the grace
 * period (a second stop signal ends the wait), then stops the daemon.
 * Returns 0, or -1 when requests are still running: the daemon is then
 * left alone, since its threads still hold pooled connections, and the
 * caller must exit without tearing anything down. */
static int graceful_stop(struct server *srv, const sigset_t *stop_set)
{
    struct timespec t0, poll = { 0, STOP_POLL_MS * 1000000L };
    int sig;

    http_quiesce(srv);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (http_inflight(srv) > 0 && ms_since(&t0) < srv->cfg->grace_s * 1000L) {
        if ((sig = sigtimedwait(stop_set, NULL, &poll)) > 0) {
            log_warn("second stop signal, not waiting any longer", "signal=%d inflight=%d", sig,
                     http_inflight(srv));
            break;
        }
    }
    if (http_inflight(srv) > 0) {
        log_warn("requests cut short; their transactions roll back", "inflight=%d grace_s=%d",
                 http_inflight(srv), srv->cfg->grace_s);
        return -1;
    }
    http_stop(srv);
    return 0;
}

/* SIGHUP: loads the configuration again, as at start, and publishes its
 * secrets and keys as the next snapshot. Anything wrong (a file that does
 * not load, a gateway whose key does not, a gateway added or renamed)
 * refuses the whole reload: the running snapshot stays, the failure is
 * logged and counted. Keys that only a restart applies are named in a
 * warning. Tells systemd RELOADING, then READY again. */
static void reload(struct server *srv, const struct opts *o, unsigned long *generation)
{
    struct config *fresh = malloc(sizeof(*fresh));
    struct keyring *cur = NULL, *next = NULL;
    struct timespec now;
    char err[512], changed[512];
    enum log_level lvl = LOG_INFO;

    clock_gettime(CLOCK_MONOTONIC, &now);
    sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
               (unsigned long long)now.tv_sec * 1000000ULL + (unsigned long long)now.tv_nsec / 1000,
               o->config);
    if (fresh == NULL) {
        snprintf(err, sizeof(err), "out of memory");
        goto fail;
    }
    if (cfg_load(fresh, o->config, (const char *const *)environ, o->dev ? CFG_LOAD_DEV : 0, err,
                 sizeof(err)) != 0 ||
        (next = keyring_create(fresh, *generation + 1, err, sizeof(err))) == NULL)
        goto fail;
    cur = keyslot_acquire(srv->keys);
    if (keyring_compatible(cur, next, err, sizeof(err)) != 0)
        goto fail;
    /* The file was checked against its own webhook.url, but the running
     * one stays until a restart: it still needs a secret to sign with. */
    if (srv->cfg->webhook_url[0] != '\0' && fresh->webhook_secret[0] == '\0') {
        snprintf(err, sizeof(err),
                 "webhook.secret is empty while the running webhook.url "
                 "(changed only by a restart) delivers events");
        goto fail;
    }
    /* The running format (restart only) decides what the secrets must be. */
    if (srv->cfg->webhook_url[0] != '\0' &&
        strcmp(srv->cfg->webhook_format, fresh->webhook_format) != 0) {
        snprintf(err, sizeof(err),
                 "webhook.format changes only by a restart, and the file's webhook secrets are "
                 "for the %s format",
                 fresh->webhook_format);
        goto fail;
    }
    if (cfg_restart_keys(srv->cfg, fresh, changed, sizeof(changed)) > 0)
        log_warn("changed keys keep their running value until a restart", "keys=%s", changed);
    log_level_parse(fresh->log_level, &lvl);
    log_set_level(lvl);
    keyslot_publish(srv->keys, next);
    ++*generation;
    metrics_inc(srv->m, M_RELOADS_OK);
    metrics_set_gauge(srv->m, G_RELOAD_OK, 1);
    log_info("reloaded secrets and keys",
             "generation=%lu auth_keys=%d previous_secret=%s "
             "gateways=%zu log_level=%s",
             *generation, fresh->auth_nkeys, fresh->callback_previous_secret[0] ? "set" : "unset",
             gateways_count(next->gw), fresh->log_level);
    next = NULL; /* the slot holds it now */
    sd_notifyf(0, "READY=1\nSTATUS=listening; reloaded (generation %lu)", *generation);
    goto out;
fail:
    metrics_inc(srv->m, M_RELOADS_FAILED);
    metrics_set_gauge(srv->m, G_RELOAD_OK, 0);
    log_error("reload refused; the running secrets and keys stay", "path=%s error=\"%s\"",
              o->config, err);
    for (char *p = err; *p != '\0'; p++) /* one line: no forged notify field */
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    sd_notifyf(0, "READY=1\nSTATUS=listening; last reload refused: %s", err);
out:
    keyring_release(next);
    keyring_release(cur);
    if (fresh != NULL) {
        OPENSSL_cleanse(fresh, sizeof(*fresh));
        free(fresh);
    }
}

/* Connects to Redis with cfg's address and timeout, PINGs and SELECTs the
 * configured database. 0, or -1 with the reason in err. */
static int probe_redis(const struct config *cfg, char *err, size_t errsz)
{
    struct timeval tv = { cfg->redis_timeout_ms / 1000,
                          (suseconds_t)(cfg->redis_timeout_ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout(cfg->redis_host, cfg->redis_port, tv);
    redisReply *r = NULL;
    int rc = -1;

    if (c == NULL || c->err) {
        snprintf(err, errsz, "cannot connect: %s", c != NULL ? c->errstr : "out of memory");
        goto out;
    }
    redisSetTimeout(c, tv);
    if ((r = redisCommand(c, "SELECT %d", cfg->redis_db)) == NULL ||
        r->type != REDIS_REPLY_STATUS) {
        snprintf(err, errsz, "SELECT %d failed: %s", cfg->redis_db,
                 r == NULL                      ? c->errstr
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "unexpected reply");
        goto out;
    }
    freeReplyObject(r);
    if ((r = redisCommand(c, "PING")) == NULL || r->type != REDIS_REPLY_STATUS ||
        strcmp(r->str, "PONG") != 0) {
        snprintf(err, errsz, "PING failed: %s",
                 r == NULL                      ? c->errstr
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "unexpected reply");
        goto out;
    }
    rc = 0;
out:
    freeReplyObject(r);
    redisFree(c);
    return rc;
}

/* At start: a MySQL that answers must be at the schema version of this
 * build (schema_migrations) and hold its tables and versioned procedures,
 * or the service refuses to start rather than fail every callback. A MySQL
 * that does not answer yet is only a warning: the pool connects lazily and
 * /readyz reports it. Returns 0 to go on, else the exit status: 2 for
 * another schema version (only migrate or another binary fixes it, so a
 * restart would not), 1 otherwise. */
static int check_schema_at_start(const struct config *cfg)
{
    struct cfg_shard at[CFG_SHARDS_MAX];
    char err[512];
    size_t i, n = cfg_endpoints(cfg, at);

    for (i = 0; i < n; i++) {
        enum db_status st;
        int version;

        switch (migrate_check(cfg, &at[i], &version, err, sizeof(err))) {
        case MIGRATE_CURRENT:
        case MIGRATE_UNREACHABLE: /* reported by db_probe below */ break;
        case MIGRATE_BEHIND:
        case MIGRATE_AHEAD:
            fprintf(stderr, "paycallback: mysql %s:%d/%s: %s\n", at[i].host, at[i].port,
                    at[i].database, err);
            return 2;
        case MIGRATE_ERROR:
            fprintf(stderr, "paycallback: mysql %s:%d/%s: %s\n", at[i].host, at[i].port,
                    at[i].database, err);
            return 1;
        }
        st = db_probe(cfg, &at[i], err, sizeof(err));
        if (st == DB_UNAVAILABLE)
            log_warn("mysql unreachable at start, schema not checked",
                     "shard=%d host=%s port=%d error=\"%s\"", at[i].id, at[i].host, at[i].port,
                     err);
        else if (st != DB_OK) {
            fprintf(stderr, "paycallback: mysql %s:%d/%s: %s\n", at[i].host, at[i].port,
                    at[i].database, err);
            return 1;
        }
    }
    return 0;
}

/* --check-config, once the configuration has loaded: MySQL must answer
 * and hold the schema at this build's version; Redis down is a warning,
 * since the service would run degraded. Returns the exit status: 0, 1, or
 * 2 for another schema version. */
static int check_config(const struct config *cfg, const struct gateways *gws, const struct query *q,
                        const char *path)
{
    struct cfg_shard at[CFG_SHARDS_MAX];
    char err[512];
    size_t i, n = cfg_endpoints(cfg, at);

    for (i = 0; i < n; i++) {
        char shard[24] = "";

        enum migrate_state ms;
        int version;

        if (cfg->nshards > 0)
            snprintf(shard, sizeof(shard), "shard %d: ", at[i].id);
        ms = migrate_check(cfg, &at[i], &version, err, sizeof(err));
        if (ms == MIGRATE_BEHIND || ms == MIGRATE_AHEAD || ms == MIGRATE_ERROR) {
            fprintf(stderr, "paycallback: %smysql %s:%d/%s: %s\n", shard, at[i].host, at[i].port,
                    at[i].database, err);
            return ms == MIGRATE_ERROR ? 1 : 2;
        }
        if (db_probe(cfg, &at[i], err, sizeof(err)) != DB_OK) {
            fprintf(stderr, "paycallback: %smysql %s:%d/%s: %s\n", shard, at[i].host, at[i].port,
                    at[i].database, err);
            return 1;
        }
        printf(
            "%smysql %s:%d/%s: ok, schema present at version %d (procedures " DB_PROC_PAY_CALLBACK
            ")\n",
            shard, at[i].host, at[i].port, at[i].database, version);
    }
    if (probe_redis(cfg, err, sizeof(err)) != 0)
        fprintf(stderr,
                "paycallback: warning: redis %s:%d: %s; the service would run degraded "
                "(tokens in MySQL, no stock lock)\n",
                cfg->redis_host, cfg->redis_port, err);
    else
        printf("redis %s:%d db %d: ok\n", cfg->redis_host, cfg->redis_port, cfg->redis_db);
    for (i = 0; i < gateways_count(gws); i++) {
        const struct gateway *gw = gateways_at(gws, i);
        printf("gateway %s (%s): keys ok, route POST /pay/callback/%s\n", gw->cfg->name,
               gateway_kind_name(gw->cfg->kind), gw->cfg->name);
    }
    for (i = 0; i < query_count(q); i++)
        printf("query endpoint %s: token ok, asked about stale WAIT_PAY orders\n",
               query_target_name(q, i));
    printf("configuration %s is valid\n", path);
    return 0;
}

int main(int argc, char **argv)
{
    struct config cfg;
    struct pay_memory paid = { 0 };
    struct server srv = { .cfg = &cfg, .paid = &paid };
    struct keyring *kr0 = NULL; /* the start's snapshot: metrics name its gateways */
    const struct gateways *gws;
    struct opts o = { 0 };
    char err[512];
    enum log_level lvl = LOG_INFO;
    unsigned long generation = 1;
    sigset_t stop_set, wait_set;
    const struct http_route *routes;
    size_t nroutes;
    int rc, port = 0, sig = 0;
    uint64_t map_epoch = 0;

    if ((rc = parse_args(argc, argv, &o)) != 0)
        return rc < 0 ? 0 : 2;
    /* SIGHUP is blocked before anything else, so one that arrives during
     * the start (a reload racing a start) waits for sigwait instead of
     * ending the process. */
    sigemptyset(&wait_set);
    sigaddset(&wait_set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &wait_set, NULL);
    if (cfg_load(&cfg, o.config, (const char *const *)environ,
                 (o.dev ? CFG_LOAD_DEV : 0) | (o.migrate || o.shards_init ? CFG_LOAD_DB_ONLY : 0),
                 err, sizeof(err)) != 0) {
        fprintf(stderr, "paycallback: %s\n", err);
        return 2;
    }
    /* migrate reaches the databases only: no gateway key is needed. */
    if (o.migrate) {
        if (mysql_library_init(0, NULL, NULL) != 0) {
            fprintf(stderr, "paycallback: cannot initialise the mysql client library\n");
            return 1;
        }
        rc = migrate_run(&cfg, stdout, stderr);
        mysql_library_end();
        return rc;
    }
    /* shards init, likewise: it writes identities, nothing else. */
    if (o.shards_init) {
        if (mysql_library_init(0, NULL, NULL) != 0) {
            fprintf(stderr, "paycallback: cannot initialise the mysql client library\n");
            return 1;
        }
        rc = shardmap_init(&cfg, stdout, stderr);
        mysql_library_end();
        return rc;
    }
    /* Every gateway key and secret is loaded now, so a missing one stops
     * the start (and --check-config) instead of failing each callback. */
    if ((kr0 = keyring_create(&cfg, generation, err, sizeof(err))) == NULL) {
        fprintf(stderr, "paycallback: %s\n", err);
        return 2;
    }
    gws = kr0->gw;
    /* Likewise the query endpoints' tokens (read once: a reload keeps them). */
    if ((srv.query = query_create(&cfg, err, sizeof(err))) == NULL) {
        fprintf(stderr, "paycallback: %s\n", err);
        keyring_release(kr0);
        return 2;
    }
    log_level_parse(cfg.log_level, &lvl);
    log_set_level(lvl);
    log_set_format(cfg.log_format); /* checked by cfg_load */
    if (cfg.dev)
        log_warn("development mode: the shipped development secret is accepted; never run "
                 "production like this",
                 "callback_secret_is_dev=%d", strcmp(cfg.callback_secret, CFG_DEV_SECRET) == 0);

    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGTERM);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&wait_set, SIGTERM);
    sigaddset(&wait_set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &wait_set, NULL); /* inherited by every thread */
    signal(SIGPIPE, SIG_IGN);

    rc = 1;
    if (mysql_library_init(0, NULL, NULL) != 0) {
        fprintf(stderr, "paycallback: cannot initialise the mysql client library\n");
        query_destroy(srv.query);
        keyring_release(kr0);
        return 1;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "paycallback: cannot initialise libcurl\n");
        mysql_library_end();
        query_destroy(srv.query);
        keyring_release(kr0);
        return 1;
    }
    /* A tool writes to the shards only once each is the shard it is
     * configured as, with the stored map: a swapped, blank or foreign
     * database is refused before the first row. */
    if ((o.backfill || o.check_only) && cfg.nshards > 0) {
        int checked = shardmap_check_tool(&cfg, true, err, sizeof(err));

        if (checked != 0) {
            fprintf(stderr, "paycallback: %s\n", err);
            rc = checked == -2 ? 1 : 2; /* a shard that did not answer, or not its own */
            goto out;
        }
    }
    if (o.backfill) {
        rc = backfill_registries(&cfg, stop_requested, stdout, stderr);
        goto out;
    }
    if (o.check_only) {
        rc = check_config(&cfg, gws, srv.query, o.config);
        goto out;
    }
    if (o.write_map) {
        rc = shardmap_write(&cfg, stdout, stderr);
        goto out;
    }
    /* cppcheck-suppress redundantAssignment ; rc is the exit status of every goto out */
    if ((rc = check_schema_at_start(&cfg)) != 0)
        goto out;
    if (shardmap_check_start(&cfg, &map_epoch, err, sizeof(err)) != 0) {
        fprintf(stderr, "paycallback: %s\n", err);
        rc = 2;
        goto out;
    }
    rc = 1;
    if ((srv.m = router_metrics_create()) == NULL ||
        shard_set_open(&srv.shards, &cfg, srv.m) != 0 ||
        (srv.rds = rds_pool_create(&cfg, srv.m)) == NULL ||
        (paid.recent = seen_create(SEEN_SLOTS_DEFAULT)) == NULL ||
        (cfg.callback_replay_cache_entries > 0 &&
         (paid.answers = replays_create((size_t)cfg.callback_replay_cache_entries,
                                        cfg.callback_replay_cache_ttl_s,
                                        cfg.retention_payment_days)) == NULL) ||
        (srv.keys = keyslot_create(keyring_hold(kr0))) == NULL) {
        fprintf(stderr, "paycallback: out of memory\n");
        goto out;
    }
    if (shard_probers_start(&srv.shards, map_epoch) != 0) {
        fprintf(stderr, "paycallback: cannot start the shard probers\n");
        goto out;
    }
    if (cfg.console_dir[0] != '\0' &&
        (srv.console = staticdir_load(cfg.console_dir, err, sizeof(err))) == NULL)
        /* Payments do not wait for a page: the service starts, the console
         * answers 404 until a restart finds its files. */
        log_error("the console is off: its directory (console.dir) cannot be served",
                  "error=\"%s\"", err);
    pay_register_gateway_metrics(gws, srv.m);
    metrics_set_build_info(srv.m, PAYCALLBACK_VERSION, PAYCALLBACK_COMMIT);
    metrics_set_gauge(srv.m, G_RELOAD_OK, 1);
    routes = router_routes(&nroutes);
    if (http_start(&srv, routes, nroutes, &port) != 0) {
        http_stop(&srv); /* frees what a failed start left */
        goto out;
    }
    if (o.port_file != NULL && write_port_file(o.port_file, port) != 0) {
        log_error("cannot write port file", "path=%s error=\"%s\"", o.port_file, strerror(errno));
        http_stop(&srv);
        goto out;
    }
    log_info("listening",
             "address=%s port=%d workers=%d max_connections=%d "
             "max_connections_per_ip=%d version=%s",
             cfg.listen_address, port, cfg.workers, cfg.http_max_connections,
             cfg.http_max_connections_per_ip, PAYCALLBACK_VERSION);
    if (cfg.webhook_url[0] == '\0' && cfg.webhooks.n == 0)
        log_warn("no webhook endpoint is configured (webhook.url, webhooks); events wait in the "
                 "outbox until a reload adds one",
                 "%s", "");
    if ((srv.relay = delivery_start(&srv)) == NULL)
        goto stop_http;
    if ((srv.recon = reconcile_start(&srv)) == NULL)
        goto stop_http;
    if ((srv.refunds = refund_relay_start(&srv)) == NULL)
        goto stop_http;
    /* Under systemd (Type=notify) the unit is started only now that the
     * socket listens; elsewhere NOTIFY_SOCKET is unset and this does nothing. */
    sd_notifyf(0, "READY=1\nSTATUS=listening on %s:%d\nMAINPID=%lu", cfg.listen_address, port,
               (unsigned long)getpid());
    for (;;) {
        if (sigwait(&wait_set, &sig) != 0)
            continue;
        if (sig != SIGHUP)
            break;
        shard_probers_wake(&srv.shards); /* each shard's identity and map, checked now */
        reload(&srv, &o, &generation);
    }
    sd_notify(0, "STOPPING=1\nSTATUS=draining requests in flight");
    log_info("stopping", "signal=%d inflight=%d grace_s=%d", sig, http_inflight(&srv), cfg.grace_s);
    query_cancel(srv.query); /* a query waiting on a slow endpoint ends now */
    if (graceful_stop(&srv, &stop_set) != 0) {
        http_abandon(&srv);                       /* the cut requests get no answer */
        for (size_t i = 0; i < srv.shards.n; i++) /* a cut CALL rolls back, not on by itself */
            db_pool_interrupt(srv.shards.s[i].pool);
        _exit(1); /* MySQL rolls the cut transactions back */
    }
    log_info("stopped", "%s", "");
    rc = 0;
    goto out;
stop_http:
    http_stop(&srv);
out:
    refund_relay_stop(srv.refunds); /* a call in flight ends first */
    delivery_stop(srv.relay);       /* an attempt in flight ends first */
    reconcile_stop(srv.recon);
    seen_destroy(paid.recent);
    replays_destroy(paid.answers);
    staticdir_destroy(srv.console);
    keyslot_destroy(srv.keys);
    rds_pool_destroy(srv.rds);
    shard_set_close(&srv.shards);
    metrics_destroy(srv.m);
    curl_global_cleanup();
    query_destroy(srv.query);
    keyring_release(kr0);
    mysql_library_end();
    return rc;
}
