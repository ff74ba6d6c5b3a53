/* harness/db.c - MariaDB: statements, scalars, reset, shard placement and fixtures. */
#include "../harness.h"
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mysql.h>
#include <openssl/sha.h>

#define H_DB_CONNECT_TIMEOUT_S 5
#define H_DB_TIMEOUT_S 30
#define H_DB_LOCK_WAIT_S "10" /* SQL text: seconds */

/* Connects to paycallback_test with bounded lock waits, so a test blocked
 * by a lock the server forgot to release fails instead of hanging. */
static MYSQL *db_open(void)
{
    unsigned int connect_s = H_DB_CONNECT_TIMEOUT_S, io_s = H_DB_TIMEOUT_S;
    char err[256];
    MYSQL *m = mysql_init(NULL);

    ck_assert_msg(m != NULL, "mysql_init: out of memory");
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    if (mysql_real_connect(m, H_HOST, hi_test_env("PCB_TEST_MYSQL_USER", H_DB_USER),
                           hi_test_env("PCB_TEST_MYSQL_PASSWORD", H_DB_PASSWORD),
                           hi_test_env("PCB_TEST_MYSQL_DB", H_TEST_DB),
                           hi_test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT), NULL, 0) == NULL ||
        mysql_query(m, "SET SESSION lock_wait_timeout = " H_DB_LOCK_WAIT_S ", "
                       "innodb_lock_wait_timeout = " H_DB_LOCK_WAIT_S) != 0) {
        snprintf(err, sizeof err, "%s", mysql_error(m));
        mysql_close(m);
        ck_abort_msg("cannot connect to mysql %s:%u/%s: %s", H_HOST,
                     hi_test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT),
                     hi_test_env("PCB_TEST_MYSQL_DB", H_TEST_DB), err);
    }
    return m;
}

/* Runs sql on m and asserts success; closes m first when it fails. Any
 * result set is returned (free it with mysql_free_result), else NULL. */
static MYSQL_RES *db_run(MYSQL *m, const char *sql)
{
    char err[256];
    MYSQL_RES *res;

    if (mysql_query(m, sql) != 0) {
        snprintf(err, sizeof err, "%s", mysql_error(m));
        mysql_close(m);
        ck_abort_msg("sql failed: %s: %s", sql, err);
    }
    res = mysql_store_result(m);
    if (res == NULL && mysql_field_count(m) != 0) {
        snprintf(err, sizeof err, "%s", mysql_error(m));
        mysql_close(m);
        ck_abort_msg("sql result failed: %s: %s", sql, err);
    }
    return res;
}

void h_db_exec(const char *fmt, ...)
{
    va_list ap;
    char *sql;
    MYSQL *m;

    va_start(ap, fmt);
    sql = hi_vformat(fmt, ap);
    va_end(ap);
    ck_assert_msg(sql != NULL, "out of memory");
    m = db_open();
    mysql_free_result(db_run(m, sql));
    mysql_close(m);
    free(sql);
}

/* The first column of the first row of sql, malloc'd, or NULL. */
static char *db_scalar(const char *sql)
{
    MYSQL *m = db_open();
    MYSQL_RES *res = db_run(m, sql);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    char *s = row != NULL && row[0] != NULL ? strdup(row[0]) : NULL;

    mysql_free_result(res);
    mysql_close(m);
    return s;
}

long long h_db_scalar_ll(const char *fmt, ...)
{
    va_list ap;
    char *sql, *s;
    long long v;

    va_start(ap, fmt);
    sql = hi_vformat(fmt, ap);
    va_end(ap);
    ck_assert_msg(sql != NULL, "out of memory");
    s = db_scalar(sql);
    free(sql);
    v = s != NULL ? strtoll(s, NULL, 10) : -1;
    free(s);
    return v;
}

char *h_db_scalar_str(const char *fmt, ...)
{
    va_list ap;
    char *sql, *s;

    va_start(ap, fmt);
    sql = hi_vformat(fmt, ap);
    va_end(ap);
    ck_assert_msg(sql != NULL, "out of memory");
    s = db_scalar(sql);
    free(sql);
    return s;
}

void h_db_reset(void)
{
    static const char *const sql[] = {
        "TRUNCATE TABLE orders",
        "TRUNCATE TABLE payment_record",
        "TRUNCATE TABLE outbox",
        "TRUNCATE TABLE webhook_delivery",
        "TRUNCATE TABLE idem_token",
        "TRUNCATE TABLE audit_log",
        "TRUNCATE TABLE idem_key",
        "TRUNCATE TABLE pay_no_registry",
        "TRUNCATE TABLE pay_no_fence",
        "TRUNCATE TABLE order_user_lock",
        "TRUNCATE TABLE checkout_registry",
        "TRUNCATE TABLE backfill_progress",
        "TRUNCATE TABLE refund",
        "TRUNCATE TABLE stock",
        "INSERT INTO stock (sku, price, num) VALUES "
        "('SHOE-42', 899.00, 100), ('SOCK-01', 19.90, 500), ('HAT-7', 129.50, 10)",
    };
    const char *db = hi_test_env("PCB_TEST_MYSQL_DB", H_TEST_DB);
    char use[160];
    MYSQL *m = db_open();

    /* The second shard's database first, then back to the test database. */
    for (int pass = 0; pass < 2; pass++) {
        snprintf(use, sizeof use, pass == 0 ? "USE `%s" H_SHARD2_SUFFIX "`" : "USE `%s`", db);
        mysql_free_result(db_run(m, use));
        for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
            mysql_free_result(db_run(m, sql[i]));
    }
    mysql_close(m);
}

