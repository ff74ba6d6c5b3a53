/* query.c - the active query of stale orders: the endpoints and their
 * tokens loaded at start, the strict parser of an answer, the one libcurl
 * call per endpoint and order, and the round that lists stale orders,
 * asks about each and applies what was paid through pay_route. The
 * payment rules are pay.c's; the schedule is reconcile.c's. With several
 * shards, the stale orders of every shard are taken, in even shares. */
#include "query.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "array.h"
#include "audit.h"
#include "config.h"
#include "db.h"
#include "jsonutil.h"
#include "log.h"
#include "metrics.h"
#include "money.h"
#include "order_state.h"
#include "route.h"
#include "server.h"
#include "shard.h"

#define QUERY_DB_WAIT_MS 1000
#define QUERY_URL_MAX 512   /* a 255-byte URL, "&order_no=" and an id escaped whole */
#define QUERY_CURSOR_MAX 32 /* "YYYY-MM-DD HH:MM:SS.ffffff" */
#define QUERY_CURSOR_START "1000-01-01 00:00:00.000000"

/* Where a rotating round goes on in one shard's stale orders. */
struct query_cursor {
    char time[QUERY_CURSOR_MAX];
    char id[DB_INT_BUF];
};

struct query_target {
    const char *name;    /* QUERY_NATIVE_NAME or the profile's name (borrowed) */
    const char *gateway; /* pay_request.gateway: NULL for the native endpoint */
    const char *url;     /* borrowed from the config */
    char token[QUERY_TOKEN_MAX + 1];
    int timeout_ms;
};

struct query {
    struct query_target t[QUERY_TARGETS_MAX];
    size_t n;
    atomic_bool stop;
    pthread_mutex_t round;                      /* one round at a time; guards the cursors */
    struct query_cursor cursor[CFG_SHARDS_MAX]; /* by shard index */
    size_t next_shard;                          /* the shard a rotating round starts with */
};

static const char *const status_names[] = { "PAID",      "NOTPAY", "CLOSED",  "NOT_FOUND",
                                            "MALFORMED", "ERROR",  "TIMEOUT", "CANCELED" };

const char *query_status_name(enum query_status st)
{
    return (unsigned)st < ARRAY_SIZE(status_names) ? status_names[st] : "UNKNOWN";
}

/* ---- the answer ---------------------------------------------------------- */

/* The string member name of obj, or NULL when absent or not a string. */
static const char *str_member(const cJSON *obj, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

    return cJSON_IsString(it) ? it->valuestring : NULL;
}

static enum query_status malformed(struct query_answer *out, char *why, size_t whysz,
                                   const char *reason)
{
    memset(out, 0, sizeof(*out));
    out->status = QUERY_MALFORMED;
    snprintf(why, whysz, "%s", reason);
    return QUERY_MALFORMED;
}

/* The PAID members: pay_no, amount and currency. */
static enum query_status parse_paid(const cJSON *o, struct query_answer *out, char *why,
                                    size_t whysz)
{
    const char *pay_no = str_member(o, "pay_no"), *amount = str_member(o, "amount");
    const char *currency = str_member(o, "currency");

    if (!validate_id(pay_no))
        return malformed(out, why, whysz, "pay_no must be 1..64 of [A-Za-z0-9_.:-]");
    if (amount == NULL || money_parse(amount, &out->amount_cents) != MONEY_OK ||
        out->amount_cents <= 0)
        return malformed(out, why, whysz, "amount must be a money string above zero");
    if (currency == NULL || currency_normalize(currency, out->currency) != CURRENCY_OK)
        return malformed(out, why, whysz, "currency must be a known ISO 4217 code");
    memcpy(out->pay_no, pay_no, strlen(pay_no) + 1);
    out->status = QUERY_PAID;
    return QUERY_PAID;
}

