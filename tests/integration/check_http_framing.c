/* check_http_framing.c - request framings two HTTP parsers could read
 * differently, sent raw to the real binary: each that reaches the service
 * is refused 400 JSON and its connection closed, so nothing after it on
 * the connection is read as another request. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60

struct framing_case {
    const char *name;
    const char *raw; /* the whole request, maybe followed by a smuggled one */
    size_t len;      /* 0: strlen(raw) */
};

#define SMUGGLED "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"

static const struct framing_case cases[] = {
    { "space before the colon of Transfer-Encoding",
      "POST /pay/callback HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n"
      "Content-Length: 5\r\n\r\n0\r\n\r\n" SMUGGLED,
      0 },
    { "tab in a header name", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A\t: v\r\n\r\n", 0 },
    { "obs-folded Content-Length",
      "POST /pay/callback HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n 0\r\n\r\n"
      "0123456789",
      0 },
    { "obs-folded Transfer-Encoding",
      "POST /pay/callback HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip,\r\n chunked\r\n\r\n"
      "0\r\n\r\n" SMUGGLED,
      0 },
    { "obs-fold after Host", "GET /healthz HTTP/1.1\r\nHost: x\r\n X-B: v\r\n\r\n", 0 },
    { "bare CR in a value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 0 },
    { "control byte in a value",
      "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x01"
      "b\r\n\r\n",
      0 },
};

START_TEST(ambiguous_framing_is_400_json_and_closes)
{
    const struct framing_case *c = &cases[_i];
    size_t len = c->len ? c->len : strlen(c->raw);
    char reply[8192];
    int fd = h_raw_connect(h_port(), NULL, 5000), eof = 0;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq((int)len, (int)send(fd, c->raw, len, MSG_NOSIGNAL));
    h_raw_read_all(fd, reply, sizeof reply, &eof);
    close(fd);
    ck_assert_msg(strncmp(reply, "HTTP/1.1 400", 12) == 0, "%s: answered %.60s", c->name, reply);
    ck_assert_msg(strstr(reply, "\"code\":\"BAD_REQUEST\"") != NULL, "%s: %s", c->name, reply);
    ck_assert_msg(eof, "%s: the connection stayed open", c->name);
    /* One answer only: the bytes after the request were never a request. */
    ck_assert_msg(strstr(reply + 12, "HTTP/1.1 ") == NULL, "%s: a second answer: %s", c->name,
                  reply);
}
END_TEST

static Suite *framing_suite(void)
{
    Suite *s = suite_create("http_framing");
    TCase *tc = h_tcase_with("framings the service can see", TC_TIMEOUT_S, h_fixture_server_up,
                             h_fixture_server_down);

    tcase_add_loop_test(tc, ambiguous_framing_is_400_json_and_closes, 0,
                        (int)(sizeof cases / sizeof cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(framing_suite, NULL, NULL);
