/*
 * Shared by the tree's Check suite (tests/test_tree*.c, one binary): the counting allocator,
 * the fixture, the helpers and the canonical dump (tests/test_tree_fixture.c), and each file's
 * test cases. The files follow the module's seams: test_tree_entry.c (creation, names,
 * orphans, readdir), test_tree_rename.c (links, removal, rename), test_tree_data.c (content,
 * the metadata limit), test_tree_attr.c (attributes, permissions, the resolver, stats),
 * test_tree_alloc.c (allocation failure), test_tree_undo.c (the journal), test_tree_xattr.c
 * (extended attributes), test_tree.c (scale, the suite and main).
 */
#ifndef CHAINFS_TEST_TREE_H
#define CHAINFS_TEST_TREE_H

#include "tree.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h> /* RENAME_NOREPLACE, RENAME_EXCHANGE */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#define RENAME_WHITEOUT_FLAG (1 << 2) /* not supported by the tree */

/* ---- tests/test_tree_fixture.c ---- */

/* the counting allocator: blocks live, and the call to fail (ca_arm) */
extern long ca_live;
extern const struct cfs_alloc CA;
void ca_arm(long fail_at, bool rest);
/* the fixture: each test's tree T on CA, checked for leaks by teardown */
extern struct cfs_tree *T;
extern const struct cfs_new A;
extern const struct cfs_new AF;
void setup(void);
void teardown(void);
/* the helpers (each one's comment in tests/test_tree_fixture.c) */
uint32_t mkd(struct cfs_tree *t, uint32_t dir, const char *name);
uint32_t mkf(struct cfs_tree *t, uint32_t dir, const char *name);
uint32_t mkl(struct cfs_tree *t, uint32_t dir, const char *name, const char *target);
int lk(struct cfs_tree *t, uint32_t id, uint32_t dir, const char *name);
int find(const struct cfs_tree *t, uint32_t dir, const char *name, uint32_t *out);
uint32_t at(const struct cfs_tree *t, uint32_t dir, const char *name);
int rm(struct cfs_tree *t, uint32_t dir, const char *name);
int rmd(struct cfs_tree *t, uint32_t dir, const char *name);
int mv(struct cfs_tree *t, uint32_t od, const char *on, uint32_t nd, const char *nn,
       unsigned flags);
struct stat st_of(const struct cfs_tree *t, uint32_t id);
struct cfs_tree_stats stats_of(const struct cfs_tree *t);
char *name_of(const struct cfs_tree *t, uint32_t id);
void assert_content(const struct cfs_tree *t, uint32_t id, const char *want, size_t len);
int resolve(struct cfs_tree *t, const char *path, unsigned flags, const struct rs_cred *cred,
	    uint64_t *node);
char *listing(const struct cfs_tree *t, uint32_t dir);
/* everything observable, for "the tree is exactly as before"; caller frees */
char *dump(const struct cfs_tree *t, const uint32_t *extra, int nextra);

/* ---- each file's test cases, in the suite's order ---- */

void tree_tcase_create(TCase *tc);	  /* test_tree_entry.c */
void tree_tcase_link(TCase *tc);	  /* test_tree_rename.c */
void tree_tcase_remove(TCase *tc);	  /* test_tree_rename.c */
void tree_tcase_orphans(TCase *tc);	  /* test_tree_entry.c */
void tree_tcase_readdir(TCase *tc);	  /* test_tree_entry.c */
void tree_tcase_rename(TCase *tc);	  /* test_tree_rename.c */
void tree_tcase_content(TCase *tc);	  /* test_tree_data.c */
void tree_tcase_holes(TCase *tc);	  /* test_tree_holes.c */
void tree_tcase_attributes(TCase *tc);	  /* test_tree_attr.c */
void tree_tcase_resolver(TCase *tc);	  /* test_tree_attr.c */
void tree_tcase_stats(TCase *tc);	  /* test_tree_attr.c */
void tree_tcase_alloc_failure(TCase *tc); /* test_tree_alloc.c */
void tree_tcase_journal(TCase *tc);	  /* test_tree_undo.c */
void tree_tcase_xattr(TCase *tc);	  /* test_tree_xattr.c */

#endif
