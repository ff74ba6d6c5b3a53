/* check_pubkey.c - unit tests for pubkey.c: every accepted key form (PEM,
 * bare base64 DER, file), the refusals, and SHA256withRSA verification
 * against signatures made with keys generated at test time. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pubkey.h"
#include "../testkeys.h"
#include "../check_main.h"

static struct testkey *signer, *other; /* generated once in main, before forking */

static struct pubkey *load(const struct testkey *k)
{
    char err[256] = "";
    char *pem = testkey_public_pem(k);
    struct pubkey *pk = pubkey_create(pem, err, sizeof(err));

    ck_assert_msg(pk != NULL, "load failed: %s", err);
    free(pem);
    return pk;
}

START_TEST(pubkey_verify_accepts_a_signature_of_the_key)
{
    struct pubkey *pk = load(signer);
    char *sig = testkey_sign_b64(signer, "hello", 5);
    struct pubkey_part part = { "hello", 5 };

    ck_assert_int_eq(PUBKEY_OK, pubkey_verify(pk, &part, 1, sig));
    free(sig);
    pubkey_destroy(pk);
}
END_TEST

START_TEST(pubkey_verify_joins_parts)
{
    struct pubkey *pk = load(signer);
    char *sig = testkey_sign_b64(signer, "a\nbc\n", 5);
    struct pubkey_part parts[] = { { "a", 1 }, { "\n", 1 }, { "", 0 }, { "bc\n", 3 } };

    ck_assert_int_eq(PUBKEY_OK, pubkey_verify(pk, parts, 4, sig));
    free(sig);
    pubkey_destroy(pk);
}
END_TEST

START_TEST(pubkey_verify_refuses_another_message_or_key)
{
    struct pubkey *pk = load(signer), *wrong = load(other);
    char *sig = testkey_sign_b64(signer, "hello", 5);
    struct pubkey_part part = { "hellO", 5 }, right = { "hello", 5 };

    ck_assert_int_eq(PUBKEY_BAD_SIGNATURE, pubkey_verify(pk, &part, 1, sig));
    ck_assert_int_eq(PUBKEY_BAD_SIGNATURE, pubkey_verify(wrong, &right, 1, sig));
    free(sig);
    pubkey_destroy(pk);
    pubkey_destroy(wrong);
}
END_TEST

START_TEST(pubkey_verify_refuses_garbage_signatures)
{
    struct pubkey *pk = load(signer);
    struct pubkey_part part = { "hello", 5 };

    ck_assert_int_eq(PUBKEY_BAD_SIGNATURE, pubkey_verify(pk, &part, 1, NULL));
    ck_assert_int_eq(PUBKEY_BAD_SIGNATURE, pubkey_verify(pk, &part, 1, ""));
    ck_assert_int_eq(PUBKEY_BAD_SIGNATURE, pubkey_verify(pk, &part, 1, "not base64!"));
    ck_assert_int_eq(PUBKEY_BAD_SIGNATURE, pubkey_verify(pk, &part, 1, "AAAA"));
    ck_assert_int_eq(PUBKEY_ERROR, pubkey_verify(NULL, &part, 1, "AAAA"));
    pubkey_destroy(pk);
}
END_TEST

/* Consoles show the key as one base64 line: the PEM without its armour. */
START_TEST(pubkey_create_accepts_bare_base64_der)
{
    char *pem = testkey_public_pem(signer), *bare = malloc(strlen(pem) + 1), *p, *line;
    char *sig = testkey_sign_b64(signer, "x", 1);
    struct pubkey_part part = { "x", 1 };
    struct pubkey *pk;
    char err[256];

    bare[0] = '\0';
    for (line = strtok_r(pem, "\n", &p); line != NULL; line = strtok_r(NULL, "\n", &p))
        if (strncmp(line, "-----", 5) != 0)
            strcat(bare, line);
    pk = pubkey_create(bare, err, sizeof(err));
    ck_assert_msg(pk != NULL, "%s", err);
    ck_assert_int_eq(PUBKEY_OK, pubkey_verify(pk, &part, 1, sig));
    pubkey_destroy(pk);
    free(sig);
    free(bare);
    free(pem);
}
END_TEST

START_TEST(pubkey_create_file_reads_a_pem_file)
{
    char path[] = "/tmp/paycallback-pubkey-XXXXXX";
    int fd = mkstemp(path);
    struct pubkey *pk;
    char err[256];

    ck_assert_int_ge(fd, 0);
    close(fd);
    testkey_write_public(signer, path);
    pk = pubkey_create_file(path, err, sizeof(err));
    ck_assert_msg(pk != NULL, "%s", err);
    pubkey_destroy(pk);
    unlink(path);
    ck_assert_ptr_null(pubkey_create_file(path, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "cannot open"));
}
END_TEST

START_TEST(pubkey_create_refuses_non_keys)
{
    char err[256] = "";

    ck_assert_ptr_null(pubkey_create("", err, sizeof(err)));
    ck_assert_str_eq("empty public key", err);
    ck_assert_ptr_null(pubkey_create(NULL, err, sizeof(err)));
    ck_assert_ptr_null(pubkey_create("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
                                     err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "not a PEM"));
    ck_assert_ptr_null(pubkey_create("bm90IGEga2V5", err, sizeof(err)));
    pubkey_destroy(NULL);
}
END_TEST

static Suite *pubkey_suite(void)
{
    Suite *s = suite_create("pubkey");
    TCase *tc = tcase_create("verify");

    tcase_add_test(tc, pubkey_verify_accepts_a_signature_of_the_key);
    tcase_add_test(tc, pubkey_verify_joins_parts);
    tcase_add_test(tc, pubkey_verify_refuses_another_message_or_key);
    tcase_add_test(tc, pubkey_verify_refuses_garbage_signatures);
    suite_add_tcase(s, tc);
    tc = tcase_create("load");
    tcase_add_test(tc, pubkey_create_accepts_bare_base64_der);
    tcase_add_test(tc, pubkey_create_file_reads_a_pem_file);
    tcase_add_test(tc, pubkey_create_refuses_non_keys);
    suite_add_tcase(s, tc);
    return s;
}

/* A signer and another key pair, for the run. */
static int keys_up(void)
{
    signer = testkey_create();
    other = testkey_create();
    return 0;
}

static void keys_down(void)
{
    testkey_destroy(signer);
    testkey_destroy(other);
}

CHECK_MAIN(pubkey_suite, keys_up, keys_down);
