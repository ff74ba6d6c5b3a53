/* fuzz_validate.c - libFuzzer target for the identifier rules: validate_id
 * and validate_token against a plain restatement of the contract (1..64 of
 * [A-Za-z0-9_.:-]; 32 lowercase hex digits), on NUL-terminated input. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool id_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == ':' || c == '-';
}

static bool hex_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    bool id, token;
    size_t n, i;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    n = strlen(s);
    id = n >= 1 && n <= ID_MAX_LEN;
    token = n == 32;
    for (i = 0; i < n; i++) {
        id = id && id_char((unsigned char)s[i]);
        token = token && hex_char((unsigned char)s[i]);
    }
    if (validate_id(s) != id || validate_token(s) != token)
        abort();
    free(s);
    return 0;
}
