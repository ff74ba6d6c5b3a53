/* framing.h - the header lines of a request as libmicrohttpd 0.9.75 hands
 * them over, checked for what two HTTP parsers could read differently.
 * The library keeps a name's trailing whitespace ("Transfer-Encoding :"
 * is the header "Transfer-Encoding "), glues an obs-folded continuation
 * line onto the previous line's name ("Content-Length: 1\r\n 0" is the
 * header "Content-Length0" with value "1", so the request has no length),
 * and passes a bare CR or another control character inside a value. A
 * proxy in front would frame such a request its own way. It cuts a value
 * at a NUL byte before the application sees it: that one is invisible
 * here. Pure functions. */
#ifndef PAYCALLBACK_FRAMING_H
#define PAYCALLBACK_FRAMING_H

#include <stddef.h>

enum framing_status {
    FRAMING_OK,
    FRAMING_BAD_NAME,  /* empty, or a byte outside an RFC 9110 token */
    FRAMING_FOLDED,    /* a framing header's name with more glued on */
    FRAMING_BAD_VALUE, /* CR, LF, NUL or another control byte but HTAB */
};

/* Checks one header line: name of name_len bytes, value of value_len. */
enum framing_status framing_check(const char *name, size_t name_len, const char *value,
                                  size_t value_len);

/* The 400 message for a status other than FRAMING_OK. */
const char *framing_message(enum framing_status st);

#endif