enum query_status query_parse_answer(const char *body, size_t len, const char *order_no,
                                     struct query_answer *out, char *why, size_t whysz)
{
    cJSON *o = NULL;
    const char *status, *echo;
    enum query_status st;
    size_t i;

    memset(out, 0, sizeof(*out));
    why[0] = '\0';
    if (body == NULL || json_parse_object(body, len, &o) != JSON_OK)
        return malformed(out, why, whysz, "not one JSON object");
    if (json_duplicate_key(o) != NULL) {
        st = malformed(out, why, whysz, "a member appears twice");
        goto out;
    }
    echo = str_member(o, "order_no");
    if (echo == NULL || order_no == NULL || strcmp(echo, order_no) != 0) {
        st = malformed(out, why, whysz, "order_no is not the order asked about");
        goto out;
    }
    status = str_member(o, "status");
    for (i = QUERY_PAID; status != NULL && i <= QUERY_NOT_FOUND; i++)
        if (strcmp(status, status_names[i]) == 0)
            break;
    if (status == NULL || i > QUERY_NOT_FOUND) {
        st = malformed(out, why, whysz, "status must be PAID, NOTPAY, CLOSED or NOT_FOUND");
        goto out;
    }
    if (i == QUERY_PAID)
        st = parse_paid(o, out, why, whysz);
    else
        st = out->status = (enum query_status)i;
out:
    cJSON_Delete(o);
    return st;
}

/* ---- the endpoints ------------------------------------------------------- */

static int add_target(struct query *q, const char *name, const char *gateway, const char *url,
                      const char *token, const char *token_env, int timeout_ms, char *err,
                      size_t errsz)
{
    struct query_target *t = &q->t[q->n];

    if (token == NULL || token[0] == '\0') {
        snprintf(err, errsz,
                 "gateway %s: %s is not set; the query_url's bearer token must "
                 "come from the environment",
                 name, token_env);
        return -1;
    }
    if (!validate_bearer_token(token, QUERY_TOKEN_MAX)) {
        snprintf(err, errsz,
                 "gateway %s: %s must be 1..%d characters of [A-Za-z0-9-._~+/] "
                 "(then '=' padding)",
                 name, token_env, QUERY_TOKEN_MAX);
        return -1;
    }
    t->name = name;
    t->gateway = gateway;
    t->url = url;
    memcpy(t->token, token, strlen(token) + 1);
    t->timeout_ms = timeout_ms;
    q->n++;
    return 0;
}

static void cursor_reset(struct query_cursor *cur)
{
    snprintf(cur->time, sizeof(cur->time), "%s", QUERY_CURSOR_START);
    snprintf(cur->id, sizeof(cur->id), "0");
}

struct query *query_create(const struct config *cfg, char *err, size_t errsz)
{
    struct query *q = calloc(1, sizeof(*q));
    size_t i;

    if (q == NULL) {
        snprintf(err, errsz, "out of memory loading the query endpoints");
        return NULL;
    }
    pthread_mutex_init(&q->round, NULL);
    for (i = 0; i < CFG_SHARDS_MAX; i++)
        cursor_reset(&q->cursor[i]);
    /* config.c has checked the native token already (it is a key). */
    if (cfg->callback_query_url[0] != '\0' &&
        add_target(q, QUERY_NATIVE_NAME, NULL, cfg->callback_query_url, cfg->callback_query_token,
                   "PAYCALLBACK_CALLBACK_QUERY_TOKEN", cfg->callback_query_timeout_ms, err,
                   errsz) != 0)
        goto fail;
    for (i = 0; i < cfg->gateways.n; i++) {
        const struct gateway_profile_cfg *p = &cfg->gateways.profile[i];

        if (p->query_url[0] != '\0' &&
            add_target(q, p->name, p->name, p->query_url, getenv(p->query_token_env),
                       p->query_token_env, p->query_timeout_ms, err, errsz) != 0)
            goto fail;
    }
    return q;
fail:
    query_destroy(q);
    return NULL;
}

