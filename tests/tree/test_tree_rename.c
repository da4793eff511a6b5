/*
 * The tree's namespace changes (tree/tree_rename.c): hard links, unlink and rmdir, rename.
 */
#include "test_tree.h"

/* ---- hard links ---- */

START_TEST(test_link_counts_names_in_nlink)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(lk(T, f, d, "g"), 0);
	ck_assert_int_eq(lk(T, f, CFS_ROOT, "h"), 0);
	ck_assert_uint_eq(st_of(T, f).st_nlink, 3);
	ck_assert_uint_eq(at(T, d, "g"), f);
	ck_assert_uint_eq(at(T, CFS_ROOT, "h"), f);
	ck_assert_uint_eq(stats_of(T).files, 1);
	ck_assert_int_eq(rm(T, CFS_ROOT, "h"), 0);
	ck_assert_uint_eq(st_of(T, f).st_nlink, 2);
	ck_assert_uint_eq(st_of(T, d).st_nlink, 2); /* a file name is no subdirectory */
}
END_TEST

START_TEST(test_link_to_dir_is_eperm)
{
	uint32_t d = mkd(T, CFS_ROOT, "d");

	ck_assert_int_eq(lk(T, d, CFS_ROOT, "e"), -EPERM);
	ck_assert_uint_eq(st_of(T, d).st_nlink, 2);
}
END_TEST

START_TEST(test_link_to_symlink_counts_its_names)
{
	uint32_t l = mkl(T, CFS_ROOT, "l", "target");

	ck_assert_int_eq(lk(T, l, CFS_ROOT, "m"), 0);
	ck_assert_uint_eq(st_of(T, l).st_nlink, 2);
	ck_assert_uint_eq(at(T, CFS_ROOT, "m"), l);
}
END_TEST

START_TEST(test_link_to_orphan_is_enoent)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	cfs_tree_ref(T, f, 1);
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	ck_assert_int_eq(lk(T, f, CFS_ROOT, "g"), -ENOENT);
	cfs_tree_unref(T, f, 1);
}
END_TEST

START_TEST(test_unlinking_first_name_moves_parent_and_name_to_oldest_other)
{
	uint32_t a = mkd(T, CFS_ROOT, "a"), b = mkd(T, CFS_ROOT, "b"), c = mkd(T, CFS_ROOT, "c");
	uint32_t f = mkf(T, a, "f");

	ck_assert_int_eq(lk(T, f, b, "g"), 0);
	ck_assert_int_eq(lk(T, f, c, "h"), 0);
	ck_assert_int_eq(cfs_tree_set_content(T, f, "data", 4), 0);
	ck_assert_uint_eq(cfs_tree_parent(T, f), a);
	ck_assert_int_eq(rm(T, a, "f"), 0);
	ck_assert_uint_eq(cfs_tree_parent(T, f), b);
	ck_assert_str_eq(name_of(T, f), "g");
	ck_assert_uint_eq(at(T, b, "g"), f);
	ck_assert_uint_eq(at(T, c, "h"), f);
	ck_assert_str_eq(listing(T, b), "g");
	assert_content(T, f, "data", 4);
	ck_assert_int_eq(rm(T, b, "g"), 0);
	ck_assert_uint_eq(cfs_tree_parent(T, f), c);
	ck_assert_str_eq(name_of(T, f), "h");
	ck_assert_uint_eq(st_of(T, f).st_nlink, 1);
}
END_TEST

START_TEST(test_many_hard_links_unlinked_in_any_order_free_the_file_at_the_last)
{
	enum { N = 2000 };
	uint32_t d = mkd(T, CFS_ROOT, "d"), f = mkf(T, d, "n0");
	char name[32];

	for (int i = 1; i < N; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		ck_assert_int_eq(lk(T, f, d, name), 0);
	}
	ck_assert_uint_eq(st_of(T, f).st_nlink, N);
	for (int i = 0; i < N; i += 2) { /* evens first: the first name goes early */
		snprintf(name, sizeof(name), "n%d", i);
		ck_assert_int_eq(rm(T, d, name), 0);
	}
	for (int i = N - 1; i > 0; i -= 2) {
		ck_assert_uint_eq(st_of(T, f).st_nlink, (nlink_t)(i + 1) / 2);
		ck_assert_uint_eq(cfs_tree_parent(T, f), d);
		snprintf(name, sizeof(name), "n%d", i);
		ck_assert_int_eq(rm(T, d, name), 0);
	}
	ck_assert_uint_eq(stats_of(T).files, 0);
	ck_assert_uint_eq(cfs_tree_dir_count(T, d), 0);
}
END_TEST

