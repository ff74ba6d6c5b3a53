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

void framing_block_begin(struct framing_block *b, const char *start, size_t len)
{
    b->pos = NULL;
    b->start = start;
    b->end = start + len;
    b->st = FRAMING_OK;
}

/* Skips the blanks the library trims around a value. */
static const char *blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Whether [p, end) is, after blanks, exactly nuls NUL bytes. */
static bool nuls_only(const char *p, const char *end, int nuls)
{
    p = blanks(p, end);
    if (end - p != nuls)
        return false;
    for (; p < end; p++)
        if (*p != '\0')
            return false;
    return true;
}

void framing_block_line(struct framing_block *b, const char *name, size_t name_len,
                        const char *value, size_t value_len)
{
    const char *name_end = name + name_len;

    if (b->st != FRAMING_OK)
        return;
    /* Each line inside the block, after the last, and in order. */
    if (name < (b->pos != NULL ? b->pos : b->start) || name_end >= b->end || value < name_end ||
        value > b->end || value_len > (size_t)(b->end - value)) {
        b->st = FRAMING_HIDDEN;
        return;
    }
    /* Between the last value and this name: its line's CR LF. Between the
     * name and the value: the ':' and the blanks skipped. */
    if ((b->pos != NULL && !nuls_only(b->pos, name, 2)) || *name_end != '\0' ||
        blanks(name_end + 1, value) != value)
        b->st = FRAMING_HIDDEN;
    b->pos = value + value_len;
}

enum framing_status framing_block_end(struct framing_block *b)
{
    /* After the last value: its CR LF and the blank line's. */
    if (b->st == FRAMING_OK && b->pos != NULL && !nuls_only(b->pos, b->end, 4))
        b->st = FRAMING_HIDDEN;
    return b->st;
}

const char *framing_message(enum framing_status st)
{
    switch (st) {
    case FRAMING_BAD_NAME:
        return "malformed header name: whitespace, a folded line or a character outside a token";
    case FRAMING_FOLDED: return "folded Content-Length or Transfer-Encoding line";
    case FRAMING_BAD_VALUE: return "control character (CR, LF, NUL) in a header value";
    case FRAMING_HIDDEN: return "NUL byte in a header line";
    case FRAMING_OK: break;
    }
    return "bad request";
}
