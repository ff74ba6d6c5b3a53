/* gateway_refund.c - the refund calls of each gateway kind: Stripe's
 * POST /v1/refunds with the refund_no as Idempotency-Key, GET
 * /v1/refunds/{id} and the payment's list GET /v1/refunds?payment_intent=;
 * Alipay's alipay.trade.refund and
 * alipay.trade.fastpay.refund.query, RSA2-signed with the merchant key,
 * their answers checked with Alipay's public key; WeChat Pay v3's
 * POST /v3/refund/domestic/refunds and GET .../{out_refund_no} with the
 * WECHATPAY2-SHA256-RSA2048 Authorization, their answers checked with the
 * platform key. */
#include "gateway_refund.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "currency.h"
#include "gateway.h"
#include "gateway_wechat.h"
#include "ids.h"
#include "money.h"
#include "privkey.h"
#include "pubkey.h"

const char *gwr_outcome_str(enum gwr_outcome o)
{
    switch (o) {
    case GWR_SUCCEEDED: return "SUCCEEDED";
    case GWR_PENDING: return "PENDING";
    case GWR_FAILED: return "FAILED";
    case GWR_NOT_FOUND: return "NOT_FOUND";
    case GWR_UNKNOWN: return "UNKNOWN";
    }
    return "?";
}

