/* router.h - the service's route table: every route with its handler,
 * the lane it runs in and the credential it needs. Read-only; any thread
 * may read it. The table is the HTTP contract that docs/openapi.yaml
 * documents (scripts/check-openapi.py reads router.c). */
#ifndef PAYCALLBACK_ROUTER_H
#define PAYCALLBACK_ROUTER_H

#include <stddef.h>

struct http_route;
struct metrics;

/* The route table and, in *count, its length. Static: never freed. */
const struct http_route *router_routes(size_t *count);

/* A metrics registry whose route i is routes[i] of the table (its method
 * and pattern become the labels). NULL when out of memory; free with
 * metrics_destroy. */
struct metrics *router_metrics_create(void);

#endif
