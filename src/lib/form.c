/* form.c - application/x-www-form-urlencoded to decoded key/value pairs.
 * Exact percent-decoding: every '%' must introduce two hex digits, so a
 * value that would be signed one way and read another never gets through. */
#include "form.h"

#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes s[0..len) into a malloc'd string in *out. Returns FORM_OK,
 * FORM_MALFORMED or FORM_NOMEM. */
static enum form_status decode(const char *s, size_t len, char **out)
{
    char *d = malloc(len + 1);
    size_t i, n = 0;
    int hi, lo;

    *out = NULL;
    if (d == NULL)
        return FORM_NOMEM;
    for (i = 0; i < len; i++) {
        if (s[i] == '+') {
            d[n++] = ' ';
        } else if (s[i] == '%') {
            if (i + 2 >= len || (hi = hexval(s[i + 1])) < 0 || (lo = hexval(s[i + 2])) < 0)
                goto bad;
            if (hi == 0 && lo == 0)
                goto bad; /* %00 would cut the C string */
            d[n++] = (char)(hi << 4 | lo);
            i += 2;
        } else if (s[i] == '\0') {
            goto bad;
        } else {
            d[n++] = s[i];
        }
    }
    d[n] = '\0';
    *out = d;
    return FORM_OK;
bad:
    free(d);
    return FORM_MALFORMED;
}

/* Splits one "k=v" pair and appends it. */
static enum form_status add_pair(struct form *f, const char *p, size_t len)
{
    const char *eq = memchr(p, '=', len);
    struct form_field *fld;
    enum form_status st;

    if (eq == NULL || eq == p)
        return FORM_MALFORMED;
    if (f->n == FORM_FIELDS_MAX)
        return FORM_TOO_MANY;
    fld = &f->field[f->n];
    if ((st = decode(p, (size_t)(eq - p), &fld->key)) != FORM_OK)
        return st;
    if ((st = decode(eq + 1, len - (size_t)(eq - p) - 1, &fld->value)) != FORM_OK) {
        free(fld->key);
        return st;
    }
    if (fld->key[0] == '\0' || form_get(f, fld->key) != NULL) {
        st = fld->key[0] == '\0' ? FORM_MALFORMED : FORM_DUPLICATE;
        free(fld->key);
        free(fld->value);
        return st;
    }
    f->n++;
    return FORM_OK;
}

enum form_status form_parse(const char *body, size_t len, struct form **out)
{
    struct form *f = NULL;
    enum form_status st = FORM_NOMEM;
    size_t start = 0, i;

    if (out == NULL)
        return FORM_MALFORMED;
    *out = NULL;
    if (body == NULL || len == 0)
        return FORM_MALFORMED;
    if ((f = calloc(1, sizeof(*f))) == NULL)
        return FORM_NOMEM;
    if ((f->field = calloc(FORM_FIELDS_MAX, sizeof(*f->field))) == NULL)
        goto fail;
    for (i = 0; i <= len; i++) {
        if (i < len && body[i] != '&')
            continue;
        if ((st = add_pair(f, body + start, i - start)) != FORM_OK)
            goto fail;
        start = i + 1;
    }
    *out = f;
    return FORM_OK;
fail:
    form_destroy(f);
    return st;
}

const char *form_get(const struct form *f, const char *key)
{
    size_t i;

    if (f == NULL || key == NULL)
        return NULL;
    for (i = 0; i < f->n; i++)
        if (strcmp(f->field[i].key, key) == 0)
            return f->field[i].value;
    return NULL;
}

void form_destroy(struct form *f)
{
    size_t i;

    if (f == NULL)
        return;
    for (i = 0; i < f->n; i++) {
        free(f->field[i].key);
        free(f->field[i].value);
    }
    free(f->field);
    free(f);
}

const char *form_status_str(enum form_status st)
{
    switch (st) {
    case FORM_OK: return "form ok";
    case FORM_MALFORMED: return "malformed form body";
    case FORM_DUPLICATE: return "a form field appears twice";
    case FORM_TOO_MANY: return "too many form fields";
    case FORM_NOMEM: return "out of memory";
    }
    return "unknown form status";
}
