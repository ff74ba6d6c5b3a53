/* harness/tools.c - test tools: command runs and the Python tools. */
#include "../harness.h"
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/wait.h>

#define H_TOOL_ARGS_MAX 16
#define H_TOOL_START_MS 10000

/* The number in the file at path, or 0 while it is missing or empty. */
static int read_int_file(const char *path)
{
    FILE *f = fopen(path, "r");
    int v = 0;

    if (f == NULL)
        return 0;
    if (fscanf(f, "%d", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

void h_tool_start(struct h_tool *t, const char *script, const char *const *extra_args)
{
    char root[PATH_MAX], path[PATH_MAX + 64], portfile[128];
    const char *argv[8 + H_TOOL_ARGS_MAX];
    int n = 0;

    hi_root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/tests/tools/%s", root, script);
    snprintf(t->dir, sizeof t->dir, "/tmp/pcb-tool-XXXXXX");
    ck_assert_msg(mkdtemp(t->dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(t->log, sizeof t->log, "%s/log.jsonl", t->dir);
    snprintf(portfile, sizeof portfile, "%s/port", t->dir);
    size_t len = strlen(script);
    const char *interp = len > 3 && strcmp(script + len - 3, ".js") == 0 ? "node" : "python3";

    argv[n++] = interp;
    argv[n++] = path;
    argv[n++] = "--port-file";
    argv[n++] = portfile;
    argv[n++] = "--log";
    argv[n++] = t->log;
    for (int i = 0; extra_args != NULL && extra_args[i] != NULL; i++) {
        ck_assert_msg(i < H_TOOL_ARGS_MAX, "too many arguments for %s", script);
        argv[n++] = extra_args[i];
    }
    argv[n] = NULL;
    t->port = 0;
    t->pid = fork();
    ck_assert_int_ge(t->pid, 0);
    if (t->pid == 0) {
        execvp(interp, (char *const *)argv);
        _exit(127);
    }
    h_await((t->port = read_int_file(portfile)) > 0, H_TOOL_START_MS, "%s did not start", script);
}

void h_tool_stop(struct h_tool *t)
{
    char cmd[160];

    if (t->pid > 0) {
        kill(t->pid, SIGKILL);
        waitpid(t->pid, NULL, 0);
        t->pid = 0;
    }
    if (t->dir[0] == '\0')
        return;
    snprintf(cmd, sizeof cmd, "rm -rf %s", t->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", t->dir);
    t->dir[0] = '\0';
}

int h_tool_log_lines(const struct h_tool *t, const char *a, const char *b)
{
    FILE *f = fopen(t->log, "r");
    char line[1024];
    int n = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (strstr(line, a) != NULL && (b == NULL || strstr(line, b) != NULL))
            n++;
    fclose(f);
    return n;
}
