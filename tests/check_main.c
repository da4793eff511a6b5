/* main() of every Check suite; the contract is in check_main.h. */
#include "check_main.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	SRunner *sr = srunner_create(NULL);
	int failed;

	unit_add_suites(sr);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	/* a suite file that added nothing would otherwise pass */
	if (srunner_ntests_run(sr) == 0) {
		fprintf(stderr, "no test ran\n");
		failed = 1;
	}
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