/* ---- removal ---- */

START_TEST(test_unlink_removes_name_and_frees_unreferenced_file)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_set_content(T, f, "abc", 3), 0);
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	ck_assert_uint_eq(at(T, CFS_ROOT, "f"), 0);
	ck_assert_uint_eq(stats_of(T).nodes, 1);
	ck_assert_uint_eq(stats_of(T).files, 0);
	ck_assert_uint_eq(stats_of(T).data_bytes, 0);
}
END_TEST

START_TEST(test_unlink_of_dir_is_eisdir)
{
	mkd(T, CFS_ROOT, "d");
	ck_assert_int_eq(rm(T, CFS_ROOT, "d"), -EISDIR);
	ck_assert_uint_ne(at(T, CFS_ROOT, "d"), 0);
}
END_TEST

START_TEST(test_unlink_missing_is_enoent_and_in_file_enotdir)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(rm(T, CFS_ROOT, "g"), -ENOENT);
	ck_assert_int_eq(rm(T, f, "g"), -ENOTDIR);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "g"), -ENOENT);
	ck_assert_int_eq(rmd(T, f, "g"), -ENOTDIR);
}
END_TEST

START_TEST(test_unlink_symlink_removes_it)
{
	mkl(T, CFS_ROOT, "l", "t");
	ck_assert_int_eq(rm(T, CFS_ROOT, "l"), 0);
	ck_assert_uint_eq(stats_of(T).links, 0);
}
END_TEST

START_TEST(test_rmdir_removes_empty_dir_and_drops_parent_nlink)
{
	uint32_t d = mkd(T, CFS_ROOT, "d");

	mkd(T, d, "e");
	ck_assert_int_eq(rmd(T, d, "e"), 0);
	ck_assert_uint_eq(st_of(T, d).st_nlink, 2);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), 0);
	ck_assert_uint_eq(st_of(T, CFS_ROOT).st_nlink, 2);
	ck_assert_uint_eq(stats_of(T).dirs, 1);
}
END_TEST

START_TEST(test_rmdir_of_non_empty_dir_is_enotempty)
{
	uint32_t d = mkd(T, CFS_ROOT, "d");

	mkf(T, d, "f");
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), -ENOTEMPTY);
	ck_assert_int_eq(rm(T, d, "f"), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), 0);
}
END_TEST

START_TEST(test_rmdir_of_non_dir_is_enotdir)
{
	mkf(T, CFS_ROOT, "f");
	mkl(T, CFS_ROOT, "l", "t");
	ck_assert_int_eq(rmd(T, CFS_ROOT, "f"), -ENOTDIR);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "l"), -ENOTDIR);
}
END_TEST

/* ---- rename ---- */

/* The rename fixture: /d1/{f, g, e/, n/{x, sub/}, l -> g}, /d2/. */
struct rfix {
	uint32_t d1, d2, f, g, e, n, x, sub, l;
};

static struct rfix rename_fixture(struct cfs_tree *t)
{
	struct rfix r;

	r.d1 = mkd(t, CFS_ROOT, "d1");
	r.d2 = mkd(t, CFS_ROOT, "d2");
	r.f = mkf(t, r.d1, "f");
	r.g = mkf(t, r.d1, "g");
	r.e = mkd(t, r.d1, "e");
	r.n = mkd(t, r.d1, "n");
	r.x = mkf(t, r.n, "x");
	r.sub = mkd(t, r.n, "sub");
	r.l = mkl(t, r.d1, "l", "g");
	ck_assert_int_eq(cfs_tree_set_content(t, r.f, "F", 1), 0);
	ck_assert_int_eq(cfs_tree_set_content(t, r.g, "G", 1), 0);
	return r;
}

