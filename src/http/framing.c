/* framing.c - header lines that could frame a request two ways. */
#include "framing.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Whether name starts with prefix (any case) and goes on past it. */
static bool extends(const char *name, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);

    return len > n && strncasecmp(name, prefix, n) == 0;
}

enum framing_status framing_check(const char *name, size_t name_len, const char *value,
                                  size_t value_len)
{
    if (name == NULL || name_len == 0)
        return FRAMING_BAD_NAME;
    for (size_t i = 0; i < name_len; i++)
        if (!is_tchar((unsigned char)name[i]))
            return FRAMING_BAD_NAME;
    if (extends(name, name_len, "Content-Length") || extends(name, name_len, "Transfer-Encoding"))
        return FRAMING_FOLDED;
    for (size_t i = 0; value != NULL && i < value_len; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return FRAMING_BAD_VALUE;
    }
    return FRAMING_OK;
}

const char *framing_message(enum framing_status st)
{
    switch (st) {
    case FRAMING_BAD_NAME:
        return "malformed header name: whitespace, a folded line or a character outside a token";
    case FRAMING_FOLDED: return "folded Content-Length or Transfer-Encoding line";
    case FRAMING_BAD_VALUE: return "control character (CR, LF, NUL) in a header value";
    case FRAMING_OK: break;
    }
    return "bad request";
}