void query_destroy(struct query *q)
{
    size_t i;

    if (q == NULL)
        return;
    for (i = 0; i < QUERY_TARGETS_MAX; i++)
        OPENSSL_cleanse(q->t[i].token, sizeof(q->t[i].token));
    pthread_mutex_destroy(&q->round);
    free(q);
}

size_t query_count(const struct query *q)
{
    return q == NULL ? 0 : q->n;
}

const char *query_target_name(const struct query *q, size_t i)
{
    return q == NULL || i >= q->n ? "" : q->t[i].name;
}

void query_cancel(struct query *q)
{
    if (q != NULL)
        atomic_store(&q->stop, true);
}

/* ---- one request --------------------------------------------------------- */

/* The body of one answer, capped at QUERY_ANSWER_MAX_BYTES. */
struct answer_buf {
    char data[QUERY_ANSWER_MAX_BYTES + 1];
    size_t len;
    bool too_large;
};

static size_t collect(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct answer_buf *b = userdata;
    size_t n = size * nmemb;

    if (n > QUERY_ANSWER_MAX_BYTES - b->len) {
        b->too_large = true;
        return 0; /* CURLE_WRITE_ERROR ends the transfer */
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

/* libcurl's progress callback: a non-zero return abandons the transfer,
 * which is how a stop cuts a query waiting on a slow endpoint. */
static int progress(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                    curl_off_t ulnow)
{
    const struct query *q = clientp;

    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return atomic_load(&q->stop) ? 1 : 0;
}

/* Builds <url>?order_no=<escaped> (or &order_no= when the URL has a
 * query already) into out. 0, or -1. */
static int query_url(CURL *curl, const struct query_target *t, const char *order_no, char *out,
                     size_t outsz)
{
    char *esc = curl_easy_escape(curl, order_no, 0);
    int n;

    if (esc == NULL)
        return -1;
    n = snprintf(out, outsz, "%s%corder_no=%s", t->url, strchr(t->url, '?') ? '&' : '?', esc);
    curl_free(esc);
    return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

/* Asks t about order_no and parses what it says into ans. The reason of
 * a failure goes to why. */
static enum query_status ask(struct query *q, CURL *curl, const struct query_target *t,
                             const char *order_no, struct answer_buf *b, struct query_answer *ans,
                             char *why, size_t whysz)
{
    char url[QUERY_URL_MAX], auth[QUERY_TOKEN_MAX + 32];
    struct curl_slist *hdr = NULL, *h;
    enum query_status st = QUERY_ERROR;
    long code = 0;
    CURLcode cc;

    memset(ans, 0, sizeof(*ans));
    ans->status = QUERY_ERROR;
    b->len = 0;
    b->data[0] = '\0';
    b->too_large = false;
    if (query_url(curl, t, order_no, url, sizeof(url)) != 0) {
        snprintf(why, whysz, "cannot build the query URL");
        return QUERY_ERROR;
    }
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", t->token);
    const char *lines[] = { auth, "Accept: application/json" };
    for (size_t i = 0; i < ARRAY_SIZE(lines); i++) {
        if ((h = curl_slist_append(hdr, lines[i])) == NULL) {
            snprintf(why, whysz, "out of memory");
            goto out;
        }
        hdr = h;
    }
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, q);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)t->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)t->timeout_ms);
    cc = curl_easy_perform(curl);
    if (cc == CURLE_ABORTED_BY_CALLBACK) {
        st = QUERY_CANCELED;
        snprintf(why, whysz, "the service is stopping");
    } else if (cc == CURLE_OPERATION_TIMEDOUT) {
        st = QUERY_TIMEOUT;
        snprintf(why, whysz, "no answer within %d ms", t->timeout_ms);
    } else if (cc == CURLE_WRITE_ERROR && b->too_large) {
        st = QUERY_MALFORMED;
        snprintf(why, whysz, "answer longer than %d bytes", QUERY_ANSWER_MAX_BYTES);
    } else if (cc != CURLE_OK) {
        snprintf(why, whysz, "%s", curl_easy_strerror(cc));
    } else if (curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code), code != 200) {
        snprintf(why, whysz, "endpoint answered HTTP %ld", code);
    } else {
        st = query_parse_answer(b->data, b->len, order_no, ans, why, whysz);
    }
