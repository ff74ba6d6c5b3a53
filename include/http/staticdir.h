/* staticdir.h - a directory of static documents (the operator console),
 * read into memory once at start: each regular file of the directory whose
 * name is a plain "name.ext" of a known type, with its Content-Type and
 * an ETag of its content. A request names a file of this set or nothing:
 * no request path ever reaches the file system, so none can walk out of
 * the directory. Read-only after staticdir_load, so any thread may look
 * files up. */
#ifndef PAYCALLBACK_STATICDIR_H
#define PAYCALLBACK_STATICDIR_H

#include <stddef.h>

#define STATICDIR_FILES_MAX 64                   /* files a directory may hold */
#define STATICDIR_FILE_MAX_BYTES (256L * 1024)   /* one file */
#define STATICDIR_TOTAL_MAX_BYTES (1024L * 1024) /* all of them */
#define STATICDIR_NAME_MAX 64                    /* a file name and its NUL */
#define STATICDIR_ETAG_MAX 20                    /* "16 hex digits" and the NUL */

struct staticdir_file {
    char name[STATICDIR_NAME_MAX];
    const char *ctype; /* static: "text/javascript; charset=utf-8", ... */
    char *body;        /* the content; NUL-terminated, no NUL inside */
    size_t len;
    char etag[STATICDIR_ETAG_MAX]; /* a strong ETag of the content, quoted */
};

struct staticdir;

/* Reads the documents of the directory at path. Files of another name or
 * type (hidden files, subdirectories, symbolic links, "x.exe") are left
 * out; a document holding a NUL byte, one over STATICDIR_FILE_MAX_BYTES,
 * more than STATICDIR_FILES_MAX of them or more than
 * STATICDIR_TOTAL_MAX_BYTES in all fail the load. Returns the set (free it
 * with staticdir_destroy), or NULL with the reason in err. */
struct staticdir *staticdir_load(const char *path, char *err, size_t errsz);

/* The document called name, or NULL. Any thread. */
const struct staticdir_file *staticdir_find(const struct staticdir *d, const char *name);

/* The number of documents and their bytes in all, for the start's log. */
size_t staticdir_count(const struct staticdir *d, size_t *bytes);

/* 1 when an If-None-Match header value (NULL: none sent) names etag or is
 * "*": the client's copy is current. */
int staticdir_not_modified(const char *if_none_match, const char *etag);

/* NULL-safe. */
void staticdir_destroy(struct staticdir *d);

#endif