/* A server of one database refuses to start on a database that holds a
 * shard map, which a sharded server of an earlier suite left there. */
void hi_forget_shard_maps(void)
{
    const char *db = hi_test_env("PCB_TEST_MYSQL_DB", H_TEST_DB);
    char sql[160];
    MYSQL *m = db_open();

    snprintf(sql, sizeof sql, "DELETE FROM `%s`.shard_map", db);
    mysql_free_result(db_run(m, sql));
    snprintf(sql, sizeof sql, "DELETE FROM `%s" H_SHARD2_SUFFIX "`.shard_map", db);
    mysql_free_result(db_run(m, sql));
    for (int pass = 0; pass < 2; pass++) { /* the table exists once shards init ran */
        snprintf(sql, sizeof sql, "DELETE FROM `%s%s`.shard_identity", db,
                 pass == 0 ? "" : H_SHARD2_SUFFIX);
        if (mysql_query(m, sql) == 0)
            continue;
        ck_assert_msg(mysql_errno(m) == 1146, "sql failed: %s: %s", sql, mysql_error(m));
    }
    mysql_close(m);
}

void hi_shards_init(void)
{
    const char *env[] = { h_shards_env(), NULL };
    const char *args[] = { "-c", "config/paycallback.json", "shards", "init", NULL };
    struct h_run run;

    h_run(args, env, 20000, &run);
    if (run.status != 0)
        fprintf(stderr, "harness: shards init: exit %d: %s", run.status, run.err);
    h_run_free(&run);
}

const char *h_shards_env(void)
{
    static char env[512];
    const char *db = hi_test_env("PCB_TEST_MYSQL_DB", H_TEST_DB);
    unsigned int port = hi_test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT);

    snprintf(env, sizeof env,
             "PAYCALLBACK_MYSQL_SHARDS=1=" H_HOST ":%u/%s,2=" H_HOST ":%u/%s" H_SHARD2_SUFFIX, port,
             db, port, db);
    return env;
}

int h_shard_place(const char *key)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    uint64_t h = 0;

    SHA256((const unsigned char *)key, strlen(key), md);
    for (int i = 0; i < 8; i++)
        h = (h << 8) | md[i];
    return (int)(h % 2) + 1;
}

const char *h_shard_db(int id)
{
    static char db1[64], db2[80];

    hi_copy_str(db1, sizeof db1, hi_test_env("PCB_TEST_MYSQL_DB", H_TEST_DB));
    snprintf(db2, sizeof db2, "%s" H_SHARD2_SUFFIX, db1);
    return id == 1 ? db1 : db2;
}

const char *h_shards_half_down_env(void)
{
    static char env[512];
    const char *db = hi_test_env("PCB_TEST_MYSQL_DB", H_TEST_DB);
    unsigned int port = hi_test_port("PCB_TEST_MYSQL_PORT", H_MYSQL_PORT);

    snprintf(env, sizeof env,
             "PAYCALLBACK_MYSQL_SHARDS=1=" H_HOST ":%u/%s,2=" H_HOST ":1/%s" H_SHARD2_SUFFIX, port,
             db, db);
    return env;
}

void h_temp_file(char path[H_TEMP_PATH_MAX], const char *text)
{
    size_t len = strlen(text);
    int fd;

    snprintf(path, H_TEMP_PATH_MAX, "/tmp/paycallback-test-XXXXXX");
    fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp: %s", strerror(errno));
    ck_assert_msg(write(fd, text, len) == (ssize_t)len, "write %s: %s", path, strerror(errno));
    close(fd);
}

void h_db_insert_order_in(const char *order_no, const char *amount, const char *currency)
{
    h_db_exec("INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, currency, "
              "status) VALUES ('%s', 'u1001', LEFT('req-%s', 64), 'SHOE-42', 1, %s, '%s', 1)",
              order_no, order_no, amount, currency);
}

void h_db_insert_order(const char *order_no, const char *user_id, const char *amount, int status)
{
    h_db_exec("INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status) "
              "VALUES ('%s', '%s', LEFT('req-%s', 64), 'SHOE-42', 1, %s, %d)",
              order_no, user_id, order_no, amount, status);
}

struct h_db {
    MYSQL *m;
};

struct h_db *h_db_open(void)
{
    struct h_db *db = malloc(sizeof *db);

    ck_assert_msg(db != NULL, "out of memory");
    db->m = db_open();
    return db;
}

unsigned int h_db_try(struct h_db *db, const char *fmt, ...)
{
    va_list ap;
    unsigned int err = 0;
    char *sql;

    va_start(ap, fmt);
    sql = hi_vformat(fmt, ap);
    va_end(ap);
    ck_assert_msg(sql != NULL, "out of memory");
    if (mysql_query(db->m, sql) != 0)
        err = mysql_errno(db->m);
    else
        mysql_free_result(mysql_store_result(db->m));
    free(sql);
    return err;
}

void h_db_sql(struct h_db *db, const char *fmt, ...)
{
    va_list ap;
    char *sql;

    va_start(ap, fmt);
    sql = hi_vformat(fmt, ap);
    va_end(ap);
    ck_assert_msg(sql != NULL, "out of memory");
    mysql_free_result(db_run(db->m, sql));
    free(sql);
}

void h_db_close(struct h_db *db)
{
    if (db == NULL)
        return;
    mysql_close(db->m);
    free(db);
}