static const struct {
	const char *from, *to; /* "d1/f": dir and name; "-" as dir: the file f as directory */
	unsigned flags;
	int err;
} rename_matrix[] = {
    {"d1/f", "d1/g", 0, 0},
    {"d1/f", "d1/f", 0, 0},
    {"d1/f", "d2/f", 0, 0},
    {"d1/l", "d1/g", 0, 0},
    {"d1/e", "d1/n", 0, -ENOTEMPTY},
    {"d1/e", "d1/f", 0, -ENOTDIR},
    {"d1/f", "d1/e", 0, -EISDIR},
    {"d1/e", "d2/e", 0, 0},
    {"d1/n", "n/new", 0, -EINVAL},
    {"d1/n", "sub/new", 0, -EINVAL},
    {"d1/n", "d1/n", 0, 0},
    {"n/sub", "d1/n", 0, -ENOTEMPTY},
    {"d1/f", "d1/g", RENAME_NOREPLACE, -EEXIST},
    {"d1/f", "d1/f", RENAME_NOREPLACE, -EEXIST},
    {"d1/f", "d1/h", RENAME_NOREPLACE, 0},
    {"d1/f", "d1/h", RENAME_EXCHANGE, -ENOENT},
    {"d1/f", "d1/e", RENAME_EXCHANGE, 0},
    {"d1/n", "n/x", RENAME_EXCHANGE, -EINVAL},
    {"n/sub", "d1/n", RENAME_EXCHANGE, -EINVAL},
    {"d1/f", "d1/g", RENAME_NOREPLACE | RENAME_EXCHANGE, -EINVAL},
    {"d1/f", "d1/g", RENAME_WHITEOUT_FLAG, -EINVAL},
    {"d1/missing", "d1/h", 0, -ENOENT},
    {"-/f", "d1/h", 0, -ENOTDIR},
    {"d1/f", "-/h", 0, -ENOTDIR},
    {"d1/e", "d1/g", RENAME_EXCHANGE, 0},
};

static uint32_t rfix_dir(const struct rfix *r, const char *path, const char **name)
{
	static const struct {
		const char *prefix;
		size_t off;
	} dirs[] = {{"d1/", offsetof(struct rfix, d1)},
		    {"d2/", offsetof(struct rfix, d2)},
		    {"n/", offsetof(struct rfix, n)},
		    {"sub/", offsetof(struct rfix, sub)},
		    {"-/", offsetof(struct rfix, f)}};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t n = strlen(dirs[i].prefix);
		if (!strncmp(path, dirs[i].prefix, n)) {
			*name = path + n;
			return *(const uint32_t *)((const char *)r + dirs[i].off);
		}
	}
	ck_abort_msg("bad path %s", path);
	return 0;
}

START_TEST(test_rename_matrix)
{
	struct rfix r = rename_fixture(T);
	const char *on, *nn;
	uint32_t od = rfix_dir(&r, rename_matrix[_i].from, &on);
	uint32_t nd = rfix_dir(&r, rename_matrix[_i].to, &nn);
	char *before = dump(T, NULL, 0);
	int err = mv(T, od, on, nd, nn, rename_matrix[_i].flags);

	ck_assert_msg(err == rename_matrix[_i].err, "%s -> %s flags %u: %d, want %d",
		      rename_matrix[_i].from, rename_matrix[_i].to, rename_matrix[_i].flags, err,
		      rename_matrix[_i].err);
	char *after = dump(T, NULL, 0);
	if (err)
		ck_assert_str_eq(before, after);
	free(before);
	free(after);
}
END_TEST

START_TEST(test_rename_moves_file_between_dirs)
{
	struct rfix r = rename_fixture(T);

	ck_assert_int_eq(mv(T, r.d1, "f", r.d2, "moved", 0), 0);
	ck_assert_uint_eq(at(T, r.d1, "f"), 0);
	ck_assert_uint_eq(at(T, r.d2, "moved"), r.f);
	ck_assert_uint_eq(cfs_tree_parent(T, r.f), r.d2);
	ck_assert_str_eq(name_of(T, r.f), "moved");
	assert_content(T, r.f, "F", 1);
	ck_assert_str_eq(listing(T, r.d1), "g e n l");
}
END_TEST

START_TEST(test_rename_to_itself_changes_nothing)
{
	struct rfix r = rename_fixture(T);
	char *before = dump(T, NULL, 0);

	ck_assert_int_eq(mv(T, r.d1, "f", r.d1, "f", 0), 0);
	ck_assert_int_eq(mv(T, r.d1, "n", r.d1, "n", RENAME_EXCHANGE), 0);
	char *after = dump(T, NULL, 0);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
}
END_TEST