static int add_header(struct gwr_call *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int add_header(struct gwr_call *call, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (call->nheaders >= GWR_HEADERS_MAX)
        return -1;
    va_start(ap, fmt);
    n = vsnprintf(call->header[call->nheaders], GWR_HEADER_MAX, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= GWR_HEADER_MAX)
        return -1;
    call->nheaders++;
    return 0;
}

/* base (the profile's refund_url, without a trailing '/') + path. */
static int set_url(struct gwr_call *call, const char *base, const char *path)
{
    size_t n = strlen(base);
    int w;

    while (n > 0 && base[n - 1] == '/')
        n--;
    w = snprintf(call->url, sizeof(call->url), "%.*s%s", (int)n, base, path);
    return w < 0 || (size_t)w >= sizeof(call->url) ? -1 : 0;
}

/* True for the characters a form value may carry unescaped. */
static int form_plain(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

/* Appends "&name=value" (form-escaped) to the body. */
static int form_add(struct gwr_call *call, const char *name, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t at = call->body_len;
    const char *p;

    if (at > 0 && at + 1 < sizeof(call->body))
        call->body[at++] = '&';
    for (int pass = 0; pass < 2; pass++) {
        for (p = pass == 0 ? name : value; *p != '\0'; p++) {
            if (at + 4 >= sizeof(call->body))
                return -1;
            if (form_plain(*p)) {
                call->body[at++] = *p;
            } else {
                call->body[at++] = '%';
                call->body[at++] = hex[(unsigned char)*p >> 4];
                call->body[at++] = hex[(unsigned char)*p & 15];
            }
        }
        if (pass == 0)
            call->body[at++] = '=';
    }
    call->body[at] = '\0';
    call->body_len = at;
    return 0;
}

/* ---- Stripe ----------------------------------------------------------------- */

static int stripe_auth(const struct gateway *gw, struct gwr_call *call)
{
    return add_header(call, "Authorization: Bearer %s", gw->refund_key);
}

/* r's amount in its currency's minor units (JPY: yen, KWD: fils). -1 when
 * the cents have no exact value there. */
static int minor_of(const struct gwr_refund *r, int64_t *minor, char *err, size_t errsz)
{
    if (currency_cents_to_minor(r->currency, r->amount_cents, minor) != CURRENCY_OK) {
        snprintf(err, errsz, "%lld cents of %s have no exact value in its minor units",
                 (long long)r->amount_cents, r->currency);
        return -1;
    }
    return 0;
}

static int stripe_submit(const struct gateway *gw, const struct gwr_refund *r,
                         struct gwr_call *call, char *err, size_t errsz)
{
    char minor[32], key[GWR_HEADER_MAX / 2];
    int64_t m = 0;

    if (minor_of(r, &m, err, errsz) != 0)
        return -1;
    snprintf(minor, sizeof(minor), "%lld", (long long)m);
    if (r->key_seq == 0)
        snprintf(key, sizeof(key), "%s", r->refund_no);
    else
        snprintf(key, sizeof(key), "%s-%d", r->refund_no, r->key_seq);
    snprintf(call->method, sizeof(call->method), "POST");
    if (set_url(call, gw->cfg->refund_url, "/v1/refunds") != 0 || stripe_auth(gw, call) != 0 ||
        add_header(call, "Idempotency-Key: %s", key) != 0 ||
        add_header(call, "Content-Type: application/x-www-form-urlencoded") != 0 ||
        form_add(call, strncmp(r->pay_no, "ch_", 3) == 0 ? "charge" : "payment_intent",
                 r->pay_no) != 0 ||
        form_add(call, "amount", minor) != 0 ||
        form_add(call, "metadata[refund_no]", r->refund_no) != 0 ||
        form_add(call, "metadata[order_no]", r->order_no) != 0) {
        snprintf(err, errsz, "the refund request does not fit");
        return -1;
    }
    return 0;
}

#define STRIPE_LIST_LIMIT 100 /* refunds one list answer holds: Stripe's largest page */

static int stripe_query(const struct gateway *gw, const struct gwr_refund *r, struct gwr_call *call,
                        char *err, size_t errsz)
{
    char path[GWR_URL_MAX];

    /* Without the refund's id, the payment's refunds are listed and ours
     * is the one whose metadata.refund_no is our number. Not a submission
     * under the same Idempotency-Key: Stripe answers that with whatever
     * the key's first request got, a 500 included, for ever. */
    if (r->gateway_refund_id[0] == '\0') {
        struct gwr_call q;

        memset(&q, 0, sizeof(q));
        if (form_add(&q, strncmp(r->pay_no, "ch_", 3) == 0 ? "charge" : "payment_intent",
                     r->pay_no) != 0 ||
            (size_t)snprintf(path, sizeof(path), "/v1/refunds?%s&limit=%d", q.body,
                             STRIPE_LIST_LIMIT) >= sizeof(path)) {
            snprintf(err, errsz, "the refund query does not fit");
            return -1;
        }
    } else {
        snprintf(path, sizeof(path), "/v1/refunds/%s", r->gateway_refund_id);
    }
    snprintf(call->method, sizeof(call->method), "GET");
    if (set_url(call, gw->cfg->refund_url, path) != 0 || stripe_auth(gw, call) != 0) {
        snprintf(err, errsz, "the refund query does not fit");
        return -1;
    }
    return 0;
}

static void copy_str(const cJSON *obj, const char *name, char *out, size_t outsz)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

    if (cJSON_IsString(it))
        snprintf(out, outsz, "%s", it->valuestring);
}

/* metadata.refund_no of a Stripe refund object: "" when it has none. */
static void stripe_refund_no(const cJSON *o, char *out, size_t outsz)
{
    out[0] = '\0';
    copy_str(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "refund_no", out, outsz);
}

/* A refund object: its id and what its status says. */
static void stripe_refund_object(const cJSON *o, struct gwr_answer *out)
{
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(o, "status");
    const char *s = cJSON_IsString(status) ? status->valuestring : "";

    copy_str(o, "id", out->gateway_refund_id, sizeof(out->gateway_refund_id));
    if (strcmp(s, "succeeded") == 0) {
        out->outcome = GWR_SUCCEEDED;
    } else if (strcmp(s, "pending") == 0 || strcmp(s, "requires_action") == 0) {
        out->outcome = GWR_PENDING;
    } else if (strcmp(s, "failed") == 0 || strcmp(s, "canceled") == 0) {
        out->outcome = GWR_FAILED;
        copy_str(o, "failure_reason", out->code, sizeof(out->code));
        if (out->code[0] == '\0')
            snprintf(out->code, sizeof(out->code), "%s", s);
    } else {
        snprintf(out->message, sizeof(out->message), "refund status \"%.40s\" not known", s);
        return;
    }
    snprintf(out->message, sizeof(out->message), "refund %.64s %s", out->gateway_refund_id, s);
}

/* A refund object believed as the answer about r: its id, and a number
 * and amount that are r's (metadata.refund_no, when it carries one, and
 * the amount in minor units). Anything else is UNKNOWN. */
static void stripe_ours(const struct gwr_refund *r, const cJSON *o, struct gwr_answer *out)
{
    const cJSON *amount = cJSON_GetObjectItemCaseSensitive(o, "amount");
    char no[GWR_ID_MAX + 16], ignored[GWR_MESSAGE_MAX];
    int64_t m = -1;

    stripe_refund_no(o, no, sizeof(no));
    if (no[0] != '\0' && strcmp(no, r->refund_no) != 0) {
        snprintf(out->message, sizeof(out->message), "an answer about refund %.64s, not ours", no);
        return;
    }
    /* A JSON number is a double; every amount the service holds (below
     * 10^13 minor units) is an integer a double holds exactly. */
    if (minor_of(r, &m, ignored, sizeof(ignored)) != 0 || !cJSON_IsNumber(amount) ||
        amount->valuedouble != (double)m) {
        snprintf(out->message, sizeof(out->message),
                 "an answer whose amount is not the refund's %lld minor units", (long long)m);
        return;
    }
    stripe_refund_object(o, out);
    if (out->outcome != GWR_UNKNOWN && out->gateway_refund_id[0] == '\0') {
        out->outcome = GWR_UNKNOWN;
        snprintf(out->message, sizeof(out->message), "a refund without an id");
    }
}

/* The payment's refunds: ours is the one named by metadata.refund_no;
 * none of ours in a complete list is NOT_FOUND. */
static void stripe_list(const struct gwr_refund *r, const cJSON *o, struct gwr_answer *out)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data"), *it;
    char no[GWR_ID_MAX + 16];

    if (!cJSON_IsArray(data)) {
        snprintf(out->message, sizeof(out->message), "a list without data");
        return;
    }
    cJSON_ArrayForEach (it, data) {
        stripe_refund_no(it, no, sizeof(no));
        if (strcmp(no, r->refund_no) == 0) {
            stripe_ours(r, it, out);
            return;
        }
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "has_more"))) {
        snprintf(out->message, sizeof(out->message),
                 "more than %d refunds of the payment, none of them ours on the first page",
                 STRIPE_LIST_LIMIT);
        return;
    }
    out->outcome = GWR_NOT_FOUND;
    snprintf(out->message, sizeof(out->message), "none of the payment's %d refunds is ours",
             cJSON_GetArraySize(data));
}

