/* ceiling.c - the payment callback transaction with no HTTP at all: the
 * ceiling the service is measured against. Each of c threads holds one
 * MariaDB connection and runs callbacks back to back for d seconds, either
 * as a plain client (START TRANSACTION, INSERT payment_record, SELECT the
 * release fence, SELECT the order FOR UPDATE, CAS UPDATE, INSERT outbox,
 * COMMIT: seven round trips) or as one prepared CALL of the procedure the
 * service calls (DB_PROC_PAY_CALLBACK, include/store/stmts.h): the same
 * transaction, on the same schema, either way. It verifies no
 * signature and renders no JSON reply; it prints one RESULT line in the
 * format of bench/signed.lua so bench/run.sh reads both alike.
 *
 * usage: ceiling -m plain|call -k unique|dup [-c conns] [-d seconds]
 *                [-f first] [-n count] [-H host] [-P port] [-u user]
 *                [-p password] [-D database]
 * unique: callback i pays order BENCH-i with pay_no BPAY-i, for i in
 *         first .. first+count-1, each once (threads interleave); a thread
 *         that runs out stops early and the line says exhausted=1.
 * dup:    the same callbacks over and over (they must be recorded already):
 *         the plain client's path is its transaction meeting the duplicate
 *         key, then reading the stored record; the call path is the CALL. */
#include <errno.h>
#include <getopt.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stmts.h"

#define CEIL_THREADS_MAX 1024
#define CEIL_COL_BYTES 72
#define CEIL_AMOUNT "899.00"

enum ceil_stmt {
    S_INSERT,
    S_FENCE,
    S_LOCK,
    S_CAS,
    S_OUTBOX,
    S_REFUND,
    S_SEEN,
    S_CALL,
    S_COUNT
};

static const char *const stmt_text[S_COUNT] = {
    [S_INSERT] = "INSERT INTO payment_record (pay_no, order_no, amount, status, outcome) "
                 "VALUES (?, ?, ?, 1, 1)",
    [S_FENCE] = "SELECT COUNT(*) FROM pay_no_fence WHERE pay_no = ? AND order_no = ? "
                "LOCK IN SHARE MODE",
    [S_LOCK] = "SELECT amount, status FROM orders WHERE order_no = ? FOR UPDATE",
    [S_CAS] = "UPDATE orders SET status = 2 WHERE order_no = ? AND status = 1",
    [S_OUTBOX] = "INSERT INTO outbox (event_type, order_no, payload) VALUES ('order.paid', ?, ?)",
    [S_REFUND] = "UPDATE payment_record SET status = 2, outcome = 2 WHERE pay_no = ?",
    [S_SEEN] = "SELECT p.order_no, p.amount, p.outcome, o.status FROM payment_record p "
               "LEFT JOIN orders o ON o.order_no = p.order_no WHERE p.pay_no = ?",
    [S_CALL] = "CALL " DB_PROC_PAY_CALLBACK "(?, ?, ?, ?)",
};

struct opts {
    bool call; /* one CALL instead of seven statements */
    bool dup;
    int conns, secs;
    long first, count;
    const char *host, *user, *password, *database;
    unsigned int port;
};

struct worker {
    const struct opts *o;
    pthread_t tid;
    int idx;
    MYSQL *my;
    MYSQL_STMT *st[S_COUNT];
    uint32_t *lat_us; /* one latency per finished callback */
    size_t nlat, cap;
    long errors, retries;
    bool exhausted;
};

static pthread_barrier_t start_line;
static struct timespec deadline;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool past(const struct timespec *t)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec > t->tv_sec || (ts.tv_sec == t->tv_sec && ts.tv_nsec >= t->tv_nsec);
}

/* Binds n strings as the parameters of s and executes it. 0 or the MySQL
 * error number. */
