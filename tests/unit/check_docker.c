/* check_docker.c - the Dockerfile and docker-compose.yml, without a Docker
 * engine: scripts/check-compose.py parses both and checks their structure
 * and that the service's configuration in the stack is the shipped one
 * with only the endpoints changed. Each mutation below breaks one rule and
 * must make the check fail, so the check cannot silently pass everything. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYTHON  "/usr/bin/python3"
#define CMD_MAX (3 * PATH_MAX)

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

    ck_assert_msg(f != NULL, "cannot open %s (set PAYCALLBACK_ROOT): %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) != NULL)
        buf[fread(buf, 1, (size_t)n, f)] = '\0';
    fclose(f);
    ck_assert_msg(buf != NULL, "cannot read %s", path);
    return buf;
}

/* Runs scripts/check-compose.py with the given files (NULL: the repo's).
 * Returns its exit status. */
static int check_compose(const char *compose, const char *dockerfile)
{
    char cmd[CMD_MAX];
    int n, st;

    ck_assert_msg(access(PYTHON, X_OK) == 0, "%s is missing: run scripts/deps.sh", PYTHON);
    n = snprintf(cmd, sizeof cmd, "%s '%s/scripts/check-compose.py'", PYTHON, root());
    if (compose != NULL)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " --compose '%s'", compose);
    if (dockerfile != NULL)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " --dockerfile '%s'", dockerfile);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " >&2");
    st = system(cmd);
    ck_assert_msg(st != -1 && WIFEXITED(st), "cannot run %s", cmd);
    return WEXITSTATUS(st);
}

START_TEST(compose_file_and_dockerfile_pass_check_compose)
{
    ck_assert_msg(check_compose(NULL, NULL) == 0,
                  "scripts/check-compose.py failed: see its messages above");
}
END_TEST

/* One rule broken: in file, the first occurrence of from becomes to. */
static const struct mutation {
    const char *file;             /* "docker-compose.yml" or "Dockerfile" */
    const char *from;
    const char *to;
    const char *breaks;
} mutations[] = {
    { "docker-compose.yml", "      PAYCALLBACK_REDIS_PORT: \"6379\"\n",
      "      PAYCALLBACK_REDIS_PORT: \"6379\"\n      PAYCALLBACK_CALLBACK_SECRET: other\n",
      "config differs beyond the endpoints" },
    { "docker-compose.yml", "      PAYCALLBACK_REDIS_PORT: \"6379\"\n",
      "      PAYCALLBACK_REDIS_PORT: \"6379\"\n      PAYCALLBACK_WORKERS: \"4\"\n",
      "config differs beyond the endpoints (a key the file does not set)" },
    { "docker-compose.yml", "PAYCALLBACK_MYSQL_HOST", "PAYCALLBACK_MYSQL_HOTS",
      "misspelt override" },
    { "docker-compose.yml", "PAYCALLBACK_MYSQL_PORT: \"3306\"", "PAYCALLBACK_MYSQL_PORT: \"3307\"",
      "service points at the wrong MySQL port" },
    { "docker-compose.yml", "condition: service_healthy", "condition: service_started",
      "depends_on without health" },
    { "docker-compose.yml", "./sql:/docker-entrypoint-initdb.d:ro", "./sql:/srv/sql:ro",
      "schema not in the init directory" },
    { "docker-compose.yml", "image: mysql:8.0", "image: mysql:5.7", "wrong MySQL" },
    { "docker-compose.yml", "\"mysqladmin\", \"ping\"", "\"true\", \"true\"",
      "MySQL healthcheck" },
    { "docker-compose.yml", "MYSQL_PASSWORD: paycallback", "MYSQL_PASSWORD: other",
      "MySQL user differs from the config's" },
    { "docker-compose.yml", "stop_grace_period: 15s", "stop_grace_period: 5s",
      "SIGKILL before the grace period" },
    { "docker-compose.yml", "\"8080:8080\"", "\"8080:9090\"", "port not published" },
    { "Dockerfile", "USER paycallback:paycallback", "USER root", "runs as root" },
    { "Dockerfile", "FROM debian:12-slim", "FROM ubuntu:24.04", "runtime base" },
    { "Dockerfile", "libhiredis0.14 ", "", "a runtime library missing" },
    { "Dockerfile", "HEALTHCHECK", "# HEALTHCHECK", "no health check" },
};

START_TEST(each_broken_rule_fails_check_compose)
{
    const struct mutation *mu = &mutations[_i];
    char src[PATH_MAX], tmp[] = "/tmp/paycallback-compose-XXXXXX";
    char *text, *hit;
    FILE *f;
    int fd, is_compose = strcmp(mu->file, "docker-compose.yml") == 0;

    snprintf(src, sizeof src, "%s/%s", root(), mu->file);
    text = slurp(src);
    hit = strstr(text, mu->from);
    ck_assert_msg(hit != NULL, "%s no longer contains \"%s\": update this test", mu->file, mu->from);
    ck_assert_msg((fd = mkstemp(tmp)) >= 0, "mkstemp: %s", strerror(errno));
    f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%.*s%s%s", (int)(hit - text), text, mu->to, hit + strlen(mu->from));
    fclose(f);
    free(text);
    ck_assert_msg(check_compose(is_compose ? tmp : NULL, is_compose ? NULL : tmp) != 0,
                  "check-compose.py passed although %s: %s", mu->file, mu->breaks);
    unlink(tmp);
}
END_TEST

static Suite *docker_suite(void)
{
    Suite *s = suite_create("docker");
    TCase *tc = tcase_create("compose and Dockerfile");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, compose_file_and_dockerfile_pass_check_compose);
    tcase_add_loop_test(tc, each_broken_rule_fails_check_compose, 0,
                        (int)(sizeof mutations / sizeof mutations[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(docker_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