static void stripe_read(const struct gwr_refund *r, int query, long status, const char *body,
                        size_t len, struct gwr_answer *out)
{
    cJSON *o = cJSON_ParseWithLength(body, len);
    const cJSON *e, *kind;

    if (!cJSON_IsObject(o)) {
        snprintf(out->message, sizeof(out->message), "HTTP %ld, not a JSON object", status);
    } else if (status == 200) {
        kind = cJSON_GetObjectItemCaseSensitive(o, "object");
        if (query && cJSON_IsString(kind) && strcmp(kind->valuestring, "list") == 0)
            stripe_list(r, o, out);
        else
            stripe_ours(r, o, out);
    } else if (query && status == 404) {
        out->outcome = GWR_NOT_FOUND;
        snprintf(out->message, sizeof(out->message), "no such refund");
    } else if (status == 400 || status == 402) {
        /* A refusal of the request itself: charge_already_refunded,
         * amount_too_large, balance_insufficient... Final. */
        e = cJSON_GetObjectItemCaseSensitive(o, "error");
        out->outcome = GWR_FAILED;
        copy_str(e, "code", out->code, sizeof(out->code));
        copy_str(e, "message", out->message, sizeof(out->message));
        if (out->code[0] == '\0')
            snprintf(out->code, sizeof(out->code), "http_%ld", status);
    } else {
        /* 401/403 (our key), 409 (the key's first request runs), 429, 5xx:
         * nothing decided; ask again. A 500 with Stripe's error object is
         * the endpoint's own answer, which Stripe keeps under the key
         * (502/503/504 may come from in front of it, the request perhaps
         * still running: the key is kept for those). */
        snprintf(out->message, sizeof(out->message), "HTTP %ld", status);
        if (!query && status == 500 &&
            cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "error"))) {
            out->key_spent = 1;
            snprintf(out->message, sizeof(out->message),
                     "HTTP 500, kept by the gateway under the Idempotency-Key");
        }
    }
    cJSON_Delete(o);
}

/* ---- Alipay ----------------------------------------------------------------- */

#define ALIPAY_REFUND "alipay.trade.refund"
#define ALIPAY_REFUND_QUERY "alipay.trade.fastpay.refund.query"
#define ALIPAY_PARAMS 9

