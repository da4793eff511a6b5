/*
 * The one main() of the Check suites (tests/check_main.c). A suite file defines
 * unit_add_suites(): it does what its tests need before any of them runs (a limit raised, a
 * seed read from the environment) and adds its suite or suites to SR. main() then runs them
 * as Check always does: each test in a child process unless CK_FORK=no, each bounded by its
 * case's timeout or CK_DEFAULT_TIMEOUT, the output that CK_VERBOSITY asks for (Check's normal
 * one when unset: the "N%: Checks: ..." line tools/check-summary.sh counts, then a line per
 * failure). The exit status is 0 if every test passed, 1 if one failed or none ran.
 */
#ifndef CHAINFS_CHECK_MAIN_H
#define CHAINFS_CHECK_MAIN_H

#include <check.h>

void unit_add_suites(SRunner *sr);

#endif
