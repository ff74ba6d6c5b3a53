/* fuzz_config.c - libFuzzer target for the configuration reader: the input
 * is the JSON file's text, given to cfg_load_text with an empty
 * environment so that only the file counts, with and without the
 * development switch. Whatever the text, the load ends with 0, every field
 * in its range, its strings terminated and a callback secret set, or with
 * -1 and a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 1 when s is NUL-terminated within n bytes. */
static int terminated(const char *s, size_t n)
{
    return memchr(s, '\0', n) != NULL;
}

/* One load of the text, with or without the development switch. */
static void load(const uint8_t *data, size_t size, unsigned flags)
{
    static const char *const no_env[] = { NULL };
    struct config cfg;
    char err[256];

    err[0] = '\0';
    if (cfg_load_text(&cfg, "fuzz.json", (const char *)data, size, no_env, flags, err,
                      sizeof(err)) != 0) {
        if (err[0] == '\0' || !terminated(err, sizeof(err)))
            abort(); /* a refusal always says why */
        return;
    }
    if (!terminated(cfg.listen_address, sizeof(cfg.listen_address)) ||
        !terminated(cfg.log_level, sizeof(cfg.log_level)) ||
        !terminated(cfg.mysql_host, sizeof(cfg.mysql_host)) ||
        !terminated(cfg.callback_secret, sizeof(cfg.callback_secret)))
        abort();
    if (cfg.listen_port < 0 || cfg.listen_port > 65535 || cfg.workers < 1 ||
        cfg.mysql_pool_size < 1 || cfg.redis_pool_size < 1 || cfg.body_max_bytes < 1)
        abort();
    if (cfg.callback_secret[0] == '\0')
        abort(); /* fail closed: never without a secret */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load(data, size, 0);
    load(data, size, CFG_LOAD_DEV);
    return 0;
}
