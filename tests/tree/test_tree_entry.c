/*
 * The tree's names and entries (tree/tree_entry.c and the creation in tree.c): creation and
 * its name checks, lookup, orphans and handles, readdir order (tree_index.c).
 */
#include "test_tree.h"

enum { BIG_DIR = 10000 }; /* the readdir stability test's directory */

/* ---- creation ---- */

START_TEST(test_new_tree_is_a_root_dir)
{
	struct stat st = st_of(T, CFS_ROOT);
	struct cfs_tree_stats s = stats_of(T);

	ck_assert_int_eq(cfs_tree_kind(T, CFS_ROOT), RS_DIR);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_nlink, 2);
	ck_assert_uint_eq(st.st_ino, CFS_ROOT);
	ck_assert_uint_eq(cfs_tree_parent(T, CFS_ROOT), CFS_ROOT);
	ck_assert_str_eq(name_of(T, CFS_ROOT), "");
	ck_assert_uint_eq(s.nodes, 1);
	ck_assert_uint_eq(s.dirs, 1);
	ck_assert_uint_eq(cfs_tree_dir_count(T, CFS_ROOT), 0);
	ck_assert_uint_gt(s.bytes, 0);
}
END_TEST

START_TEST(test_new_tree_allocation_failure_returns_null_without_leak)
{
	struct cfs_tree *t = NULL;
	long base = ca_live; /* the fixture's tree */

	for (long k = 1; !t; k++) {
		ca_arm(k, false);
		t = cfs_tree_new(&CA);
		ca_arm(0, false);
		if (!t)
			ck_assert_int_eq(ca_live, base);
	}
	cfs_tree_free(t);
	ck_assert_int_eq(ca_live, base);
}
END_TEST

START_TEST(test_mkdir_creates_dir_and_counts_it_in_parent_nlink)
{
	uint32_t d = mkd(T, CFS_ROOT, "d");
	struct stat st = st_of(T, d);

	ck_assert_int_eq(cfs_tree_kind(T, d), RS_DIR);
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 0755);
	ck_assert_uint_eq(st.st_nlink, 2);
	ck_assert_uint_eq(st.st_uid, 1000);
	ck_assert_uint_eq(st_of(T, CFS_ROOT).st_nlink, 3);
	ck_assert_uint_eq(cfs_tree_parent(T, d), CFS_ROOT);
	ck_assert_str_eq(name_of(T, d), "d");
	mkd(T, d, "e");
	ck_assert_uint_eq(st_of(T, d).st_nlink, 3);
}
END_TEST

START_TEST(test_mkfile_creates_empty_file_with_nlink_1)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	struct stat st = st_of(T, f);

	ck_assert_int_eq(cfs_tree_kind(T, f), RS_FILE);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0644);
	ck_assert_uint_eq(st.st_nlink, 1);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_uint_eq(st_of(T, CFS_ROOT).st_nlink, 2);
	ck_assert_uint_eq(at(T, CFS_ROOT, "f"), f);
}
END_TEST

START_TEST(test_symlink_keeps_target_bytes_exactly)
{
	static const char target[] = "//a/./b/../ c \xff\x01/";
	uint32_t l = 0;
	const char *got;
	size_t len;

	ck_assert_int_eq(cfs_tree_symlink(T, CFS_ROOT, "l", 1, target, sizeof(target) - 1, &A, &l),
			 0);
	ck_assert_int_eq(cfs_tree_readlink(T, l, &got, &len), 0);
	ck_assert_uint_eq(len, sizeof(target) - 1);
	ck_assert_mem_eq(got, target, len);
	ck_assert_int_eq(cfs_tree_kind(T, l), RS_LINK);
	ck_assert_int_eq(st_of(T, l).st_size, (off_t)len); /* cache_symlinks needs this */
	ck_assert_uint_eq(st_of(T, l).st_nlink, 1);
}
END_TEST

START_TEST(test_symlink_mode_is_always_0777)
{
	uint32_t l = mkl(T, CFS_ROOT, "l", "x");

	ck_assert_uint_eq(st_of(T, l).st_mode, S_IFLNK | 0777);
	ck_assert_int_eq(cfs_tree_chmod(T, l, 0600), -EOPNOTSUPP);
}
END_TEST

