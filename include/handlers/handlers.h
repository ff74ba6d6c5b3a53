/* handlers.h - one function per route. Each takes the server context, the
 * parsed request and the reply to fill; none sees libmicrohttpd or MySQL
 * types. Called from any HTTP worker thread. */
#ifndef PAYCALLBACK_HANDLERS_H
#define PAYCALLBACK_HANDLERS_H

#include <stdbool.h>

#include "http.h"

struct server;

void handle_pay_callback(struct server *srv, const struct http_req *req, struct http_resp *resp);
/* The answer of a repeat from memory, on the polling thread (http_first):
 * a replay only, which logs nothing; anything else goes to the handler. */
bool first_pay_callback(struct server *srv, const struct http_req *req, struct http_resp *resp);
/* POST /pay/callback on an event loop (http.event_loop): the same
 * answers, the database reached with the non-blocking API. */
extern const struct http_async pay_callback_async;
bool first_gateway_callback(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_gateway_callback(struct server *srv, const struct http_req *req,
                             struct http_resp *resp);
void handle_healthz(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_readyz(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_metrics(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_token_apply(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_order_create(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_order_get(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_order_ship(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_order_finish(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_order_cancel(struct server *srv, const struct http_req *req, struct http_resp *resp);

/* The operator API (operator_outbox.c, operator_refunds.c, operator_reconcile.c,
 * operator_audit.c). */
void handle_ops_reconcile(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_ops_outbox_list(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_ops_outbox_get(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_ops_outbox_retry(struct server *srv, const struct http_req *req,
                             struct http_resp *resp);
void handle_ops_outbox_replay(struct server *srv, const struct http_req *req,
                              struct http_resp *resp);
void handle_ops_outbox_replay_since(struct server *srv, const struct http_req *req,
                                    struct http_resp *resp);
void handle_ops_refunds_list(struct server *srv, const struct http_req *req,
                             struct http_resp *resp);
void handle_ops_refund_create(struct server *srv, const struct http_req *req,
                              struct http_resp *resp);
void handle_ops_refund_list(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_ops_refund_get(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_ops_refund_approve(struct server *srv, const struct http_req *req,
                               struct http_resp *resp);
void handle_ops_refund_retry(struct server *srv, const struct http_req *req,
                             struct http_resp *resp);
void handle_ops_refund_reject(struct server *srv, const struct http_req *req,
                              struct http_resp *resp);
void handle_ops_refund_settle(struct server *srv, const struct http_req *req,
                              struct http_resp *resp);
void handle_ops_pay_no_release(struct server *srv, const struct http_req *req,
                               struct http_resp *resp);
void handle_ops_reconcile_query(struct server *srv, const struct http_req *req,
                                struct http_resp *resp);
void handle_ops_cancel_stale(struct server *srv, const struct http_req *req,
                             struct http_resp *resp);
void handle_ops_audit_list(struct server *srv, const struct http_req *req, struct http_resp *resp);

/* What the operator console needs (operator_summary.c,
 * operator_payments.c) and its documents (console.c). */
void handle_ops_whoami(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_ops_summary(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_ops_payment_get(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_console_index(struct server *srv, const struct http_req *req, struct http_resp *resp);
void handle_console_file(struct server *srv, const struct http_req *req, struct http_resp *resp);

#endif
