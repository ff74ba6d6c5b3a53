/* check_staticdir.c - the console's document set: which files of a
 * directory it takes (plain names of known types, regular files only),
 * which it refuses to start with (a NUL byte), the lookup by exact name,
 * and If-None-Match. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "staticdir.h"
#include "../check_main.h"

static char dir[64];

static void put(const char *name, const char *text, size_t len)
{
    char path[160];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(len, fwrite(text, 1, len, f));
    fclose(f);
}

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/check_staticdir.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[96];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(0, system(cmd));
}

START_TEST(staticdir_takes_plain_names_of_known_types_only)
{
    char err[256] = "", path[160], sub[160];
    struct staticdir *d;
    size_t bytes;

    make_dir();
    put("index.html", "<p>hi</p>", 9);
    put("app.js", "export {};", 10);
    put(".hidden.js", "x", 1);
    put("tool.exe", "x", 1);
    put("notes", "x", 1);
    put("a.b.js", "x", 1);
    snprintf(path, sizeof(path), "%s/link.js", dir);
    ck_assert_int_eq(0, symlink("/etc/passwd", path));
    snprintf(sub, sizeof(sub), "%s/sub.js", dir);
    ck_assert_int_eq(0, mkdir(sub, 0700));
    d = staticdir_load(dir, err, sizeof(err));
    ck_assert_msg(d != NULL, "%s", err);
    ck_assert_uint_eq(2, staticdir_count(d, &bytes));
    ck_assert_uint_eq(19, bytes);
    ck_assert_str_eq("text/html; charset=utf-8", staticdir_find(d, "index.html")->ctype);
    ck_assert_str_eq("text/javascript; charset=utf-8", staticdir_find(d, "app.js")->ctype);
    ck_assert_str_eq("export {};", staticdir_find(d, "app.js")->body);
    ck_assert_ptr_null(staticdir_find(d, "link.js"));
    ck_assert_ptr_null(staticdir_find(d, ".hidden.js"));
    ck_assert_ptr_null(staticdir_find(d, "sub.js"));
    ck_assert_ptr_null(staticdir_find(d, "a.b.js"));
    ck_assert_ptr_null(staticdir_find(d, "../app.js"));
    ck_assert_ptr_null(staticdir_find(d, "APP.JS"));
    ck_assert_ptr_null(staticdir_find(NULL, "app.js"));
    staticdir_destroy(d);
    remove_dir();
}
END_TEST

START_TEST(staticdir_refuses_a_document_with_a_nul_byte_and_a_missing_directory)
{
    char err[256] = "";

    make_dir();
    put("bad.js", "a\0b", 3);
    ck_assert_ptr_null(staticdir_load(dir, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "bad.js"));
    remove_dir();
    ck_assert_ptr_null(staticdir_load("/nonexistent/console", err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/console"));
    staticdir_destroy(NULL);
}
END_TEST

START_TEST(staticdir_etag_follows_the_content)
{
    char err[256] = "", e1[STATICDIR_ETAG_MAX];
    struct staticdir *d;

    make_dir();
    put("app.js", "one", 3);
    d = staticdir_load(dir, err, sizeof(err));
    ck_assert_ptr_nonnull(d);
    snprintf(e1, sizeof(e1), "%s", staticdir_find(d, "app.js")->etag);
    ck_assert_uint_eq(18, strlen(e1));
    ck_assert_int_eq('"', e1[0]);
    staticdir_destroy(d);
    put("app.js", "two", 3);
    d = staticdir_load(dir, err, sizeof(err));
    ck_assert_str_ne(e1, staticdir_find(d, "app.js")->etag);
    staticdir_destroy(d);
    remove_dir();
}
END_TEST

START_TEST(staticdir_not_modified_reads_if_none_match_lists)
{
    const char *etag = "\"0123456789abcdef\"";

    ck_assert_int_eq(0, staticdir_not_modified(NULL, etag));
    ck_assert_int_eq(1, staticdir_not_modified("\"0123456789abcdef\"", etag));
    ck_assert_int_eq(1, staticdir_not_modified("W/\"0123456789abcdef\"", etag));
    ck_assert_int_eq(1, staticdir_not_modified("\"x\", \"0123456789abcdef\"", etag));
    ck_assert_int_eq(1, staticdir_not_modified("*", etag));
    ck_assert_int_eq(0, staticdir_not_modified("\"0123456789abcdef0\"", etag));
    ck_assert_int_eq(0, staticdir_not_modified("\"0123456789abcde\"", etag));
    ck_assert_int_eq(0, staticdir_not_modified("", etag));
}
END_TEST

static Suite *staticdir_suite(void)
{
    Suite *s = suite_create("staticdir");
    TCase *tc = tcase_create("load");

    tcase_add_test(tc, staticdir_takes_plain_names_of_known_types_only);
    tcase_add_test(tc, staticdir_refuses_a_document_with_a_nul_byte_and_a_missing_directory);
    tcase_add_test(tc, staticdir_etag_follows_the_content);
    tcase_add_test(tc, staticdir_not_modified_reads_if_none_match_lists);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(staticdir_suite, NULL, NULL);
