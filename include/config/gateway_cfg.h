/* gateway_cfg.h - the "gateways" array of the config file: one profile per
 * payment gateway that may call POST /pay/callback/{name}. Plain data,
 * parsed and checked once at start; keys and secrets are only named here
 * (gateway.c loads them). */
#ifndef PAYCALLBACK_GATEWAY_CFG_H
#define PAYCALLBACK_GATEWAY_CFG_H

#include <stddef.h>

struct cJSON;

#define GATEWAYS_MAX 8
#define GATEWAY_NAME_MAX 32       /* [a-z0-9_-]{1,32}: a path segment */
#define GATEWAY_KEYS_MAX 4        /* WeChat platform keys kept during rotation */
#define GATEWAY_KEY_TEXT_MAX 2048 /* an inline PEM key or certificate */
#define GATEWAY_STR_MAX 256
#define GATEWAY_TOLERANCE_S_DEFAULT 300
#define GATEWAY_QUERY_TIMEOUT_MS_DEFAULT 5000
#define GATEWAY_QUERY_TIMEOUT_MS_MIN 100
#define GATEWAY_QUERY_TIMEOUT_MS_MAX 60000

enum gateway_kind {
    GATEWAY_ALIPAY,
    GATEWAY_WECHATPAY_V3,
    GATEWAY_STRIPE
};

/* One public key: inline text (PEM or bare base64) or a file path. */
struct gateway_key_cfg {
    char serial[65]; /* WeChat: Wechatpay-Serial it answers to */
    char file[GATEWAY_STR_MAX];
    char text[GATEWAY_KEY_TEXT_MAX];
};

struct gateway_profile_cfg {
    char name[GATEWAY_NAME_MAX + 1];
    enum gateway_kind kind;
    char app_id[65];  /* Alipay app_id; WeChat appid (optional) */
    char mchid[33];   /* WeChat merchant id */
    char currency[4]; /* for notifications that name none (Alipay) */
    int tolerance_s;  /* signed timestamp window (WeChat, Stripe) */
    struct gateway_key_cfg keys[GATEWAY_KEYS_MAX];
    size_t nkeys;
    char secret_env[GATEWAY_STR_MAX]; /* environment variable holding the secret */
    /* Active query of stale orders (reconcile): "" when the gateway is not
     * asked. The bearer token comes from the variable query_token_env. */
    char query_url[GATEWAY_STR_MAX];
    char query_token_env[GATEWAY_STR_MAX];
    int query_timeout_ms; /* one query, connect included */
    /* Refunds through the gateway's API: "" when refunds through this
     * gateway are settled by hand. refund_auto: a double payment is
     * refunded without an operator's approval. The API key (Stripe's
     * secret key) comes from the variable refund_key_env. */
    char refund_url[GATEWAY_STR_MAX];
    char refund_key_env[GATEWAY_STR_MAX];
    int refund_auto;
    int refund_timeout_ms; /* one submission or query, connect included */
    /* Alipay and WeChat Pay sign refund requests with the merchant's RSA
     * private key (a file only its owner may read); WeChat names it by its
     * certificate serial. */
    char merchant_key_file[GATEWAY_STR_MAX];
    char merchant_serial[65];
};

struct gateway_cfg {
    struct gateway_profile_cfg profile[GATEWAYS_MAX];
    size_t n;
};

/* Parses the "gateways" JSON array into *out (reset first). Every profile
 * needs a unique name and a known kind; unknown members are refused, as
 * are the keys a kind needs but lacks: alipay needs app_id and one of
 * public_key / public_key_file; wechatpay_v3 needs mchid and 1..4
 * platform_keys, each with a serial; stripe needs nothing but its secret.
 * secret_env defaults to PAYCALLBACK_GATEWAY_<NAME>_SECRET. query_url is
 * optional and must pass validate_http_url; query_token_env (default
 * PAYCALLBACK_GATEWAY_<NAME>_QUERY_TOKEN) and query_timeout_ms (100..60000,
 * default 5000) are refused without it. refund_url is optional likewise;
 * refund ("auto" or "approval", the default), refund_key_env (default
 * PAYCALLBACK_GATEWAY_<NAME>_REFUND_KEY) and refund_timeout_ms are refused
 * without it. Returns 0, or
 * -1 with a one-line reason in err naming file and member. */
int gateway_cfg_parse(const struct cJSON *arr, struct gateway_cfg *out, const char *file, char *err,
                      size_t errsz);

/* The kind's name as written in the config ("wechatpay_v3"). */
const char *gateway_kind_name(enum gateway_kind kind);

#endif
