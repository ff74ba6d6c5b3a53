/* check_shards_frozen.c - a shard that freezes under load holds at most its
 * share of the handler threads from the first request: shard 2 is reached
 * through a relay in this process that, once frozen, stops moving bytes
 * (connections stay open, nothing is answered: a hung host or a stalled
 * disk), while shard 1 stays direct. The callbacks of shard 1 sent during
 * the first seconds of the freeze must be answered. Shares are asserted,
 * never times. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 90
#define RELAY_PAIRS_MAX 128
#define RELAY_POLL_MS 10
#define WORKERS "8"          /* the service's handler threads: cap 6 per shard */
#define HEALTHY_THREADS 8    /* clients paying orders of shard 1 */
#define HEALTHY_EACH 5       /* callbacks each */
#define FROZEN_THREADS 16    /* clients paying orders of shard 2 */
#define FROZEN_EACH 2        /* callbacks each */
#define HEALTHY_SHARE_MIN 95 /* % of shard 1's callbacks that must be paid */
#define PRICE "899.00"

/* ---- the relay ------------------------------------------------------------ */

struct relay {
    int lfd, port, target_port;
    int fds[RELAY_PAIRS_MAX][2]; /* client side, server side; -1 when unused */
    atomic_int *frozen; /* shared: Check runs the test in a child of the fixture's process */
    int wake[2];        /* a byte on it: frozen or stop changed (inherited by the child) */
    atomic_int stop;
    pthread_t th;
};

static struct relay rl;

static int connect_to(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void pair_close(int i)
{
    close(rl.fds[i][0]);
    close(rl.fds[i][1]);
    rl.fds[i][0] = rl.fds[i][1] = -1;
}

static void relay_accept(void)
{
    int c = accept(rl.lfd, NULL, NULL), s;

    if (c < 0)
        return;
    if ((s = connect_to(rl.target_port)) < 0) {
        close(c);
        return;
    }
    for (int i = 0; i < RELAY_PAIRS_MAX; i++)
        if (rl.fds[i][0] < 0) {
            rl.fds[i][0] = c;
            rl.fds[i][1] = s;
            return;
        }
    close(c);
    close(s);
}

/* Moves what fd from has to fd to; -1 when either side is gone. */
static int relay_move(int from, int to)
{
    char buf[16384];
    ssize_t n = read(from, buf, sizeof buf), off = 0;

    if (n <= 0)
        return -1;
    while (off < n) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w <= 0)
            return -1;
        off += w;
    }
    return 0;
}

/* Sets the frozen flag (or stop) and wakes the relay to look at it. */
static void relay_set(atomic_int *flag, int v)
{
    atomic_store(flag, v);
    if (write(rl.wake[1], "w", 1) != 1)
        ck_abort_msg("the relay's wake pipe: %s", strerror(errno));
}

/* Frozen, it waits for nothing but its wake pipe: no accept, no byte
 * moved until the flag changes. */
static void *relay_main(void *arg)
{
    char drain[64];

    (void)arg;
    while (!atomic_load(&rl.stop)) {
        struct pollfd p[2 + 2 * RELAY_PAIRS_MAX] = { { .fd = rl.wake[0], .events = POLLIN } };
        int who[2 + 2 * RELAY_PAIRS_MAX] = { -2 }, n = 1;

        if (atomic_load(rl.frozen)) {
            if (poll(p, 1, -1) > 0 && read(rl.wake[0], drain, sizeof drain) < 0)
                break;
            continue;
        }
        p[n].fd = rl.lfd;
        p[n].events = POLLIN;
        who[n++] = -1;
        for (int i = 0; i < RELAY_PAIRS_MAX; i++)
            for (int side = 0; side < 2 && rl.fds[i][0] >= 0; side++) {
                p[n].fd = rl.fds[i][side];
                p[n].events = POLLIN;
                who[n++] = i * 2 + side;
            }
        if (poll(p, (nfds_t)n, RELAY_POLL_MS) <= 0)
            continue;
        if (p[0].revents & POLLIN && read(rl.wake[0], drain, sizeof drain) < 0)
            break;
        if (atomic_load(rl.frozen))
            continue;
        for (int k = 1; k < n; k++) {
            int i = who[k] / 2, side = who[k] % 2;

            if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (who[k] < 0)
                relay_accept();
            else if (rl.fds[i][0] >= 0 && relay_move(rl.fds[i][side], rl.fds[i][!side]) != 0)
                pair_close(i);
        }
    }
    return NULL;
}

