/* check_main.c - main() of every unit and integration test binary: the
 * suite that the test file names with CHECK_MAIN, between its setup and
 * teardown. Exits 1 when a check fails or the setup refuses. */
#include <stddef.h>

#include "check_main.h"

int main(void)
{
    SRunner *sr;
    int failed;

    if (check_main.setup != NULL && check_main.setup() != 0)
        return 1;
    sr = srunner_create(check_main.suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (check_main.teardown != NULL)
        check_main.teardown();
    return failed ? 1 : 0;
}
