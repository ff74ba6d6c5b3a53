/* auth.c - operator credentials: parses "Authorization: Bearer <key>" and
 * finds the named key in constant time. Knows nothing of routes: the router
 * decides which routes call auth_require_or_reply. */
#include "auth.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "api_error.h"
#include "config.h"
#include "http.h"

#define AUTH_SCHEME "Bearer"

_Static_assert(HTTP_CALLER_MAX == CFG_AUTH_NAME_MAX, "http_req.caller must hold any key name");

/* The token of a "Bearer <token>" value: the scheme case-insensitively,
 * one or more spaces, then a token without blanks up to the end. Returns
 * its start with its length in *len, or NULL. */
static const char *bearer_token(const char *v, size_t *len)
{
    size_t n = strlen(AUTH_SCHEME);

    if (strncasecmp(v, AUTH_SCHEME, n) != 0 || v[n] != ' ')
        return NULL;
    v += n;
    while (*v == ' ')
        v++;
    *len = strcspn(v, " \t");
    if (*len == 0 || v[*len] != '\0')
        return NULL;
    return v;
}

/* Every configured key is compared, over its whole zero-padded field, with
 * the token copied into a field of the same size; found is then chosen by
 * masks rather than by a branch on the comparison. Keys are unique
 * (cfg_load), so at most one can match. */
static int find_key(const struct config *cfg, const char *token, size_t len)
{
    char presented[CFG_AUTH_KEY_MAX];
    int i, found = -1;

    memset(presented, 0, sizeof(presented));
    memcpy(presented, token, len);
    for (i = 0; i < cfg->auth_nkeys; i++) {
        int eq = CRYPTO_memcmp(presented, cfg->auth_keys[i].key, CFG_AUTH_KEY_MAX) == 0;
        int mask = -eq; /* all ones on a match, else zero */

        found = (found & ~mask) | (i & mask);
    }
    OPENSSL_cleanse(presented, sizeof(presented));
    return found;
}

/* auth_check with the matching key itself in *key (NULL unless AUTH_OK). */
static enum auth_status check_key(const struct config *cfg, const char *authorization,
                                  const struct cfg_auth_key **key)
{
    const char *token;
    size_t len = 0;
    int i;

    *key = NULL;
    if (authorization == NULL || authorization[0] == '\0')
        return AUTH_MISSING;
    if ((token = bearer_token(authorization, &len)) == NULL)
        return AUTH_MALFORMED;
    if (len >= CFG_AUTH_KEY_MAX) /* longer than any key can be */
        return AUTH_UNKNOWN_KEY;
    if ((i = find_key(cfg, token, len)) < 0)
        return AUTH_UNKNOWN_KEY;
    *key = &cfg->auth_keys[i];
    return AUTH_OK;
}

enum auth_status auth_check(const struct config *cfg, const char *authorization, const char **name)
{
    const struct cfg_auth_key *key;
    enum auth_status st = check_key(cfg, authorization, &key);

    *name = key != NULL ? key->name : NULL;
    return st;
}

const char *auth_status_str(enum auth_status st)
{
    switch (st) {
    case AUTH_OK: return "authorized";
    case AUTH_MISSING: return "this route needs Authorization: Bearer <key>";
    case AUTH_MALFORMED: return "Authorization must be \"Bearer <key>\"";
    case AUTH_UNKNOWN_KEY: return "unknown key";
    }
    return "unknown authorization status";
}

int auth_require_or_reply(const struct config *cfg, struct http_req *req, struct http_resp *resp)
{
    const struct cfg_auth_key *key = NULL;
    enum auth_status st = check_key(cfg, http_req_header(req, "Authorization"), &key);

    if (st == AUTH_OK) {
        memcpy(req->caller, key->name, strlen(key->name) + 1);
        req->scopes = key->scopes;
        return 0;
    }
    req->caller[0] = '\0';
    req->scopes = 0;
    http_reply_error(resp, 401, "UNAUTHORIZED", auth_status_str(st));
    http_reply_challenge(resp, st == AUTH_MISSING     ? "Bearer"
                               : st == AUTH_MALFORMED ? "Bearer error=\"invalid_request\""
                                                      : "Bearer error=\"invalid_token\"");
    return -1;
}

int auth_scope_or_reply(const struct http_req *req, unsigned scope, struct http_resp *resp)
{
    char msg[96];

    if (scope == 0 || (req->scopes & scope) == scope)
        return 0;
    snprintf(msg, sizeof(msg), "this key lacks the scope '%s' this route needs",
             cfg_scope_name(scope) != NULL ? cfg_scope_name(scope) : "?");
    api_reply(resp, API_FORBIDDEN, msg);
    return -1;
}
