/* check_openapi.c - docs/openapi.yaml against the live route table: every
 * route of http_routes() is documented under paths with its method, every
 * documented operation is a route, and every error code of the contract is
 * listed. The document's own consistency ($refs, operations, OpenAPI 3.1)
 * is checked by scripts/check-openapi.py, run from here.
 *
 * The YAML is read line by line, relying on the document's block style:
 * paths at two spaces of indentation under "paths:", methods at four. */
#include <check.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http.h"

#define DOC_PATH      "docs/openapi.yaml"
#define OPS_MAX       64
#define KEY_MAX       128
#define PYTHON        "/usr/bin/python3"

/* One documented operation: "post" under "/pay/callback". */
struct doc_op {
    char path[KEY_MAX];
    char method[16];
};

static struct doc_op ops[OPS_MAX];
static size_t nops;
static char *doc;

/* The project root: $PAYCALLBACK_ROOT, else the current directory. */
static const char *root(void)
{
    const char *r = getenv("PAYCALLBACK_ROOT");

    return r != NULL && r[0] != '\0' ? r : ".";
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    ck_assert_msg(f != NULL, "cannot open %s (set PAYCALLBACK_ROOT)", path);
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) != NULL) {
        buf[fread(buf, 1, (size_t)n, f)] = '\0';
    }
    fclose(f);
    ck_assert_msg(buf != NULL, "cannot read %s", path);
    return buf;
}

/* Leading spaces of line. */
static size_t indent(const char *line)
{
    size_t n = 0;

    while (line[n] == ' ')
        n++;
    return n;
}

/* The mapping key of line (after its indentation) into out, without
 * quotes; 0, or -1 when the line is no "key:" line. */
static int key_of(const char *line, char out[KEY_MAX])
{
    const char *k = line + indent(line);
    size_t n = strcspn(k, "\n");

    while (n > 0 && isspace((unsigned char)k[n - 1]))
        n--;
    if (n < 2 || k[n - 1] != ':' || k[0] == '#' || k[0] == '-')
        return -1;
    n--;                                          /* drop the colon */
    if (n >= 2 && (k[0] == '\'' || k[0] == '"') && k[n - 1] == k[0]) {
        k++;
        n -= 2;
    }
    if (n == 0 || n >= KEY_MAX)
        return -1;
    memcpy(out, k, n);
    out[n] = '\0';
    return 0;
}

/* 1 for the operation keys of an OpenAPI path item. */
static int is_method(const char *key)
{
    static const char *const methods[] = { "get", "put", "post", "delete", "options", "head",
                                           "patch", "trace" };

    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (strcmp(key, methods[i]) == 0)
            return 1;
    return 0;
}

/* Collects the (path, method) pairs of the paths: section. */
static void parse_paths(const char *text)
{
    char path[KEY_MAX] = "", key[KEY_MAX];
    int in_paths = 0;

    nops = 0;
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *eol = strchr(line, '\n');
        size_t ind = indent(line);
        int blank = line[ind] == '\n' || line[ind] == '\0' || line[ind] == '#';

        if (!blank && ind == 0)
            in_paths = strncmp(line, "paths:", 6) == 0;
        else if (in_paths && !blank && ind == 2 && key_of(line, key) == 0)
            snprintf(path, sizeof path, "%s", key);
        else if (in_paths && !blank && ind == 4 && path[0] != '\0' && key_of(line, key) == 0 &&
                 is_method(key)) {
            ck_assert_uint_lt(nops, OPS_MAX);
            snprintf(ops[nops].path, sizeof ops[nops].path, "%s", path);
            snprintf(ops[nops].method, sizeof ops[nops].method, "%.7s", key);  /* a method */
            nops++;
        }
        line = eol != NULL ? eol + 1 : NULL;
    }
}

static void setup(void)
{
    char path[PATH_MAX];

    snprintf(path, sizeof path, "%s/%s", root(), DOC_PATH);
    doc = slurp(path);
    parse_paths(doc);
}

static void teardown(void)
{
    free(doc);
    doc = NULL;
}

