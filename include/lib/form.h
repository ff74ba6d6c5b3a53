/* form.h - strict application/x-www-form-urlencoded parsing, for gateway
 * notifications. Pure; a parsed form is read-only and owned by its caller. */
#ifndef PAYCALLBACK_FORM_H
#define PAYCALLBACK_FORM_H

#include <stddef.h>

#define FORM_FIELDS_MAX 256

struct form_field {
    char *key;   /* decoded, NUL-terminated */
    char *value; /* decoded, NUL-terminated, may be "" */
};

/* The fields in the order they came. */
struct form {
    struct form_field *field;
    size_t n;
};

enum form_status {
    FORM_OK,
    FORM_MALFORMED, /* empty pair, no '=', empty key, bad %XY, %00 */
    FORM_DUPLICATE, /* the same key twice: which one was signed? */
    FORM_TOO_MANY,  /* more than FORM_FIELDS_MAX fields */
    FORM_NOMEM
};

/* Parses len bytes of k=v&k=v. '+' decodes to a space and %XY to the byte
 * XY (hex, either case); any other '%' is malformed, as is a decoded NUL.
 * On FORM_OK *out is the form (free with form_destroy); otherwise NULL. */
enum form_status form_parse(const char *body, size_t len, struct form **out);

/* Decoded value of key, or NULL when absent. Borrowed until form_destroy. */
const char *form_get(const struct form *f, const char *key);

/* NULL-safe. */
void form_destroy(struct form *f);

/* Human-readable reason for a status. */
const char *form_status_str(enum form_status st);

#endif
