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

struct metrics;
struct connguard;
struct connguard_conn;

struct connguard_limits {
    int max_conns;                /* open connections in all */
    int max_per_addr;             /* open connections per client address; 0 = no cap */
    int header_ms;                /* from accept (or the end of the previous reply) to the
                                     end of the header block */
    int body_ms;                  /* from the end of the header block to the end of the body */
};

/* Starts the reaper. m (may be NULL) gets the refusal and reaping counts.
 * NULL on failure. */
struct connguard *connguard_create(const struct connguard_limits *lim, struct metrics *m);

/* Stops the reaper and frees g; connections still registered are
 * forgotten, not closed. NULL-safe. */
void connguard_destroy(struct connguard *g);

/* Whether a connection just accepted from addr may stay: false when the
 * global cap or the address's cap is reached (counted in metrics). Checks
 * only; connguard_open counts. Several threads admitting at once may
 * overshoot a cap by at most their number. */
bool connguard_admit(struct connguard *g, const struct sockaddr *addr, socklen_t len);

/* Registers an accepted connection on socket fd; its header deadline
 * starts now. Returns its handle (release with connguard_close), or NULL
 * when out of memory: the connection is then neither counted nor reaped. */
struct connguard_conn *connguard_open(struct connguard *g, int fd, const struct sockaddr *addr,
                                      socklen_t len);

/* Forgets c before its socket is closed, so the reaper never touches a
 * descriptor that may have been reused. NULL-safe. */
void connguard_close(struct connguard *g, struct connguard_conn *c);

enum connguard_phase {
    CONNGUARD_HEADERS,            /* waiting for a request's header block */
    CONNGUARD_BODY,               /* reading a request body */
    CONNGUARD_BUSY,               /* the request is being handled: no deadline */
};

/* Moves c to phase p; the phase's deadline counts from now. NULL-safe. */
void connguard_phase(struct connguard_conn *c, enum connguard_phase p);

/* Whether c is past its current deadline (then the reaper will shut it
 * down at its next pass). NULL-safe: false. */
bool connguard_expired(const struct connguard_conn *c);

/* Connections registered right now. */
int connguard_count(struct connguard *g);

#endif
