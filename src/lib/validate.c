/* validate.c - the identifier and token rules of the contract.
 * Checks only; never copies, trims or truncates. Pure and thread-safe. */
#include "validate.h"

#include <string.h>

#define TOKEN_LEN 32 /* 16 random bytes, lowercase hex */

/* True for [A-Za-z0-9_.:-], spelled out in ASCII so that neither the
 * locale nor a signed char can widen the set. */
static bool is_id_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == ':' || c == '-';
}

static bool is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* The loop stops at the first bad character or at ID_MAX_LEN + 1, so an
 * over-long string is never read to its end. */
bool validate_id(const char *s)
{
    size_t n;

    if (s == NULL)
        return false;
    for (n = 0; s[n] != '\0'; n++) {
        if (n == ID_MAX_LEN || !is_id_char(s[n]))
            return false;
    }
    return n > 0;
}

bool validate_token(const char *s)
{
    size_t n;

    if (s == NULL)
        return false;
    for (n = 0; s[n] != '\0'; n++) {
        if (n == TOKEN_LEN || !is_lower_hex(s[n]))
            return false;
    }
    return n == TOKEN_LEN;
}

static bool is_alnum(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* RFC 3986 pchar plus '/' and '?': unreserved, sub-delims, ':' and '@';
 * percent-escapes are checked by the caller. */
static bool is_url_char(char c)
{
    return is_alnum(c) || (c != '\0' && strchr("-._~!$&'()*+,;=:@/?", c) != NULL);
}

/* The host (and port) between "://" and the first '/' or '?': n bytes
 * at s. */
static bool valid_authority(const char *s, size_t n)
{
    size_t i = 0, digits;
    unsigned long port = 0;

    if (n > 0 && s[0] == '[') {
        for (i = 1; i < n && s[i] != ']'; i++)
            if (!is_hex(s[i]) && s[i] != ':' && s[i] != '.')
                return false;
        if (i == n || i == 1)
            return false;
        i++;
    } else {
        while (i < n && (is_alnum(s[i]) || s[i] == '.' || s[i] == '-'))
            i++;
        if (i == 0 || s[0] == '.' || s[0] == '-')
            return false;
    }
    if (i == n)
        return true;
    if (s[i] != ':')
        return false; /* '@' (user info) and anything else */
    for (digits = 0, i++; i < n; i++, digits++) {
        if (s[i] < '0' || s[i] > '9' || digits == 5)
            return false;
        port = port * 10 + (unsigned long)(s[i] - '0');
    }
    return digits > 0 && port >= 1 && port <= 65535;
}

bool validate_http_url(const char *s)
{
    const char *rest;
    size_t n;

    if (s == NULL)
        return false;
    if (strncmp(s, "http://", 7) == 0)
        rest = s + 7;
    else if (strncmp(s, "https://", 8) == 0)
        rest = s + 8;
    else
        return false;
    n = strcspn(rest, "/?");
    if (!valid_authority(rest, n))
        return false;
    for (rest += n; *rest != '\0'; rest++) {
        if (*rest == '%') {
            if (!is_hex(rest[1]) || !is_hex(rest[2]))
                return false;
            rest += 2;
        } else if (!is_url_char(*rest)) {
            return false;
        }
    }
    return true;
}

bool validate_bearer_token(const char *s, size_t max_len)
{
    size_t i = 0, n;

    if (s == NULL)
        return false;
    n = strnlen(s, max_len + 1);
    if (n == 0 || n > max_len)
        return false;
    while (i < n && (is_alnum(s[i]) || strchr("-._~+/", s[i]) != NULL))
        i++;
    if (i == 0)
        return false;
    while (i < n && s[i] == '=')
        i++;
    return i == n;
}