struct kv {
    const char *k, *v;
};

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->k, ((const struct kv *)b)->k);
}

/* Builds the signed form of an Alipay API call: the common parameters and
 * biz_content, sorted, "k=v" joined by '&' and signed (RSA2), then the
 * same pairs form-escaped as the body. */
static int alipay_call(const struct gateway *gw, const char *method, const char *biz,
                       struct gwr_call *call, char *err, size_t errsz)
{
    char ts[32], content[GWR_BODY_MAX];
    struct kv p[ALIPAY_PARAMS] = {
        { "app_id", gw->cfg->app_id }, { "method", method },    { "format", "JSON" },
        { "charset", "utf-8" },        { "sign_type", "RSA2" }, { "timestamp", ts },
        { "version", "1.0" },          { "biz_content", biz },  { NULL, NULL },
    };
    size_t n = ALIPAY_PARAMS - 1, at = 0;
    time_t now = time(NULL) + (time_t)8 * 3600; /* Alipay reads it as Beijing time */
    struct tm tm;
    char *sig = NULL;
    int rc = -1;

    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
    qsort(p, n, sizeof(p[0]), kv_cmp);
    content[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int w =
            snprintf(content + at, sizeof(content) - at, "%s%s=%s", i ? "&" : "", p[i].k, p[i].v);
        if (w < 0 || (size_t)w >= sizeof(content) - at)
            goto out;
        at += (size_t)w;
    }
    if ((sig = privkey_sign_b64(gw->merchant_key, content, at)) == NULL) {
        snprintf(err, errsz, "the merchant key could not sign");
        return -1;
    }
    snprintf(call->method, sizeof(call->method), "POST");
    if (set_url(call, gw->cfg->refund_url, "/gateway.do") != 0 ||
        add_header(call, "Content-Type: application/x-www-form-urlencoded;charset=utf-8") != 0)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (form_add(call, p[i].k, p[i].v) != 0)
            goto out;
    if (form_add(call, "sign", sig) != 0)
        goto out;
    rc = 0;
out:
    if (rc != 0 && err[0] == '\0')
        snprintf(err, errsz, "the refund request does not fit");
    free(sig);
    return rc;
}

/* {"out_trade_no", "trade_no", "out_request_no"[, "refund_amount"]} */
static int alipay_biz(const struct gwr_refund *r, int with_amount, char *out, size_t outsz)
{
    char amount[32];
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    int rc = -1;

    if (o == NULL)
        return -1;
    if (cJSON_AddStringToObject(o, "out_trade_no", r->order_no) == NULL ||
        cJSON_AddStringToObject(o, "trade_no", r->pay_no) == NULL ||
        cJSON_AddStringToObject(o, "out_request_no", r->refund_no) == NULL)
        goto out;
    if (with_amount &&
        cJSON_AddStringToObject(o, "refund_amount",
                                money_format(r->amount_cents, amount, sizeof(amount))) == NULL)
        goto out;
    if ((text = cJSON_PrintUnformatted(o)) != NULL && strlen(text) < outsz) {
        memcpy(out, text, strlen(text) + 1);
        rc = 0;
    }
out:
    cJSON_free(text);
    cJSON_Delete(o);
    return rc;
}

/* Alipay's refund API and WeChat Pay's domestic one take CNY only (yuan
 * with two decimals, fen): a refund in another currency is not sent. */
static int cny_only(const char *kind, const struct gwr_refund *r, char *err, size_t errsz)
{
    if (strcmp(r->currency, "CNY") == 0)
        return 0;
    snprintf(err, errsz, "%s refunds are in CNY; this refund is in %.3s", kind, r->currency);
    return -1;
}

static int alipay_submit(const struct gateway *gw, const struct gwr_refund *r,
                         struct gwr_call *call, char *err, size_t errsz)
{
    char biz[512];

    if (cny_only("Alipay", r, err, errsz) != 0)
        return -1;

    if (alipay_biz(r, 1, biz, sizeof(biz)) != 0) {
        snprintf(err, errsz, "the refund request does not fit");
        return -1;
    }
    return alipay_call(gw, ALIPAY_REFUND, biz, call, err, errsz);
}

static int alipay_query(const struct gateway *gw, const struct gwr_refund *r, struct gwr_call *call,
                        char *err, size_t errsz)
{
    char biz[512];

    if (alipay_biz(r, 0, biz, sizeof(biz)) != 0) {
        snprintf(err, errsz, "the refund query does not fit");
        return -1;
    }
    return alipay_call(gw, ALIPAY_REFUND_QUERY, biz, call, err, errsz);
}

