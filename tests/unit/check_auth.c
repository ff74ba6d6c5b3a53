/* check_auth.c - unit tests for auth.c: the Authorization header forms it
 * accepts and refuses, which named key a token selects, and that the
 * secret comparisons of auth.c and signature.c are constant-time calls
 * (CRYPTO_memcmp) with no ordinary compare of key material beside them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "config.h"
#include "../check_main.h"

#define OPS_KEY "ops-key-0123456789abcdef"
#define SHOP_KEY "shop-key-0123456789abcdef"
#define PROM_KEY "prom-key-0123456789abcdef=="

static struct config cfg;

/* Three named keys, as cfg_load leaves them: zero-padded fields. */
static void three_keys(void)
{
    static const char *const names[] = { "ops", "shop", "prometheus" };
    static const char *const keys[] = { OPS_KEY, SHOP_KEY, PROM_KEY };

    memset(&cfg, 0, sizeof cfg);
    for (int i = 0; i < 3; i++) {
        snprintf(cfg.auth_keys[i].name, sizeof cfg.auth_keys[i].name, "%s", names[i]);
        snprintf(cfg.auth_keys[i].key, sizeof cfg.auth_keys[i].key, "%s", keys[i]);
    }
    cfg.auth_nkeys = 3;
}

/* The name auth_check selects for header, or NULL; st gets the status. */
static const char *caller(const char *header, enum auth_status *st)
{
    const char *name = "sentinel";

    *st = auth_check(&cfg, header, &name);
    return name;
}

static void assert_refused(const char *header, enum auth_status want)
{
    enum auth_status st;
    const char *name = caller(header, &st);

    ck_assert_msg(st == want, "%s: expected status %d, got %d", header ? header : "(none)",
                  (int)want, (int)st);
    ck_assert_ptr_null(name);
}

/* ---- accepted ------------------------------------------------------------- */

START_TEST(auth_check_selects_each_key_by_its_token)
{
    enum auth_status st;

    ck_assert_str_eq("ops", caller("Bearer " OPS_KEY, &st));
    ck_assert_int_eq(AUTH_OK, st);
    ck_assert_str_eq("shop", caller("Bearer " SHOP_KEY, &st));
    ck_assert_int_eq(AUTH_OK, st);
    ck_assert_str_eq("prometheus", caller("Bearer " PROM_KEY, &st));
    ck_assert_int_eq(AUTH_OK, st);
}
END_TEST

START_TEST(auth_check_takes_the_scheme_in_any_case_and_several_spaces)
{
    enum auth_status st;

    ck_assert_str_eq("ops", caller("bearer " OPS_KEY, &st));
    ck_assert_str_eq("ops", caller("BEARER   " OPS_KEY, &st));
    ck_assert_int_eq(AUTH_OK, st);
}
END_TEST

/* ---- refused -------------------------------------------------------------- */

START_TEST(auth_check_reports_a_missing_header)
{
    assert_refused(NULL, AUTH_MISSING);
    assert_refused("", AUTH_MISSING);
}
END_TEST

START_TEST(auth_check_refuses_other_forms)
{
    assert_refused(OPS_KEY, AUTH_MALFORMED);
    assert_refused("Basic b3BzOmtleQ==", AUTH_MALFORMED);
    assert_refused("Bearer", AUTH_MALFORMED);
    assert_refused("Bearer ", AUTH_MALFORMED);
    assert_refused("Bearer" OPS_KEY, AUTH_MALFORMED);
    assert_refused("Bearer " OPS_KEY " extra", AUTH_MALFORMED);
    assert_refused("Bearer " OPS_KEY "\t", AUTH_MALFORMED);
}
END_TEST

START_TEST(auth_check_refuses_near_misses)
{
    assert_refused("Bearer " OPS_KEY "x", AUTH_UNKNOWN_KEY);
    assert_refused("Bearer ops-key-0123456789abcde", AUTH_UNKNOWN_KEY); /* a prefix */
    assert_refused("Bearer OPS-KEY-0123456789ABCDEF", AUTH_UNKNOWN_KEY);
    assert_refused("Bearer ops", AUTH_UNKNOWN_KEY); /* the name */
}
END_TEST

