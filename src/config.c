/* config.c - defaults, then the JSON file, then PAYCALLBACK_* environment
 * variables, then range checks. One table drives all three, so a key, its
 * environment name and its limits are written once. */
#include "config.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CFG_FILE_MAX_BYTES (1 << 20)

enum key_type { KEY_INT, KEY_STR };

struct cfg_key {
    const char *section;          /* NULL: top level */
    const char *name;
    enum key_type type;
    size_t offset;
    long min, max;                /* KEY_INT range; KEY_STR: min 1 = required */
    const char *def;
};

#define I(sec, name, field, lo, hi, def) \
    { sec, name, KEY_INT, offsetof(struct config, field), lo, hi, def }
#define S(sec, name, field, req, def) \
    { sec, name, KEY_STR, offsetof(struct config, field), req, 0, def }

static const struct cfg_key keys[] = {
    S("listen", "address", listen_address, 1, "127.0.0.1"),
    I("listen", "port", listen_port, 0, 65535, "8080"),
    I(NULL, "workers", workers, 1, 1024, "16"),
    I(NULL, "body_max_bytes", body_max_bytes, 256, 16 << 20, "65536"),
    I(NULL, "grace_s", grace_s, 0, 3600, "10"),
    S(NULL, "log_level", log_level, 1, "info"),
    S("mysql", "host", mysql_host, 1, "127.0.0.1"),
    I("mysql", "port", mysql_port, 1, 65535, "3306"),
    S("mysql", "user", mysql_user, 1, "paycallback"),
    S("mysql", "password", mysql_password, 0, ""),
    S("mysql", "database", mysql_database, 1, "paycallback"),
    I("mysql", "pool_size", mysql_pool_size, 1, 1024, "16"),
    I("mysql", "connect_timeout_ms", mysql_connect_timeout_ms, 100, 60000, "1000"),
    I("mysql", "wait_ms", mysql_wait_ms, 1, 60000, "1000"),
    S("redis", "host", redis_host, 1, "127.0.0.1"),
    I("redis", "port", redis_port, 1, 65535, "6379"),
    I("redis", "db", redis_db, 0, 255, "0"),
    I("redis", "pool_size", redis_pool_size, 1, 1024, "16"),
    I("redis", "timeout_ms", redis_timeout_ms, 10, 60000, "200"),
    I("redis", "token_ttl_s", token_ttl_s, 1, 86400, "300"),
    I("redis", "lock_ttl_ms", lock_ttl_ms, 100, 600000, "30000"),
    I("redis", "lock_wait_ms", lock_wait_ms, 0, 60000, "500"),
    S("callback", "secret", callback_secret, 0, ""),
    I("callback", "signature_tolerance_s", signature_tolerance_s, 1, 86400, "300"),
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

#undef I
#undef S

/* PAYCALLBACK_<SECTION>_<NAME> in capitals, into buf. */
static void env_name(const struct cfg_key *k, char *buf, size_t n)
{
    size_t i;

    snprintf(buf, n, "PAYCALLBACK_%s%s%s", k->section ? k->section : "",
             k->section ? "_" : "", k->name);
    for (i = 0; buf[i] != '\0'; i++)
        if (buf[i] >= 'a' && buf[i] <= 'z')
            buf[i] = (char)(buf[i] - 'a' + 'A');
}

static void key_path(const struct cfg_key *k, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", k->section ? k->section : "", k->section ? "." : "", k->name);
}

/* Stores text as the value of k. Returns 0, or -1 with a reason in err. */
static int set_value(struct config *cfg, const struct cfg_key *k, const char *text,
                     const char *origin, char *err, size_t errsz)
{
    char *p = (char *)cfg + k->offset;
    char path[64];
    char *end;
    long v;

    key_path(k, path, sizeof(path));
    if (k->type == KEY_STR) {
        if (strlen(text) >= CFG_STR_MAX) {
            snprintf(err, errsz, "%s: %s is longer than %d bytes", origin, path, CFG_STR_MAX - 1);
            return -1;
        }
        snprintf(p, CFG_STR_MAX, "%s", text);
        return 0;
    }
    errno = 0;
    v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') {
        snprintf(err, errsz, "%s: %s must be an integer, got \"%s\"", origin, path, text);
        return -1;
    }
    if (v < k->min || v > k->max) {
        snprintf(err, errsz, "%s: %s must be in %ld..%ld, got %ld", origin, path,
                 k->min, k->max, v);
        return -1;
    }
    *(int *)p = (int)v;
    return 0;
}

/* Applies one JSON value, which must have the key's type. */
static int set_json(struct config *cfg, const struct cfg_key *k, const cJSON *item,
                    const char *file, char *err, size_t errsz)
{
    char num[32], path[64];

    key_path(k, path, sizeof(path));
    if (k->type == KEY_STR) {
        if (!cJSON_IsString(item)) {
            snprintf(err, errsz, "%s: %s must be a string", file, path);
            return -1;
        }
        return set_value(cfg, k, item->valuestring, file, err, errsz);
    }
    if (!cJSON_IsNumber(item) || item->valuedouble != (double)(long)item->valuedouble) {
        snprintf(err, errsz, "%s: %s must be an integer", file, path);
        return -1;
    }
    snprintf(num, sizeof(num), "%ld", (long)item->valuedouble);
    return set_value(cfg, k, num, file, err, errsz);
}

