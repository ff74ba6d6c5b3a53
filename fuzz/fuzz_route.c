/* fuzz_route.c - libFuzzer target for routing: the input is "METHOD path"
 * as a client sends it. http_route_lookup must pick a route whose method
 * fits and whose {param} is one plain segment, or answer 400/404/405/414 with
 * a JSON error (405 with an Allow list); never another resource. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "http_route.h"
#include "router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct http_resp resp = { 0 };
    char *in = malloc(size + 1), *sp, param[HTTP_PARAM_MAX] = "", allow[64];
    const struct http_route *routes;
    size_t n;
    int r;

    if (in == NULL)
        return 0;
    memcpy(in, data, size);
    in[size] = '\0';
    if ((sp = strchr(in, ' ')) == NULL)
        goto out;
    *sp = '\0';
    routes = router_routes(&n);
    r = http_route_lookup(routes, n, in, sp + 1, param, &resp, allow, sizeof(allow));
    if (r >= 0) {
        if ((size_t)r >= n || resp.body != NULL)
            abort();
        if (strcmp(routes[r].method, in) != 0 &&
            !(strcmp(in, "HEAD") == 0 && strcmp(routes[r].method, "GET") == 0))
            abort(); /* a method the route does not take */
        if (strchr(routes[r].pattern, '{') != NULL &&
            (param[0] == '\0' || strchr(param, '/') != NULL))
            abort(); /* {param} is one non-empty segment */
    } else if (resp.body == NULL || resp.body[0] != '{' ||
               (resp.status != 400 && resp.status != 404 && resp.status != 405 &&
                resp.status != 414) ||
               (resp.status == 405 && allow[0] == '\0')) {
        abort();
    }
out:
    free(resp.body);
    free(in);
    return 0;
}
