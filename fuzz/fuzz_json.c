/* fuzz_json.c - libFuzzer target for the request body readers: the input
 * is a body, read as POST /pay/callback and /order/create read theirs
 * (strict JSON object, identifiers, money, a bounded integer). Every
 * refusal must be a 400 with a JSON error; an accepted field must obey
 * the contract. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "http.h"
#include "json_reply.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A refusal: status 400 and a body that is a JSON error. */
static void expect_400(struct http_resp *resp)
{
    cJSON *o;

    if (resp->status != 400 || resp->body == NULL || (o = cJSON_Parse(resp->body)) == NULL)
        abort();
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "code")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "message")))
        abort();
    cJSON_Delete(o);
    free(resp->body);
    memset(resp, 0, sizeof(*resp));
}

static void read_id(const cJSON *obj, const char *name)
{
    struct http_resp resp = { 0 };
    char id[ID_BUF];

    if (json_get_id_or_reply(obj, name, id, &resp) != 0)
        expect_400(&resp);
    else if (!validate_id(id))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct http_resp resp = { 0 };
    char *body = malloc(size + 1);
    cJSON *obj;
    int64_t cents = -1, qty = -1;

    if (body == NULL)
        return 0;
    memcpy(body, data, size);
    body[size] = '\0'; /* as http.c hands bodies over */
    if ((obj = json_parse_object_or_reply(body, size, &resp)) == NULL) {
        expect_400(&resp);
        goto out;
    }
    if (!cJSON_IsObject(obj))
        abort();
    read_id(obj, "order_no");
    read_id(obj, "pay_no");
    read_id(obj, "user_id");
    if (json_get_money_or_reply(obj, "amount", &cents, &resp) != 0)
        expect_400(&resp);
    else if (cents < 0)
        abort();
    if (json_get_int_or_reply(obj, "quantity", 1, 1000, &qty, &resp) != 0)
        expect_400(&resp);
    else if (qty < 1 || qty > 1000)
        abort();
    cJSON_Delete(obj);
out:
    free(resp.body);
    free(body);
    return 0;
}
