/* delivery.h - the outbox relay: worker threads that claim undelivered
 * events under a lease and POST each one to the shop's webhook, signed like
 * our own callbacks, until the shop answers 2xx or the event goes dead.
 *
 * At least once, never lost: an event leaves the outbox's pending state
 * only when the shop acknowledged it (delivered) or after
 * webhook.max_attempts failed attempts (dead, an operator can retry it).
 * A relay that dies holding claims loses nothing: its lease runs out and
 * another relay (in this or another instance) claims the events again, so
 * the shop may see an event twice and dedupes by its Idempotency-Key.
 * Events of one order are delivered in the order they were written.
 *
 * Sharded, each shard has webhook.workers relays of its own, claiming only
 * from that shard's outbox: no shard's backlog delays another's, and a
 * shard whose database fails holds back only its own relays (they count
 * paycallback_shard_outbox_claim_failures_total{shard}, log once, and
 * claim again after a wait that doubles up to 5 s).
 * Knows nothing of the HTTP server; uses libcurl for the client side. */
#ifndef PAYCALLBACK_DELIVERY_H
#define PAYCALLBACK_DELIVERY_H

#include <stddef.h>
#include <stdint.h>

#include "webhook_cfg.h"

struct server;
struct outbox_event;
struct delivery;

/* Starts cfg->webhook_workers relay threads per shard when a webhook URL is
 * configured; returns NULL (and starts nothing) when webhook.url is empty,
 * or on failure (logged). Call after the pools exist and
 * curl_global_init has run. */
struct delivery *delivery_start(struct server *srv);

/* Stops the relays: an attempt in flight finishes (it is bounded by
 * webhook.timeout_ms), the claims not yet attempted are handed back, the
 * threads are joined and everything is freed. NULL-safe. */
void delivery_stop(struct delivery *d);

/* The endpoints configured now (webhook.url's, named WEBHOOK_DEFAULT_NAME,
 * then the "webhooks" array's as the last reload left it) into out; their
 * count. */
size_t delivery_endpoints(const struct server *srv, struct webhook_endpoint_cfg out[WEBHOOKS_MAX]);

/* The wait before attempt number attempt + 1, after attempt failures
 * (attempt >= 1): base_ms * 2^(attempt - 1), capped at max_ms, then
 * jittered into [d/2, d] with rnd (any 32-bit random value) so that many
 * events failing together do not retry together. Pure. */
int64_t delivery_backoff_ms(int attempt, int64_t base_ms, int64_t max_ms, uint32_t rnd);

/* The wait of a relay after its failures-th failed claim in a row: poll_ms
 * doubled per failure, at most DELIVERY_DOWN_WAIT_MAX_MS (5 s); shared by
 * the outbox and refund relays. */
#define DELIVERY_DOWN_WAIT_MAX_MS 5000
int delivery_down_wait_ms(int poll_ms, int failures);

/* The JSON body POSTed for ev: {"id","type","order_no","created_at","data"}
 * with data the event's stored payload (itself JSON). malloc'd, NUL-
 * terminated, length in *len; the caller frees it with free. NULL when
 * the stored payload is not valid JSON or on allocation failure. */
char *delivery_event_body(const struct outbox_event *ev, size_t *len);

/* The event id the shop dedupes by: "<order_no>:<event_type>", or
 * "<order_no>:<event_type>:<subject>" for an event with a subject (a
 * refund's), unique because the outbox keeps one event of a type per order
 * and subject and order_nos are unique; across shards too, since a sharded order_no carries its
 * shard ("S02-...") and an event lives on its order's shard. Writes into
 * out (outsz bytes). */
void delivery_event_id(const struct outbox_event *ev, char *out, size_t outsz);

#endif