/* The text of the JSON value that starts at p (an object), as the answer
 * holds it: Alipay signs those exact bytes. Its length, or 0. */
static size_t json_span(const char *p, const char *end)
{
    const char *s = p;
    int depth = 0, in_str = 0;

    if (p >= end || *p != '{')
        return 0;
    for (; s < end; s++) {
        if (in_str) {
            if (*s == '\\')
                s++;
            else if (*s == '"')
                in_str = 0;
        } else if (*s == '"') {
            in_str = 1;
        } else if (*s == '{') {
            depth++;
        } else if (*s == '}' && --depth == 0) {
            return (size_t)(s - p + 1);
        }
    }
    return 0;
}

/* The verified response object of method, or NULL (out->message says
 * why). The caller frees it with cJSON_Delete. */
static cJSON *alipay_verified(const struct gateway *gw, const char *method, const char *body,
                              size_t len, struct gwr_answer *out)
{
    char name[64], *q;
    const char *at, *end = body + len;
    struct pubkey_part part;
    cJSON *root = cJSON_ParseWithLength(body, len), *inner = NULL;
    const cJSON *sig;
    size_t span;

    snprintf(name, sizeof(name), "\"%s_response\"", method);
    for (q = name; *q; q++)
        if (*q == '.')
            *q = '_';
    sig = cJSON_GetObjectItemCaseSensitive(root, "sign");
    if ((at = strstr(body, name)) == NULL || !cJSON_IsString(sig)) {
        snprintf(out->message, sizeof(out->message), "an answer without %s and its sign", name);
        goto out;
    }
    for (at += strlen(name); at < end && (*at == ' ' || *at == ':'); at++)
        ;
    if ((span = json_span(at, end)) == 0) {
        snprintf(out->message, sizeof(out->message), "an unreadable %s", name);
        goto out;
    }
    part.data = at;
    part.len = span;
    if (pubkey_verify(gw->alipay_key, &part, 1, sig->valuestring) != PUBKEY_OK) {
        snprintf(out->message, sizeof(out->message), "the answer's signature does not verify");
        goto out;
    }
    inner = cJSON_ParseWithLength(at, span);
out:
    cJSON_Delete(root);
    return inner;
}

/* A signed query answer believed only when it names our number and, for
 * a refund it says succeeded, our amount. 0 when it does; else -1 with
 * out->message saying what it names. */
static int alipay_names_ours(const struct gwr_refund *r, const cJSON *o, int success,
                             struct gwr_answer *out)
{
    char no[GWR_ID_MAX + 16] = "", amount[32] = "";
    int64_t cents = -1;

    copy_str(o, "out_request_no", no, sizeof(no));
    copy_str(o, "refund_amount", amount, sizeof(amount));
    if ((no[0] != '\0' || success) && strcmp(no, r->refund_no) != 0) {
        snprintf(out->message, sizeof(out->message),
                 "a signed answer about refund \"%.64s\", not ours", no);
        return -1;
    }
    if (success && (money_parse(amount, &cents) != MONEY_OK || cents != r->amount_cents)) {
        snprintf(out->message, sizeof(out->message),
                 "a signed answer whose refund_amount \"%.24s\" is not the refund's", amount);
        return -1;
    }
    return 0;
}

