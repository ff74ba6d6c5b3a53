/* check_systemd.c - the service's side of Type=notify, against the real
 * binary: with NOTIFY_SOCKET set it sends READY=1 (with its pid) once it
 * listens, RELOADING=1 then READY=1 around a SIGHUP reload, and STOPPING=1
 * when a stop signal starts the drain. The test
 * plays systemd's part with a unix datagram socket of its own. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define NOTIFY_WAIT_MS 20000
#define MSG_MAX 1024

static int sock = -1;
static char sock_path[108];

static void notify_socket_up(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    snprintf(sock_path, sizeof sock_path, "/tmp/paycallback-notify-%d", (int)getpid());
    unlink(sock_path);
    sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(sock, 0);
    memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
    ck_assert_msg(bind(sock, (struct sockaddr *)&sa, sizeof sa) == 0, "bind %s: %s", sock_path,
                  strerror(errno));
}

static void notify_socket_down(void)
{
    if (sock >= 0)
        close(sock);
    unlink(sock_path);
}

/* Waits for the next notification into buf. 0, or -1 past the deadline. */
static int next_message(char buf[MSG_MAX])
{
    struct pollfd p = { .fd = sock, .events = POLLIN };
    ssize_t n;

    if (poll(&p, 1, NOTIFY_WAIT_MS) != 1)
        return -1;
    if ((n = recv(sock, buf, MSG_MAX - 1, 0)) < 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

START_TEST(ready_after_listening_and_stopping_on_drain)
{
    char env[160], msg[MSG_MAX], want_pid[64];
    const char *extra[] = { env, NULL };
    struct h_server *s;
    struct h_resp r;

    notify_socket_up();
    snprintf(env, sizeof env, "NOTIFY_SOCKET=%s", sock_path);
    s = h_server_start(extra);
    ck_assert_ptr_nonnull(s);
    ck_assert_msg(next_message(msg) == 0, "no READY=1 within %d ms", NOTIFY_WAIT_MS);
    ck_assert_msg(strstr(msg, "READY=1") != NULL, "first notification is \"%s\"", msg);
    snprintf(want_pid, sizeof want_pid, "MAINPID=%d", (int)h_server_pid(s));
    ck_assert_msg(strstr(msg, want_pid) != NULL, "READY without %s: \"%s\"", want_pid, msg);
    h_http(h_server_port(s), "GET", "/healthz", NULL, NULL, 0, &r); /* it does listen */
    h_assert_status(&r, 200);
    h_resp_free(&r);
    /* systemctl reload: RELOADING=1 (with the monotonic time systemd asks
     * for), then READY=1 again once the new secrets are published. */
    ck_assert_int_eq(0, h_server_signal(s, SIGHUP));
    ck_assert_msg(next_message(msg) == 0, "no RELOADING=1 after SIGHUP");
    ck_assert_msg(strstr(msg, "RELOADING=1") != NULL && strstr(msg, "MONOTONIC_USEC=") != NULL,
                  "notification after SIGHUP is \"%s\"", msg);
    ck_assert_msg(next_message(msg) == 0, "no READY=1 after the reload");
    ck_assert_msg(strstr(msg, "READY=1") != NULL && strstr(msg, "reloaded") != NULL,
                  "notification after the reload is \"%s\"", msg);
    ck_assert_int_eq(0, h_server_signal(s, SIGTERM));
    ck_assert_msg(next_message(msg) == 0, "no STOPPING=1 after SIGTERM");
    ck_assert_msg(strstr(msg, "STOPPING=1") != NULL, "notification after SIGTERM is \"%s\"", msg);
    ck_assert_int_eq(0, h_server_wait(s, 30000));
    notify_socket_down();
}
END_TEST

static Suite *systemd_suite(void)
{
    Suite *s = suite_create("systemd");
    TCase *tc = tcase_create("sd_notify");

    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, ready_after_listening_and_stopping_on_drain);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(systemd_suite, NULL, NULL);
