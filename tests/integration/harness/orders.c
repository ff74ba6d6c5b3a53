/* harness/orders.c - tokens and orders, the shared server fixture and the counts tests read. */
#include "../harness.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_token(const char *s)
{
    size_t n = 0;

    for (; s != NULL && s[n] != '\0'; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return 0;
    return s != NULL && n == H_TOKEN_BUF - 1;
}

int h_token_try(int port, char token[H_TOKEN_BUF], int *status)
{
    struct h_resp r;
    char *t;
    int ok;

    token[0] = '\0';
    h_http(port, "GET", "/token/apply", NULL, NULL, 0, &r);
    if (status != NULL)
        *status = r.status;
    t = r.status == 200 ? h_json_get_str(r.body, "token") : NULL;
    if ((ok = is_token(t)))
        memcpy(token, t, H_TOKEN_BUF);
    free(t);
    h_resp_free(&r);
    return ok ? 0 : -1;
}

void h_token_apply(int port, char token[H_TOKEN_BUF])
{
    int status = 0;

    ck_assert_msg(h_token_try(port, token, &status) == 0,
                  "GET /token/apply: expected 200 and a 32-hex token, got HTTP %d", status);
}

int h_order_create(int port, const char *token, const char *user_id, const char *request_id,
                   const char *sku, int quantity, struct h_resp *out)
{
    char body[512], hdr[96];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };
    int n = snprintf(body, sizeof body,
                     "{\"user_id\":\"%s\",\"request_id\":\"%s\",\"sku\":\"%s\",\"quantity\":%d}",
                     user_id, request_id, sku, quantity);

    snprintf(hdr, sizeof hdr, "Idempotent-Token: %s", token != NULL ? token : "");
    if (token == NULL)
        headers[1] = NULL;
    if (n < 0 || (size_t)n >= sizeof body) {
        memset(out, 0, sizeof *out);
        snprintf(out->err, sizeof out->err, "order body too long");
        return -1;
    }
    return h_http(port, "POST", "/order/create", headers, body, (size_t)n, out);
}

struct h_server *h_srv;

void h_fixture_server_up_env(const char *const *extra_env)
{
    h_srv = h_server_start(extra_env);
    ck_assert_msg(h_srv != NULL, "cannot start the server; see var/test-logs/");
}

void h_fixture_server_up_config(const char *config_path, const char *const *extra_env)
{
    h_srv = h_server_start_config(config_path, extra_env);
    ck_assert_msg(h_srv != NULL, "cannot start the server with %s; see var/test-logs/",
                  config_path);
}

void h_fixture_server_up(void)
{
    h_fixture_server_up_env(NULL);
}

void h_fixture_sharded_up(void)
{
    const char *env[] = { h_shards_env(), NULL };

    h_fixture_server_up_env(env);
}

void h_fixture_sharded_half_down_up(void)
{
    const char *env[] = { h_shards_half_down_env(), "PAYCALLBACK_MYSQL_CONNECT_TIMEOUT_MS=200",
                          NULL };

    h_fixture_server_up_env(env);
}

void h_fixture_server_down(void)
{
    int st = h_server_stop(h_srv);

    h_srv = NULL;
    if (st != 0)
        fprintf(stderr, "server stopped with status %d\n", st);
}

int h_port(void)
{
    return h_server_port(h_srv);
}

void h_fixture_clean(void)
{
    h_db_reset();
    h_redis_flush();
}

void h_fixture_mysql_back(void)
{
    h_services("start-mysql");
}

void h_fixture_schema_back(void)
{
    h_services("provision");
}

TCase *h_tcase_with(const char *name, int timeout_s, void (*up)(void), void (*down)(void))
{
    TCase *tc = tcase_create(name);

    tcase_add_unchecked_fixture(tc, up, down);
    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_set_timeout(tc, timeout_s);
    return tc;
}

long long h_metric(const char *series)
{
    return h_metric_at(h_port(), series);
}

long long h_metric_at(int port, const char *series)
{
    struct h_resp r;
    const char *p;
    long long v = -1;

    h_http(port, "GET", "/metrics", NULL, NULL, 0, &r);
    ck_assert_int_eq(200, r.status);
    /* A sample line starts with the series; "# HELP name ..." does not. */
    for (p = r.body; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, series, strlen(series)) == 0 && p[strlen(series)] == ' ') {
            v = strtoll(p + strlen(series) + 1, NULL, 10);
            break;
        }
    h_resp_free(&r);
    return v;
}

long long h_payment_records(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM payment_record");
}

long long h_order_status(const char *order_no)
{
    return h_db_scalar_ll("SELECT status FROM orders WHERE order_no = '%s'", order_no);
}

long long h_outbox_rows(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM outbox");
}

void h_assert_nothing_paid(void)
{
    ck_assert_int_eq(0, h_payment_records());
    ck_assert_int_eq(0, h_outbox_rows());
}

TCase *h_tcase(const char *name, int timeout_s)
{
    return h_tcase_with(name, timeout_s, h_fixture_server_up, h_fixture_server_down);
}
