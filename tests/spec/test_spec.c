/*
 * The spec language: each keyword, errors with their exact place, the generators' shapes
 * checked with the resolver, dump round trips, materialize, and atomic lines under injected
 * allocation failures. One file per part of the module (test_spec_lex.c, _make.c, _gen.c,
 * _dump.c, _materialize.c) adds its tests; this one makes the suite and runs it.
 */
#include "test_spec.h"

#include "check_main.h"

#include <check.h>
#include <stdlib.h>

static Suite *spec_suite(void)
{
	Suite *s = suite_create("spec");
	TCase *kw = tcase_create("keywords"), *gen = tcase_create("generators");
	TCase *bad = tcase_create("errors"), *atomic = tcase_create("atomic");
	TCase *dump = tcase_create("dump"), *dflt = tcase_create("default");
	TCase *mat = tcase_create("materialize");

	spec_make_tests(kw, atomic);
	spec_gen_tests(gen);
	spec_lex_tests(bad);
	spec_dump_tests(dump, dflt);
	spec_materialize_tests(mat, dump);
	tcase_set_timeout(gen, 60);
	tcase_set_timeout(atomic, 300);
	tcase_set_timeout(dump, 300);
	tcase_set_timeout(dflt, 120);
	tcase_set_timeout(mat, 600);
	suite_add_tcase(s, kw);
	suite_add_tcase(s, gen);
	suite_add_tcase(s, bad);
	suite_add_tcase(s, atomic);
	suite_add_tcase(s, dump);
	suite_add_tcase(s, dflt);
	suite_add_tcase(s, mat);
	return s;
}

void unit_add_suites(SRunner *sr)
{
	srunner_add_suite(sr, spec_suite());
}