out:
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdr);
    OPENSSL_cleanse(auth, sizeof(auth));
    ans->status = st;
    return st;
}

/* ---- the round ----------------------------------------------------------- */

static void count(struct metrics *m, enum query_status st)
{
    static const enum metric_counter by_status[] = {
        [QUERY_PAID] = M_QUERY_PAID,           [QUERY_NOTPAY] = M_QUERY_NOT_PAID,
        [QUERY_CLOSED] = M_QUERY_NOT_PAID,     [QUERY_NOT_FOUND] = M_QUERY_NOT_PAID,
        [QUERY_MALFORMED] = M_QUERY_MALFORMED, [QUERY_ERROR] = M_QUERY_ERROR,
        [QUERY_TIMEOUT] = M_QUERY_TIMEOUT,
    };

    if (st != QUERY_CANCELED)
        metrics_inc(m, by_status[st]);
}

size_t query_share(size_t remaining, size_t shards_left)
{
    return shards_left == 0 ? 0 : (remaining + shards_left - 1) / shards_left;
}

/* Takes up to max stale orders of one shard (after its cursor when
 * rotating) into order_nos, rows being max rows of scratch; the connection
 * is released before any endpoint is asked. */
static enum query_round_result list_shard(struct query *q, struct server *srv,
                                          const struct shard *sh, const struct query_round *run,
                                          size_t max, struct db_row *rows,
                                          char (*order_nos)[ID_BUF], size_t *n)
{
    struct query_cursor *cur = &q->cursor[sh->index];
    struct query_cursor start = { QUERY_CURSOR_START, "0" };
    char status[DB_INT_BUF], age[DB_INT_BUF], lim[DB_INT_BUF];
    const struct query_cursor *from = run->rotate ? cur : &start;
    const char *p[] = { db_param_int(status, ORDER_WAIT_PAY),
                        db_param_int(age, run->age_s),
                        from->time,
                        from->time,
                        from->id,
                        db_param_int(lim, (int64_t)max) };
    const struct route rt = {
        .set = &srv->shards, .wait_ms = QUERY_DB_WAIT_MS, .m = srv->m, .request_id = run->request_id
    };
    enum query_round_result res = QUERY_ROUND_OK;
    struct route_failure fail;
    struct route_hop h;
    struct db_conn *c;
    enum db_status st;
    size_t got = 0, kept = 0, i;

    *n = 0;
    route_hop_init(&h, &rt, &fail);
    if ((c = route_hop_to(&h, sh, "order query")) == NULL) {
        log_warn("order query: no database connection", "shard=%s request_id=%s", sh->label,
                 run->request_id);
        return QUERY_ROUND_UNAVAILABLE;
    }
    st = db_query_retry(c, ST_WAIT_PAY_QUERY, p, 6, rows, max, &got);
    /* An order_no that is no identifier (only a direct write makes one)
     * cannot be put in a gateway's query: it is skipped, logged by row id,
     * and the other orders are asked; the cursor still moves past it. */
    for (i = 0; st == DB_OK && i < got; i++) {
        char id[DB_INT_BUF] = "?";

        if (db_row_str(&rows[i], QOC_ORDER_NO, order_nos[kept], ID_BUF) == 0 &&
            validate_id(order_nos[kept])) {
            kept++;
            continue;
        }
        (void)db_row_str(&rows[i], QOC_ID, id, sizeof(id));
        log_warn("order query: an order_no that is no identifier, skipped",
                 "shard=%s id=%s request_id=%s", sh->label, id, run->request_id);
    }
    if (st != DB_OK) {
        log_warn("order query: cannot list stale orders",
                 "shard=%s status=%s error=\"%s\" "
                 "request_id=%s",
                 sh->label, db_status_str(st), db_errstr(c), run->request_id);
        res = st == DB_ERROR ? QUERY_ROUND_ERROR : QUERY_ROUND_UNAVAILABLE;
        if (res == QUERY_ROUND_UNAVAILABLE)
            route_failed(&h, true, "order query");
    } else if (run->rotate && got == max &&
               db_row_str(&rows[got - 1], QOC_CURSOR_TIME, cur->time, sizeof(cur->time)) == 0 &&
               db_row_str(&rows[got - 1], QOC_ID, cur->id, sizeof(cur->id)) == 0) {
        *n = kept; /* the next round goes on after these */
    } else {
        if (run->rotate) /* the end of the list: start again */
            cursor_reset(cur);
        *n = kept;
    }
    route_hop_release(&h);
    return res;
}