static unsigned int run(MYSQL_STMT *s, const char *const *p, int n)
{
    MYSQL_BIND b[4];
    unsigned long len[4];

    memset(b, 0, sizeof(b));
    for (int i = 0; i < n; i++) {
        len[i] = strlen(p[i]);
        b[i].buffer_type = MYSQL_TYPE_STRING;
        b[i].buffer = (void *)p[i];
        b[i].buffer_length = len[i];
        b[i].length = &len[i];
    }
    if (mysql_stmt_bind_param(s, b) != 0 || mysql_stmt_execute(s) != 0)
        return mysql_stmt_errno(s) ? mysql_stmt_errno(s) : 1;
    return 0;
}

/* Reads the first row of the result of s as strings into cols (ncols of
 * CEIL_COL_BYTES), drains the rest and, for a CALL, the trailing status.
 * Returns 1 with a row, 0 without, -1 on error. */
static int fetch(MYSQL_STMT *s, char (*cols)[CEIL_COL_BYTES], int ncols)
{
    MYSQL_BIND b[8];
    unsigned long len[8];
    my_bool null_flag[8];
    int rc, got = 0;

    memset(b, 0, sizeof(b));
    for (int i = 0; i < ncols; i++) {
        b[i].buffer_type = MYSQL_TYPE_STRING;
        b[i].buffer = cols[i];
        b[i].buffer_length = CEIL_COL_BYTES - 1;
        b[i].length = &len[i];
        b[i].is_null = &null_flag[i];
    }
    if (mysql_stmt_bind_result(s, b) != 0)
        return -1;
    while ((rc = mysql_stmt_fetch(s)) == 0) {
        if (got++ == 0)
            for (int i = 0; i < ncols; i++)
                cols[i][null_flag[i] ? 0 : len[i]] = '\0';
    }
    if (rc != MYSQL_NO_DATA)
        return -1;
    mysql_stmt_free_result(s);
    while ((rc = mysql_stmt_next_result(s)) == 0)
        mysql_stmt_free_result(s);
    return rc > 0 ? -1 : got > 0;
}

static unsigned int query(MYSQL *my, const char *sql)
{
    return mysql_real_query(my, sql, strlen(sql)) != 0 ? mysql_errno(my) : 0;
}

/* The plain client: seven statements, or four for a duplicate. 0 or the
 * MySQL error number (the transaction is rolled back then). */
static unsigned int plain_txn(struct worker *w, const char *pay_no, const char *order_no)
{
    char cols[4][CEIL_COL_BYTES], payload[256];
    const char *ins[] = { pay_no, order_no, CEIL_AMOUNT };
    const char *key[] = { order_no };
    const char *pay[] = { pay_no };
    const char *fence[] = { pay_no, order_no };
    unsigned int err;
    int n;

    if ((err = query(w->my, "START TRANSACTION")) != 0)
        return err;
    if ((err = run(w->st[S_INSERT], ins, 3)) == ER_DUP_ENTRY) {
        if ((err = query(w->my, "ROLLBACK")) != 0)
            return err;
        if ((err = run(w->st[S_SEEN], pay, 1)) != 0)
            return err;
        return fetch(w->st[S_SEEN], cols, 4) == 1 ? 0 : 1;
    }
    if (err != 0)
        goto fail;
    if ((err = run(w->st[S_FENCE], fence, 2)) != 0)
        goto fail;
    if (fetch(w->st[S_FENCE], cols, 1) != 1 || strcmp(cols[0], "0") != 0) {
        err = 1; /* no bench pay_no is released */
        goto fail;
    }
    if ((err = run(w->st[S_LOCK], key, 1)) != 0)
        goto fail;
    if ((n = fetch(w->st[S_LOCK], cols, 2)) != 1 || strcmp(cols[0], CEIL_AMOUNT) != 0) {
        err = 1; /* the seeded orders exist and match */
        goto fail;
    }
    if (strcmp(cols[1], "1") == 0) {
        if ((err = run(w->st[S_CAS], key, 1)) != 0)
            goto fail;
    }
    if (strcmp(cols[1], "1") == 0 && mysql_stmt_affected_rows(w->st[S_CAS]) == 1) {
        const char *ev[] = { order_no, payload };
        snprintf(payload, sizeof(payload),
                 "{\"order_no\":\"%s\",\"pay_no\":\"%s\",\"amount\":\"%s\"}", order_no, pay_no,
                 CEIL_AMOUNT);
        err = run(w->st[S_OUTBOX], ev, 2);
    } else {
        err = run(w->st[S_REFUND], pay, 1);
    }
    if (err != 0)
        goto fail;
    return query(w->my, "COMMIT");
fail:
    query(w->my, "ROLLBACK");
    return err;
}

