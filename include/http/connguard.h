/* connguard.h - admission and deadlines for client connections: a global
 * cap, a cap per client address, and true deadlines (counted from the
 * start of a phase, never reset by a byte arriving) for receiving a
 * request's header block and its body. A reaper thread shuts down the
 * socket of a connection past its deadline; the HTTP library then sees
 * the end of the stream and closes it. Knows sockets, not HTTP: http.c
 * tells it which phase each connection is in. Every function is
 * thread-safe except create and destroy. */
#ifndef PAYCALLBACK_CONNGUARD_H
#define PAYCALLBACK_CONNGUARD_H

#include <stdbool.h>
#include <sys/socket.h>

#include "netaddr.h"

struct metrics;
struct connguard;
struct connguard_conn;

/* Clients are counted by address, an IPv6 one by its first v6_prefix
 * bits. Connections from a trusted proxy (which carries many clients) are
 * neither capped per client nor evicted. */
struct connguard_limits {
    int max_conns;    /* open connections in all */
    int max_per_addr; /* open connections per client; 0 = no cap */
    int reserved;     /* of max_conns, the last ones: only for clients holding
                                     fewer than reserved_below connections */
    int reserved_below;
    int v6_prefix;               /* 1..128 */
    struct netaddr_list trusted; /* proxy addresses */
    int header_ms;               /* from accept (or the end of the previous reply) to the
                                     end of the header block */
    int body_ms;                 /* from the end of the header block to the end of the body */
    int min_body_bps;            /* 0, or the least body bytes a second a connection must
                                     average once body_grace_ms have passed */
    int body_grace_ms;
    int max_per_v6_56; /* 0, or open connections per IPv6 /56, all its clients */
    int max_per_v6_48; /* ... per IPv6 /48 */
    int evict_idle_ms; /* a connection in its header or body phase this long may be
                          evicted for a small holder, whoever holds it */
};

/* Starts the reaper. m (may be NULL) gets the refusal and reaping counts.
 * NULL on failure. */
struct connguard *connguard_create(const struct connguard_limits *lim, struct metrics *m);

/* Stops the reaper and frees g; connections still registered are
 * forgotten, not closed. NULL-safe. */
void connguard_destroy(struct connguard *g);

/* Admits and registers a connection just accepted on socket fd from
 * addr; its header deadline starts now. Refused (counted in metrics) when
 * the client's cap is reached (or, for IPv6, the cap of its /56 or /48,
 * each counted over all its clients), when only the reserved part is left and
 * the client is not a small holder, or when every slot is taken and no
 * room can be made. When every slot is taken and the client is a small
 * holder, the oldest connection still waiting for its header block of
 * the client holding the most is shut down to make room, if that client
 * holds more than this one plus one; else the connection that delivers
 * least, whoever holds it: the oldest waiting for its header block, else
 * the slowest body, of those in their phase for evict_idle_ms. Admission and counting are one step,
 * so a burst of connections never overshoots a cap. Returns the handle
 * (release with connguard_close), or NULL when refused or out of memory:
 * close the socket then. */
struct connguard_conn *connguard_accept(struct connguard *g, int fd, const struct sockaddr *addr,
                                        socklen_t len);

/* Forgets c before its socket is closed, so the reaper never touches a
 * descriptor that may have been reused. NULL-safe. */
void connguard_close(struct connguard *g, struct connguard_conn *c);

enum connguard_phase {
    CONNGUARD_HEADERS, /* waiting for a request's header block */
    CONNGUARD_BODY,    /* reading a request body */
    CONNGUARD_BUSY,    /* the request is being handled: no deadline */
};

/* Moves c to phase p; the phase's deadline counts from now. NULL-safe. */
void connguard_phase(struct connguard_conn *c, enum connguard_phase p);

/* Counts n body bytes received by c: a body slower than min_body_bps on
 * average, once body_grace_ms have passed, is shut down by the reaper.
 * NULL-safe. */
void connguard_progress(struct connguard_conn *c, size_t n);

/* Whether c is past its current deadline (then the reaper will shut it
 * down at its next pass). NULL-safe: false. */
bool connguard_expired(const struct connguard_conn *c);

/* Connections registered right now. */
int connguard_count(struct connguard *g);

#endif