/* Takes up to run->limit stale orders into order_nos, shard by shard, each
 * shard's share an even split of what is left, so that one shard's backlog
 * never crowds out another's orders; a shard that has fewer leaves the rest
 * to the shards after it, and a rotating round starts one shard further
 * each time. A shard that cannot be read is skipped (logged, counted): the
 * round fails only when every shard did. */
static enum query_round_result list_orders(struct query *q, struct server *srv,
                                           const struct query_round *run, char (*order_nos)[ID_BUF],
                                           size_t *n)
{
    const struct shard_set *set = &srv->shards;
    size_t start = run->rotate ? q->next_shard % set->n : 0, k, got, failed = 0;
    enum query_round_result res = QUERY_ROUND_OK, r;
    struct db_row *rows;

    *n = 0;
    if (run->limit == 0)
        return QUERY_ROUND_OK;
    if ((rows = calloc(run->limit, sizeof(*rows))) == NULL) {
        log_error("order query: out of memory", "request_id=%s", run->request_id);
        return QUERY_ROUND_ERROR;
    }
    for (k = 0; k < set->n && *n < run->limit; k++) {
        const struct shard *sh = &set->s[(start + k) % set->n];

        r = list_shard(q, srv, sh, run, query_share(run->limit - *n, set->n - k), rows,
                       order_nos + *n, &got);
        if (r != QUERY_ROUND_OK) {
            failed++;
            res = r;
            continue;
        }
        *n += got;
    }
    if (run->rotate)
        q->next_shard = (start + 1) % set->n;
    free(rows);
    return failed == k ? res : QUERY_ROUND_OK;
}

/* The audit row of a payment an operator's round applied, on the order's
 * shard, right after the payment's commit: written apart from the CALL,
 * so a crash between the two leaves the payment (and its log line) without
 * the row; a failure to write it is logged, the payment stands. */
static void audit_applied(const struct route *rt, const struct query_target *t,
                          const struct pay_request *req, enum pay_result r, const char *actor)
{
    const struct shard *sh = shard_of_order(rt->set, req->order_no);
    char amount[MONEY_STR_MAX], detail[AUDIT_DETAIL_MAX + 1];
    struct route_failure fail;
    struct route_hop h;
    enum db_status st = DB_UNAVAILABLE;

    snprintf(detail, sizeof(detail), "pay_no=%s amount=%s endpoint=%s result=%s", req->pay_no,
             money_format(req->amount_cents, amount, sizeof(amount)), t->name, pay_result_str(r));
    route_hop_init(&h, rt, &fail);
    if (sh != NULL && route_hop_to(&h, sh, "audit") != NULL)
        st = audit_append_retry(h.c, actor, "payment.apply", req->order_no, detail, rt->request_id);
    if (st != DB_OK)
        log_error("order query: the audit row of an applied payment was not written",
                  "order_no=%s pay_no=%s actor=%s status=%s error=\"%s\" request_id=%s",
                  req->order_no, req->pay_no, actor, db_status_str(st),
                  h.c != NULL ? db_errstr(h.c) : fail.msg, rt->request_id);
    route_hop_release(&h);
}