/* 1 when the document has method (any case) under path. */
static int documented(const char *path, const char *method)
{
    char lower[16];
    size_t i;

    for (i = 0; method[i] != '\0' && i + 1 < sizeof lower; i++)
        lower[i] = (char)tolower((unsigned char)method[i]);
    lower[i] = '\0';
    for (i = 0; i < nops; i++)
        if (strcmp(ops[i].path, path) == 0 && strcmp(ops[i].method, lower) == 0)
            return 1;
    return 0;
}

START_TEST(the_document_has_a_paths_section)
{
    ck_assert_msg(nops > 0, "no operations found under paths: in %s", DOC_PATH);
    ck_assert_msg(strncmp(doc, "openapi: 3.1", 12) == 0, "expected openapi: 3.1.x first");
}
END_TEST

START_TEST(every_route_is_documented_with_its_method)
{
    size_t n = 0;
    const struct http_route_info *r = http_routes(&n);

    ck_assert_uint_gt(n, 0);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(documented(r[i].pattern, r[i].method),
                      "route %s %s is not in %s (expected \"%s:\" under paths with a "
                      "lowercase method key)", r[i].method, r[i].pattern, DOC_PATH, r[i].pattern);
}
END_TEST

START_TEST(every_documented_operation_is_a_route)
{
    size_t n = 0;
    const struct http_route_info *r = http_routes(&n);

    for (size_t i = 0; i < nops; i++) {
        int found = 0;
        for (size_t j = 0; j < n && !found; j++)
            found = strcmp(r[j].pattern, ops[i].path) == 0 &&
                    strcasecmp(r[j].method, ops[i].method) == 0;
        ck_assert_msg(found, "%s documents %s %s, which no route serves", DOC_PATH,
                      ops[i].method, ops[i].path);
    }
}
END_TEST

static const char *const contract_codes[] = {
    "BAD_REQUEST", "BAD_SIGNATURE", "NOT_FOUND", "METHOD_NOT_ALLOWED", "PAYLOAD_TOO_LARGE",
    "ORDER_NOT_FOUND", "SKU_NOT_FOUND", "PAY_NO_CONFLICT", "AMOUNT_MISMATCH", "REPEAT_SUBMIT",
    "OUT_OF_STOCK", "ILLEGAL_TRANSITION", "BUSY", "UNAVAILABLE", "INTERNAL",
};

START_TEST(every_error_code_is_listed)
{
    char item[64];

    snprintf(item, sizeof item, "- %s\n", contract_codes[_i]);
    ck_assert_msg(strstr(doc, item) != NULL, "error code %s is not listed in %s",
                  contract_codes[_i], DOC_PATH);
}
END_TEST

START_TEST(every_header_of_the_contract_is_described)
{
    static const char *const headers[] = { "name: Idempotent-Token", "name: X-Timestamp",
                                           "name: X-Signature", "name: X-Request-Id",
                                           "Retry-After:", "Allow:" };

    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++)
        ck_assert_msg(strstr(doc, headers[i]) != NULL, "%s: no \"%s\"", DOC_PATH, headers[i]);
}
END_TEST

START_TEST(the_document_passes_check_openapi)
{
    char cmd[PATH_MAX + 64];
    int st;

    ck_assert_msg(access(PYTHON, X_OK) == 0, "%s is missing: run scripts/deps.sh", PYTHON);
    snprintf(cmd, sizeof cmd, "%s '%s/scripts/check-openapi.py' >&2", PYTHON, root());
    st = system(cmd);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "scripts/check-openapi.py failed (status 0x%x): see its messages above",
                  (unsigned)st);
}
END_TEST

static Suite *openapi_suite(void)
{
    Suite *s = suite_create("openapi");
    TCase *tc;

    tc = tcase_create("routes");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, the_document_has_a_paths_section);
    tcase_add_test(tc, every_route_is_documented_with_its_method);
    tcase_add_test(tc, every_documented_operation_is_a_route);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors and headers");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, every_error_code_is_listed, 0,
                        (int)(sizeof contract_codes / sizeof contract_codes[0]));
    tcase_add_test(tc, every_header_of_the_contract_is_described);
    suite_add_tcase(s, tc);

    tc = tcase_create("document");
    tcase_add_test(tc, the_document_passes_check_openapi);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(openapi_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
