/* framing.h - the header lines of a request as libmicrohttpd 0.9.75 hands
 * them over, checked for what two HTTP parsers could read differently.
 * The library keeps a name's trailing whitespace ("Transfer-Encoding :"
 * is the header "Transfer-Encoding "), glues an obs-folded continuation
 * line onto the previous line's name ("Content-Length: 1\r\n 0" is the
 * header "Content-Length0" with value "1", so the request has no length),
 * and passes a bare CR or another control character inside a value. A
 * proxy in front would frame such a request its own way. It cuts a name
 * or value at a NUL byte before the application sees it; the bytes after
 * the NUL stay in its header block, which the framing_block_* functions
 * read to find them. Pure functions. */
#ifndef PAYCALLBACK_FRAMING_H
#define PAYCALLBACK_FRAMING_H

#include <stddef.h>

enum framing_status {
    FRAMING_OK,
    FRAMING_BAD_NAME,  /* empty, or a byte outside an RFC 9110 token */
    FRAMING_FOLDED,    /* a framing header's name with more glued on */
    FRAMING_BAD_VALUE, /* CR, LF, NUL or another control byte but HTAB */
    FRAMING_HIDDEN,    /* a NUL cut a line: bytes the library did not hand over */
};

/* The header block of a request as libmicrohttpd 0.9.75 leaves it in its
 * read buffer once parsed: the request line, then each header line in
 * place, its ':' and its CR LF overwritten with NULs, the blank line last
 * (CR LF: two more NULs). The name and value it hands over point into the
 * block. Every byte of the block between them is then a NUL it wrote or
 * the blanks it skipped; anything else, or a NUL more than it wrote, is a
 * line a NUL byte cut: the name or value seen is not what was sent.
 * Begin with the block (from the request method, header_size bytes), pass
 * every header in order, then end. */
struct framing_block {
    const char *pos; /* the end of the last value passed; NULL before the first */
    const char *start, *end;
    enum framing_status st;
};

void framing_block_begin(struct framing_block *b, const char *start, size_t len);
void framing_block_line(struct framing_block *b, const char *name, size_t name_len,
                        const char *value, size_t value_len);
/* FRAMING_OK when every line was whole, else FRAMING_HIDDEN. A request
 * without a header line passes (its request line is the library's). */
enum framing_status framing_block_end(struct framing_block *b);

/* Checks one header line: name of name_len bytes, value of value_len. */
enum framing_status framing_check(const char *name, size_t name_len, const char *value,
                                  size_t value_len);

/* The 400 message for a status other than FRAMING_OK. */
const char *framing_message(enum framing_status st);

#endif