/* The mount answers the up name in every directory (links.h): no entry may take it. */
START_TEST(test_up_name_is_reserved_in_every_way_in)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), f = mkf(T, CFS_ROOT, "f"), id;

	ck_assert_int_eq(cfs_tree_mkdir(T, d, CFS_UP_NAME, 2, &A, &id), -EEXIST);
	ck_assert_int_eq(cfs_tree_mkfile(T, d, CFS_UP_NAME, 2, &AF, &id), -EEXIST);
	ck_assert_int_eq(cfs_tree_symlink(T, d, CFS_UP_NAME, 2, "x", 1, &A, &id), -EEXIST);
	ck_assert_int_eq(lk(T, f, d, CFS_UP_NAME), -EEXIST);
	ck_assert_int_eq(mv(T, CFS_ROOT, "f", d, CFS_UP_NAME, 0), -EEXIST);
	ck_assert_uint_eq(at(T, d, CFS_UP_NAME), 0);
	ck_assert_uint_eq(at(T, CFS_ROOT, "f"), f);
}
END_TEST

/* A hard-linked link's answer climbs from the deepest of its names. */
START_TEST(test_name_depth_is_the_deepest_name)
{
	uint32_t a = mkd(T, CFS_ROOT, "a"), b = mkd(T, a, "b"), c = mkd(T, b, "c");
	uint32_t l = mkl(T, a, "l", "x");

	ck_assert_uint_eq(cfs_tree_name_depth(T, CFS_ROOT), 0);
	ck_assert_uint_eq(cfs_tree_name_depth(T, a), 0);
	ck_assert_uint_eq(cfs_tree_name_depth(T, l), 1);
	ck_assert_int_eq(lk(T, l, c, "deep"), 0);
	ck_assert_int_eq(lk(T, l, CFS_ROOT, "top"), 0);
	ck_assert_uint_eq(cfs_tree_name_depth(T, l), 3);
	ck_assert_int_eq(rm(T, c, "deep"), 0);
	ck_assert_uint_eq(cfs_tree_name_depth(T, l), 1);
	ck_assert_int_eq(rm(T, a, "l"), 0);
	ck_assert_uint_eq(cfs_tree_name_depth(T, l), 0);
}
END_TEST

START_TEST(test_symlink_empty_target_is_enoent)
{
	uint32_t l;

	ck_assert_int_eq(cfs_tree_symlink(T, CFS_ROOT, "l", 1, "", 0, &A, &l), -ENOENT);
	ck_assert_uint_eq(at(T, CFS_ROOT, "l"), 0);
}
END_TEST

START_TEST(test_symlink_target_of_4095_fits_4096_is_enametoolong)
{
	char target[RS_PATH_MAX + 1];
	uint32_t l;
	const char *got;
	size_t len;

	memset(target, 'x', sizeof(target));
	ck_assert_int_eq(cfs_tree_symlink(T, CFS_ROOT, "a", 1, target, RS_PATH_MAX, &A, &l),
			 -ENAMETOOLONG);
	ck_assert_int_eq(cfs_tree_symlink(T, CFS_ROOT, "a", 1, target, RS_PATH_MAX - 1, &A, &l), 0);
	ck_assert_int_eq(cfs_tree_readlink(T, l, &got, &len), 0);
	ck_assert_uint_eq(len, RS_PATH_MAX - 1);
}
END_TEST

START_TEST(test_create_over_existing_name_is_eexist)
{
	uint32_t id, f = mkf(T, CFS_ROOT, "x");

	mkd(T, CFS_ROOT, "d");
	ck_assert_int_eq(cfs_tree_mkdir(T, CFS_ROOT, "x", 1, &A, &id), -EEXIST);
	ck_assert_int_eq(cfs_tree_mkfile(T, CFS_ROOT, "d", 1, &A, &id), -EEXIST);
	ck_assert_int_eq(cfs_tree_symlink(T, CFS_ROOT, "x", 1, "t", 1, &A, &id), -EEXIST);
	ck_assert_int_eq(lk(T, f, CFS_ROOT, "d"), -EEXIST);
	ck_assert_uint_eq(stats_of(T).nodes, 3);
}
END_TEST

