/* refund_relay.h - the refund relay: per shard and gateway profile with a
 * refund API, a claimer that takes due refunds under a lease (as the
 * outbox relay claims events) and refunds.inflight senders that each
 * submit one to the gateway's refund API, or ask the gateway what became
 * of it; so a gateway that hangs holds its own senders only. Two refunds
 * of one payment are never in flight together (refund_claim).
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

/* Starts the relays of every shard (a sweeper thread, and a claimer and
 * refunds.inflight senders per profile with a refund_url). NULL on failure (logged). Call after
 * the pools exist and curl_global_init has run. */
struct refund_relay *refund_relay_start(struct server *srv);

/* Stops the relays: a refund in hand finishes (bounded by its profile's
 * refund_timeout_ms, three times), the leases not yet used are handed back, the
 * threads are joined. NULL-safe. */
void refund_relay_stop(struct refund_relay *rr);

#endif
