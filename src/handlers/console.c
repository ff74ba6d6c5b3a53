/* console.c - GET /console/ and /console/{file}: the operator console's
 * documents (HTML, CSS, JavaScript modules), read from console.dir at
 * start (staticdir.h), each with its ETag, revalidated on every load
 * (Cache-Control: no-cache, 304 when unchanged) and sent under the
 * console's Content-Security-Policy. The console calls the operator API
 * with the key the operator signs in with; these routes need none. */
#include "api_error.h"
#include "handlers.h"
#include "server.h"
#include "staticdir.h"

/* Scripts, styles and calls to the API from this origin only; nothing
 * inline, nothing framed, no plug-in, no form posted elsewhere. */
#define CONSOLE_CSP                                                                \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "    \
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; " \
    "frame-ancestors 'none'"
#define CONSOLE_CACHE "no-cache" /* revalidated each load: an upgrade shows at once */

static void serve(struct server *srv, const struct http_req *req, struct http_resp *resp,
                  const char *name)
{
    const struct staticdir_file *f = staticdir_find(srv->console, name);

    if (srv->console == NULL) {
        api_reply(resp, API_NOT_FOUND, "the console is off: console.dir is not set or unreadable");
        return;
    }
    if (f == NULL) {
        api_reply(resp, API_NOT_FOUND, "no such console document");
        return;
    }
    http_reply_document(resp, f->ctype, f->body, f->len, f->etag, CONSOLE_CACHE, CONSOLE_CSP,
                        staticdir_not_modified(http_req_header(req, "If-None-Match"), f->etag));
}

void handle_console_index(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    serve(srv, req, resp, "index.html");
}

void handle_console_file(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    serve(srv, req, resp, req->param);
}