static void alipay_read(const struct gateway *gw, const struct gwr_refund *r, int query,
                        long status, const char *body, size_t len, struct gwr_answer *out)
{
    cJSON *o;
    char code[16] = "", sub[GWR_CODE_MAX] = "", flag[32] = "";

    if (status != 200) {
        snprintf(out->message, sizeof(out->message), "HTTP %ld", status);
        return;
    }
    if ((o = alipay_verified(gw, query ? ALIPAY_REFUND_QUERY : ALIPAY_REFUND, body, len, out)) ==
        NULL)
        return;
    copy_str(o, "code", code, sizeof(code));
    copy_str(o, "sub_code", sub, sizeof(sub));
    copy_str(o, "msg", out->message, sizeof(out->message));
    copy_str(o, "trade_no", out->gateway_refund_id, sizeof(out->gateway_refund_id));
    copy_str(o, query ? "refund_status" : "fund_change", flag, sizeof(flag));
    if (strcmp(code, "10000") == 0) {
        if (query && alipay_names_ours(r, o, strcmp(flag, "REFUND_SUCCESS") == 0, out) != 0)
            out->gateway_refund_id[0] = '\0'; /* UNKNOWN: not an answer about ours */
        else if (query)
            out->outcome = strcmp(flag, "REFUND_SUCCESS") == 0 ? GWR_SUCCEEDED : GWR_NOT_FOUND;
        else /* "N": no money moved by this call (a repeat); the query says */
            out->outcome = strcmp(flag, "Y") == 0 ? GWR_SUCCEEDED : GWR_PENDING;
    } else if (strcmp(code, "40004") == 0 && strcmp(sub, "ACQ.SYSTEM_ERROR") != 0 &&
               sub[0] != '\0') {
        out->outcome = GWR_FAILED; /* ACQ.TRADE_HAS_CLOSE, ACQ.SELLER_BALANCE_NOT_ENOUGH... */
        snprintf(out->code, sizeof(out->code), "%s", sub);
    } else {
        snprintf(out->message, sizeof(out->message), "code %.8s %.60s", code, sub);
    }
    cJSON_Delete(o);
}

/* ---- WeChat Pay v3 ------------------------------------------------------------ */

#define WECHAT_REFUNDS "/v3/refund/domestic/refunds"

/* The path and query of url: what WeChat's signature covers. */
static const char *url_path(const char *url)
{
    const char *p = strstr(url, "://");

    p = p != NULL ? strchr(p + 3, '/') : NULL;
    return p != NULL ? p : "/";
}

/* Signs method, the URL's path, a timestamp, a nonce and the body with
 * the merchant key into the Authorization header. */
static int wechat_sign(const struct gateway *gw, struct gwr_call *call, char *err, size_t errsz)
{
    char ts[24], nonce[IDS_TOKEN_BUF], *msg = NULL, *sig = NULL;
    size_t need;
    int rc = -1;

    snprintf(ts, sizeof(ts), "%lld", (long long)time(NULL));
    if (ids_token(nonce) != 0) {
        snprintf(err, errsz, "no randomness for a nonce");
        return -1;
    }
    need = strlen(call->method) + strlen(url_path(call->url)) + strlen(ts) + strlen(nonce) +
           call->body_len + 6;
    if ((msg = malloc(need)) == NULL) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    snprintf(msg, need, "%s\n%s\n%s\n%s\n%.*s\n", call->method, url_path(call->url), ts, nonce,
             (int)call->body_len, call->body);
    if ((sig = privkey_sign_b64(gw->merchant_key, msg, strlen(msg))) == NULL) {
        snprintf(err, errsz, "the merchant key could not sign");
        goto out;
    }
    if (add_header(call,
                   "Authorization: WECHATPAY2-SHA256-RSA2048 mchid=\"%s\",nonce_str=\"%s\","
                   "signature=\"%s\",timestamp=\"%s\",serial_no=\"%s\"",
                   gw->cfg->mchid, nonce, sig, ts, gw->cfg->merchant_serial) != 0 ||
        add_header(call, "Accept: application/json") != 0) {
        snprintf(err, errsz, "the Authorization header does not fit");
        goto out;
    }
    rc = 0;
out:
    free(msg);
    free(sig);
    return rc;
}

/* An amount in fen (CNY's minor unit) as a JSON integer written from its
 * integer text, never through cJSON's double. */
static cJSON *add_fen(cJSON *o, const char *name, int64_t fen)
{
    char text[24];

    snprintf(text, sizeof(text), "%" PRId64, fen);
    return cJSON_AddRawToObject(o, name, text);
}

static int wechat_submit(const struct gateway *gw, const struct gwr_refund *r,
                         struct gwr_call *call, char *err, size_t errsz)
{
    struct gwr_refund whole = *r;
    cJSON *o = NULL, *amount;
    char *text = NULL;
    int64_t refund = 0, total = 0;
    int rc = -1;

