/*
 * Attributes and queries (tree/tree.c): chmod, chown, times, set-id bits, permissions, the
 * resolver over the tree, stats.
 */
#include "test_tree.h"

/* ---- attributes ---- */

START_TEST(test_chmod_keeps_kind_and_stamps_ctime)
{
	uint32_t d = mkd(T, CFS_ROOT, "d");
	struct timespec old = {5, 0};

	ck_assert_int_eq(cfs_tree_set_times(T, d, &old, &old, &old), 0);
	ck_assert_int_eq(cfs_tree_chmod(T, d, S_IFREG | 04711), 0);
	ck_assert_uint_eq(st_of(T, d).st_mode, S_IFDIR | 04711);
	ck_assert_int_gt(st_of(T, d).st_ctim.tv_sec, 5);
	ck_assert_int_eq(st_of(T, d).st_mtim.tv_sec, 5);
}
END_TEST

START_TEST(test_chown_minus_one_keeps_a_field)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_chown(T, f, 7, (gid_t)-1), 0);
	ck_assert_uint_eq(st_of(T, f).st_uid, 7);
	ck_assert_uint_eq(st_of(T, f).st_gid, 1000);
	ck_assert_int_eq(cfs_tree_chown(T, f, (uid_t)-1, 9), 0);
	ck_assert_uint_eq(st_of(T, f).st_uid, 7);
	ck_assert_uint_eq(st_of(T, f).st_gid, 9);
}
END_TEST

/* mode before, the writer's groups (primary 5, or 1000 = the file's, plus 1000 as a
 * supplementary one), mode after: tmpfs's setattr_should_drop_suidgid */
static const struct {
	unsigned before;
	gid_t gid;
	bool supplementary;
	unsigned after;
} drop_cases[] = {
    {02666, 5, false, 0666},	 /* outside the group, no group execute: dropped */
    {02666, 1000, false, 02666}, /* inside it: kept */
    {02666, 5, true, 02666},	 /* inside it by a supplementary group: kept */
    {02676, 1000, false, 0676},	 /* group-executable: dropped even for a member */
    {04666, 1000, false, 0666},	 /* set-uid: always dropped */
    {06676, 5, true, 0676},	 {0666, 5, false, 0666}, /* nothing to drop */
};

START_TEST(test_write_drops_setid_bits_as_tmpfs)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	gid_t extra = 1000;
	struct rs_cred writer = {1234, drop_cases[_i].gid, NULL, 0};

	if (drop_cases[_i].supplementary)
		writer = (struct rs_cred){1234, drop_cases[_i].gid, &extra, 1};
	ck_assert_int_eq(cfs_tree_chmod(T, f, drop_cases[_i].before), 0);
	ck_assert(cfs_tree_drop_setid(T, f, &writer) ==
		  (drop_cases[_i].before != drop_cases[_i].after));
	ck_assert_uint_eq(st_of(T, f).st_mode & 07777, drop_cases[_i].after);
}
END_TEST

START_TEST(test_root_and_non_files_keep_setid_bits)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), d = mkd(T, CFS_ROOT, "d");
	struct rs_cred other = {1234, 5, NULL, 0};

	cfs_tree_chmod(T, f, 06777);
	cfs_tree_chmod(T, d, 02777);
	ck_assert(!cfs_tree_drop_setid(T, f, NULL)); /* root */
	ck_assert(!cfs_tree_drop_setid(T, d, &other));
	ck_assert_uint_eq(st_of(T, f).st_mode & 07777, 06777);
	ck_assert_uint_eq(st_of(T, d).st_mode & 07777, 02777);
}
END_TEST

START_TEST(test_set_times_sets_exactly_and_null_leaves)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	struct timespec a = {-5, 999999999}, m = {1700000000, 123456789}, c = {3, 1}, bad = {1, -1};
	struct stat st;

	ck_assert_int_eq(cfs_tree_set_times(T, f, &a, &m, &c), 0);
	ck_assert_int_eq(cfs_tree_set_times(T, f, NULL, NULL, NULL), 0);
	st = st_of(T, f);
	ck_assert_int_eq(st.st_atim.tv_sec, -5);
	ck_assert_int_eq(st.st_atim.tv_nsec, 999999999);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1700000000);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 123456789);
	ck_assert_int_eq(st.st_ctim.tv_sec, 3);
	ck_assert_int_eq(st.st_ctim.tv_nsec, 1);
	ck_assert_int_eq(cfs_tree_set_times(T, f, &m, &bad, NULL), -EINVAL);
	ck_assert_int_eq(st_of(T, f).st_atim.tv_sec, -5); /* all or nothing */
}
END_TEST

