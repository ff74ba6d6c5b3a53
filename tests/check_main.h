/* check_main.h - the one main() of every test binary, in check_main.c. A
 * test file names its suite, and what runs once around the whole run, with
 * CHECK_MAIN; main runs the suite and exits 0 only when every check passed.
 * Work done in setup is seen by every test: Check forks them from the run. */
#ifndef PAYCALLBACK_TEST_CHECK_MAIN_H
#define PAYCALLBACK_TEST_CHECK_MAIN_H

#include <check.h>

struct check_main {
    Suite *(*suite)(void);  /* builds the binary's suite */
    int (*setup)(void);     /* NULL, or once before the run; non-zero exits 1 */
    void (*teardown)(void); /* NULL, or once after the run */
};

/* Each test binary defines it once, with CHECK_MAIN. */
extern const struct check_main check_main;

/* CHECK_MAIN(my_suite, NULL, NULL); at the end of a test file, or with the
 * setup and teardown that frame the run (keys, files). */
#define CHECK_MAIN(suite_fn, setup_fn, teardown_fn) \
    const struct check_main check_main = { (suite_fn), (setup_fn), (teardown_fn) }

#endif
