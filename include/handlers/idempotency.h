/* idempotency.h - the Idempotency-Key steps around a handler's domain
 * call (idempotency.c): read the header, claim or answer from the record,
 * store the answer with the effect, give the key back. The records are
 * idem.c's. */
#ifndef PAYCALLBACK_IDEMPOTENCY_H
#define PAYCALLBACK_IDEMPOTENCY_H

#include <stdbool.h>

#include "idem.h"
#include "orders.h"

struct server;
struct shard;
struct http_req;
struct http_resp;

#define IDEMPOTENCY_HEADER "Idempotency-Key"
#define IDEMPOTENCY_BUSY_RETRY_S 1 /* Retry-After of a 409 while the first attempt runs */

/* Renders the answer of a domain result into resp; for the Idempotency-Key
 * hook, it must render exactly what the handler sends. */
typedef void (*idempotency_render_fn)(struct http_resp *resp, const void *data);

/* One request's Idempotency-Key handling. Zero it, then idempotency_key_or_reply. */
struct idempotency {
    bool on;                   /* the request carries Idempotency-Key */
    const struct shard *shard; /* where its record lives (idem_shard), set by
                                     idempotency_begin_or_reply: the hook_shard of the
                                     domain call */
    bool owned;                /* this attempt holds the key's claim */
    bool stored;               /* its answer committed with the effect */
    bool lost;                 /* a repeat took the claim over */
    struct idem_claim claim;
    struct orders_hook hook;
    idempotency_render_fn render;
    struct http_resp *resp;
};

/* Reads the Idempotency-Key header into ir (ir->on false when there is
 * none). 0, or -1 after a 400 for a malformed key. */
int idempotency_key_or_reply(const struct http_req *req, struct idempotency *ir,
                             struct http_resp *resp);

/* Claims the key in scope (the caller: "key:<credential>") for this request's fingerprint, on the shard its scope
 * is placed on (idem_shard; a 503 from that shard counts as its own). 0:
 * run the request
 * (then idempotency_end). -1 after replying: the stored answer again (replay), 422
 * IDEMPOTENCY_KEY_MISMATCH, 409 IDEMPOTENCY_KEY_IN_USE with Retry-After
 * past idempotency.wait_ms, or 503/500 when MySQL fails. */
int idempotency_begin_or_reply(struct server *srv, const struct http_req *req, const char *scope,
                               struct idempotency *ir, struct http_resp *resp);

/* The orders hook that renders the ORDERS_OK answer with render and stores
 * it with the effect; NULL when ir holds no claim. */
const struct orders_hook *idempotency_hook(struct idempotency *ir, struct http_resp *resp,
                                           idempotency_render_fn render);

/* After the request, when it held a claim: a definite answer below 500 not
 * yet stored is stored now; a retryable or 5xx answer gives the key back;
 * when a repeat took the claim over, resp is replaced by that repeat's
 * answer (waiting for it as a repeat would). The caller holds no
 * connection: one is borrowed on the key's shard. */
void idempotency_end(struct server *srv, const struct http_req *req, struct idempotency *ir,
                     struct http_resp *resp);

#endif