START_TEST(test_set_times_beyond_int64_ns_are_clamped)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	struct timespec far = {INT64_MAX, 0}, early = {INT64_MIN, 0};

	ck_assert_int_eq(cfs_tree_set_times(T, f, &early, &far, NULL), 0);
	ck_assert_int_gt(st_of(T, f).st_mtim.tv_sec, 9000000000ll);
	ck_assert_int_lt(st_of(T, f).st_atim.tv_sec, -9000000000ll);
}
END_TEST

START_TEST(test_writes_stamp_mtime_and_ctime)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	struct timespec old = {5, 0};

	ck_assert_int_eq(cfs_tree_set_times(T, f, &old, &old, &old), 0);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, 0), 1);
	ck_assert_int_gt(st_of(T, f).st_mtim.tv_sec, 5);
	ck_assert_int_gt(st_of(T, f).st_ctim.tv_sec, 5);
	ck_assert_int_eq(st_of(T, f).st_atim.tv_sec, 5);
}
END_TEST

/* ---- permissions ---- */

static const gid_t groups[] = {50, 60};

static const struct {
	mode_t mode;
	uid_t uid; /* the node's */
	gid_t gid;
	uid_t cuid; /* the caller's */
	gid_t cgid;
	int ngroups;
	int mask;
	int err;
} may_cases[] = {
    {0700, 10, 20, 10, 99, 0, R_OK | W_OK | X_OK, 0},
    {0070, 10, 20, 10, 20, 0, R_OK, -EACCES}, /* owner bits win, even when group allows */
    {0070, 10, 20, 11, 20, 0, R_OK | W_OK | X_OK, 0},
    {0050, 10, 60, 11, 99, 2, R_OK | X_OK, 0}, /* supplementary group */
    {0050, 10, 60, 11, 99, 2, W_OK, -EACCES},
    {0050, 10, 70, 11, 99, 2, R_OK, -EACCES},
    {0004, 10, 20, 11, 99, 0, R_OK, 0},
    {0004, 10, 20, 11, 99, 0, X_OK, -EACCES},
    {0000, 10, 20, 0, 0, 0, R_OK | W_OK, 0}, /* root reads and writes anything */
    {0644, 10, 20, 0, 0, 0, X_OK, -EACCES},  /* but executes only what someone may */
    {0001, 10, 20, 0, 0, 0, X_OK, 0},
    {0, 0, 0, 0, 0, 0, 0, 0}, /* no mask: always */
};

START_TEST(test_may_follows_generic_permission)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	struct rs_cred cred = {may_cases[_i].cuid, may_cases[_i].cgid, groups,
			       may_cases[_i].ngroups};

	ck_assert_int_eq(cfs_tree_chmod(T, f, may_cases[_i].mode), 0);
	ck_assert_int_eq(cfs_tree_chown(T, f, may_cases[_i].uid, may_cases[_i].gid), 0);
	ck_assert_int_eq(cfs_tree_may(T, f, &cred, may_cases[_i].mask), may_cases[_i].err);
}
END_TEST

START_TEST(test_root_may_search_any_dir)
{
	uint32_t d = mkd(T, CFS_ROOT, "d");
	struct rs_cred root = {0, 0, NULL, 0};

	ck_assert_int_eq(cfs_tree_chmod(T, d, 0), 0);
	ck_assert_int_eq(cfs_tree_may(T, d, &root, X_OK), 0);
}
END_TEST

/* ---- the resolver over the tree ---- */