START_TEST(test_rename_between_hard_links_of_one_file_changes_nothing)
{
	struct rfix r = rename_fixture(T);

	ck_assert_int_eq(lk(T, r.f, r.d2, "f2"), 0);
	ck_assert_int_eq(mv(T, r.d1, "f", r.d2, "f2", 0), 0);
	ck_assert_uint_eq(at(T, r.d1, "f"), r.f);
	ck_assert_uint_eq(at(T, r.d2, "f2"), r.f);
	ck_assert_uint_eq(st_of(T, r.f).st_nlink, 2);
}
END_TEST

START_TEST(test_rename_over_file_replaces_and_frees_it)
{
	struct rfix r = rename_fixture(T);
	uint64_t files = stats_of(T).files;

	ck_assert_int_eq(mv(T, r.d1, "f", r.d1, "g", 0), 0);
	ck_assert_uint_eq(at(T, r.d1, "g"), r.f);
	ck_assert_uint_eq(at(T, r.d1, "f"), 0);
	ck_assert_uint_eq(stats_of(T).files, files - 1);
	assert_content(T, r.f, "F", 1);
	ck_assert_str_eq(name_of(T, r.f), "g");
	ck_assert_str_eq(listing(T, r.d1), "g e n l");
}
END_TEST

START_TEST(test_rename_over_referenced_file_leaves_orphan_with_its_name)
{
	struct rfix r = rename_fixture(T);

	cfs_tree_ref(T, r.g, 1);
	ck_assert_int_eq(mv(T, r.d1, "f", r.d1, "g", 0), 0);
	ck_assert_uint_eq(st_of(T, r.g).st_nlink, 0);
	assert_content(T, r.g, "G", 1);
	ck_assert_str_eq(name_of(T, r.g), "g");
	ck_assert_uint_eq(cfs_tree_parent(T, r.g), r.d1);
	ck_assert_int_eq(mv(T, r.d1, "g", r.d2, "h", 0), 0); /* the new name is r.f's own */
	ck_assert_str_eq(name_of(T, r.g), "g");
	ck_assert_str_eq(name_of(T, r.f), "h");
	cfs_tree_unref(T, r.g, 1);
}
END_TEST

START_TEST(test_rename_over_hard_linked_file_keeps_its_other_name)
{
	struct rfix r = rename_fixture(T);

	ck_assert_int_eq(lk(T, r.g, r.d2, "g2"), 0);
	ck_assert_int_eq(mv(T, r.d1, "f", r.d1, "g", 0), 0);
	ck_assert_uint_eq(st_of(T, r.g).st_nlink, 1);
	ck_assert_uint_eq(cfs_tree_parent(T, r.g), r.d2);
	ck_assert_str_eq(name_of(T, r.g), "g2");
	ck_assert_uint_eq(at(T, r.d2, "g2"), r.g);
	ck_assert_uint_eq(at(T, r.d1, "g"), r.f);
}
END_TEST

START_TEST(test_rename_dir_moves_its_dotdot_link)
{
	struct rfix r = rename_fixture(T);
	nlink_t n1 = st_of(T, r.d1).st_nlink, n2 = st_of(T, r.d2).st_nlink;
	uint32_t id;

	ck_assert_int_eq(mv(T, r.d1, "n", r.d2, "n", 0), 0);
	ck_assert_uint_eq(st_of(T, r.d1).st_nlink, n1 - 1);
	ck_assert_uint_eq(st_of(T, r.d2).st_nlink, n2 + 1);
	ck_assert_uint_eq(cfs_tree_parent(T, r.n), r.d2);
	ck_assert_int_eq(find(T, r.n, "..", &id), 0);
	ck_assert_uint_eq(id, r.d2);
	ck_assert_uint_eq(at(T, r.n, "sub"), r.sub);
}
END_TEST

START_TEST(test_rename_dir_over_empty_dir_replaces_it)
{
	struct rfix r = rename_fixture(T);
	nlink_t n1 = st_of(T, r.d1).st_nlink, n2 = st_of(T, r.d2).st_nlink;

	mkd(T, r.d2, "empty");
	ck_assert_int_eq(mv(T, r.d1, "n", r.d2, "empty", 0), 0);
	ck_assert_uint_eq(at(T, r.d2, "empty"), r.n);
	ck_assert_uint_eq(st_of(T, r.d1).st_nlink, n1 - 1);
	ck_assert_uint_eq(st_of(T, r.d2).st_nlink, n2 + 1);
	ck_assert_uint_eq(stats_of(T).dirs, 6);
}
END_TEST

