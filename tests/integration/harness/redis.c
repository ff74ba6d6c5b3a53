/* harness/redis.c - Redis: flush and commands on the test database. */
#include "../harness.h"
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sys/time.h>

#define H_REDIS_TIMEOUT_S 5
#define H_REDIS_DB 9

/* A context on db 9, or NULL with the reason in err. */
static redisContext *rds_open(char *err, size_t errsz)
{
    struct timeval tv = { H_REDIS_TIMEOUT_S, 0 };
    unsigned int port = hi_test_port("PCB_TEST_REDIS_PORT", H_REDIS_PORT);
    redisContext *c = redisConnectWithTimeout(H_HOST, (int)port, tv);
    redisReply *r = NULL;

    if (c == NULL || c->err) {
        snprintf(err, errsz, "cannot connect to redis %s:%u: %s", H_HOST, port,
                 c != NULL ? c->errstr : "out of memory");
        goto fail;
    }
    redisSetTimeout(c, tv);
    r = redisCommand(c, "SELECT %d", H_REDIS_DB);
    if (r == NULL || r->type != REDIS_REPLY_STATUS) {
        snprintf(err, errsz, "redis SELECT %d failed: %s", H_REDIS_DB,
                 r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        goto fail;
    }
    freeReplyObject(r);
    return c;
fail:
    freeReplyObject(r);
    redisFree(c);
    return NULL;
}

void h_redis_flush(void)
{
    char err[256] = "";
    redisContext *c = rds_open(err, sizeof err);
    redisReply *r = c != NULL ? redisCommand(c, "FLUSHDB") : NULL;
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;

    if (c != NULL && !ok)
        snprintf(err, sizeof err, "redis FLUSHDB failed: %s",
                 r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
    freeReplyObject(r);
    redisFree(c);
    ck_assert_msg(ok, "%s", err);
}

redisReply *h_redis_cmd(const char *fmt, ...)
{
    char err[256];
    redisContext *c = rds_open(err, sizeof err);
    redisReply *r;
    va_list ap;

    if (c == NULL)
        return NULL;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}