static int relay_start(int target_port)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t len = sizeof a;

    memset(&rl, 0, sizeof rl);
    if (pipe(rl.wake) != 0)
        return -1;
    rl.frozen =
        mmap(NULL, sizeof *rl.frozen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (rl.frozen == MAP_FAILED)
        return -1;
    atomic_store(rl.frozen, 0);
    for (int i = 0; i < RELAY_PAIRS_MAX; i++)
        rl.fds[i][0] = rl.fds[i][1] = -1;
    rl.target_port = target_port;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rl.lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (rl.lfd < 0 || bind(rl.lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(rl.lfd, 512) != 0 || getsockname(rl.lfd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    rl.port = ntohs(a.sin_port);
    return pthread_create(&rl.th, NULL, relay_main, NULL) == 0 ? 0 : -1;
}

static void relay_stop(void)
{
    relay_set(&rl.stop, 1);
    pthread_join(rl.th, NULL);
    close(rl.wake[0]);
    close(rl.wake[1]);
    for (int i = 0; i < RELAY_PAIRS_MAX; i++)
        if (rl.fds[i][0] >= 0)
            pair_close(i);
    close(rl.lfd);
    munmap(rl.frozen, sizeof *rl.frozen);
}

/* ---- the fixture ---------------------------------------------------------- */

static void frozen_server_up(void)
{
    static char shards[512];
    const char *my = getenv("PCB_TEST_MYSQL_PORT");
    const char *env[] = { shards, "PAYCALLBACK_WORKERS=" WORKERS, "PAYCALLBACK_LOG_LEVEL=warn",
                          /* the prober stays out of it: only the guard decides */
                          "PAYCALLBACK_MYSQL_PROBE_INTERVAL_MS=60000", NULL };

    ck_assert_int_eq(0, relay_start(my != NULL ? atoi(my) : 3307));
    snprintf(shards, sizeof shards, "PAYCALLBACK_MYSQL_SHARDS=1=127.0.0.1:%s/%s,2=127.0.0.1:%d/%s",
             my != NULL ? my : "3307", h_shard_db(1), rl.port, h_shard_db(2));
    h_fixture_server_up_env(env);
}

static void frozen_server_down(void)
{
    relay_set(rl.frozen, 0);
    h_fixture_server_down();
    relay_stop();
}

/* ---- the storm -------------------------------------------------------------- */

/* A pay_no whose registry row is placed on shard want. */
static void pay_no_on(int want, const char *prefix, int n, char *out, size_t outsz)
{
    for (int i = 0;; i++) {
        snprintf(out, outsz, "%s-%d-%d", prefix, n, i);
        if (h_shard_place(out) == want)
            return;
    }
}

struct stream {
    int shard, threads, each;
    atomic_int next, paid, refused, other;
};

static void *stream_main(void *arg)
{
    struct stream *st = arg;
    int i;

    while ((i = atomic_fetch_add(&st->next, 1)) < st->threads * st->each) {
        char order_no[32], pay_no[64];
        struct h_resp r;

        snprintf(order_no, sizeof order_no, "S0%d-FZ%d", st->shard, i);
        pay_no_on(st->shard, st->shard == 1 ? "PAY-FZH" : "PAY-FZF", i, pay_no, sizeof pay_no);
        if (h_callback(h_port(), order_no, pay_no, PRICE, &r) != 0)
            atomic_fetch_add(&st->other, 1);
        else if (r.status == 200)
            atomic_fetch_add(&st->paid, 1);
        else if (r.status == 503)
            atomic_fetch_add(&st->refused, 1);
        else
            atomic_fetch_add(&st->other, 1);
        h_resp_free(&r);
    }
    return NULL;
}

static void orders_on(int shard, int n)
{
    for (int i = 0; i < n; i++)
        h_db_exec("INSERT INTO `%s`.orders (order_no, user_id, request_id, sku, quantity, amount, "
                  "status) VALUES ('S0%d-FZ%d', 'u-fz', 'req-fz-%d-%d', 'SHOE-42', 1, " PRICE
                  ", 1)",
                  h_shard_db(shard), shard, i, shard, i);
}

START_TEST(a_frozen_shard_holds_only_its_share_from_the_first_request)
{
    struct stream healthy = { .shard = 1, .threads = HEALTHY_THREADS, .each = HEALTHY_EACH };
    struct stream frozen = { .shard = 2, .threads = FROZEN_THREADS, .each = FROZEN_EACH };
    pthread_t th[HEALTHY_THREADS + FROZEN_THREADS];
    int nh = HEALTHY_THREADS * HEALTHY_EACH, k = 0;
    struct h_resp r;

    orders_on(1, nh);
    orders_on(2, FROZEN_THREADS * FROZEN_EACH + 1);
    /* Shard 2 answers through the relay before it freezes. */
    ck_assert_int_eq(0, h_callback(h_port(),
                                   "S02-FZ"
                                   "32",
                                   "PAY-FZ-WARM", PRICE, &r));
    h_assert_status(&r, 200);
    h_resp_free(&r);

    relay_set(rl.frozen, 1);
    for (int i = 0; i < FROZEN_THREADS; i++)
        ck_assert_int_eq(0, pthread_create(&th[k++], NULL, stream_main, &frozen));
    for (int i = 0; i < HEALTHY_THREADS; i++)
        ck_assert_int_eq(0, pthread_create(&th[k++], NULL, stream_main, &healthy));
    for (int i = 0; i < k; i++)
        pthread_join(th[i], NULL);
    printf("frozen shard 2: shard 1 callbacks %d paid, %d refused, %d other of %d; shard 2 "
           "callbacks %d paid, %d refused, %d other of %d\n",
           atomic_load(&healthy.paid), atomic_load(&healthy.refused), atomic_load(&healthy.other),
           nh, atomic_load(&frozen.paid), atomic_load(&frozen.refused), atomic_load(&frozen.other),
           FROZEN_THREADS * FROZEN_EACH);
    fflush(stdout);
    ck_assert_msg(atomic_load(&healthy.paid) * 100 >= nh * HEALTHY_SHARE_MIN,
                  "only %d of %d callbacks of the healthy shard 1 were paid while shard 2 froze",
                  atomic_load(&healthy.paid), nh);
    ck_assert_int_eq(0, atomic_load(&healthy.other));
    ck_assert_int_eq(0, atomic_load(&frozen.other)); /* 503, never 500 or a hang */
    ck_assert_int_eq(0, atomic_load(&frozen.paid));
    ck_assert_int_eq(FROZEN_THREADS * FROZEN_EACH, atomic_load(&frozen.refused));
    ck_assert_int_eq(atomic_load(&healthy.paid),
                     h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE order_no LIKE "
                                    "'S01-FZ%%'"));
}
END_TEST

static Suite *frozen_suite(void)
{
    Suite *s = suite_create("shards_frozen");
    TCase *tc = h_tcase_with("shard 2 freezes", TC_TIMEOUT_S, frozen_server_up, frozen_server_down);

    tcase_add_test(tc, a_frozen_shard_holds_only_its_share_from_the_first_request);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(frozen_suite, NULL, NULL);
