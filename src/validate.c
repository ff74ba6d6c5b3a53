/* validate.c - the identifier and token rules of the contract.
 * Checks only; never copies, trims or truncates. Pure and thread-safe. */
#include "validate.h"

#define TOKEN_LEN 32              /* 16 random bytes, lowercase hex */

/* True for [A-Za-z0-9_.:-], spelled out in ASCII so that neither the
 * locale nor a signed char can widen the set. */
static bool is_id_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == ':' || c == '-';
}

static bool is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* The loop stops at the first bad character or at ID_MAX_LEN + 1, so an
 * over-long string is never read to its end. */
bool validate_id(const char *s)
{
    size_t n;

    if (s == NULL)
        return false;
    for (n = 0; s[n] != '\0'; n++) {
        if (n == ID_MAX_LEN || !is_id_char(s[n]))
            return false;
    }
    return n > 0;
}

bool validate_token(const char *s)
{
    size_t n;

    if (s == NULL)
        return false;
    for (n = 0; s[n] != '\0'; n++) {
        if (n == TOKEN_LEN || !is_lower_hex(s[n]))
            return false;
    }
    return n == TOKEN_LEN;
}