START_TEST(test_create_in_a_file_is_enotdir)
{
	uint32_t id, f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_mkdir(T, f, "x", 1, &A, &id), -ENOTDIR);
	ck_assert_int_eq(cfs_tree_mkfile(T, f, "x", 1, &A, &id), -ENOTDIR);
	ck_assert_int_eq(cfs_tree_symlink(T, f, "x", 1, "t", 1, &A, &id), -ENOTDIR);
	ck_assert_int_eq(lk(T, f, f, "x"), -ENOTDIR);
	ck_assert_int_eq(find(T, f, "x", &id), -ENOTDIR);
}
END_TEST

static const struct {
	const char *name;
	size_t len;
} bad_names[] = {{"", 0}, {".", 1}, {"..", 2}, {"a/b", 3}, {"/", 1}, {"a\0b", 3}};

START_TEST(test_bad_names_are_einval_everywhere)
{
	const char *n = bad_names[_i].name;
	size_t len = bad_names[_i].len;
	uint32_t id, f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_mkdir(T, CFS_ROOT, n, len, &A, &id), -EINVAL);
	ck_assert_int_eq(cfs_tree_mkfile(T, CFS_ROOT, n, len, &A, &id), -EINVAL);
	ck_assert_int_eq(cfs_tree_symlink(T, CFS_ROOT, n, len, "t", 1, &A, &id), -EINVAL);
	ck_assert_int_eq(cfs_tree_link(T, f, CFS_ROOT, n, len), -EINVAL);
	ck_assert_int_eq(cfs_tree_unlink(T, CFS_ROOT, n, len), -EINVAL);
	ck_assert_int_eq(cfs_tree_rmdir(T, CFS_ROOT, n, len), -EINVAL);
	ck_assert_int_eq(cfs_tree_rename(T, CFS_ROOT, "f", 1, CFS_ROOT, n, len, 0), -EINVAL);
	ck_assert_int_eq(cfs_tree_rename(T, CFS_ROOT, n, len, CFS_ROOT, "g", 1, 0), -EINVAL);
	ck_assert_uint_eq(stats_of(T).nodes, 2);
}
END_TEST

START_TEST(test_name_of_255_fits_256_is_enametoolong)
{
	char name[RS_NAME_MAX + 1];
	uint32_t id, f = mkf(T, CFS_ROOT, "f");

	memset(name, 'n', sizeof(name));
	ck_assert_int_eq(cfs_tree_mkdir(T, CFS_ROOT, name, 256, &A, &id), -ENAMETOOLONG);
	ck_assert_int_eq(cfs_tree_mkfile(T, CFS_ROOT, name, 256, &A, &id), -ENAMETOOLONG);
	ck_assert_int_eq(cfs_tree_symlink(T, CFS_ROOT, name, 256, "t", 1, &A, &id), -ENAMETOOLONG);
	ck_assert_int_eq(cfs_tree_link(T, f, CFS_ROOT, name, 256), -ENAMETOOLONG);
	ck_assert_int_eq(cfs_tree_lookup(T, CFS_ROOT, name, 256, &id), -ENAMETOOLONG);
	ck_assert_int_eq(cfs_tree_rename(T, CFS_ROOT, "f", 1, CFS_ROOT, name, 256, 0),
			 -ENAMETOOLONG);
	ck_assert_int_eq(cfs_tree_mkfile(T, CFS_ROOT, name, 255, &A, &id), 0);
	ck_assert_uint_eq(at(T, CFS_ROOT, "f"), f);
	ck_assert_int_eq(cfs_tree_lookup(T, CFS_ROOT, name, 255, &f), 0);
	ck_assert_uint_eq(f, id);
}
END_TEST

START_TEST(test_lookup_missing_name_is_enoent)
{
	uint32_t id;

	mkf(T, CFS_ROOT, "f");
	ck_assert_int_eq(find(T, CFS_ROOT, "g", &id), -ENOENT);
	ck_assert_int_eq(find(T, CFS_ROOT, "ff", &id), -ENOENT);
}
END_TEST

START_TEST(test_lookup_dot_and_dotdot_give_dir_and_parent)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), e = mkd(T, d, "e"), id;

	ck_assert_int_eq(find(T, e, ".", &id), 0);
	ck_assert_uint_eq(id, e);
	ck_assert_int_eq(find(T, e, "..", &id), 0);
	ck_assert_uint_eq(id, d);
	ck_assert_int_eq(find(T, CFS_ROOT, "..", &id), 0);
	ck_assert_uint_eq(id, CFS_ROOT);
}
END_TEST

