/* order_view.c - the order JSON every order route answers with. */
#include "order_view.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "money.h"
#include "order_state.h"

struct cJSON *order_view_json(const struct order_view *o, bool with_times, int duplicate)
{
    char amount[MONEY_STR_MAX];
    cJSON *j = cJSON_CreateObject();

    if (j == NULL)
        return NULL;
    money_format(o->amount_cents, amount, sizeof(amount));
    if (cJSON_AddStringToObject(j, "order_no", o->order_no) == NULL ||
        cJSON_AddStringToObject(j, "user_id", o->user_id) == NULL ||
        cJSON_AddStringToObject(j, "request_id", o->checkout_id) == NULL ||
        cJSON_AddStringToObject(j, "sku", o->sku) == NULL ||
        cJSON_AddNumberToObject(j, "quantity", (double)o->quantity) == NULL ||
        cJSON_AddStringToObject(j, "amount", amount) == NULL ||
        cJSON_AddStringToObject(j, "status", order_state_name(o->status)) == NULL)
        goto fail;
    if (with_times && (cJSON_AddStringToObject(j, "create_time", o->create_time) == NULL ||
                       cJSON_AddStringToObject(j, "update_time", o->update_time) == NULL))
        goto fail;
    if (duplicate >= 0 && cJSON_AddBoolToObject(j, "duplicate", duplicate != 0) == NULL)
        goto fail;
    return j;
fail:
    cJSON_Delete(j);
    return NULL;
}
