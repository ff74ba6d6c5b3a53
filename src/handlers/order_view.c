/* order_view.c - an orders row as plain data, and the order JSON every
 * order route answers with. */
#include "order_view.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "money.h"
#include "order_state.h"

/* Copies a column that must be a valid identifier. */
static int copy_id(char out[ID_BUF], const char *col)
{
    if (!validate_id(col))
        return -1;
    snprintf(out, ID_BUF, "%.64s", col);          /* validated: at most 64 */
    return 0;
}

int order_view_from_row(const struct db_row *row, struct order_view *o)
{
    char *end = NULL;

    memset(o, 0, sizeof(*o));
    if (copy_id(o->order_no, row->col[OC_ORDER_NO]) != 0 ||
        copy_id(o->user_id, row->col[OC_USER_ID]) != 0 ||
        copy_id(o->request_id, row->col[OC_REQUEST_ID]) != 0 ||
        copy_id(o->sku, row->col[OC_SKU]) != 0)
        goto bad;
    o->quantity = strtoll(row->col[OC_QUANTITY], &end, 10);
    if (end == row->col[OC_QUANTITY] || *end != '\0')
        goto bad;
    if (money_parse(row->col[OC_AMOUNT], &o->amount_cents) != MONEY_OK)
        goto bad;
    o->status = atoi(row->col[OC_STATUS]);
    if (!order_state_valid(o->status))
        goto bad;
    snprintf(o->create_time, sizeof(o->create_time), "%.39s", row->col[OC_CREATE_TIME]);
    snprintf(o->update_time, sizeof(o->update_time), "%.39s", row->col[OC_UPDATE_TIME]);
    return 0;
bad:
    memset(o, 0, sizeof(*o));
    return -1;
}

struct cJSON *order_view_json(const struct order_view *o, bool with_times, int duplicate)
{
    char amount[MONEY_STR_MAX];
    cJSON *j = cJSON_CreateObject();

    if (j == NULL)
        return NULL;
    money_format(o->amount_cents, amount, sizeof(amount));
    if (cJSON_AddStringToObject(j, "order_no", o->order_no) == NULL ||
        cJSON_AddStringToObject(j, "user_id", o->user_id) == NULL ||
        cJSON_AddStringToObject(j, "request_id", o->request_id) == NULL ||
        cJSON_AddStringToObject(j, "sku", o->sku) == NULL ||
        cJSON_AddNumberToObject(j, "quantity", (double)o->quantity) == NULL ||
        cJSON_AddStringToObject(j, "amount", amount) == NULL ||
        cJSON_AddStringToObject(j, "status", order_state_name(o->status)) == NULL)
        goto fail;
    if (with_times &&
        (cJSON_AddStringToObject(j, "create_time", o->create_time) == NULL ||
         cJSON_AddStringToObject(j, "update_time", o->update_time) == NULL))
        goto fail;
    if (duplicate >= 0 && cJSON_AddBoolToObject(j, "duplicate", duplicate != 0) == NULL)
        goto fail;
    return j;
fail:
    cJSON_Delete(j);
    return NULL;
}
