/* fuzz_validate.c - libFuzzer target for the identifier rules: validate_id
 * and validate_token against a plain restatement of the contract (1..64 of
 * [A-Za-z0-9_.:-]; 32 lowercase hex digits), on NUL-terminated input; and
 * for the URLs and bearer tokens the service sends: an accepted one never
 * holds a blank, a control character, a '#' or user info. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool id_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == ':' || c == '-';
}

static bool hex_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* True when the authority of url (between "://" and the first '/' or
 * '?') holds an '@'. */
static bool has_user_info(const char *url)
{
    const char *a = strstr(url, "://");

    return a != NULL && memchr(a + 3, '@', strcspn(a + 3, "/?")) != NULL;
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
    if (validate_http_url(s) &&
        (strncmp(s, "http", 4) != 0 || strpbrk(s, " #\"<>\\") != NULL || has_user_info(s)))
        abort();
    if (validate_bearer_token(s, 1024) && strpbrk(s, " \r\n\t:,") != NULL)
        abort();
    for (i = 0; validate_http_url(s) && i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
            abort();
    free(s);
    return 0;
}