static char *read_file(const char *path, char *err, size_t errsz)
{
    FILE *f = NULL;
    char *buf = NULL;
    size_t n;

    if ((f = fopen(path, "rb")) == NULL) {
        snprintf(err, errsz, "cannot open config %s: %s", path, strerror(errno));
        return NULL;
    }
    if ((buf = malloc(CFG_FILE_MAX_BYTES + 1)) == NULL) {
        snprintf(err, errsz, "out of memory reading %s", path);
        goto out;
    }
    n = fread(buf, 1, CFG_FILE_MAX_BYTES + 1, f);
    if (n > CFG_FILE_MAX_BYTES || ferror(f)) {
        snprintf(err, errsz, "cannot read config %s: too large or unreadable", path);
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
out:
    fclose(f);
    return buf;
}

/* Every key in the file must be known: a typo must not silently fall back
 * to a default (a misspelt "secret" would turn authentication off). */
static int check_unknown(const cJSON *root, const char *file, char *err, size_t errsz)
{
    const cJSON *it, *sub;
    size_t i;
    int known;

    cJSON_ArrayForEach(it, root) {
        known = 0;
        for (i = 0; i < NKEYS && !known; i++) {
            if (keys[i].section == NULL && strcmp(keys[i].name, it->string) == 0)
                known = 1;
            else if (keys[i].section != NULL && strcmp(keys[i].section, it->string) == 0) {
                if (!cJSON_IsObject(it)) {
                    snprintf(err, errsz, "%s: %s must be an object", file, it->string);
                    return -1;
                }
                known = 1;
            }
        }
        if (!known) {
            snprintf(err, errsz, "%s: unknown key \"%s\"", file, it->string);
            return -1;
        }
        if (!cJSON_IsObject(it))
            continue;
        cJSON_ArrayForEach(sub, it) {
            for (known = 0, i = 0; i < NKEYS && !known; i++)
                known = keys[i].section && strcmp(keys[i].section, it->string) == 0 &&
                        strcmp(keys[i].name, sub->string) == 0;
            if (!known) {
                snprintf(err, errsz, "%s: unknown key \"%s.%s\"", file, it->string, sub->string);
                return -1;
            }
        }
    }
    return 0;
}

static int apply_file(struct config *cfg, const char *path, char *err, size_t errsz)
{
    char *text = NULL;
    cJSON *root = NULL;
    const cJSON *item;
    size_t i;
    int rc = -1;

    if ((text = read_file(path, err, errsz)) == NULL)
        return -1;
    if ((root = cJSON_Parse(text)) == NULL || !cJSON_IsObject(root)) {
        snprintf(err, errsz, "%s: not a JSON object", path);
        goto out;
    }
    if (check_unknown(root, path, err, errsz) != 0)
        goto out;
    for (i = 0; i < NKEYS; i++) {
        item = keys[i].section
                   ? cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(root, keys[i].section), keys[i].name)
                   : cJSON_GetObjectItemCaseSensitive(root, keys[i].name);
        if (item != NULL && set_json(cfg, &keys[i], item, path, err, errsz) != 0)
            goto out;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    free(text);
    return rc;
}

/* The daemon binds an address, not a name: no resolver at start. */
static int is_ip_address(const char *s)
{
    unsigned char a[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

int cfg_load(struct config *cfg, const char *path, char *err, size_t errsz)
{
    char name[96];
    const char *v;
    size_t i;

    memset(cfg, 0, sizeof(*cfg));
    for (i = 0; i < NKEYS; i++)
        if (set_value(cfg, &keys[i], keys[i].def, "default", err, errsz) != 0)
            return -1;
    if (path != NULL && apply_file(cfg, path, err, errsz) != 0)
        return -1;
    for (i = 0; i < NKEYS; i++) {
        env_name(&keys[i], name, sizeof(name));
        if ((v = getenv(name)) != NULL && set_value(cfg, &keys[i], v, name, err, errsz) != 0)
            return -1;
    }
    for (i = 0; i < NKEYS; i++) {
        const char *s = (const char *)cfg + keys[i].offset;
        if (keys[i].type == KEY_STR && keys[i].min > 0 && s[0] == '\0') {
            key_path(&keys[i], name, sizeof(name));
            snprintf(err, errsz, "%s must not be empty", name);
            return -1;
        }
    }
    if (strcmp(cfg->log_level, "debug") && strcmp(cfg->log_level, "info") &&
        strcmp(cfg->log_level, "warn") && strcmp(cfg->log_level, "error")) {
        snprintf(err, errsz, "log_level must be debug, info, warn or error, got \"%s\"",
                 cfg->log_level);
        return -1;
    }
    if (!is_ip_address(cfg->listen_address)) {
        snprintf(err, errsz, "listen.address must be an IPv4 or IPv6 address, got \"%s\"",
                 cfg->listen_address);
        return -1;
    }
    return 0;
}

void cfg_print_keys(void)
{
    char path[64], env[96];
    size_t i;

    printf("  %-30s %-45s %s\n", "key", "environment", "default");
    for (i = 0; i < NKEYS; i++) {
        key_path(&keys[i], path, sizeof(path));
        env_name(&keys[i], env, sizeof(env));
        printf("  %-30s %-45s %s\n", path, env, keys[i].def[0] ? keys[i].def : "(empty)");
    }
}