START_TEST(test_rename_exchange_swaps_file_and_dir_across_dirs)
{
	struct rfix r = rename_fixture(T);
	nlink_t n1 = st_of(T, r.d1).st_nlink, n2 = st_of(T, r.d2).st_nlink;
	uint32_t h = mkf(T, r.d2, "h");

	ck_assert_int_eq(mv(T, r.d1, "n", r.d2, "h", RENAME_EXCHANGE), 0);
	ck_assert_uint_eq(at(T, r.d1, "n"), h);
	ck_assert_uint_eq(at(T, r.d2, "h"), r.n);
	ck_assert_uint_eq(st_of(T, r.d1).st_nlink, n1 - 1);
	ck_assert_uint_eq(st_of(T, r.d2).st_nlink, n2 + 1);
	ck_assert_uint_eq(cfs_tree_parent(T, r.n), r.d2);
	ck_assert_uint_eq(cfs_tree_parent(T, h), r.d1);
	ck_assert_str_eq(name_of(T, h), "n");
	ck_assert_str_eq(listing(T, r.d1), "f g e n l"); /* positions stay */
}
END_TEST

START_TEST(test_rename_stamps_both_dirs_and_the_node)
{
	struct rfix r = rename_fixture(T);
	struct timespec old = {1, 0};

	ck_assert_int_eq(cfs_tree_set_times(T, r.d1, &old, &old, &old), 0);
	ck_assert_int_eq(cfs_tree_set_times(T, r.d2, &old, &old, &old), 0);
	ck_assert_int_eq(cfs_tree_set_times(T, r.f, &old, &old, &old), 0);
	ck_assert_int_eq(mv(T, r.d1, "f", r.d2, "f", 0), 0);
	ck_assert_int_gt(st_of(T, r.d1).st_mtim.tv_sec, 1);
	ck_assert_int_gt(st_of(T, r.d2).st_ctim.tv_sec, 1);
	ck_assert_int_gt(st_of(T, r.f).st_ctim.tv_sec, 1);
	ck_assert_int_eq(st_of(T, r.f).st_mtim.tv_sec, 1);
}
END_TEST

/* ---- the test cases ---- */

void tree_tcase_link(TCase *tc)
{
	tcase_add_test(tc, test_link_counts_names_in_nlink);
	tcase_add_test(tc, test_link_to_dir_is_eperm);
	tcase_add_test(tc, test_link_to_symlink_counts_its_names);
	tcase_add_test(tc, test_link_to_orphan_is_enoent);
	tcase_add_test(tc, test_unlinking_first_name_moves_parent_and_name_to_oldest_other);
	tcase_add_test(tc, test_many_hard_links_unlinked_in_any_order_free_the_file_at_the_last);
}

void tree_tcase_remove(TCase *tc)
{
	tcase_add_test(tc, test_unlink_removes_name_and_frees_unreferenced_file);
	tcase_add_test(tc, test_unlink_of_dir_is_eisdir);
	tcase_add_test(tc, test_unlink_missing_is_enoent_and_in_file_enotdir);
	tcase_add_test(tc, test_unlink_symlink_removes_it);
	tcase_add_test(tc, test_rmdir_removes_empty_dir_and_drops_parent_nlink);
	tcase_add_test(tc, test_rmdir_of_non_empty_dir_is_enotempty);
	tcase_add_test(tc, test_rmdir_of_non_dir_is_enotdir);
}

void tree_tcase_rename(TCase *tc)
{
	tcase_add_loop_test(tc, test_rename_matrix, 0,
			    sizeof(rename_matrix) / sizeof(rename_matrix[0]));
	tcase_add_test(tc, test_rename_moves_file_between_dirs);
	tcase_add_test(tc, test_rename_to_itself_changes_nothing);
	tcase_add_test(tc, test_rename_between_hard_links_of_one_file_changes_nothing);
	tcase_add_test(tc, test_rename_over_file_replaces_and_frees_it);
	tcase_add_test(tc, test_rename_over_referenced_file_leaves_orphan_with_its_name);
	tcase_add_test(tc, test_rename_over_hard_linked_file_keeps_its_other_name);
	tcase_add_test(tc, test_rename_dir_moves_its_dotdot_link);
	tcase_add_test(tc, test_rename_dir_over_empty_dir_replaces_it);
	tcase_add_test(tc, test_rename_exchange_swaps_file_and_dir_across_dirs);
	tcase_add_test(tc, test_rename_stamps_both_dirs_and_the_node);
}
