/* netaddr.h - client addresses as the service counts them: IPv4 by the
 * whole address, IPv6 by a network prefix (one host is given a /64, so
 * counting every address would let it pass for any number of clients),
 * an IPv4-mapped IPv6 address as the IPv4 one. Lists of trusted networks
 * ("127.0.0.1, 10.0.0.0/8, 2001:db8::/32") and the client address a
 * trusted proxy forwards in X-Forwarded-For. Pure functions, no I/O. */
#ifndef PAYCALLBACK_NETADDR_H
#define PAYCALLBACK_NETADDR_H

#include <stdbool.h>
#include <stddef.h>

struct sockaddr;

#define NETADDR_LIST_MAX 32 /* networks in one list */
#define NETADDR_TEXT_MAX 46 /* INET6_ADDRSTRLEN */

/* An address: 4 or 16 bytes; len 0 is the unknown address (a socket of
 * another family), which all such clients share. */
struct netaddr {
    unsigned char b[16];
    unsigned char len;
};

struct netaddr_net {
    struct netaddr addr; /* host bits zero */
    int prefix;          /* 0..32 or 0..128 */
};

struct netaddr_list {
    size_t n;
    struct netaddr_net net[NETADDR_LIST_MAX];
};

/* The address of a socket address (port left out), or the unknown one. */
void netaddr_from_sockaddr(const struct sockaddr *sa, size_t len, struct netaddr *out);

/* Parses a textual IPv4 or IPv6 address. 0, or -1 (out zeroed). */
int netaddr_parse(const char *text, struct netaddr *out);

/* The key a client is counted by: a, with an IPv6 address cut to its
 * first v6_prefix bits (1..128). */
void netaddr_key(const struct netaddr *a, int v6_prefix, struct netaddr *key);

/* Whether a and b are the same address. */
bool netaddr_equal(const struct netaddr *a, const struct netaddr *b);

/* Parses "addr[/prefix], ..." (blanks around items allowed; empty text is
 * the empty list). 0, or -1 with the reason in err. */
int netaddr_list_parse(const char *text, struct netaddr_list *out, char *err, size_t errsz);

/* Whether a lies in one of the networks of l. */
bool netaddr_list_contains(const struct netaddr_list *l, const struct netaddr *a);

/* The client behind a trusted proxy: the rightmost address of the
 * X-Forwarded-For value xff that is not itself a trusted proxy (each proxy
 * appends the address it received from, so entries to the left of the
 * first untrusted one may be forged by the client). 0 and *out set, or -1
 * when xff holds no such address or an entry that is not an address. */
int netaddr_forwarded_client(const char *xff, const struct netaddr_list *trusted,
                             struct netaddr *out);

/* Writes a as text into out (NETADDR_TEXT_MAX bytes); "-" when unknown. */
void netaddr_format(const struct netaddr *a, char out[NETADDR_TEXT_MAX]);

#endif
