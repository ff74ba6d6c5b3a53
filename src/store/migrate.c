/* migrate.c - applies the numbered migrations of sql/migrations/ (embedded
 * by scripts/gen-migrations.sh) and reads a database's schema version.
 *
 * A migration file is read as the mariadb client reads it: a statement
 * ends with the delimiter (";" unless a "DELIMITER x" line changed it) at
 * the end of a line; lines starting with "--" between statements are
 * comments. So the same file runs through `mariadb db < file` (how the
 * development servers are provisioned) and through this runner. */
#include "migrate.h"

#include <errmsg.h>
#include <mysql.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "array.h"
#include "config.h"

struct migration {
    int version;
    const char *name;
    const char *sql;
};

#include "migrations.h" /* generated: migration_table_sql, migrations[] */

#define NMIGRATIONS (ARRAY_SIZE(migrations))
#define MIGRATE_IO_S 3600 /* an ALTER of a large table may take long */
#define MIGRATE_DELIM_MAX 16

int migrate_latest(void)
{
    return migrations[NMIGRATIONS - 1].version;
}

/* A session of its own, as the pool's but without its short I/O timeout:
 * NULL with the reason in err and *unreachable set when MySQL did not
 * answer at all. */
static MYSQL *connect_at(const struct config *cfg, const struct cfg_shard *at, bool *unreachable,
                         char *err, size_t errsz)
{
    unsigned int connect_s = (unsigned int)(cfg->mysql_connect_timeout_ms + 999) / 1000;
    unsigned int io_s = MIGRATE_IO_S;
    MYSQL *my = mysql_init(NULL);

    *unreachable = false;
    if (my == NULL) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    mysql_options(my, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_options(my, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_options(my, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    mysql_options(my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_options(my, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
    if (cfg->mysql_init_command[0] != '\0')
        mysql_options(my, MYSQL_INIT_COMMAND, cfg->mysql_init_command);
    if (mysql_real_connect(my, at->host, cfg->mysql_user, cfg->mysql_password, at->database,
                           (unsigned int)at->port, NULL, 0) == NULL) {
        unsigned int e = mysql_errno(my);
        snprintf(err, errsz, "cannot connect: %s (errno %u)", mysql_error(my), e);
        *unreachable = e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR ||
                       e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_UNKNOWN_HOST;
        mysql_close(my);
        return NULL;
    }
    return my;
}

/* One statement; any result set is read and dropped. 0 or -1. */
static int exec_sql(MYSQL *my, const char *sql, size_t len)
{
    MYSQL_RES *res;

    if (mysql_real_query(my, sql, (unsigned long)len) != 0)
        return -1;
    if ((res = mysql_store_result(my)) != NULL)
        mysql_free_result(res);
    return mysql_field_count(my) > 0 && res == NULL ? -1 : 0;
}

/* Runs the statements of one file (see the top of this file). *count
 * gets the statements run. 0, or -1 with the failing statement's first
 * line number and the server's error in err. */
static int run_script(MYSQL *my, const char *text, int *count, char *err, size_t errsz)
{
    char delim[MIGRATE_DELIM_MAX] = ";";
    size_t cap = 4096, len = 0, dl = 1;
    char *stmt = malloc(cap);
    const char *p = text;
    int line = 0, first = 0, rc = -1;

    *count = 0;
    if (stmt == NULL) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    while (*p != '\0') {
        const char *eol = strchr(p, '\n');
        size_t n = eol != NULL ? (size_t)(eol - p) : strlen(p);
        const char *t = p, *e = p + n;

        line++;
        while (t < e && (*t == ' ' || *t == '\t' || *t == '\r'))
            t++;
        while (e > t && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
            e--;
        if (len == 0 && (t == e || (e - t >= 2 && t[0] == '-' && t[1] == '-')))
            goto next;
        if (len == 0 && e - t > 10 && strncasecmp(t, "DELIMITER ", 10) == 0) {
            const char *d = t + 10;
            while (d < e && *d == ' ')
                d++;
            if (d == e || (size_t)(e - d) >= sizeof(delim)) {
                snprintf(err, errsz, "line %d: bad DELIMITER line", line);
                goto out;
            }
            dl = (size_t)(e - d);
            memcpy(delim, d, dl);
            delim[dl] = '\0';
            goto next;
        }
        if (len == 0)
            first = line;
        if (len + n + 2 > cap) {
            char *grown;
            while (len + n + 2 > cap)
                cap *= 2;
            if ((grown = realloc(stmt, cap)) == NULL) {
                snprintf(err, errsz, "out of memory");
                goto out;
            }
            stmt = grown;
        }
        memcpy(stmt + len, p, n);
        len += n;
        stmt[len++] = '\n';
        /* A comment line inside a statement never ends it. */
        if (!(e - t >= 2 && t[0] == '-' && t[1] == '-') && (size_t)(e - t) >= dl &&
            memcmp(e - dl, delim, dl) == 0) {
            size_t end = (size_t)(e - p) + (len - n - 1) - dl; /* offset of the delimiter */
            if (exec_sql(my, stmt, end) != 0) {
                snprintf(err, errsz, "statement at line %d: %s (errno %u)", first, mysql_error(my),
                         mysql_errno(my));
                goto out;
            }
            ++*count;
            len = 0;
        }
    next:
        p = eol != NULL ? eol + 1 : p + n;
    }
    if (len > 0) {
        snprintf(err, errsz, "statement at line %d has no closing \"%s\"", first, delim);
        goto out;
    }
    rc = 0;
out:
    free(stmt);
    return rc;
}

/* The version recorded in the connected database: 0 when nothing is (no
 * schema_migrations table, or an empty one). -1 on a gap in the history
 * or an error, with the reason in err. */
static int read_version(MYSQL *my, int *version, char *err, size_t errsz)
{
    static const char sql[] = "SELECT COUNT(*), COALESCE(MAX(version), 0) FROM schema_migrations";
    MYSQL_RES *res;
    MYSQL_ROW row;
    long count, max;

    *version = 0;
    if (mysql_real_query(my, sql, sizeof(sql) - 1) != 0) {
        if (mysql_errno(my) == 1146) /* ER_NO_SUCH_TABLE: made before migrations */
            return 0;
        snprintf(err, errsz, "cannot read schema_migrations: %s", mysql_error(my));
        return -1;
    }
    if ((res = mysql_store_result(my)) == NULL || (row = mysql_fetch_row(res)) == NULL ||
        row[0] == NULL || row[1] == NULL) {
        snprintf(err, errsz, "cannot read schema_migrations: %s", mysql_error(my));
        if (res != NULL)
            mysql_free_result(res);
        return -1;
    }
    count = strtol(row[0], NULL, 10);
    max = strtol(row[1], NULL, 10);
    mysql_free_result(res);
    if (count != max) {
        snprintf(err, errsz,
                 "schema_migrations holds %ld versions up to %ld: a migration is "
                 "missing from its history",
                 count, max);
        return -1;
    }
    *version = (int)max;
    return 0;
}

enum migrate_state migrate_check(const struct config *cfg, const struct cfg_shard *at, int *version,
                                 char *err, size_t errsz)
{
    enum migrate_state st = MIGRATE_ERROR;
    bool unreachable;
    MYSQL *my;

    *version = 0;
    err[0] = '\0';
    if ((my = connect_at(cfg, at, &unreachable, err, errsz)) == NULL)
        return unreachable ? MIGRATE_UNREACHABLE : MIGRATE_ERROR;
    if (read_version(my, version, err, errsz) != 0)
        goto out;
    if (*version < migrate_latest()) {
        st = MIGRATE_BEHIND;
        snprintf(err, errsz,
                 "schema version %d%s, this build runs on version %d: run "
                 "`paycallback migrate` (with the same -c)",
                 *version, *version == 0 ? " (none recorded)" : "", migrate_latest());
    } else if (*version > migrate_latest()) {
        st = MIGRATE_AHEAD;
        snprintf(err, errsz,
                 "schema version %d is newer than this build's %d: run a "
                 "paycallback built with migration %04d or later",
                 *version, migrate_latest(), *version);
    } else {
        st = MIGRATE_CURRENT;
    }
out:
    mysql_close(my);
    return st;
}

/* Applies what one endpoint lacks. Returns the exit status (see
 * migrate_run). */
static int migrate_one(const struct config *cfg, const struct cfg_shard *at, FILE *out, FILE *errf)
{
    char err[512], where[200], rec[256];
    bool unreachable;
    int version, n, rc = 1;
    MYSQL *my;

    snprintf(where, sizeof(where), "mysql %s:%d/%s", at->host, at->port, at->database);
    if ((my = connect_at(cfg, at, &unreachable, err, sizeof(err))) == NULL) {
        fprintf(errf, "paycallback: %s: %s\n", where, err);
        return 1;
    }
    if (run_script(my, migration_table_sql, &n, err, sizeof(err)) != 0) {
        fprintf(errf, "paycallback: %s: schema_migrations: %s\n", where, err);
        goto out;
    }
    if (read_version(my, &version, err, sizeof(err)) != 0) {
        fprintf(errf, "paycallback: %s: %s\n", where, err);
        goto out;
    }
    if (version > migrate_latest()) {
        fprintf(errf,
                "paycallback: %s: schema version %d is newer than this build's %d; "
                "nothing applied\n",
                where, version, migrate_latest());
        rc = 2;
        goto out;
    }
    if (version == migrate_latest())
        fprintf(out, "%s: schema version %d, nothing to apply\n", where, version);
    for (size_t i = 0; i < NMIGRATIONS; i++) {
        const struct migration *m = &migrations[i];
        if (m->version <= version)
            continue;
        if (run_script(my, m->sql, &n, err, sizeof(err)) != 0) {
            fprintf(errf,
                    "paycallback: %s: migration %s: %s; nothing recorded, the next "
                    "migrate runs it again from its start\n",
                    where, m->name, err);
            goto out;
        }
        /* INSERT IGNORE: a migrate running beside this one may have
         * recorded it first (both ran the same re-runnable statements). */
        snprintf(rec, sizeof(rec),
                 "INSERT IGNORE INTO schema_migrations (version, name) "
                 "VALUES (%d, '%s')",
                 m->version, m->name);
        if (exec_sql(my, rec, strlen(rec)) != 0) {
            fprintf(errf, "paycallback: %s: cannot record migration %s: %s\n", where, m->name,
                    mysql_error(my));
            goto out;
        }
        fprintf(out, "%s: applied %s (%d statements), schema version %d\n", where, m->name, n,
                m->version);
    }
    rc = 0;
out:
    mysql_close(my);
    return rc;
}

int migrate_run(const struct config *cfg, FILE *out, FILE *errf)
{
    struct cfg_shard at[CFG_SHARDS_MAX];
    size_t i, n = cfg_endpoints(cfg, at);
    int rc;

    for (i = 0; i < n; i++)
        if ((rc = migrate_one(cfg, &at[i], out, errf)) != 0)
            return rc;
    return 0;
}
