/* fuzz_query.c - libFuzzer target for the answer of a query endpoint
 * (query_parse_answer): the input is the body of a 200, about order O1.
 * Whatever it holds, the parser must not crash, and what it accepts must
 * obey the contract: PAID only with an identifier, an amount above zero
 * and a known currency; nothing else carries a payment. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "currency.h"
#include "query.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct query_answer ans;
    char *body = malloc(size + 1), why[160];
    enum query_status st;

    if (body == NULL)
        return 0;
    memcpy(body, data, size);
    body[size] = '\0';
    st = query_parse_answer(body, size, "O1", &ans, why, sizeof(why));
    if (st != ans.status || st > QUERY_MALFORMED)
        abort();
    if (st == QUERY_PAID) {
        if (!validate_id(ans.pay_no) || ans.amount_cents <= 0 ||
            currency_exponent(ans.currency) < 0)
            abort();
    } else if (ans.pay_no[0] != '\0' || ans.amount_cents != 0) {
        abort();
    }
    if (st == QUERY_MALFORMED && why[0] == '\0')
        abort();
    free(body);
    return 0;
}
