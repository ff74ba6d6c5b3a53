/* http_route.c - the routing decision: a request's method and decoded
 * path matched against a route table, and the 400, 404, 405 and 414
 * answers of a path no route takes. Knows no route itself. */
#include "http_route.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Matches path against pattern segment by segment. A {name} segment takes
 * any non-empty segment, copied to param (at most HTTP_PARAM_MAX - 1 bytes,
 * so an over-long value stays over-long and fails validation). */
static bool route_match(const char *pattern, const char *path, char *param)
{
    const char *p = pattern, *s = path;

    while (*p != '\0' && *s != '\0') {
        if (*p == '{') {
            size_t n = strcspn(s, "/");
            if (n == 0)
                return false;
            if (param != NULL) {
                size_t c = n < HTTP_PARAM_MAX - 1 ? n : HTTP_PARAM_MAX - 1;
                memcpy(param, s, c);
                param[c] = '\0';
            }
            s += n;
            p += strcspn(p, "}");
            if (*p == '}')
                p++;
            continue;
        }
        if (*p != *s)
            return false;
        p++;
        s++;
    }
    return *p == '\0' && *s == '\0';
}

/* 1 when a HEAD may take route r: HEAD is GET without a body
 * (libmicrohttpd leaves the body out of a HEAD reply itself), except on a
 * GET that writes (GET /token/apply issues a token). */
static bool head_fits(const struct http_route *r)
{
    return strcmp(r->method, "GET") == 0 && !(r->flags & HTTP_ROUTE_NO_HEAD);
}

/* 1 when a request with method may take route r. */
static bool method_fits(const struct http_route *r, const char *method)
{
    return strcmp(r->method, method) == 0 || (strcmp(method, "HEAD") == 0 && head_fits(r));
}

static bool has_param(const struct http_route *r)
{
    return strchr(r->pattern, '{') != NULL;
}

/* 1 when path is spelt out by a route without a {param} ("/order/create"):
 * such a path never falls through to a {param} route. */
static bool literal_path(const struct http_route *routes, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (!has_param(&routes[i]) && route_match(routes[i].pattern, path, NULL))
            return true;
    return false;
}

size_t http_route_find(const struct http_route *routes, size_t n, const char *method,
                       const char *path)
{
    bool literal = literal_path(routes, n, path);

    for (size_t i = 0; i < n; i++)
        if (!(literal && has_param(&routes[i])) && method_fits(&routes[i], method) &&
            route_match(routes[i].pattern, path, NULL))
            return i;
    return n;
}

/* Appends method to the comma-separated allow list unless it is there. */
static void allow_add(char *allow, size_t allow_sz, const char *method)
{
    size_t n = strlen(allow);

    if (strstr(allow, method) != NULL) /* GET, HEAD, POST: none is in another */
        return;
    snprintf(allow + n, allow_sz - n, "%s%s", n ? ", " : "", method);
}

size_t http_route_dispatch(const struct http_route *routes, size_t n, const char *method,
                           const char *path, char *param, struct http_resp *resp, char *allow,
                           size_t allow_sz)
{
    bool literal = literal_path(routes, n, path), known = false;
    size_t i;

    allow[0] = '\0';
    for (i = 0; i < n; i++) {
        if ((literal && has_param(&routes[i])) || !route_match(routes[i].pattern, path, param))
            continue;
        if (method_fits(&routes[i], method))
            return i;
        allow_add(allow, allow_sz, routes[i].method);
        if (head_fits(&routes[i]))
            allow_add(allow, allow_sz, "HEAD");
        known = true;
    }
    if (!known)
        http_reply_error(resp, 404, "NOT_FOUND", "no such route");
    else
        http_reply_error(resp, 405, "METHOD_NOT_ALLOWED", "method not allowed on this route");
    return n;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int http_path_decode(const char *raw, char *out)
{
    size_t o = 0;
    int hi, lo;

    for (size_t i = 0; raw[i] != '\0'; i++) {
        if (raw[i] != '%') {
            out[o++] = raw[i];
            continue;
        }
        if ((hi = hex_digit(raw[i + 1])) < 0 || (lo = hex_digit(raw[i + 2])) < 0)
            return -1;
        if (hi * 16 + lo == '/' || hi * 16 + lo == 0)
            return -1;
        out[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[o] = '\0';
    return 0;
}

int http_route_lookup(const struct http_route *routes, size_t n, const char *method,
                      const char *raw_path, char param[HTTP_PARAM_MAX], struct http_resp *resp,
                      char *allow, size_t allow_sz)
{
    char path[HTTP_PATH_MAX_BYTES + 1];
    size_t route;

    allow[0] = '\0';
    if (strlen(raw_path) > HTTP_PATH_MAX_BYTES) {
        http_reply_error(resp, 414, "URI_TOO_LONG", "request path exceeds 1024 bytes");
        return -1;
    }
    if (http_path_decode(raw_path, path) != 0) {
        http_reply_error(resp, 400, "BAD_REQUEST", "malformed path");
        return -1;
    }
    route = http_route_dispatch(routes, n, method, path, param, resp, allow, allow_sz);
    return route < n ? (int)route : -1;
}