    whole.amount_cents = r->pay_amount_cents;
    if (cny_only("WeChat Pay", r, err, errsz) != 0 || minor_of(r, &refund, err, errsz) != 0 ||
        minor_of(&whole, &total, err, errsz) != 0)
        return -1;
    if ((o = cJSON_CreateObject()) == NULL)
        return -1;
    if (cJSON_AddStringToObject(o, "transaction_id", r->pay_no) == NULL ||
        cJSON_AddStringToObject(o, "out_refund_no", r->refund_no) == NULL ||
        (amount = cJSON_AddObjectToObject(o, "amount")) == NULL ||
        add_fen(amount, "refund", refund) == NULL || add_fen(amount, "total", total) == NULL ||
        cJSON_AddStringToObject(amount, "currency", r->currency) == NULL ||
        (text = cJSON_PrintUnformatted(o)) == NULL || strlen(text) >= sizeof(call->body)) {
        snprintf(err, errsz, "the refund request does not fit");
        goto out;
    }
    memcpy(call->body, text, strlen(text) + 1);
    call->body_len = strlen(text);
    snprintf(call->method, sizeof(call->method), "POST");
    if (set_url(call, gw->cfg->refund_url, WECHAT_REFUNDS) != 0 ||
        add_header(call, "Content-Type: application/json") != 0) {
        snprintf(err, errsz, "the refund request does not fit");
        goto out;
    }
    rc = wechat_sign(gw, call, err, errsz);
out:
    cJSON_free(text);
    cJSON_Delete(o);
    return rc;
}

static int wechat_query(const struct gateway *gw, const struct gwr_refund *r, struct gwr_call *call,
                        char *err, size_t errsz)
{
    char path[sizeof(WECHAT_REFUNDS) + 80];

    snprintf(path, sizeof(path), WECHAT_REFUNDS "/%s", r->refund_no);
    snprintf(call->method, sizeof(call->method), "GET");
    if (set_url(call, gw->cfg->refund_url, path) != 0) {
        snprintf(err, errsz, "the refund query does not fit");
        return -1;
    }
    return wechat_sign(gw, call, err, errsz);
}

/* The value of header name in the "Name: value\r\n" lines of headers,
 * into out ("" when absent). */
