/* fuzz_form.c - libFuzzer target for form_parse, the reader of every
 * application/x-www-form-urlencoded body (Alipay notifications). The input
 * is the body. An accepted form has one field per '&'-separated pair, no
 * empty or repeated key, and survives encoding and parsing again
 * unchanged; a refused one leaves NULL behind. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "form.h"
#include "../tests/testkeys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* f written back as a body: each key and value percent-encoded. */
static char *encode(const struct form *f)
{
    char *out = NULL, *k, *v, *grown;
    size_t len = 0, i;

    for (i = 0; i < f->n; i++) {
        k = testkey_form_escape(f->field[i].key);
        v = testkey_form_escape(f->field[i].value);
        if ((grown = realloc(out, len + strlen(k) + strlen(v) + 3)) == NULL)
            abort();
        out = grown;
        len += (size_t)sprintf(out + len, "%s%s=%s", i > 0 ? "&" : "", k, v);
        free(k);
        free(v);
    }
    return out;
}

/* Parses the encoding of f again: the same fields in the same order. */
static void check_round_trip(const struct form *f)
{
    char *body = encode(f);
    struct form *g = NULL;
    size_t i;

    if (form_parse(body, strlen(body), &g) != FORM_OK || g->n != f->n)
        abort();
    for (i = 0; i < f->n; i++)
        if (strcmp(f->field[i].key, g->field[i].key) != 0 ||
            strcmp(f->field[i].value, g->field[i].value) != 0)
            abort();
    form_destroy(g);
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct form debris;
    struct form *f = &debris; /* form_parse must reset it */
    enum form_status st = form_parse((const char *)data, size, &f);
    size_t pairs = 1, i;

    if (form_status_str(st) == NULL)
        abort();
    if (st != FORM_OK) {
        if (f != NULL)
            abort();
        return 0;
    }
    for (i = 0; i < size; i++)
        pairs += data[i] == '&';
    if (f == NULL || f->n != pairs || f->n > FORM_FIELDS_MAX)
        abort();
    for (i = 0; i < f->n; i++) {
        if (f->field[i].key[0] == '\0' || form_get(f, f->field[i].key) != f->field[i].value)
            abort(); /* empty, or a second copy of a key */
    }
    check_round_trip(f);
    form_destroy(f);
    return 0;
}