START_TEST(test_same_name_in_different_dirs_are_different_entries)
{
	uint32_t a = mkd(T, CFS_ROOT, "a"), b = mkd(T, CFS_ROOT, "b");
	uint32_t fa = mkf(T, a, "x"), fb = mkf(T, b, "x");

	ck_assert_uint_ne(fa, fb);
	ck_assert_uint_eq(at(T, a, "x"), fa);
	ck_assert_uint_eq(at(T, b, "x"), fb);
	ck_assert_int_eq(rm(T, a, "x"), 0);
	ck_assert_uint_eq(at(T, b, "x"), fb);
}
END_TEST

START_TEST(test_create_stamps_new_node_and_parent_times)
{
	struct timespec old = {100, 5}, before;
	uint32_t d = mkd(T, CFS_ROOT, "d");

	ck_assert_int_eq(cfs_tree_set_times(T, d, &old, &old, &old), 0);
	clock_gettime(CLOCK_REALTIME_COARSE, &before); /* the tree's clock */
	uint32_t f = mkf(T, d, "f");
	struct stat sd = st_of(T, d), sf = st_of(T, f);
	ck_assert_int_ge(sf.st_mtim.tv_sec, before.tv_sec);
	ck_assert_int_eq(sf.st_mtim.tv_sec, sf.st_atim.tv_sec);
	ck_assert_int_eq(sf.st_mtim.tv_nsec, sf.st_ctim.tv_nsec);
	ck_assert_int_ge(sd.st_mtim.tv_sec, before.tv_sec);
	ck_assert_int_ge(sd.st_ctim.tv_sec, before.tv_sec);
	ck_assert_int_eq(sd.st_atim.tv_sec, 100); /* entry changes leave atime alone */
}
END_TEST

START_TEST(test_create_in_removed_dir_is_enoent)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), id, f = mkf(T, CFS_ROOT, "f");

	cfs_tree_ref(T, d, 1);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), 0);
	ck_assert_int_eq(cfs_tree_mkdir(T, d, "x", 1, &A, &id), -ENOENT);
	ck_assert_int_eq(cfs_tree_mkfile(T, d, "x", 1, &A, &id), -ENOENT);
	ck_assert_int_eq(cfs_tree_symlink(T, d, "x", 1, "t", 1, &A, &id), -ENOENT);
	ck_assert_int_eq(lk(T, f, d, "x"), -ENOENT);
	ck_assert_int_eq(mv(T, CFS_ROOT, "f", d, "x", 0), -ENOENT);
	cfs_tree_unref(T, d, 1);
}
END_TEST

/* ---- orphans and handles ---- */

START_TEST(test_unlinked_referenced_file_stays_readable_until_unref)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), f = mkf(T, d, "f");

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "xy", 2, 5), 0);
	cfs_tree_ref(T, f, 2);
	ck_assert_int_eq(rm(T, d, "f"), 0);
	ck_assert_uint_eq(st_of(T, f).st_nlink, 0);
	ck_assert_uint_eq(at(T, d, "f"), 0);
	assert_content(T, f, "xyxyx", 5);
	ck_assert_int_eq(cfs_tree_write(T, f, "Z", 1, 0), 1); /* an open file stays writable */
	assert_content(T, f, "Zyxyx", 5);
	ck_assert_uint_eq(cfs_tree_parent(T, f), d); /* the last directory it had */
	ck_assert_str_eq(name_of(T, f), "f");
	ck_assert_uint_eq(stats_of(T).files, 1);
	cfs_tree_unref(T, f, 1);
	ck_assert_uint_eq(stats_of(T).files, 1);
	cfs_tree_unref(T, f, 1);
	ck_assert_uint_eq(stats_of(T).files, 0);
	ck_assert_uint_eq(stats_of(T).data_bytes, 0);
}
END_TEST

START_TEST(test_removed_referenced_dir_is_empty_and_dead_until_unref)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), id;
	const char *name;
	size_t len;
	uint64_t cookie = 0;

	cfs_tree_ref(T, d, 1);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), 0);
	ck_assert_uint_eq(st_of(T, d).st_nlink, 0);
	ck_assert_int_eq(cfs_tree_dir_next(T, d, &cookie, &name, &len, &id), 1);
	ck_assert_int_eq(find(T, d, "..", &id), 0);
	ck_assert_uint_eq(id, CFS_ROOT);
	ck_assert_uint_eq(stats_of(T).dirs, 2);
	cfs_tree_unref(T, d, 1);
	ck_assert_uint_eq(stats_of(T).dirs, 1);
}
END_TEST

