/* staticdir.c - the documents of one directory, read into memory at start
 * with their type and ETag; looked up by exact name afterwards. Nothing
 * here runs on a request but the lookup. */
#include "staticdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"

struct staticdir {
    struct staticdir_file f[STATICDIR_FILES_MAX];
    size_t n;
    size_t bytes;
};

/* The types a document may have, by extension. Nothing else is served: a
 * file of another type in the directory is not the console's. */
static const struct {
    const char *ext;
    const char *ctype;
} types[] = {
    { "html", "text/html; charset=utf-8" },     { "css", "text/css; charset=utf-8" },
    { "js", "text/javascript; charset=utf-8" }, { "svg", "image/svg+xml" },
    { "txt", "text/plain; charset=utf-8" },
};

/* The Content-Type of a plain "name.ext" ([A-Za-z0-9_-] then one dot and a
 * known extension), or NULL for any other name. */
static const char *type_of(const char *name)
{
    size_t stem = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-");

    if (stem == 0 || name[stem] != '.' || strlen(name) >= STATICDIR_NAME_MAX)
        return NULL;
    for (size_t i = 0; i < ARRAY_SIZE(types); i++)
        if (strcmp(name + stem + 1, types[i].ext) == 0)
            return types[i].ctype;
    return NULL;
}

/* FNV-1a, 64 bits: an ETag changes with the content, and that is all it
 * has to do. */
static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Reads the regular file name of the directory dfd into f. 0, 1 when it
 * is not a regular file (left out), or -1 with err set. */
static int read_file(int dfd, const char *name, struct staticdir_file *f, char *err, size_t errsz)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    ssize_t got;
    size_t off = 0, namelen;

    if (fd < 0 && errno == ELOOP)
        return 1; /* a symbolic link */
    if (fd < 0) {
        snprintf(err, errsz, "cannot open %s: %s", name, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return 1;
    }
    if (st.st_size > STATICDIR_FILE_MAX_BYTES) {
        snprintf(err, errsz, "%s is over %ld bytes", name, STATICDIR_FILE_MAX_BYTES);
        close(fd);
        return -1;
    }
    if ((f->body = malloc((size_t)st.st_size + 1)) == NULL) {
        snprintf(err, errsz, "out of memory reading %s", name);
        close(fd);
        return -1;
    }
    while (off < (size_t)st.st_size &&
           (got = read(fd, f->body + off, (size_t)st.st_size - off)) > 0)
        off += (size_t)got;
    close(fd);
    f->body[off] = '\0';
    if (off != (size_t)st.st_size || memchr(f->body, '\0', off) != NULL) {
        snprintf(err, errsz, "%s changed while read, or holds a NUL byte", name);
        free(f->body);
        f->body = NULL;
        return -1;
    }
    f->len = off;
    /* type_of admitted only names shorter than f->name; the copy says so
     * to the compiler too, which cannot see that bound through readdir. */
    namelen = strnlen(name, sizeof(f->name) - 1);
    memcpy(f->name, name, namelen);
    f->name[namelen] = '\0';
    snprintf(f->etag, sizeof(f->etag), "\"%016llx\"", (unsigned long long)fnv1a(f->body, off));
    return 0;
}

struct staticdir *staticdir_load(const char *path, char *err, size_t errsz)
{
    struct staticdir *d = calloc(1, sizeof(*d));
    DIR *dir = opendir(path);
    struct dirent *e;
    const char *ctype;
    int rc;

    if (d == NULL || dir == NULL) {
        snprintf(err, errsz, "cannot read the directory %s: %s", path,
                 d == NULL ? "out of memory" : strerror(errno));
        goto fail;
    }
    while ((e = readdir(dir)) != NULL) {
        if ((ctype = type_of(e->d_name)) == NULL)
            continue;
        if (d->n == STATICDIR_FILES_MAX) {
            snprintf(err, errsz, "%s holds more than %d documents", path, STATICDIR_FILES_MAX);
            goto fail;
        }
        if ((rc = read_file(dirfd(dir), e->d_name, &d->f[d->n], err, errsz)) < 0)
            goto fail;
        if (rc > 0)
            continue;
        d->f[d->n].ctype = ctype;
        d->bytes += d->f[d->n++].len;
        if (d->bytes > (size_t)STATICDIR_TOTAL_MAX_BYTES) {
            snprintf(err, errsz, "%s holds more than %ld bytes of documents", path,
                     STATICDIR_TOTAL_MAX_BYTES);
            goto fail;
        }
    }
    closedir(dir);
    return d;
fail:
    if (dir != NULL)
        closedir(dir);
    staticdir_destroy(d);
    return NULL;
}

const struct staticdir_file *staticdir_find(const struct staticdir *d, const char *name)
{
    if (d == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->f[i].name, name) == 0)
            return &d->f[i];
    return NULL;
}

size_t staticdir_count(const struct staticdir *d, size_t *bytes)
{
    *bytes = d != NULL ? d->bytes : 0;
    return d != NULL ? d->n : 0;
}

/* If-None-Match is "*" or a comma-separated list of ETags, each maybe
 * weak (W/"..."): a weak match is enough for a GET. */
int staticdir_not_modified(const char *if_none_match, const char *etag)
{
    const char *p = if_none_match;
    size_t n = strlen(etag);

    if (p == NULL)
        return 0;
    while (*p != '\0') {
        p += strspn(p, " \t,");
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (strncmp(p, etag, n) == 0 && (p[n] == '\0' || strchr(" \t,", p[n]) != NULL))
            return 1;
        p += strcspn(p, ",");
    }
    return 0;
}

void staticdir_destroy(struct staticdir *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->n; i++)
        free(d->f[i].body);
    free(d);
}