/* The same transaction as one prepared CALL. */
static unsigned int call_txn(struct worker *w, const char *pay_no, const char *order_no)
{
    char cols[6][CEIL_COL_BYTES], payload[256];
    const char *p[] = { pay_no, order_no, CEIL_AMOUNT, payload };
    unsigned int err;

    snprintf(payload, sizeof(payload), "{\"order_no\":\"%s\",\"pay_no\":\"%s\",\"amount\":\"%s\"}",
             order_no, pay_no, CEIL_AMOUNT);
    if ((err = run(w->st[S_CALL], p, 4)) != 0)
        return err;
    if (fetch(w->st[S_CALL], cols, 6) != 1)
        return 1;
    /* outcome 1 PAID for a first callback, 3 SEEN for a repeat */
    return strcmp(cols[0], w->o->dup ? "3" : "1") == 0 ? 0 : 1;
}

static int record(struct worker *w, double t0)
{
    uint32_t us = (uint32_t)((now_s() - t0) * 1e6);

    if (w->nlat == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4096;
        uint32_t *p = realloc(w->lat_us, cap * sizeof(*p));
        if (p == NULL)
            return -1;
        w->lat_us = p;
        w->cap = cap;
    }
    w->lat_us[w->nlat++] = us;
    return 0;
}