/* Applies a PAID answer as a callback would be applied: routed to the
 * order's shard, through the pay_no registry when sharded. */
static enum query_round_result apply(struct server *srv, const struct query_target *t,
                                     const char *order_no, const struct query_answer *ans,
                                     const char *request_id, const char *actor,
                                     enum pay_result *result)
{
    const struct route rt = {
        .set = &srv->shards, .wait_ms = QUERY_DB_WAIT_MS, .m = srv->m, .request_id = request_id
    };
    struct pay_request req = { .amount_cents = ans->amount_cents, .gateway = t->gateway };
    struct pay_outcome out;
    struct route_failure fail;
    enum pay_result r;

    memcpy(req.pay_no, ans->pay_no, sizeof(req.pay_no));
    memcpy(req.order_no, order_no, sizeof(req.order_no));
    memcpy(req.currency, ans->currency, sizeof(req.currency));
    r = pay_route(&rt, srv->paid, &req, &out, &fail);
    *result = r;
    pay_report(srv->m, &req, r, &out, request_id);
    if (actor != NULL && (r == PAY_PAID || r == PAY_REFUND_REQUIRED))
        audit_applied(&rt, t, &req, r, actor);
    if (r == PAY_UNAVAILABLE || r == PAY_ERROR)
        log_warn("order query: cannot apply a payment",
                 "target=%s order_no=%s pay_no=%s "
                 "result=%s op=%s shard=%s error=\"%s\" request_id=%s",
                 t->name, order_no, ans->pay_no, pay_result_str(r),
                 fail.step != NULL ? fail.step : "-", fail.shard != NULL ? fail.shard->label : "-",
                 fail.msg, request_id);
    if (r == PAY_ERROR)
        return QUERY_ROUND_ERROR;
    /* Sharded, one shard down leaves the other shards' orders to ask. */
    return r == PAY_UNAVAILABLE && !srv->shards.sharded ? QUERY_ROUND_UNAVAILABLE : QUERY_ROUND_OK;
}

/* Asks every endpoint about one order, so that a shopper who paid through
 * two gateways is seen twice (the second payment is REFUND_REQUIRED), and
 * applies each PAID answer. */
static enum query_round_result one_order(struct query *q, struct server *srv, CURL *curl,
                                         struct answer_buf *b, const char *order_no,
                                         const struct query_round *run, struct query_item *it,
                                         struct query_summary *sum)
{
    struct query_answer ans;
    char why[160];
    enum query_round_result res;
    size_t i;

    for (i = 0; i < q->n && !atomic_load(&q->stop); i++) {
        const struct query_target *t = &q->t[i];
        enum query_status st = ask(q, curl, t, order_no, b, &ans, why, sizeof(why));

        if (st == QUERY_CANCELED)
            break;
        sum->queries++;
        count(srv->m, st);
        it->answer[i] = st;
        it->nasked = i + 1;
        if (st == QUERY_MALFORMED || st == QUERY_ERROR || st == QUERY_TIMEOUT) {
            sum->failed++;
            log_warn("order query failed",
                     "target=%s order_no=%s answer=%s error=\"%s\" "
                     "request_id=%s",
                     t->name, order_no, query_status_name(st), why, run->request_id);
            continue;
        }
        if (st != QUERY_PAID)
            continue;
        sum->paid++;
        log_info("order query found a payment",
                 "target=%s order_no=%s pay_no=%s "
                 "request_id=%s",
                 t->name, order_no, ans.pay_no, run->request_id);
        if ((res = apply(srv, t, order_no, &ans, run->request_id, run->actor, &it->result[i])) !=
            QUERY_ROUND_OK)
            return res;
    }
    return QUERY_ROUND_OK;
}