START_TEST(test_orphan_keeps_its_last_dir_alive)
{
	uint32_t a = mkd(T, CFS_ROOT, "a"), d = mkd(T, a, "d"), f = mkf(T, d, "f");

	cfs_tree_ref(T, f, 1);
	ck_assert_int_eq(rm(T, d, "f"), 0);
	ck_assert_int_eq(rmd(T, a, "d"), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "a"), 0);
	ck_assert_uint_eq(stats_of(T).nodes, 4); /* root, a, d, f: the chain stays */
	ck_assert_uint_eq(cfs_tree_parent(T, f), d);
	ck_assert_uint_eq(cfs_tree_parent(T, d), a);
	ck_assert_uint_eq(cfs_tree_parent(T, a), CFS_ROOT);
	ck_assert_str_eq(name_of(T, d), "d");
	ck_assert_uint_eq(cfs_tree_refs(T, d), 0); /* pins are not kernel references */
	cfs_tree_unref(T, f, 1);
	ck_assert_uint_eq(stats_of(T).nodes, 1);
}
END_TEST

START_TEST(test_refs_count_per_node_and_in_total)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), g = mkf(T, CFS_ROOT, "g");

	cfs_tree_ref(T, f, 3);
	cfs_tree_ref(T, g, 2);
	ck_assert_uint_eq(cfs_tree_refs(T, f), 3);
	ck_assert_uint_eq(cfs_tree_total_refs(T), 5);
	cfs_tree_unref(T, f, 3);
	ck_assert_uint_eq(cfs_tree_refs(T, f), 0);
	ck_assert_uint_eq(cfs_tree_total_refs(T), 2);
	ck_assert_uint_eq(stats_of(T).files, 2); /* named nodes stay without references */
	cfs_tree_unref(T, g, 2);
}
END_TEST

START_TEST(test_saturated_refs_stick_and_keep_the_orphan)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	cfs_tree_ref(T, f, UINT64_MAX);
	ck_assert_uint_eq(cfs_tree_refs(T, f), UINT32_MAX);
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	cfs_tree_unref(T, f, UINT32_MAX);
	ck_assert_uint_eq(stats_of(T).files, 1);
}
END_TEST

START_TEST(test_freed_handle_is_reused_with_next_generation)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), gen = cfs_tree_generation(T, f);

	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	uint32_t g = mkd(T, CFS_ROOT, "g");
	ck_assert_uint_eq(g, f);
	ck_assert_uint_eq(cfs_tree_generation(T, g), gen + 1);
	ck_assert_int_eq(cfs_tree_kind(T, g), RS_DIR);
	ck_assert_uint_eq(st_of(T, g).st_nlink, 2);
}
END_TEST

START_TEST(test_orphan_handle_is_not_reused_until_unref)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	cfs_tree_ref(T, f, 1);
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	ck_assert_uint_ne(mkf(T, CFS_ROOT, "g"), f);
	cfs_tree_unref(T, f, 1);
	ck_assert_uint_eq(mkf(T, CFS_ROOT, "h"), f);
}
END_TEST

/* ---- readdir ---- */

START_TEST(test_readdir_lists_in_creation_order)
{
	mkf(T, CFS_ROOT, "c");
	mkd(T, CFS_ROOT, "a");
	mkl(T, CFS_ROOT, "b", "t");
	ck_assert_str_eq(listing(T, CFS_ROOT), "c a b");
	ck_assert_uint_eq(cfs_tree_dir_count(T, CFS_ROOT), 3);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "a"), 0);
	ck_assert_str_eq(listing(T, CFS_ROOT), "c b");
	mkf(T, CFS_ROOT, "a");
	ck_assert_str_eq(listing(T, CFS_ROOT), "c b a");
}
END_TEST

