/* route.c - hops between shards and scans over all of them; the one place
 * a shard's unavailability is counted. */
#include "route.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "server.h"

struct route route_of(const struct server *srv, const char *request_id)
{
    return (struct route){ .set = &srv->shards,
                           .wait_ms = srv->cfg->mysql_wait_ms,
                           .m = srv->m,
                           .request_id = request_id };
}

bool route_retryable(enum db_status st)
{
    return db_retryable(st);
}

/* A request that sh could not serve: counted in its
 * paycallback_shard_unavailable_total. Every count of it is made here. */
static void count_unavailable(const struct route *rt, const struct shard *sh)
{
    metrics_shard_inc(rt->m, sh->index, MS_UNAVAILABLE);
}

void route_count_unavailable(const struct route *rt, const struct shard *sh)
{
    count_unavailable(rt, sh);
}

static void no_conn(struct route_failure *f, const struct route *rt, const struct shard *sh,
                    const char *step, enum db_refusal why)
{
    memset(f, 0, sizeof(*f));
    f->shard = sh;
    f->step = step;
    f->unavailable = true;
    f->no_conn = true;
    f->refusal = why;
    if (why == DB_REFUSED_WAIT || why == DB_REFUSED_NONE)
        snprintf(f->msg, sizeof(f->msg), "no free connection within %d ms", rt->wait_ms);
    else
        snprintf(f->msg, sizeof(f->msg), "the shard refused at once: %s", db_refusal_str(why));
}

static void from_conn(struct route_failure *f, const struct shard *sh, const struct db_conn *c,
                      bool retryable, const char *step)
{
    memset(f, 0, sizeof(*f));
    f->shard = sh;
    f->step = step;
    f->unavailable = retryable;
    f->err = db_errno(c);
    snprintf(f->msg, sizeof(f->msg), "%s", db_errstr(c));
}

void route_hop_init(struct route_hop *h, const struct route *rt, struct route_failure *fail)
{
    *h = (struct route_hop){ .rt = rt, .fail = fail };
    memset(fail, 0, sizeof(*fail));
}

void route_hop_release(struct route_hop *h)
{
    if (h->c != NULL)
        shard_release(h->sh, h->c);
    h->c = NULL;
    h->sh = NULL;
}

struct db_conn *route_hop_to(struct route_hop *h, const struct shard *sh, const char *step)
{
    if (h->c != NULL && h->sh == sh)
        return h->c;
    enum db_refusal why = DB_REFUSED_NONE;

    route_hop_release(h);
    if ((h->c = shard_acquire_why(sh, h->rt->wait_ms, &why)) == NULL) {
        no_conn(h->fail, h->rt, sh, step, why);
        if (!h->uncounted)
            count_unavailable(h->rt, sh);
        return NULL;
    }
    h->sh = sh;
    return h->c;
}

void route_failed(struct route_hop *h, bool retryable, const char *step)
{
    from_conn(h->fail, h->sh, h->c, retryable, step);
    if (retryable && !h->uncounted)
        count_unavailable(h->rt, h->sh);
}

void route_fail_msg(struct route_failure *f, const char *step, const char *msg)
{
    memset(f, 0, sizeof(*f));
    f->step = step;
    snprintf(f->msg, sizeof(f->msg), "%s", msg);
}

void route_log_failure(const struct route_failure *f, const char *request_id)
{
    if (f->logged || f->no_conn)
        return;
    log_write(f->unavailable ? LOG_WARN : LOG_ERROR, "mysql failure",
              "op=%s shard=%s errno=%u error=\"%s\" request_id=%s", f->step != NULL ? f->step : "-",
              f->shard != NULL ? f->shard->label : "-", f->err, f->msg,
              request_id != NULL ? request_id : "-");
}

/* ---- every shard ------------------------------------------------------- */

static void miss(const struct route *rt, struct route_scan *sc, const struct shard *sh,
                 const struct route_failure *f)
{
    if (!sc->missed[sh->index]) {
        sc->missed[sh->index] = true;
        sc->nmissed++;
    }
    sc->fail = *f;
    route_log_failure(&sc->fail, rt->request_id);
    sc->fail.logged = true;
}

void route_scan_miss(const struct route *rt, struct route_scan *sc, const struct shard *sh,
                     const struct route_failure *f)
{
    miss(rt, sc, sh, f);
}

enum route_result route_scan(const struct route *rt, size_t first, const char *step,
                             route_scan_fn fn, void *arg, struct route_scan *sc)
{
    struct route_failure f;
    size_t i;

    memset(sc, 0, sizeof(*sc));
    for (i = first; i < rt->set->n; i++) {
        const struct shard *sh = &rt->set->s[i];
        enum db_refusal why = DB_REFUSED_NONE;
        struct db_conn *c = shard_acquire_why(sh, rt->wait_ms, &why);
        enum route_step r;

        sc->asked++;
        if (c == NULL) {
            no_conn(&f, rt, sh, step, why);
            miss(rt, sc, sh, &f);
            continue;
        }
        r = fn(c, sh, arg);
        if (r == ROUTE_MISSED || r == ROUTE_ERROR)
            from_conn(&f, sh, c, r == ROUTE_MISSED, step);
        shard_release(sh, c);
        if (r == ROUTE_ERROR) {
            sc->fail = f;
            return ROUTE_FAILED;
        }
        if (r == ROUTE_MISSED)
            miss(rt, sc, sh, &f);
        if (r == ROUTE_STOP)
            break;
    }
    if (sc->asked == 0 || sc->nmissed < sc->asked)
        return ROUTE_OK;
    for (i = 0; i < rt->set->n; i++)
        if (sc->missed[i])
            count_unavailable(rt, &rt->set->s[i]);
    return ROUTE_UNAVAILABLE;
}