static CURL *curl_create(void)
{
    CURL *curl = curl_easy_init();

    if (curl == NULL)
        return NULL;
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, progress);
    return curl;
}

/* Asks every endpoint about each of the n orders in order_nos, the
 * caller holding q->round, into items (or a scratch item each). */
static enum query_round_result ask_orders(struct query *q, struct server *srv,
                                          const struct query_round *run,
                                          const char (*order_nos)[ID_BUF], size_t n,
                                          struct query_item *items, size_t *nitems,
                                          struct query_summary *sum)
{
    enum query_round_result res = QUERY_ROUND_OK;
    struct answer_buf *b = malloc(sizeof(*b));
    struct query_item scratch;
    CURL *curl = curl_create();
    size_t i;

    if (b == NULL || curl == NULL) {
        log_error("order query: out of memory", "request_id=%s", run->request_id);
        res = QUERY_ROUND_ERROR;
        goto out;
    }
    for (i = 0; i < n && res == QUERY_ROUND_OK && !atomic_load(&q->stop); i++) {
        struct query_item *it = items != NULL ? &items[i] : &scratch;

        memset(it, 0, sizeof(*it));
        memcpy(it->order_no, order_nos[i], sizeof(it->order_no));
        res = one_order(q, srv, curl, b, order_nos[i], run, it, sum);
        if (nitems != NULL && items != NULL)
            *nitems = i + 1;
    }
    sum->stopped = atomic_load(&q->stop);
out:
    curl_easy_cleanup(curl);
    free(b);
    return res;
}

enum query_round_result query_run(struct query *q, struct server *srv,
                                  const struct query_round *run, size_t *nitems,
                                  struct query_summary *sum)
{
    char(*order_nos)[ID_BUF] = NULL;
    enum query_round_result res;
    size_t n = 0;

    memset(sum, 0, sizeof(*sum));
    if (nitems != NULL)
        *nitems = 0;
    if (pthread_mutex_trylock(&q->round) != 0)
        return QUERY_ROUND_BUSY;
    if ((order_nos = calloc(run->limit ? run->limit : 1, sizeof(*order_nos))) == NULL) {
        log_error("order query: out of memory", "request_id=%s", run->request_id);
        res = QUERY_ROUND_ERROR;
        goto out;
    }
    if ((res = list_orders(q, srv, run, order_nos, &n)) != QUERY_ROUND_OK)
        goto out;
    sum->orders = n;
    res = ask_orders(q, srv, run, (const char(*)[ID_BUF])order_nos, n, run->items, nitems, sum);
out:
    pthread_mutex_unlock(&q->round);
    free(order_nos);
    return res;
}

enum query_round_result query_orders(struct query *q, struct server *srv,
                                     const char (*order_nos)[ID_BUF], size_t n,
                                     const char *request_id, struct query_item *items,
                                     struct query_summary *sum)
{
    const struct query_round run = { .limit = n, .request_id = request_id };
    enum query_round_result res;

    memset(sum, 0, sizeof(*sum));
    memset(items, 0, n * sizeof(*items));
    if (pthread_mutex_trylock(&q->round) != 0)
        return QUERY_ROUND_BUSY;
    sum->orders = n;
    res = ask_orders(q, srv, &run, order_nos, n, items, NULL, sum);
    pthread_mutex_unlock(&q->round);
    return res;
}

bool query_item_unpaid(const struct query *q, const struct query_item *it)
{
    size_t i;

    if (q == NULL || q->n == 0 || it->nasked != q->n)
        return false;
    for (i = 0; i < it->nasked; i++)
        if (it->answer[i] != QUERY_NOTPAY && it->answer[i] != QUERY_CLOSED &&
            it->answer[i] != QUERY_NOT_FOUND)
            return false;
    return true;
}
