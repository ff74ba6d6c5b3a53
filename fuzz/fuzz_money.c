/* fuzz_money.c - libFuzzer target for money_parse_n, the reader of every
 * amount a client sends. An accepted string must be in range and survive a
 * format/parse round trip unchanged; a refused one must leave 0 behind. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "money.h"

#define MONEY_CENTS_MAX 999999999999LL /* 9999999999.99 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char buf[MONEY_STR_MAX];
    int64_t cents = -1, again = -1;

    if (money_parse_n((const char *)data, size, &cents) != MONEY_OK) {
        if (cents != 0)
            abort(); /* a failure resets the out-param */
        return 0;
    }
    if (cents < 0 || cents > MONEY_CENTS_MAX)
        abort();
    money_format(cents, buf, sizeof(buf));
    if (money_parse(buf, &again) != MONEY_OK || again != cents)
        abort();
    return 0;
}