static void header_value(const char *headers, const char *name, char *out, size_t outsz)
{
    size_t n = strlen(name);
    const char *p = headers;

    out[0] = '\0';
    while (p != NULL && *p != '\0') {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1, *e;

            while (*v == ' ' || *v == '\t')
                v++;
            for (e = v; *e != '\0' && *e != '\r' && *e != '\n'; e++)
                ;
            snprintf(out, outsz, "%.*s", (int)(e - v), v);
            return;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
}

/* A signed refund object believed only when it names our out_refund_no,
 * amount (fen) and currency. 0 when it does; else -1 with out->message
 * saying what it names. */
static int wechat_names_ours(const struct gwr_refund *r, const cJSON *o, struct gwr_answer *out)
{
    const cJSON *amount = cJSON_GetObjectItemCaseSensitive(o, "amount");
    const cJSON *refund = cJSON_GetObjectItemCaseSensitive(amount, "refund");
    char no[GWR_ID_MAX + 16] = "", currency[8] = "", ignored[GWR_MESSAGE_MAX];
    int64_t m = -1;

    copy_str(o, "out_refund_no", no, sizeof(no));
    copy_str(amount, "currency", currency, sizeof(currency));
    if (strcmp(no, r->refund_no) != 0) {
        snprintf(out->message, sizeof(out->message),
                 "a signed answer about refund \"%.64s\", not ours", no);
        return -1;
    }
    /* A JSON number is a double: exact for every amount below 2^53 fen. */
    if (minor_of(r, &m, ignored, sizeof(ignored)) != 0 || !cJSON_IsNumber(refund) ||
        refund->valuedouble != (double)m ||
        (currency[0] != '\0' && strcmp(currency, r->currency) != 0)) {
        snprintf(out->message, sizeof(out->message),
                 "a signed answer whose amount is not the refund's %lld %s", (long long)m,
                 r->currency);
        return -1;
    }
    return 0;
}

static void wechat_read(const struct gateway *gw, const struct gwr_refund *r, int query,
                        long status, const char *headers, const char *body, size_t len,
                        struct gwr_answer *out)
{
    char ts[32], nonce[128], sig[1024], serial[128], st[32] = "";
    cJSON *o;

    header_value(headers, "Wechatpay-Timestamp", ts, sizeof(ts));
    header_value(headers, "Wechatpay-Nonce", nonce, sizeof(nonce));
    header_value(headers, "Wechatpay-Signature", sig, sizeof(sig));
    header_value(headers, "Wechatpay-Serial", serial, sizeof(serial));
    if (status >= 500 || status == 429) {
        snprintf(out->message, sizeof(out->message), "HTTP %ld", status);
        return;
    }
    if (gateway_wechat_verify(ts, nonce, sig, serial, body, len, gw->wechat_keys, gw->nwechat_keys,
                              (int64_t)time(NULL), gw->cfg->tolerance_s) != GATEWAY_OK) {
        snprintf(out->message, sizeof(out->message), "HTTP %ld whose signature does not verify",
                 status);
        return;
    }
    o = cJSON_ParseWithLength(body, len);
    if (!cJSON_IsObject(o)) {
        snprintf(out->message, sizeof(out->message), "HTTP %ld, not a JSON object", status);
    } else if (status == 200 && wechat_names_ours(r, o, out) != 0) {
        ; /* UNKNOWN: not an answer about ours */
    } else if (status == 200) {
        copy_str(o, "refund_id", out->gateway_refund_id, sizeof(out->gateway_refund_id));
        copy_str(o, "status", st, sizeof(st));
        snprintf(out->message, sizeof(out->message), "refund %.64s %s", out->gateway_refund_id, st);
        if (strcmp(st, "SUCCESS") == 0) {
            out->outcome = GWR_SUCCEEDED;
        } else if (strcmp(st, "PROCESSING") == 0) {
            out->outcome = GWR_PENDING;
        } else if (strcmp(st, "CLOSED") == 0 || strcmp(st, "ABNORMAL") == 0) {
            out->outcome = GWR_FAILED;
            snprintf(out->code, sizeof(out->code), "%s", st);
        }
    } else if (query && status == 404) {
        out->outcome = GWR_NOT_FOUND;
        snprintf(out->message, sizeof(out->message), "no such refund");
    } else if (status == 400 || status == 403 || status == 404) {
        /* NOT_ENOUGH, USER_ACCOUNT_ABNORMAL, INVALID_REQUEST, ...: refused */
        out->outcome = GWR_FAILED;
        copy_str(o, "code", out->code, sizeof(out->code));
        copy_str(o, "message", out->message, sizeof(out->message));
        if (out->code[0] == '\0')
            snprintf(out->code, sizeof(out->code), "http_%ld", status);
    } else {
        snprintf(out->message, sizeof(out->message), "HTTP %ld", status); /* 401: our key */
    }
    cJSON_Delete(o);
}

/* ---- dispatch --------------------------------------------------------------- */

int gwr_submit(const struct gateway *gw, const struct gwr_refund *r, struct gwr_call *call,
               char *err, size_t errsz)
{
    memset(call, 0, sizeof(*call));
    err[0] = '\0';
    switch (gw->cfg->kind) {
    case GATEWAY_STRIPE: return stripe_submit(gw, r, call, err, errsz);
    case GATEWAY_ALIPAY: return alipay_submit(gw, r, call, err, errsz);
    case GATEWAY_WECHATPAY_V3: return wechat_submit(gw, r, call, err, errsz);
    }
    return -1;
}

int gwr_query(const struct gateway *gw, const struct gwr_refund *r, struct gwr_call *call,
              char *err, size_t errsz)
{
    memset(call, 0, sizeof(*call));
    err[0] = '\0';
    switch (gw->cfg->kind) {
    case GATEWAY_STRIPE: return stripe_query(gw, r, call, err, errsz);
    case GATEWAY_ALIPAY: return alipay_query(gw, r, call, err, errsz);
    case GATEWAY_WECHATPAY_V3: return wechat_query(gw, r, call, err, errsz);
    }
    return -1;
}

void gwr_read(const struct gateway *gw, const struct gwr_refund *r, int query, long http_status,
              const char *headers, const char *body, size_t body_len, struct gwr_answer *out)
{
    memset(out, 0, sizeof(*out));
    out->outcome = GWR_UNKNOWN;
    switch (gw->cfg->kind) {
    case GATEWAY_STRIPE: stripe_read(r, query, http_status, body, body_len, out); break;
    case GATEWAY_ALIPAY: alipay_read(gw, r, query, http_status, body, body_len, out); break;
    case GATEWAY_WECHATPAY_V3:
        wechat_read(gw, r, query, http_status, headers, body, body_len, out);
        break;
    }
}