START_TEST(auth_check_refuses_a_token_longer_than_any_key)
{
    char header[CFG_AUTH_KEY_MAX + 64];
    size_t n;

    snprintf(header, sizeof header, "Bearer %s", OPS_KEY);
    n = strlen(header);
    memset(header + n, 'a', CFG_AUTH_KEY_MAX);
    header[n + CFG_AUTH_KEY_MAX] = '\0';
    assert_refused(header, AUTH_UNKNOWN_KEY);
}
END_TEST

START_TEST(auth_check_refuses_everything_without_keys)
{
    memset(&cfg, 0, sizeof cfg);
    assert_refused("Bearer " OPS_KEY, AUTH_UNKNOWN_KEY);
    /* An all-zero field must not match an empty token either. */
    assert_refused("Bearer  ", AUTH_MALFORMED);
}
END_TEST

START_TEST(auth_status_str_is_set_for_every_refusal)
{
    ck_assert_ptr_nonnull(strstr(auth_status_str(AUTH_MISSING), "Bearer"));
    ck_assert_ptr_nonnull(strstr(auth_status_str(AUTH_MALFORMED), "Bearer"));
    ck_assert_str_eq("unknown key", auth_status_str(AUTH_UNKNOWN_KEY));
}
END_TEST

/* ---- constant-time comparisons ------------------------------------------- */

/* src/<file>, read whole from the project root. */
static char *source(const char *file)
{
    const char *r = getenv("PCB_ROOT");
    char path[4096];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof path, "%s/src/%s", r != NULL && r[0] ? r : ".", file);
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (set PCB_ROOT)", path);
    ck_assert_int_eq(0, fseek(f, 0, SEEK_END));
    n = ftell(f);
    ck_assert_int_eq(0, fseek(f, 0, SEEK_SET));
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    buf[fread(buf, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return buf;
}

/* Lines of text holding needle, not counting comment lines. */
static int code_lines_with(const char *text, const char *needle)
{
    int count = 0;

    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *p = line;

        while (p < line + len && (*p == ' ' || *p == '\t'))
            p++;
        if (*p != '*' && *p != '/') {
            char *copy = strndup(line, len);

            count += copy != NULL && strstr(copy, needle) != NULL;
            free(copy);
        }
        line = eol ? eol + 1 : NULL;
    }
    return count;
}

START_TEST(auth_compares_keys_only_with_crypto_memcmp)
{
    char *text = source("http/auth.c");

    ck_assert_int_eq(1, code_lines_with(text, "CRYPTO_memcmp(presented, cfg->auth_keys[i].key"));
    ck_assert_int_eq(0, code_lines_with(text, "strcmp("));
    ck_assert_int_eq(0, code_lines_with(text, "strncmp("));
    ck_assert_int_eq(0, code_lines_with(text, " memcmp("));
    free(text);
}
END_TEST

START_TEST(signature_compares_macs_only_with_crypto_memcmp)
{
    char *text = source("lib/signature.c");

    ck_assert_int_eq(1, code_lines_with(text, "CRYPTO_memcmp(expected, sig"));
    ck_assert_int_eq(0, code_lines_with(text, "strcmp("));
    ck_assert_int_eq(0, code_lines_with(text, " memcmp("));
    free(text);
}
END_TEST

static Suite *auth_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *tc;

    tc = tcase_create("accepted");
    tcase_add_checked_fixture(tc, three_keys, NULL);
    tcase_add_test(tc, auth_check_selects_each_key_by_its_token);
    tcase_add_test(tc, auth_check_takes_the_scheme_in_any_case_and_several_spaces);
    suite_add_tcase(s, tc);

    tc = tcase_create("refused");
    tcase_add_checked_fixture(tc, three_keys, NULL);
    tcase_add_test(tc, auth_check_reports_a_missing_header);
    tcase_add_test(tc, auth_check_refuses_other_forms);
    tcase_add_test(tc, auth_check_refuses_near_misses);
    tcase_add_test(tc, auth_check_refuses_a_token_longer_than_any_key);
    tcase_add_test(tc, auth_check_refuses_everything_without_keys);
    tcase_add_test(tc, auth_status_str_is_set_for_every_refusal);
    suite_add_tcase(s, tc);

    tc = tcase_create("constant-time comparisons");
    tcase_add_test(tc, auth_compares_keys_only_with_crypto_memcmp);
    tcase_add_test(tc, signature_compares_macs_only_with_crypto_memcmp);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(auth_suite, NULL, NULL);