START_TEST(test_readdir_cookies_are_never_zero_and_end_returns_1)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), child;
	uint64_t cookie = 0;
	const char *name;
	size_t len;

	ck_assert_int_eq(cfs_tree_dir_next(T, CFS_ROOT, &cookie, &name, &len, &child), 0);
	ck_assert_uint_ne(cookie, 0);
	ck_assert_uint_eq(child, f);
	ck_assert_int_eq(cfs_tree_dir_next(T, CFS_ROOT, &cookie, &name, &len, &child), 1);
	ck_assert_int_eq(cfs_tree_dir_next(T, f, &cookie, &name, &len, &child), -ENOTDIR);
	ck_assert_uint_eq(cfs_tree_dir_count(T, f), 0);
}
END_TEST

START_TEST(test_readdir_continues_after_removed_cookie_entry)
{
	uint64_t cookie = 0;
	const char *name;
	size_t len;
	uint32_t child;

	for (const char *n = "abcde"; *n; n++)
		mkf(T, CFS_ROOT, (char[]){*n, 0});
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(cfs_tree_dir_next(T, CFS_ROOT, &cookie, &name, &len, &child), 0);
	ck_assert_int_eq(rm(T, CFS_ROOT, "c"), 0); /* the cookie's own entry */
	ck_assert_int_eq(rm(T, CFS_ROOT, "d"), 0);
	ck_assert_int_eq(cfs_tree_dir_next(T, CFS_ROOT, &cookie, &name, &len, &child), 0);
	ck_assert_mem_eq(name, "e", len);
	ck_assert_int_eq(cfs_tree_dir_next(T, CFS_ROOT, &cookie, &name, &len, &child), 1);
}
END_TEST

START_TEST(test_readdir_cookie_after_last_entry_removed_ends)
{
	uint64_t cookie = 0;
	const char *name;
	size_t len;
	uint32_t child;

	mkf(T, CFS_ROOT, "a");
	mkf(T, CFS_ROOT, "b");
	ck_assert_int_eq(cfs_tree_dir_next(T, CFS_ROOT, &cookie, &name, &len, &child), 0);
	ck_assert_int_eq(cfs_tree_dir_next(T, CFS_ROOT, &cookie, &name, &len, &child), 0);
	ck_assert_int_eq(rm(T, CFS_ROOT, "b"), 0);
	ck_assert_int_eq(cfs_tree_dir_next(T, CFS_ROOT, &cookie, &name, &len, &child), 1);
	mkf(T, CFS_ROOT, "c"); /* created after the cookie: listed */
	ck_assert_int_eq(cfs_tree_dir_next(T, CFS_ROOT, &cookie, &name, &len, &child), 0);
	ck_assert_mem_eq(name, "c", len);
}
END_TEST

/* The number in a name like "e00042" (names are not NUL-terminated). */
static int entry_number(const char *name, size_t len)
{
	int n = 0;

	for (size_t i = 1; i < len; i++)
		n = n * 10 + (name[i] - '0');
	return n;
}

/* List half of a 10,000-entry directory, remove and add entries on both sides of the cookie
 * (enough to compact the directory), remove the cookie's own entry, and finish: every entry
 * that existed throughout is seen exactly once, and nothing removed is seen after removal. */
START_TEST(test_readdir_is_stable_across_removals_and_additions)
{
	static unsigned char seen[2 * BIG_DIR];
	uint32_t d = mkd(T, CFS_ROOT, "d"), child;
	uint64_t cookie = 0;
	const char *name;
	size_t len;
	char buf[32];
	int last = -1;

	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < BIG_DIR; i++) {
		snprintf(buf, sizeof(buf), "e%05d", i);
		mkf(T, d, buf);
	}
	for (int i = 0; i < BIG_DIR / 2; i++) {
		ck_assert_int_eq(cfs_tree_dir_next(T, d, &cookie, &name, &len, &child), 0);
		last = entry_number(name, len);
		seen[last]++;
	}
	for (int i = 0; i < BIG_DIR; i++) { /* two thirds go: compaction moves everything */
		snprintf(buf, sizeof(buf), "e%05d", i);
		if (i % 3 || i == last)
			ck_assert_int_eq(rm(T, d, buf), 0);
	}
	for (int i = BIG_DIR; i < BIG_DIR + 100; i++) {
		snprintf(buf, sizeof(buf), "e%05d", i);
		mkf(T, d, buf);
	}
	while (cfs_tree_dir_next(T, d, &cookie, &name, &len, &child) == 0) {
		int i = entry_number(name, len);
		ck_assert_msg(i >= BIG_DIR || i % 3 == 0, "removed entry %d listed", i);
		seen[i]++;
	}
	for (int i = 0; i < BIG_DIR; i++) {
		ck_assert_msg(seen[i] <= 1, "entry %d listed %d times", i, seen[i]);
		if (i % 3 == 0 && i != last)
			ck_assert_msg(seen[i] == 1, "entry %d skipped", i);
	}
}
END_TEST