START_TEST(test_resolver_walks_the_tree)
{
	uint32_t a = mkd(T, CFS_ROOT, "a"), b = mkd(T, a, "b"), f = mkf(T, b, "file");
	uint64_t node;

	mkl(T, a, "lnk", "b");
	mkl(T, CFS_ROOT, "abs", "/a/b/file");
	mkl(T, a, "up", "../a/./b");
	mkl(T, CFS_ROOT, "loop1", "loop2");
	mkl(T, CFS_ROOT, "loop2", "loop1");
	ck_assert_int_eq(resolve(T, "a/lnk/file", RS_FOLLOW, NULL, &node), 0);
	ck_assert_uint_eq(node, f);
	ck_assert_int_eq(resolve(T, "/abs", RS_FOLLOW, NULL, &node), 0);
	ck_assert_uint_eq(node, f);
	ck_assert_int_eq(resolve(T, "a/up/file", RS_FOLLOW, NULL, &node), 0);
	ck_assert_uint_eq(node, f);
	ck_assert_int_eq(resolve(T, "a/b/..", 0, NULL, &node), 0);
	ck_assert_uint_eq(node, a);
	ck_assert_int_eq(resolve(T, "a/lnk", 0, NULL, &node), 0);
	ck_assert_uint_ne(node, b);
	ck_assert_int_eq(resolve(T, "loop1", RS_FOLLOW, NULL, &node), -ELOOP);
	ck_assert_int_eq(resolve(T, "a/b/file/x", 0, NULL, &node), -ENOTDIR);
	ck_assert_int_eq(resolve(T, "a/missing", 0, NULL, &node), -ENOENT);
}
END_TEST

START_TEST(test_resolver_asks_may_search)
{
	uint32_t a = mkd(T, CFS_ROOT, "a");
	struct rs_cred other = {2000, 2000, NULL, 0}, owner = {1000, 1000, NULL, 0};
	uint64_t node;

	mkf(T, a, "f");
	ck_assert_int_eq(cfs_tree_chmod(T, a, 0700), 0);
	ck_assert_int_eq(resolve(T, "a/f", 0, &other, &node), -EACCES);
	ck_assert_int_eq(resolve(T, "a/f", 0, &owner, &node), 0);
}
END_TEST

/* ---- stats ---- */

START_TEST(test_stats_count_kinds_orphans_and_data)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	struct cfs_tree_stats s;

	mkd(T, CFS_ROOT, "d");
	mkl(T, CFS_ROOT, "l", "t");
	ck_assert_int_eq(cfs_tree_set_content(T, f, "12345", 5), 0);
	cfs_tree_ref(T, f, 1);
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	s = stats_of(T);
	ck_assert_uint_eq(s.nodes, 4);
	ck_assert_uint_eq(s.dirs, 2);
	ck_assert_uint_eq(s.files, 1);
	ck_assert_uint_eq(s.links, 1);
	ck_assert_uint_eq(s.data_bytes, 5);
	cfs_tree_unref(T, f, 1);
	ck_assert_uint_eq(stats_of(T).nodes, 3);
}
END_TEST

START_TEST(test_stats_bytes_follow_buffers)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	uint64_t before = stats_of(T).bytes;
	static char data[1 << 20];

	ck_assert_int_eq(cfs_tree_set_content(T, f, data, sizeof(data)), 0);
	ck_assert_uint_ge(stats_of(T).bytes, before + sizeof(data));
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	ck_assert_uint_lt(stats_of(T).bytes, before + sizeof(data));
}
END_TEST

/* ---- the test cases ---- */

void tree_tcase_attributes(TCase *tc)
{
	tcase_add_test(tc, test_chmod_keeps_kind_and_stamps_ctime);
	tcase_add_test(tc, test_chown_minus_one_keeps_a_field);
	tcase_add_loop_test(tc, test_write_drops_setid_bits_as_tmpfs, 0,
			    (int)(sizeof(drop_cases) / sizeof(drop_cases[0])));
	tcase_add_test(tc, test_root_and_non_files_keep_setid_bits);
	tcase_add_test(tc, test_set_times_sets_exactly_and_null_leaves);
	tcase_add_test(tc, test_set_times_beyond_int64_ns_are_clamped);
	tcase_add_test(tc, test_writes_stamp_mtime_and_ctime);
	tcase_add_loop_test(tc, test_may_follows_generic_permission, 0,
			    sizeof(may_cases) / sizeof(may_cases[0]));
	tcase_add_test(tc, test_root_may_search_any_dir);
}

void tree_tcase_resolver(TCase *tc)
{
	tcase_add_test(tc, test_resolver_walks_the_tree);
	tcase_add_test(tc, test_resolver_asks_may_search);
}

void tree_tcase_stats(TCase *tc)
{
	tcase_add_test(tc, test_stats_count_kinds_orphans_and_data);
	tcase_add_test(tc, test_stats_bytes_follow_buffers);
}
