/* api_error.c - the table of api_error.h, and replying with one of its
 * codes. */
#include "api_error.h"

#include "http.h"

struct api_error_row {
    const char *code;
    int status;
    const char *message;
};

static const struct api_error_row rows[API_ERROR_COUNT] = {
#define API_ERROR_ROW(name, status, message) [API_##name] = { #name, status, message },
    API_ERRORS(API_ERROR_ROW)
#undef API_ERROR_ROW
};

static const struct api_error_row *row(enum api_error e)
{
    return (unsigned)e < API_ERROR_COUNT ? &rows[e] : &rows[API_INTERNAL];
}

const char *api_error_code(enum api_error e)
{
    return row(e)->code;
}

int api_error_status(enum api_error e)
{
    return row(e)->status;
}

const char *api_error_message(enum api_error e)
{
    return row(e)->message;
}

void api_reply(struct http_resp *resp, enum api_error e, const char *message)
{
    const struct api_error_row *r = row(e);

    if (message == NULL)
        message = r->message;
    if (r->status == 503)
        http_reply_retry(resp, r->code, message, 1);
    else
        http_reply_error(resp, r->status, r->code, message);
}