/* The pattern rm -rf follows: read a batch, unlink it, continue from the last (removed)
 * entry's cookie. Each call must cost O(1): a rescan would take minutes here. */
START_TEST(test_readdir_while_unlinking_everything_visits_each_entry_once)
{
	enum { N = 200000, BATCH = 100 };
	uint32_t d = mkd(T, CFS_ROOT, "d"), child;
	uint64_t cookie = 0;
	const char *name;
	size_t len;
	char buf[32], batch[BATCH][16];
	long seen = 0;

	int bad = 0;

	for (int i = 0; i < N; i++) {
		int n = snprintf(buf, sizeof(buf), "%d", i);
		bad += cfs_tree_mkfile(T, d, buf, (size_t)n, &AF, &child) != 0;
	}
	for (;;) {
		int n = 0;
		while (n < BATCH && cfs_tree_dir_next(T, d, &cookie, &name, &len, &child) == 0) {
			memcpy(batch[n], name, len);
			batch[n++][len] = '\0';
		}
		if (!n)
			break;
		for (int i = 0; i < n; i++)
			bad += rm(T, d, batch[i]) != 0;
		seen += n;
	}
	ck_assert_int_eq(bad, 0);
	ck_assert_int_eq(seen, N);
	ck_assert_uint_eq(cfs_tree_dir_count(T, d), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), 0);
}
END_TEST

/* ---- the test cases ---- */

void tree_tcase_create(TCase *tc)
{
	tcase_add_test(tc, test_new_tree_is_a_root_dir);
	tcase_add_test(tc, test_new_tree_allocation_failure_returns_null_without_leak);
	tcase_add_test(tc, test_mkdir_creates_dir_and_counts_it_in_parent_nlink);
	tcase_add_test(tc, test_mkfile_creates_empty_file_with_nlink_1);
	tcase_add_test(tc, test_symlink_keeps_target_bytes_exactly);
	tcase_add_test(tc, test_symlink_mode_is_always_0777);
	tcase_add_test(tc, test_up_name_is_reserved_in_every_way_in);
	tcase_add_test(tc, test_name_depth_is_the_deepest_name);
	tcase_add_test(tc, test_symlink_empty_target_is_enoent);
	tcase_add_test(tc, test_symlink_target_of_4095_fits_4096_is_enametoolong);
	tcase_add_test(tc, test_create_over_existing_name_is_eexist);
	tcase_add_test(tc, test_create_in_a_file_is_enotdir);
	tcase_add_loop_test(tc, test_bad_names_are_einval_everywhere, 0,
			    sizeof(bad_names) / sizeof(bad_names[0]));
	tcase_add_test(tc, test_name_of_255_fits_256_is_enametoolong);
	tcase_add_test(tc, test_lookup_missing_name_is_enoent);
	tcase_add_test(tc, test_lookup_dot_and_dotdot_give_dir_and_parent);
	tcase_add_test(tc, test_same_name_in_different_dirs_are_different_entries);
	tcase_add_test(tc, test_create_stamps_new_node_and_parent_times);
	tcase_add_test(tc, test_create_in_removed_dir_is_enoent);
}

/* O_TMPFILE: a file with no name, held by the caller's reference; linkat names it once. */
START_TEST(test_unnamed_file_is_listed_nowhere_and_freed_at_unref)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), f;
	uint64_t nodes = stats_of(T).nodes;

	struct timespec old = {1000, 0};

	ck_assert_int_eq(cfs_tree_set_times(T, d, &old, &old, &old), 0);
	ck_assert_int_eq(cfs_tree_mkfile_unnamed(T, d, &AF, &f), 0);
	ck_assert_int_eq(st_of(T, d).st_mtime, 1000); /* the directory is as it was */
	ck_assert_int_eq(st_of(T, d).st_ctime, 1000);
	ck_assert_int_eq(st_of(T, f).st_nlink, 0);
	ck_assert_int_eq(cfs_tree_refs(T, f), 1);
	ck_assert_str_eq(listing(T, d), "");
	ck_assert_int_eq(cfs_tree_write(T, f, "tmp", 3, 0), 3);
	ck_assert_uint_eq(stats_of(T).nodes, nodes + 1);
	cfs_tree_unref(T, f, 1);
	ck_assert_uint_eq(stats_of(T).nodes, nodes);
	ck_assert_int_eq(stats_of(T).data_bytes, 0);
}
END_TEST

