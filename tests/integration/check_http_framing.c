/* check_http_framing.c - request framings two HTTP parsers could read
 * differently, sent raw to the real binary: each that reaches the service
 * is refused 400 JSON and its connection closed, so nothing after it on
 * the connection is read as another request. That includes a NUL byte
 * anywhere in a header line: the library cuts the name or value there, and
 * the service finds the rest in the header block (framing.h). */
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
/* A NUL: the sizes are given, since the text holds one. */
#define NUL_VALUE "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n"
    { "NUL in a value", NUL_VALUE, sizeof NUL_VALUE - 1 },
#define NUL_END "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ab\0\r\n\r\n"
    { "NUL ending a value", NUL_END, sizeof NUL_END - 1 },
#define NUL_CL \
    "POST /pay/callback HTTP/1.1\r\nHost: x\r\nContent-Length: 1\0 0\r\n\r\n0123456789" SMUGGLED
    { "NUL in Content-Length", NUL_CL, sizeof NUL_CL - 1 },
#define NUL_TE                                                                             \
    "POST /pay/callback HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\0, gzip\r\n\r\n" \
    "0\r\n\r\n" SMUGGLED
    { "NUL in Transfer-Encoding", NUL_TE, sizeof NUL_TE - 1 },
#define NUL_HOST "GET /healthz HTTP/1.1\r\nHost: x\0y\r\n\r\n"
    { "NUL in Host", NUL_HOST, sizeof NUL_HOST - 1 },
    { "bare LF ending a header line", "GET /healthz HTTP/1.1\r\nHost: x\nX-A: v\r\n\r\n", 0 },
    { "bare LF ending the header block", "GET /healthz HTTP/1.1\r\nHost: x\n\n", 0 },
    { "bare CR in a name", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A\rB: v\r\n\r\n", 0 },
    { "bare CR ending a value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ab\r\r\n\r\n", 0 },
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

/* A NUL in a header name leaves a line without a ':' as libmicrohttpd
 * reads it: the library answers 400 itself, with its own HTML page, and
 * closes; the request never reaches the service, so nothing after it on
 * the connection is read either. */
START_TEST(a_nul_in_a_header_name_is_refused_by_the_library)
{
    static const char raw[] = "POST /pay/callback HTTP/1.1\r\nHost: x\r\nX-\0A: v\r\n"
                              "Content-Length: 2\r\n\r\n{}" SMUGGLED;
    long long before = h_metric("paycallback_http_requests_total{route=\"/pay/callback\","
                                "method=\"POST\",code=\"400\"}");
    char reply[8192];
    int fd = h_raw_connect(h_port(), NULL, 5000), eof = 0;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq((int)sizeof raw - 1, (int)send(fd, raw, sizeof raw - 1, MSG_NOSIGNAL));
    h_raw_read_all(fd, reply, sizeof reply, &eof);
    close(fd);
    ck_assert_msg(strncmp(reply, "HTTP/1.1 400", 12) == 0, "answered %.60s", reply);
    ck_assert_msg(eof, "the connection stayed open");
    ck_assert_msg(strstr(reply + 12, "HTTP/1.1 ") == NULL, "a second answer: %s", reply);
    ck_assert_int_eq(before, h_metric("paycallback_http_requests_total{route=\"/pay/callback\","
                                      "method=\"POST\",code=\"400\"}"));
}
END_TEST

static Suite *framing_suite(void)
{
    Suite *s = suite_create("http_framing");
    TCase *tc = h_tcase_with("framings the service can see", TC_TIMEOUT_S, h_fixture_server_up,
                             h_fixture_server_down);

    tcase_add_loop_test(tc, ambiguous_framing_is_400_json_and_closes, 0,
                        (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, a_nul_in_a_header_name_is_refused_by_the_library);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(framing_suite, NULL, NULL);
