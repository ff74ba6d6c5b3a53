/* api_error.h - the one table of the service's API error codes: each
 * code's name, HTTP status and default message. Handlers reply with a code
 * by its name (API_ORDER_NOT_FOUND), never a string of their own, and
 * scripts/check-openapi.py reads this list to hold docs/openapi.yaml's
 * Error.code enum to it. A code is stable once shipped: add rows, never
 * rename one. */
#ifndef PAYCALLBACK_API_ERROR_H
#define PAYCALLBACK_API_ERROR_H

struct http_resp;

/* X(name, HTTP status, default message). One line per code: the check
 * script reads them in this form. */
#define API_ERRORS(X)                                                                              \
    X(BAD_REQUEST, 400, "the request is malformed")                                                \
    X(BAD_SIGNATURE, 401, "the signature does not verify")                                         \
    X(UNAUTHORIZED, 401, "a valid operator key is required")                                       \
    X(FORBIDDEN, 403, "this key lacks the scope this route needs")                                 \
    X(NOT_FOUND, 404, "no such route")                                                             \
    X(METHOD_NOT_ALLOWED, 405, "method not allowed on this route")                                 \
    X(REQUEST_TIMEOUT, 408, "the request did not arrive in time")                                  \
    X(PAYLOAD_TOO_LARGE, 413, "request body exceeds body_max_bytes")                               \
    X(URI_TOO_LONG, 414, "request path too long")                                                  \
    X(HEADER_TOO_LARGE, 431, "request headers too large")                                          \
    X(RATE_LIMITED, 429, "too many requests from this client, retry after Retry-After")            \
    X(NOT_IMPLEMENTED, 501, "method not implemented")                                              \
    X(ORDER_NOT_FOUND, 404, "no order with this order_no")                                         \
    X(SKU_NOT_FOUND, 404, "no such sku")                                                           \
    X(PAY_NO_CONFLICT, 409, "pay_no already recorded with another order_no or amount")             \
    X(AMOUNT_MISMATCH, 422, "amount differs from the order's amount")                              \
    X(REPEAT_SUBMIT, 409, "请勿重复提交: token already used or expired")                           \
    X(OUT_OF_STOCK, 409, "not enough stock for this quantity")                                     \
    X(TOO_MANY_OPEN_ORDERS, 409, "this user_id holds orders.max_open_per_user unpaid orders")      \
    X(UNIT_QUOTA_EXCEEDED, 409, "this order would pass a quota of unpaid units")                   \
    X(QUANTITY_LIMIT, 422, "quantity exceeds orders.max_quantity_per_line")                        \
    X(ILLEGAL_TRANSITION, 409, "the order's status does not allow this change")                    \
    X(IDEMPOTENCY_KEY_IN_USE, 409, "the first request with this Idempotency-Key is still running") \
    X(IDEMPOTENCY_KEY_MISMATCH, 422, "this Idempotency-Key was used for a different request")      \
    X(EVENT_NOT_FOUND, 404, "no outbox event with this id")                                        \
    X(EVENT_NOT_DEAD, 409, "the event is not dead")                                                \
    X(WRONG_APP, 403, "the notification is for another app")                                       \
    X(PAYMENT_NOT_FOUND, 404, "no payment with this pay_no")                                       \
    X(REFUND_NOT_REQUIRED, 409, "the payment is PAID: it did not charge the customer twice")       \
    X(ALREADY_SETTLED, 409, "the payment was settled with another reference")                      \
    X(REFUND_NOT_FOUND, 404, "no refund with this refund_no")                                      \
    X(REFUND_EXCEEDS_PAYMENT, 422, "the payment's refunds would exceed its amount")                \
    X(REFUND_CURRENCY_MISMATCH, 422, "a refund is in its payment's currency")                      \
    X(REFUND_AMOUNT_INEXACT, 422, "the amount has no exact value in the currency's minor unit")    \
    X(REFUND_MANUAL, 409, "the payment's gateway has no refund API: settle it by hand")            \
    X(REFUND_ILLEGAL_STATE, 409, "the refund's state does not allow this change")                  \
    X(REFUND_IN_PROGRESS, 409, "a refund of this payment is under way")                            \
    X(PAYMENT_SETTLED, 409, "the payment was settled: nothing more goes back through the gateway") \
    X(APPROVER_MUST_DIFFER, 403, "a refund is approved by another key than the one that asked")    \
    X(QUERY_NOT_CONFIGURED, 409, "no query_url is configured")                                     \
    X(QUERY_IN_PROGRESS, 409, "a query round is running already")                                  \
    X(PAY_NO_RELEASED, 409, "this pay_no's binding to this order_no was released by an operator")  \
    X(BINDING_NOT_FOUND, 404, "this pay_no is bound to no order")                                  \
    X(PAY_NO_PAID, 409, "the pay_no is paid on the bound order: only a refund undoes it")          \
    X(BUSY, 503, "busy, retry shortly")                                                            \
    X(UNAVAILABLE, 503, "database unavailable, retry later")                                       \
    X(INTERNAL, 500, "internal error")

enum api_error {
#define API_ERROR_ENUM(name, status, message) API_##name,
    API_ERRORS(API_ERROR_ENUM)
#undef API_ERROR_ENUM
    API_ERROR_COUNT
};

/* The code as sent ("ORDER_NOT_FOUND"), its HTTP status and its default
 * message. Never NULL for a value of the enum. */
const char *api_error_code(enum api_error e);
int api_error_status(enum api_error e);
const char *api_error_message(enum api_error e);

/* Replies {"code","message"} with e's status: message, or e's default
 * when NULL; a definite answer. A 503 code (BUSY, UNAVAILABLE) carries
 * Retry-After: 1 and is retryable, as http_reply_unavailable. */
void api_reply(struct http_resp *resp, enum api_error e, const char *message);

#endif
