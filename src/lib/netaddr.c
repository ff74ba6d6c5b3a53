/* netaddr.c - client addresses, prefixes and trusted-proxy lists. */
#include "netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* An IPv4-mapped IPv6 address (::ffff:a.b.c.d) becomes a.b.c.d, so that
 * a dual-stack listener counts an IPv4 client as on an IPv4 one. */
static void unmap(struct netaddr *a)
{
    if (a->len == 16 && memcmp(a->b, v4_mapped, sizeof(v4_mapped)) == 0) {
        memmove(a->b, a->b + 12, 4);
        memset(a->b + 4, 0, 12);
        a->len = 4;
    }
}

void netaddr_from_sockaddr(const struct sockaddr *sa, size_t len, struct netaddr *out)
{
    memset(out, 0, sizeof(*out));
    if (sa == NULL)
        return;
    if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        memcpy(out->b, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        out->len = 4;
    } else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        memcpy(out->b, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        out->len = 16;
        unmap(out);
    }
}

int netaddr_parse(const char *text, struct netaddr *out)
{
    memset(out, 0, sizeof(*out));
    if (text == NULL)
        return -1;
    if (inet_pton(AF_INET, text, out->b) == 1) {
        out->len = 4;
        return 0;
    }
    if (inet_pton(AF_INET6, text, out->b) == 1) {
        out->len = 16;
        unmap(out);
        return 0;
    }
    memset(out, 0, sizeof(*out));
    return -1;
}

/* Zeroes every bit of a past the first prefix. */
static void cut(struct netaddr *a, int prefix)
{
    for (int i = 0; i < (int)a->len; i++) {
        int keep = prefix - 8 * i;
        if (keep >= 8)
            continue;
        a->b[i] &= keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
    }
}

void netaddr_key(const struct netaddr *a, int v6_prefix, struct netaddr *key)
{
    *key = *a;
    if (key->len == 16)
        cut(key, v6_prefix);
}

bool netaddr_equal(const struct netaddr *a, const struct netaddr *b)
{
    return a->len == b->len && memcmp(a->b, b->b, a->len) == 0;
}

/* One "addr[/prefix]" of len bytes at s. 0, or -1. */
static int parse_net(const char *s, size_t len, struct netaddr_net *out)
{
    char text[NETADDR_TEXT_MAX + 8], *slash, *end;
    long prefix;
    bool mapped;

    if (len == 0 || len >= sizeof(text))
        return -1;
    memcpy(text, s, len);
    text[len] = '\0';
    if ((slash = strchr(text, '/')) != NULL)
        *slash = '\0';
    if (netaddr_parse(text, &out->addr) != 0)
        return -1;
    out->prefix = out->addr.len * 8;
    if (slash != NULL) {
        if (slash[1] < '0' || slash[1] > '9')
            return -1;
        prefix = strtol(slash + 1, &end, 10);
        /* ::ffff:10.0.0.0/104 names the IPv4 network 10.0.0.0/8: an IPv4
         * address written as IPv6 takes an IPv6 prefix. */
        mapped = out->addr.len == 4 && strchr(text, ':') != NULL;
        if (*end != '\0' || prefix < 0 || prefix > (mapped ? 128L : (long)out->addr.len * 8))
            return -1;
        if (mapped)
            prefix = prefix >= 96 ? prefix - 96 : -1;
        if (prefix < 0)
            return -1;
        out->prefix = (int)prefix;
    }
    cut(&out->addr, out->prefix);
    return 0;
}

int netaddr_list_parse(const char *text, struct netaddr_list *out, char *err, size_t errsz)
{
    const char *p = text, *end;
    size_t len;

    memset(out, 0, sizeof(*out));
    while (p != NULL && *p != '\0') {
        while (*p == ' ' || *p == '\t')
            p++;
        end = strchr(p, ',');
        len = end != NULL ? (size_t)(end - p) : strlen(p);
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0 && end == NULL)
            break; /* trailing blanks */
        if (out->n == NETADDR_LIST_MAX) {
            snprintf(err, errsz, "more than %d networks", NETADDR_LIST_MAX);
            return -1;
        }
        if (parse_net(p, len, &out->net[out->n]) != 0) {
            snprintf(err, errsz, "\"%.*s\" is not an address or address/prefix",
                     (int)(len < 64 ? len : 64), p);
            memset(out, 0, sizeof(*out));
            return -1;
        }
        out->n++;
        p = end != NULL ? end + 1 : NULL;
    }
    return 0;
}

bool netaddr_list_contains(const struct netaddr_list *l, const struct netaddr *a)
{
    struct netaddr k;

    for (size_t i = 0; l != NULL && i < l->n; i++) {
        if (l->net[i].addr.len != a->len)
            continue;
        k = *a;
        cut(&k, l->net[i].prefix);
        if (netaddr_equal(&k, &l->net[i].addr))
            return true;
    }
    return false;
}

int netaddr_forwarded_client(const char *xff, const struct netaddr_list *trusted,
                             struct netaddr *out)
{
    char text[NETADDR_TEXT_MAX + 1];
    size_t end, start, len;

    memset(out, 0, sizeof(*out));
    if (xff == NULL)
        return -1;
    for (end = strlen(xff);; end = start - 1) { /* xff[start..end) is one item */
        for (start = end; start > 0 && xff[start - 1] != ','; start--)
            ;
        len = end - start;
        while (len > 0 && (xff[start] == ' ' || xff[start] == '\t')) {
            start++;
            len--;
        }
        while (len > 0 && (xff[start + len - 1] == ' ' || xff[start + len - 1] == '\t'))
            len--;
        if (len == 0 || len >= sizeof(text))
            break;
        memcpy(text, xff + start, len);
        text[len] = '\0';
        if (netaddr_parse(text, out) != 0)
            break;
        if (!netaddr_list_contains(trusted, out))
            return 0;
        while (start > 0 && xff[start - 1] != ',')
            start--; /* back over the blanks trimmed */
        if (start == 0)
            break;
    }
    memset(out, 0, sizeof(*out));
    return -1;
}

void netaddr_format(const struct netaddr *a, char out[NETADDR_TEXT_MAX])
{
    if (a->len == 4)
        inet_ntop(AF_INET, a->b, out, NETADDR_TEXT_MAX);
    else if (a->len == 16)
        inet_ntop(AF_INET6, a->b, out, NETADDR_TEXT_MAX);
    else
        snprintf(out, NETADDR_TEXT_MAX, "-");
}