static int open_conn(struct worker *w)
{
    const struct opts *o = w->o;

    if ((w->my = mysql_init(NULL)) == NULL)
        return -1;
    mysql_options(w->my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (mysql_real_connect(w->my, o->host, o->user, o->password, o->database, o->port, NULL, 0) ==
        NULL) {
        fprintf(stderr, "ceiling: cannot connect: %s\n", mysql_error(w->my));
        return -1;
    }
    for (int i = 0; i < S_COUNT; i++) {
        if ((w->st[i] = mysql_stmt_init(w->my)) == NULL ||
            mysql_stmt_prepare(w->st[i], stmt_text[i], strlen(stmt_text[i])) != 0) {
            fprintf(stderr, "ceiling: cannot prepare %s: %s\n", stmt_text[i],
                    w->st[i] ? mysql_stmt_error(w->st[i]) : "out of memory");
            return -1;
        }
    }
    return 0;
}

static void close_conn(struct worker *w)
{
    for (int i = 0; i < S_COUNT; i++)
        if (w->st[i] != NULL)
            mysql_stmt_close(w->st[i]);
    if (w->my != NULL)
        mysql_close(w->my);
}

static void *work(void *arg)
{
    struct worker *w = arg;
    const struct opts *o = w->o;
    char pay_no[32], order_no[32];
    long i = w->idx;
    bool ok;

    mysql_thread_init();
    if (!(ok = open_conn(w) == 0))
        w->errors++;
    pthread_barrier_wait(&start_line);
    while (ok && !past(&deadline)) {
        double t0 = now_s();
        unsigned int err;

        if (i >= o->count) {
            if (!o->dup) {
                w->exhausted = true;
                break;
            }
            i %= o->count;
        }
        snprintf(pay_no, sizeof(pay_no), "BPAY-%ld", o->first + i);
        snprintf(order_no, sizeof(order_no), "BENCH-%ld", o->first + i);
        err = o->call ? call_txn(w, pay_no, order_no) : plain_txn(w, pay_no, order_no);
        if (err == ER_LOCK_DEADLOCK || err == ER_LOCK_WAIT_TIMEOUT) {
            w->retries++;
            continue; /* the same callback again */
        }
        if (err != 0) {
            if (w->errors++ == 0)
                fprintf(stderr, "ceiling: %s failed: %u %s\n", pay_no, err, mysql_error(w->my));
        } else if (record(w, t0) != 0) {
            break;
        }
        i += o->conns;
    }
    mysql_thread_end();
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    int c;

    *o = (struct opts){ .conns = 16,
                        .secs = 10,
                        .first = 1,
                        .count = 100000,
                        .host = "127.0.0.1",
                        .user = "paycallback",
                        .password = "paycallback",
                        .database = "paycallback_test",
                        .port = 3307 };
    while ((c = getopt(argc, argv, "m:k:c:d:f:n:H:P:u:p:D:")) != -1) {
        switch (c) {
        case 'm': o->call = strcmp(optarg, "call") == 0; break;
        case 'k': o->dup = strcmp(optarg, "dup") == 0; break;
        case 'c': o->conns = atoi(optarg); break;
        case 'd': o->secs = atoi(optarg); break;
        case 'f': o->first = atol(optarg); break;
        case 'n': o->count = atol(optarg); break;
        case 'H': o->host = optarg; break;
        case 'P': o->port = (unsigned int)atoi(optarg); break;
        case 'u': o->user = optarg; break;
        case 'p': o->password = optarg; break;
        case 'D': o->database = optarg; break;
        default: return -1;
        }
    }
    if (o->conns < 1 || o->conns > CEIL_THREADS_MAX || o->secs < 1 || o->count < 1)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct worker *w = NULL;
    uint32_t *all = NULL;
    size_t n = 0;
    long errors = 0, retries = 0;
    bool exhausted = false;
    double t0, secs;
    int rc = 1;

    if (parse_opts(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: ceiling -m plain|call -k unique|dup [-c conns] [-d seconds] "
                        "[-f first] [-n count] [-H host] [-P port] [-u user] [-p password] "
                        "[-D database]\n");
        return 2;
    }
    if (mysql_library_init(0, NULL, NULL) != 0 || (w = calloc((size_t)o.conns, sizeof(*w))) == NULL)
        return 1;
    pthread_barrier_init(&start_line, NULL, (unsigned)o.conns + 1);
    for (int i = 0; i < o.conns; i++) {
        w[i] = (struct worker){ .o = &o, .idx = i };
        if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0)
            return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += o.secs + 1; /* provisional: connects happen first */
    pthread_barrier_wait(&start_line);
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += o.secs;
    t0 = now_s();
    for (int i = 0; i < o.conns; i++) {
        pthread_join(w[i].tid, NULL);
        n += w[i].nlat;
        errors += w[i].errors;
        retries += w[i].retries;
        exhausted |= w[i].exhausted;
    }
    secs = now_s() - t0;
    if ((all = malloc((n ? n : 1) * sizeof(*all))) == NULL)
        goto out;
    n = 0;
    for (int i = 0; i < o.conns; i++) {
        memcpy(all + n, w[i].lat_us, w[i].nlat * sizeof(*all));
        n += w[i].nlat;
    }
    qsort(all, n, sizeof(*all), cmp_u32);
    printf("RESULT rps=%.0f p50_ms=%.2f p99_ms=%.2f errors=%ld non2xx=0 requests=%zu "
           "retries=%ld exhausted=%d\n",
           (double)n / secs, n ? all[n / 2] / 1000.0 : 0.0,
           n ? all[(size_t)((double)n * 0.99)] / 1000.0 : 0.0, errors, n, retries, exhausted);
    rc = errors > 0 ? 1 : 0;
out:
    for (int i = 0; i < o.conns; i++) {
        close_conn(&w[i]);
        free(w[i].lat_us);
    }
    free(all);
    free(w);
    pthread_barrier_destroy(&start_line);
    mysql_library_end();
    return rc;
}
