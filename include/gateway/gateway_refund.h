/* gateway_refund.h - the refund API of each gateway kind, as data: the
 * request that submits a refund or asks about one (method, URL, headers,
 * body, signed as the gateway documents it) and what its answer means.
 * Builds and reads; sends nothing (the relay does, with libcurl). Pure
 * apart from the signing key; any thread. */
#ifndef PAYCALLBACK_GATEWAY_REFUND_H
#define PAYCALLBACK_GATEWAY_REFUND_H

#include <stddef.h>
#include <stdint.h>

struct gateway;

#define GWR_URL_MAX 512
#define GWR_BODY_MAX 4096
#define GWR_HEADERS_MAX 8
#define GWR_HEADER_MAX 1024
#define GWR_ID_MAX 65
#define GWR_CODE_MAX 65
#define GWR_MESSAGE_MAX 200

/* What the relay knows of one refund. */
struct gwr_refund {
    const char *refund_no; /* the request number: the gateway's idempotency key */
    const char *pay_no;    /* the gateway's payment id */
    const char *order_no;  /* our order: the gateway's out_trade_no */
    int64_t amount_cents;
    int64_t pay_amount_cents;
    const char *currency;
    const char *gateway_refund_id; /* "" until the gateway named it */
    int key_seq; /* Stripe: the Idempotency-Key's generation, 0 for refund_no itself */
};

/* Stripe keys one refund may walk through (refund_no, refund_no-1, ...):
 * each is taken only after the one before ended in an error Stripe keeps
 * under it and the payment's refunds show none of ours. */
#define GWR_KEYS_MAX 32

/* One HTTP request to make. */
struct gwr_call {
    char method[8];
    char url[GWR_URL_MAX];
    char header[GWR_HEADERS_MAX][GWR_HEADER_MAX];
    size_t nheaders;
    char body[GWR_BODY_MAX];
    size_t body_len;
};

/* What an answer means. */
enum gwr_outcome {
    GWR_SUCCEEDED, /* the money is on its way back */
    GWR_PENDING,   /* accepted, not decided yet: ask again later */
    GWR_FAILED,    /* refused for a business reason: final (code says why) */
    GWR_NOT_FOUND, /* a query: the gateway has no refund with this number */
    GWR_UNKNOWN    /* a 5xx, an answer that does not verify or parse: ask again */
};

struct gwr_answer {
    enum gwr_outcome outcome;
    char gateway_refund_id[GWR_ID_MAX]; /* "" when the answer names none */
    char code[GWR_CODE_MAX];            /* the gateway's code of a refusal */
    char message[GWR_MESSAGE_MAX];      /* for logs and last_error */
    int key_spent; /* a submission's Idempotency-Key has an error kept under it (Stripe
                      500): every later request under it gets that error again */
};

/* The request that submits r through gw (whose profile has a refund_url).
 * 0, or -1 with the reason in err (the request does not fit, a key
 * refuses to sign). */
int gwr_submit(const struct gateway *gw, const struct gwr_refund *r, struct gwr_call *call,
               char *err, size_t errsz);

/* The request that asks gw what became of r: by its gateway_refund_id
 * when known, else by its refund_no (Alipay's out_request_no, WeChat's
 * out_refund_no; Stripe: the list of the payment's refunds, ours named by
 * metadata.refund_no). */
int gwr_query(const struct gateway *gw, const struct gwr_refund *r, struct gwr_call *call,
              char *err, size_t errsz);

/* Reads the answer about r to a submission (query 0) or a query (query
 * 1): HTTP status, headers (name: value lines, for the answer's
 * signature) and body. Never fails: what cannot be read is GWR_UNKNOWN,
 * and so is an answer that does not name r's number and amount where the
 * gateway names them (a signed answer about another refund is no answer
 * about ours). */
void gwr_read(const struct gateway *gw, const struct gwr_refund *r, int query, long http_status,
              const char *headers, const char *body, size_t body_len, struct gwr_answer *out);

/* "SUCCEEDED", "PENDING", ... for logs. */
const char *gwr_outcome_str(enum gwr_outcome o);

#endif
