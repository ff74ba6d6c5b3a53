/* b64.c - strict base64 on top of OpenSSL's block coder. EVP_DecodeBlock
 * alone accepts whitespace and never reports the padding, so the text is
 * checked here first and the padding bytes are taken off afterwards. */
#include "b64.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <openssl/evp.h>

static bool is_b64(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

/* Counts the '=' at the end (0..2) and checks every other byte is in the
 * alphabet. Returns the padding, or -1 for anything malformed. */
static int check_text(const char *in, size_t len)
{
    size_t i, pad = 0;

    if (len % 4 != 0)
        return -1;
    while (pad < 2 && pad < len && in[len - 1 - pad] == '=')
        pad++;
    /* cppcheck-suppress knownConditionTrueFalse ; false positive: pad < len here */
    for (i = 0; i < len - pad; i++)
        if (!is_b64(in[i]))
            return -1;
    return (int)pad;
}

int b64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    unsigned char *buf = NULL;
    int pad, n;

    if (out != NULL)
        *out = NULL;
    if (outlen != NULL)
        *outlen = 0;
    if (in == NULL || out == NULL || outlen == NULL || len > (size_t)INT32_MAX)
        return -1;
    if ((pad = check_text(in, len)) < 0)
        return -1;
    if ((buf = malloc(len / 4 * 3 + 1)) == NULL)
        return -1;
    n = len == 0 ? 0 : EVP_DecodeBlock(buf, (const unsigned char *)in, (int)len);
    if (n < pad) {
        free(buf);
        return -1;
    }
    n -= pad;
    buf[n] = '\0';
    *out = buf;
    *outlen = (size_t)n;
    return 0;
}

char *b64_encode(const unsigned char *in, size_t len)
{
    char *buf;

    if ((in == NULL && len > 0) || len > (size_t)INT32_MAX / 2)
        return NULL;
    if ((buf = malloc((len + 2) / 3 * 4 + 1)) == NULL)
        return NULL;
    buf[0] = '\0';
    if (len > 0)
        EVP_EncodeBlock((unsigned char *)buf, in, (int)len);
    return buf;
}
