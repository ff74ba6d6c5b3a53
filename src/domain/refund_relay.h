/* refund_relay.h - the refund relay: one thread per shard that claims due
 * refunds under a lease (as the outbox relay claims events) and submits
 * each to its gateway's refund API, or asks the gateway what became of it.
 *
 * Exactly one refund at the gateway per refund record: every call carries
 * the refund's own number, which the gateways treat as the same refund, and
 * the record is marked SUBMITTED (committed) before a call leaves, so a
 * relay that dies mid-call leaves a SUBMITTED refund whose lease runs out;
 * the next claim asks the gateway first and submits again only with the
 * same number. A timeout or a 5xx is UNKNOWN, never FAILED; a business
 * refusal is FAILED with the gateway's code and an alert line. Waits
 * between attempts double from refunds.backoff_base_ms up to
 * refunds.backoff_max_ms; a refund is never given up on.
 * Knows nothing of the HTTP server; uses libcurl for the client side. */
#ifndef PAYCALLBACK_REFUND_RELAY_H
#define PAYCALLBACK_REFUND_RELAY_H

struct server;
struct refund_relay;

/* Starts one relay thread per shard. NULL on failure (logged). Call after
 * the pools exist and curl_global_init has run. */
struct refund_relay *refund_relay_start(struct server *srv);

/* Stops the relays: a call in flight finishes (bounded by the profile's
 * refund_timeout_ms), the leases not yet used are handed back, the threads
 * are joined. NULL-safe. */
void refund_relay_stop(struct refund_relay *rr);

#endif
