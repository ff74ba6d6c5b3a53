/* http_server.h - the HTTP server (libmicrohttpd): start on the
 * configured address with a route table, quiesce, abandon, stop. */
#ifndef PAYCALLBACK_HTTP_SERVER_H
#define PAYCALLBACK_HTTP_SERVER_H

#include <stddef.h>

struct http_route;
struct server;

/* Starts the daemon on cfg's address and port, serving routes[0..nroutes)
 * (http_route.h; the table must outlive the daemon): the connection guard
 * (caps and deadlines of the http.* keys), cfg->workers handler threads,
 * two for the HTTP_LANE_OPS routes, and up to four polling threads that
 * never block.
 * Checks that http.max_connections fits the open-file limit (raising the
 * soft limit if it must) and binds the port exclusively unless
 * listen.reuse_port is set. Returns 0 and stores the bound port in *port,
 * or -1 (logged); call http_stop either way. */
int http_start(struct server *srv, const struct http_route *routes, size_t nroutes, int *port);

/* Stops accepting new connections: the accepting thread returns and the
 * listening socket is shut down, so new connection attempts are refused
 * and the port is free (it is closed by http_stop). Requests in flight go on;
 * every reply from now on carries Connection: close, so keep-alive clients
 * do not start new requests here. */
void http_quiesce(struct server *srv);

/* The grace period ran out: from now on no reply is sent; a request still
 * running is answered by closing its connection, so that a transaction
 * cut on the way out (and rolled back) never reaches its client as an
 * outcome. Call before interrupting the database sessions and exiting. */
void http_abandon(struct server *srv);

/* Number of requests being handled right now. */
int http_inflight(const struct server *srv);

/* Stops the daemon and frees it. NULL-safe. */
void http_stop(struct server *srv);

#endif
