/*
 * Shared by the spec suite's files (tests/test_spec*.c): the defaults every load uses, and
 * helpers that load specs and look at trees through the resolver, the tree API or a dump.
 * Each file adds its tests to the suite's test cases; test_spec.c makes the suite.
 */
#ifndef CHAINFS_TEST_SPEC_H
#define CHAINFS_TEST_SPEC_H

#include "inroot.h"
#include "rs.h"
#include "spec.h"
#include "tree.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

extern const struct cfs_spec_defaults def;

/* ck_assert_msg records a mark point per call (a pipe write): too slow for 100k-node loops */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg(__VA_ARGS__);                                                 \
	} while (0)

struct cfs_tree *load_into(struct cfs_tree *t, const char *text);
struct cfs_tree *load(const char *text);
struct rs_ctx ctx_for(const struct cfs_tree *t, struct rs_limits limits);
extern const struct rs_limits big_limits;
int resolve_with(const struct cfs_tree *t, const char *path, struct rs_limits limits,
		 unsigned flags, struct rs_result *res);
uint32_t follow(const struct cfs_tree *t, const char *path);
uint32_t node(const struct cfs_tree *t, const char *path);
int follow_err(const struct cfs_tree *t, const char *path);
char *target_of(const struct cfs_tree *t, const char *path);
char *content_of(const struct cfs_tree *t, uint32_t id);
void assert_link(const struct cfs_tree *t, const char *path, const char *target);
char *dump_of(const struct cfs_tree *t);
char *canon(const struct cfs_tree *t, bool times);
uint64_t node_count(const struct cfs_tree *t);

/* Each file's tests, added to the test cases spec_suite() made. */
void spec_make_tests(TCase *kw, TCase *atomic);
void spec_gen_tests(TCase *gen);
void spec_lex_tests(TCase *bad);
void spec_dump_tests(TCase *dump, TCase *dflt);
void spec_materialize_tests(TCase *mat, TCase *dump);

#endif