START_TEST(test_unnamed_file_linked_gets_its_first_name_anywhere)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), e = mkd(T, CFS_ROOT, "e"), f;

	ck_assert_int_eq(cfs_tree_mkfile_unnamed(T, d, &AF, &f), 0);
	ck_assert_int_eq(cfs_tree_write(T, f, "tmp", 3, 0), 3);
	ck_assert_int_eq(cfs_tree_link_unnamed(T, f, e, "x", 1), 0);
	ck_assert_int_eq(st_of(T, f).st_nlink, 1);
	ck_assert_uint_eq(at(T, e, "x"), f);
	ck_assert_str_eq(name_of(T, f), "x");
	ck_assert_uint_eq(cfs_tree_parent(T, f), e);
	ck_assert_int_eq(cfs_tree_link_unnamed(T, f, e, "y", 1), -EINVAL); /* named now */
	ck_assert_int_eq(lk(T, f, d, "y"), 0);
	cfs_tree_unref(T, f, 1);
	assert_content(T, at(T, d, "y"), "tmp", 3);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), -ENOTEMPTY);
	ck_assert_int_eq(rm(T, d, "y"), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), 0); /* the orphan's pin on d went */
}
END_TEST

START_TEST(test_unnamed_file_link_checks_the_name_first)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), f, g = mkf(T, d, "taken");

	ck_assert_int_eq(cfs_tree_mkfile_unnamed(T, d, &AF, &f), 0);
	ck_assert_int_eq(cfs_tree_link_unnamed(T, f, d, "taken", 5), -EEXIST);
	ck_assert_int_eq(cfs_tree_link_unnamed(T, f, g, "x", 1), -ENOTDIR);
	ck_assert_int_eq(cfs_tree_link_unnamed(T, g, d, "x", 1), -EINVAL); /* has a name */
	ck_assert_int_eq(st_of(T, f).st_nlink, 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), -ENOTEMPTY);
	ck_assert_int_eq(rm(T, d, "taken"), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), 0); /* a removed dir keeps its unnamed file */
	ck_assert_int_eq(cfs_tree_mkfile_unnamed(T, d, &AF, &g), -ENOENT);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, 0), 1);
	cfs_tree_unref(T, f, 1);
}
END_TEST

void tree_tcase_orphans(TCase *tc)
{
	tcase_add_test(tc, test_unnamed_file_is_listed_nowhere_and_freed_at_unref);
	tcase_add_test(tc, test_unnamed_file_linked_gets_its_first_name_anywhere);
	tcase_add_test(tc, test_unnamed_file_link_checks_the_name_first);
	tcase_add_test(tc, test_unlinked_referenced_file_stays_readable_until_unref);
	tcase_add_test(tc, test_removed_referenced_dir_is_empty_and_dead_until_unref);
	tcase_add_test(tc, test_orphan_keeps_its_last_dir_alive);
	tcase_add_test(tc, test_refs_count_per_node_and_in_total);
	tcase_add_test(tc, test_saturated_refs_stick_and_keep_the_orphan);
	tcase_add_test(tc, test_freed_handle_is_reused_with_next_generation);
	tcase_add_test(tc, test_orphan_handle_is_not_reused_until_unref);
}

void tree_tcase_readdir(TCase *tc)
{
	tcase_add_test(tc, test_readdir_lists_in_creation_order);
	tcase_add_test(tc, test_readdir_cookies_are_never_zero_and_end_returns_1);
	tcase_add_test(tc, test_readdir_continues_after_removed_cookie_entry);
	tcase_add_test(tc, test_readdir_cookie_after_last_entry_removed_ends);
	tcase_add_test(tc, test_readdir_is_stable_across_removals_and_additions);
	tcase_add_test(tc, test_readdir_while_unlinking_everything_visits_each_entry_once);
}
