/* fuzz_b64.c - libFuzzer target for b64_decode, the reader of gateway
 * signatures (Alipay, WeChat) and of WeChat's ciphertext. The input is the
 * text. Accepted text is a multiple of 4 of the standard alphabet with at
 * most two '=' at the end, and decodes to exactly 3 bytes per 4 less the
 * padding, followed by a NUL; encoding those bytes gives text that decodes
 * to them again. Refused text leaves NULL and 0 behind. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int alphabet(uint8_t c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

/* The accepted shape restated; returns the padding, or -1. */
static int shape(const uint8_t *s, size_t len)
{
    size_t i, pad = 0;

    if (len % 4 != 0)
        return -1;
    if (len > 0 && s[len - 1] == '=')
        pad = len > 1 && s[len - 2] == '=' ? 2 : 1;
    for (i = 0; i < len - pad; i++)
        if (!alphabet(s[i]))
            return -1;
    return (int)pad;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned char debris;
    unsigned char *out = &debris, *again = NULL; /* b64_decode must reset it */
    size_t outlen = 1, againlen = 0;
    int pad = shape(data, size), rc = b64_decode((const char *)data, size, &out, &outlen);
    char *text;

    if (rc != 0) {
        if (pad >= 0 || out != NULL || outlen != 0)
            abort(); /* well-formed text refused, or debris */
        return 0;
    }
    if (pad < 0 || out == NULL || outlen != size / 4 * 3 - (size_t)pad || out[outlen] != '\0')
        abort();
    if ((text = b64_encode(out, outlen)) == NULL)
        abort();
    if (strlen(text) != size || b64_decode(text, size, &again, &againlen) != 0 ||
        againlen != outlen || memcmp(again, out, outlen) != 0)
        abort();
    free(again);
    free(text);
    free(out);
    return 0;
}
