/*
 * File data (tree/tree_data.c): patterns, writes, truncation, the data and metadata limits.
 */
#include "test_tree.h"

/* ---- content ---- */

START_TEST(test_pattern_reads_right_at_every_offset_and_length)
{
	static const char pat[] = "abcdefg";
	enum { PLEN = sizeof(pat) - 1, SIZE = 40 };
	uint32_t f = mkf(T, CFS_ROOT, "f");
	char buf[SIZE + 8];

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, pat, PLEN, SIZE), 0);
	ck_assert_int_eq(st_of(T, f).st_size, SIZE);
	for (int off = 0; off <= SIZE + 2; off++) {
		for (int len = 0; len <= SIZE + 4; len++) {
			int want = off >= SIZE ? 0 : (off + len > SIZE ? SIZE - off : len);
			char expect[SIZE + 8];
			for (int i = 0; i < want; i++)
				expect[i] = pat[(off + i) % PLEN];
			ck_assert_int_eq(cfs_tree_read(T, f, buf, (size_t)len, off), want);
			ck_assert_msg(!memcmp(buf, expect, (size_t)want), "off %d len %d", off,
				      len);
		}
	}
}
END_TEST

START_TEST(test_pattern_of_one_byte_fills_a_large_read)
{
	enum { SIZE = 1 << 20 };
	uint32_t f = mkf(T, CFS_ROOT, "f");
	char *buf = malloc(SIZE);

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "z", 1, 1ull << 40), 0);
	char *want = malloc(SIZE);

	memset(want, 'z', SIZE);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, SIZE, (1ll << 40) - SIZE), SIZE);
	ck_assert(!memcmp(buf, want, SIZE));
	free(buf);
	free(want);
}
END_TEST

START_TEST(test_read_past_end_is_0_and_negative_offset_einval)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	char buf[4];

	ck_assert_int_eq(cfs_tree_set_content(T, f, "abc", 3), 0);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 4, 3), 0);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 4, 100), 0);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 4, -1), -EINVAL);
	ck_assert_int_eq(cfs_tree_write(T, f, buf, 1, -1), -EINVAL);
}
END_TEST

START_TEST(test_content_ops_on_dir_are_eisdir_and_on_link_einval)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), l = mkl(T, CFS_ROOT, "l", "t");
	char buf[4];

	ck_assert_int_eq(cfs_tree_read(T, d, buf, 4, 0), -EISDIR);
	ck_assert_int_eq(cfs_tree_read(T, l, buf, 4, 0), -EINVAL);
	ck_assert_int_eq(cfs_tree_write(T, d, "x", 1, 0), -EISDIR);
	ck_assert_int_eq(cfs_tree_write(T, l, "x", 1, 0), -EINVAL);
	ck_assert_int_eq(cfs_tree_truncate(T, d, 1), -EISDIR);
	ck_assert_int_eq(cfs_tree_truncate(T, l, 1), -EINVAL);
	ck_assert_int_eq(cfs_tree_set_content(T, d, "x", 1), -EISDIR);
	ck_assert_int_eq(cfs_tree_set_pattern(T, l, "x", 1, 1), -EINVAL);
}
END_TEST

START_TEST(test_write_past_end_leaves_a_zero_hole)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_write(T, f, "xy", 2, 10), 2);
	assert_content(T, f, "\0\0\0\0\0\0\0\0\0\0xy", 12);
	ck_assert_int_eq(cfs_tree_write(T, f, "ab", 2, 0), 2);
	ck_assert_int_eq(cfs_tree_write(T, f, "Q", 1, 15), 1);
	assert_content(T, f, "ab\0\0\0\0\0\0\0\0xy\0\0\0Q", 16);
	ck_assert_uint_ge(stats_of(T).data_bytes, 16); /* a small file: a buffer, not a page */
	ck_assert_uint_lt(stats_of(T).data_bytes, 4096);
	ck_assert_int_eq(st_of(T, f).st_blocks, 8);
}
END_TEST

START_TEST(test_appending_writes_build_the_file)
{
	enum { N = 10000 };
	uint32_t f = mkf(T, CFS_ROOT, "f");
	char *buf = malloc(N * 3);

	char *want = malloc(N * 3);
	int bad = 0;

	for (int i = 0; i < N; i++) {
		bad += cfs_tree_write(T, f, "abc", 3, (off_t)i * 3) != 3;
		memcpy(want + i * 3, "abc", 3);
	}
	ck_assert_int_eq(bad, 0);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, N * 3, 0), N * 3);
	ck_assert(!memcmp(buf, want, N * 3));
	free(buf);
	free(want);
}
END_TEST

START_TEST(test_write_into_pattern_file_keeps_the_rest_of_the_pattern)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "abc", 3, 8), 0);
	ck_assert_int_eq(cfs_tree_write(T, f, "Z", 1, 4), 1);
	assert_content(T, f, "abcaZcab", 8);
	ck_assert_uint_eq(stats_of(T).data_bytes, 8);
}
END_TEST

START_TEST(test_write_into_huge_pattern_file_stores_only_the_touched_page)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	const uint64_t size = 1000000000000000000ull, at = 1ull << 40;
	char buf[8];

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "abc", 3, size), 0);
	ck_assert_int_eq(cfs_tree_write(T, f, "Z", 1, (off_t)at), 1);
	ck_assert_int_eq(st_of(T, f).st_size, (off_t)size);
	ck_assert_uint_eq(stats_of(T).data_bytes, 4096);
	const char around[3] = {"abc"[(at - 1) % 3], 'Z', "abc"[(at + 1) % 3]};
	const char tail[3] = {"abc"[(size - 3) % 3], "abc"[(size - 2) % 3], "abc"[(size - 1) % 3]};

	ck_assert_int_eq(cfs_tree_read(T, f, buf, 3, (off_t)at - 1), 3);
	ck_assert_mem_eq(buf, around, 3);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 3, (off_t)size - 3), 3); /* the pattern goes on */
	ck_assert_mem_eq(buf, tail, 3);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 5), 0); /* the page goes, the pattern stays */
	assert_content(T, f, "abcab", 5);
	ck_assert_uint_eq(stats_of(T).data_bytes, 0);
}
END_TEST

/* The kernel's MAX_LFS_FILESIZE is INT64_MAX: writes go up to it, as on tmpfs. */
START_TEST(test_sparse_writes_up_to_the_largest_offset_read_holes_as_zeros)
{
	static const int64_t offs[] = {(1ll << 31) + 1, 1ll << 40, INT64_MAX - 2};
	char buf[16];

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		char name[8];
		snprintf(name, sizeof(name), "f%zu", i);
		uint32_t f = mkf(T, CFS_ROOT, name);
		ck_assert_int_eq(cfs_tree_write(T, f, "ab", 2, offs[i]), 2);
		ck_assert_int_eq(st_of(T, f).st_size, offs[i] + 2);
		ck_assert_int_eq(st_of(T, f).st_blocks, offs[i] % 4096 < 4095 ? 8 : 16);
		memset(buf, 'x', sizeof(buf));
		ck_assert_int_eq(cfs_tree_read(T, f, buf, sizeof(buf), offs[i] - 6), 8);
		ck_assert_mem_eq(buf, "\0\0\0\0\0\0ab", 8);
		ck_assert_int_eq(cfs_tree_read(T, f, buf, 4, 0), 4);
		ck_assert_mem_eq(buf, "\0\0\0\0", 4);
		ck_assert_int_eq(cfs_tree_read(T, f, buf, 4, offs[i] / 2), 4);
		ck_assert_mem_eq(buf, "\0\0\0\0", 4);
	}
	ck_assert_uint_le(stats_of(T).data_bytes, 4 * 4096);
}
END_TEST

START_TEST(test_write_at_max_size_is_efbig_and_across_it_is_cut)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, INT64_MAX), -EFBIG);
	ck_assert_int_eq(st_of(T, f).st_size, 0);
	ck_assert_int_eq(cfs_tree_write(T, f, "xyz", 3, INT64_MAX - 1), 1);
	ck_assert_int_eq(st_of(T, f).st_size, INT64_MAX);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 0, 5), 0);
	ck_assert_int_eq(cfs_tree_truncate(T, f, (uint64_t)INT64_MAX + 1), -EFBIG);
}
END_TEST

START_TEST(test_st_blocks_count_held_pages_as_tmpfs)
{
	uint32_t z = mkf(T, CFS_ROOT, "z"), s = mkf(T, CFS_ROOT, "s"), p = mkf(T, CFS_ROOT, "p");
	uint32_t w = mkf(T, CFS_ROOT, "w");
	static char page[3 * 4096];

	ck_assert_int_eq(cfs_tree_truncate(T, z, 1 << 20), 0);
	ck_assert_int_eq(st_of(T, z).st_blocks, 0); /* all hole */
	ck_assert_int_eq(cfs_tree_set_content(T, s, "abc", 3), 0);
	ck_assert_int_eq(st_of(T, s).st_blocks, 8); /* a small file: one page, as tmpfs */
	ck_assert_int_eq(cfs_tree_set_pattern(T, p, "ab", 2, 10000), 0);
	ck_assert_int_eq(st_of(T, p).st_blocks, 24);
	ck_assert_int_eq(cfs_tree_write(T, w, page, sizeof(page), 0), (ssize_t)sizeof(page));
	ck_assert_int_eq(cfs_tree_write(T, w, "x", 1, 1 << 30), 1);
	ck_assert_int_eq(st_of(T, w).st_blocks, 32);
	ck_assert_int_eq(cfs_tree_truncate(T, p, 20000), 0); /* past the pattern: a hole */
	ck_assert_int_eq(st_of(T, p).st_blocks, 24);
	ck_assert_int_eq(cfs_tree_write(T, p, "x", 1, 19000), 1);
	ck_assert_int_eq(st_of(T, p).st_blocks, 32);
}
END_TEST

START_TEST(test_truncate_frees_pages_past_the_size_and_zeros_the_tail)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	static char data[3 * 4096];
	char buf[8];

	memset(data, 'd', sizeof(data));
	ck_assert_int_eq(cfs_tree_write(T, f, data, sizeof(data), 0), (ssize_t)sizeof(data));
	ck_assert_uint_eq(stats_of(T).data_bytes, 3 * 4096);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 4096 + 10), 0);
	ck_assert_uint_eq(stats_of(T).data_bytes, 2 * 4096);
	ck_assert_int_eq(st_of(T, f).st_blocks, 16);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 3 * 4096), 0);
	ck_assert_uint_eq(stats_of(T).data_bytes, 2 * 4096); /* growing holds nothing */
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 8, 4096 + 6), 8);
	ck_assert_mem_eq(buf, "dddd\0\0\0\0", 8);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 8, 2 * 4096 + 100), 8);
	ck_assert_mem_eq(buf, "\0\0\0\0\0\0\0\0", 8);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 0), 0);
	ck_assert_uint_eq(stats_of(T).data_bytes, 0);
	ck_assert_int_eq(st_of(T, f).st_blocks, 0);
}
END_TEST

START_TEST(test_huge_pattern_truncated_then_grown_reads_zeros_past_the_cut)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	char buf[4];

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "abcd", 4, 1ull << 50), 0);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 1ull << 40), 0);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 1ull << 41), 0);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 4, (1ll << 40) - 2), 4);
	ck_assert_mem_eq(buf, "cd\0\0", 4);
	ck_assert_int_eq(st_of(T, f).st_blocks, (1ll << 40) / 512);
	ck_assert_uint_eq(stats_of(T).data_bytes, 0);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 1ull << 40), 0); /* a pattern file again */
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 4, (1ll << 40) - 4), 4);
	ck_assert_mem_eq(buf, "abcd", 4);
}
END_TEST

START_TEST(test_small_file_holds_its_bytes_not_a_page)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_set_content(T, f, "0123456789", 10), 0);
	ck_assert_uint_eq(stats_of(T).data_bytes, 10);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, 5000), 1); /* now pages: 0 and 1 */
	ck_assert_uint_eq(stats_of(T).data_bytes, 2 * 4096);
	char buf[12];
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 12, 0), 12);
	ck_assert_mem_eq(buf, "0123456789\0\0", 12);
}
END_TEST

/* A limit of three pages: a write that needs five stops after three, as tmpfs's does. */
START_TEST(test_data_limit_cuts_a_write_short_then_enospc)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	static char data[5 * 4096];
	char buf[4];

	memset(data, 'd', sizeof(data));
	cfs_tree_set_data_limit(T, 3 * 4096);
	ck_assert_uint_eq(stats_of(T).data_limit, 3 * 4096);
	ck_assert_int_eq(cfs_tree_write(T, f, data, sizeof(data), 10), 3 * 4096 - 10);
	ck_assert_int_eq(st_of(T, f).st_size, 3 * 4096);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, 3 * 4096), -ENOSPC);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, 1ll << 40), -ENOSPC);
	ck_assert_int_eq(st_of(T, f).st_size, 3 * 4096);
	ck_assert_int_eq(cfs_tree_write(T, f, "xy", 2, 100), 2); /* a page it holds: fine */
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 4, 99), 4);
	ck_assert_mem_eq(buf, "dxyd", 4);
	uint32_t g = mkf(T, CFS_ROOT, "g");
	ck_assert_int_eq(cfs_tree_write(T, g, "x", 1, 0), -ENOSPC); /* not even a small file */
	ck_assert_int_eq(cfs_tree_truncate(T, f, 4096), 0);	    /* room again */
	ck_assert_int_eq(cfs_tree_write(T, g, "x", 1, 0), 1);
}
END_TEST

/* ---- the metadata limit ---- */

enum { META_TARGET = 4000 };

static char *long_target(void)
{
	static char target[META_TARGET + 1];

	memset(target, 't', META_TARGET);
	return target;
}

/* Links with 4000-byte targets until ENOSPC: as many as the limit has room for, each
 * counted at its target, its name and a node's cost; removing one gives its room back. */
START_TEST(test_meta_limit_stops_links_then_removal_frees_it)
{
	const char *target = long_target();
	uint64_t base = stats_of(T).meta_bytes, each = 128 + META_TARGET + 4;
	char name[16];
	uint32_t id;
	int n = 0, err;

	cfs_tree_set_meta_limit(T, base + 10 * each + each / 2);
	ck_assert_uint_eq(stats_of(T).meta_limit, base + 10 * each + each / 2);
	for (;;) {
		snprintf(name, sizeof(name), "l%03d", n);
		err = cfs_tree_symlink(T, CFS_ROOT, name, 4, target, META_TARGET, &A, &id);
		if (err)
			break;
		n++;
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_int_eq(n, 10);
	ck_assert_uint_eq(stats_of(T).meta_bytes, base + 10 * each);
	ck_assert_uint_eq(stats_of(T).links, 10);
	ck_assert_int_eq(rm(T, CFS_ROOT, "l003"), 0);
	ck_assert_int_eq(cfs_tree_symlink(T, CFS_ROOT, "new!", 4, target, META_TARGET, &A, &id), 0);
	ck_assert_int_eq(cfs_tree_symlink(T, CFS_ROOT, "more", 4, "x", 1, &A, &id), 0);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "l%03d", i);
		rm(T, CFS_ROOT, name);
	}
	ck_assert_int_eq(rm(T, CFS_ROOT, "new!"), 0);
	ck_assert_int_eq(rm(T, CFS_ROOT, "more"), 0);
	ck_assert_uint_eq(stats_of(T).meta_bytes, base); /* every byte came back */
}
END_TEST

/* Directories with 255-byte names and nodes of every kind count the same way. */
START_TEST(test_meta_limit_stops_mkdir_and_long_names)
{
	char name[RS_NAME_MAX + 1];
	uint64_t base = stats_of(T).meta_bytes, each = 128 + RS_NAME_MAX;
	uint32_t id;
	int n = 0, err;

	memset(name, 'n', RS_NAME_MAX);
	name[RS_NAME_MAX] = '\0';
	cfs_tree_set_meta_limit(T, base + 3 * each);
	for (;; n++) {
		name[0] = (char)('a' + n);
		if ((err = cfs_tree_mkdir(T, CFS_ROOT, name, RS_NAME_MAX, &A, &id)))
			break;
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(cfs_tree_mkfile(T, CFS_ROOT, "f", 1, &AF, &id), -ENOSPC);
	ck_assert_int_eq(cfs_tree_mknod(T, CFS_ROOT, "p", 1, S_IFIFO, 0, &AF, &id), -ENOSPC);
	name[0] = 'a';
	ck_assert_int_eq(cfs_tree_rmdir(T, CFS_ROOT, name, RS_NAME_MAX), 0);
	ck_assert_uint_eq(stats_of(T).meta_bytes, base + 2 * each);
	ck_assert_uint_eq(cfs_tree_nodes_room(T), each / 128);
	ck_assert_int_eq(cfs_tree_mkfile(T, CFS_ROOT, "f", 1, &AF, &id), 0);
}
END_TEST

/* A hard link's name, a rename to a longer name and a pattern count too; a rename to a
 * shorter name always fits; a refused call leaves the tree as it was. */
START_TEST(test_meta_limit_counts_names_renames_and_patterns)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	uint64_t used = stats_of(T).meta_bytes;

	cfs_tree_set_meta_limit(T, used + 64 + 2);
	ck_assert_int_eq(lk(T, f, CFS_ROOT, "abc"), -ENOSPC); /* 64 + 3 */
	ck_assert_int_eq(lk(T, f, CFS_ROOT, "ab"), 0);	      /* 64 + 2 */
	ck_assert_uint_eq(stats_of(T).meta_bytes, used + 66);
	char *before = dump(T, NULL, 0);
	ck_assert_int_eq(mv(T, CFS_ROOT, "f", CFS_ROOT, "longer", 0), -ENOSPC);
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "xyz", 3, 100), -ENOSPC);
	char *after = dump(T, NULL, 0);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	ck_assert_int_eq(mv(T, CFS_ROOT, "ab", CFS_ROOT, "a", 0), 0);
	ck_assert_int_eq(mv(T, CFS_ROOT, "a", CFS_ROOT, "b", 0), 0);
	ck_assert_int_eq(rm(T, CFS_ROOT, "b"), 0);
	ck_assert_uint_eq(stats_of(T).meta_bytes, used);
	cfs_tree_set_meta_limit(T, used + 10);
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "xyz", 3, 100), -ENOSPC); /* 8 + 3 */
	cfs_tree_set_meta_limit(T, used + 11);
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "xyz", 3, 100), 0);
}
END_TEST

START_TEST(test_enospc_leaves_the_tree_as_it_was)
{
	uint32_t p = mkf(T, CFS_ROOT, "p"), b = mkf(T, CFS_ROOT, "b"), w = mkf(T, CFS_ROOT, "w");
	static char data[2 * 4096];

	ck_assert_int_eq(cfs_tree_set_pattern(T, p, "abc", 3, 1 << 20), 0);
	ck_assert_int_eq(cfs_tree_set_content(T, b, "buffer", 6), 0);
	ck_assert_int_eq(cfs_tree_write(T, w, data, sizeof(data), 4096), (ssize_t)sizeof(data));
	cfs_tree_set_data_limit(T, stats_of(T).data_bytes); /* full */
	char *before = dump(T, NULL, 0);
	ck_assert_int_eq(cfs_tree_write(T, p, "x", 1, 5), -ENOSPC);
	ck_assert_int_eq(cfs_tree_write(T, b, "x", 1, 8000), -ENOSPC);
	ck_assert_int_eq(cfs_tree_write(T, b, "more", 4, 6), -ENOSPC);
	ck_assert_int_eq(cfs_tree_write(T, w, "x", 1, 0), -ENOSPC);
	ck_assert_int_eq(cfs_tree_set_content(T, w, data, sizeof(data)), -ENOSPC);
	ck_assert_int_eq(cfs_tree_set_content(T, b, "bigger buffer", 13), -ENOSPC);
	char *after = dump(T, NULL, 0);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
}
END_TEST

START_TEST(test_layout_reports_pattern_and_written_runs)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), g = mkf(T, CFS_ROOT, "g");
	uint64_t end, s, e;
	const char *pat;
	size_t plen;

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "xy", 2, 100000), 0);
	ck_assert_int_eq(cfs_tree_write(T, f, "a", 1, 8192), 1);
	ck_assert_int_eq(cfs_tree_write(T, f, "b", 1, 12288), 1);
	ck_assert_int_eq(cfs_tree_write(T, f, "c", 1, 1 << 20), 1);
	ck_assert_int_eq(cfs_tree_file_pattern(T, f, &pat, &plen, &end), 0);
	ck_assert_uint_eq(plen, 2);
	ck_assert_mem_eq(pat, "xy", 2);
	ck_assert_uint_eq(end, 100000);
	ck_assert_int_eq(cfs_tree_next_written(T, f, 0, &s, &e), 0);
	ck_assert_uint_eq(s, 8192);
	ck_assert_uint_eq(e, 16384);
	ck_assert_int_eq(cfs_tree_next_written(T, f, 9000, &s, &e), 0);
	ck_assert_uint_eq(s, 9000);
	ck_assert_int_eq(cfs_tree_next_written(T, f, e, &s, &e), 0);
	ck_assert_uint_eq(s, 1 << 20);
	ck_assert_uint_eq(e, (1 << 20) + 1); /* cut at the size */
	ck_assert_int_eq(cfs_tree_next_written(T, f, e, &s, &e), 1);
	ck_assert_int_eq(cfs_tree_set_content(T, g, "abc", 3), 0);
	ck_assert_int_eq(cfs_tree_file_pattern(T, g, &pat, &plen, &end), 0);
	ck_assert_uint_eq(end, 0);
	ck_assert_int_eq(cfs_tree_next_written(T, g, 0, &s, &e), 0);
	ck_assert_uint_eq(e, 3);
}
END_TEST

/* Random writes and truncates against a flat model: content, size and blocks agree. */
START_TEST(test_random_writes_and_truncates_match_a_flat_model)
{
	enum { SPAN = 64 * 4096 * 3, ROUNDS = 3000 };
	uint32_t f = mkf(T, CFS_ROOT, "f");
	char *model = calloc(SPAN, 1), *buf = malloc(SPAN), data[9000];
	uint64_t size = 0;

	srand(7);
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "0123456789", 10, 50000), 0);
	for (uint64_t i = 0; i < 50000; i++)
		model[i] = (char)('0' + i % 10);
	size = 50000;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t off = (uint64_t)rand() % (SPAN - sizeof(data));
		size_t len = (size_t)rand() % sizeof(data);
		if (rand() % 5 == 0) {
			ck_assert_int_eq(cfs_tree_truncate(T, f, off), 0);
			if (off < size)
				memset(model + off, 0, size - off);
			size = off;
			continue;
		}
		for (size_t k = 0; k < len; k++)
			data[k] = (char)('a' + rand() % 26);
		ck_assert_int_eq(cfs_tree_write(T, f, data, len, (off_t)off), (ssize_t)len);
		memcpy(model + off, data, len);
		if (len && off + len > size)
			size = off + len;
	}
	ck_assert_int_eq(st_of(T, f).st_size, (off_t)size);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, SPAN, 0), (ssize_t)size);
	ck_assert(!memcmp(buf, model, size));
	ck_assert_int_le(st_of(T, f).st_blocks, (off_t)(size + 4095) / 4096 * 8);
	free(model);
	free(buf);
}
END_TEST

START_TEST(test_truncate_shrinks_and_grows_with_zeros)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_set_content(T, f, "abcdef", 6), 0);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 3), 0);
	assert_content(T, f, "abc", 3);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 6), 0);
	assert_content(T, f, "abc\0\0\0", 6);
	ck_assert_uint_eq(stats_of(T).data_bytes, 6);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 0), 0);
	ck_assert_uint_eq(stats_of(T).data_bytes, 0);
	ck_assert_int_eq(st_of(T, f).st_size, 0);
}
END_TEST

START_TEST(test_truncate_pattern_file_grows_with_zeros_not_pattern)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "ab", 2, 5), 0);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 3), 0);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 5), 0);
	assert_content(T, f, "aba\0\0", 5);
}
END_TEST

START_TEST(test_truncate_empty_file_to_huge_size_reads_zeros_without_memory)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	uint64_t bytes = stats_of(T).bytes;
	char buf[8] = "xxxxxxx";

	ck_assert_int_eq(cfs_tree_truncate(T, f, 1ull << 50), 0);
	ck_assert_int_eq(st_of(T, f).st_size, 1ll << 50);
	ck_assert_uint_eq(stats_of(T).bytes, bytes);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 8, (1ll << 50) - 4), 4);
	ck_assert_mem_eq(buf, "\0\0\0\0", 4);
	ck_assert_int_eq(st_of(T, f).st_blocks, 0);
	ck_assert_int_eq(cfs_tree_truncate(T, f, UINT64_MAX), -EFBIG);
}
END_TEST

START_TEST(test_set_content_replaces_pattern_and_buffer)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "ab", 2, 9), 0);
	ck_assert_int_eq(cfs_tree_set_content(T, f, "hello", 5), 0);
	assert_content(T, f, "hello", 5);
	ck_assert_int_eq(cfs_tree_set_content(T, f, "hi", 2), 0);
	assert_content(T, f, "hi", 2);
	ck_assert_uint_eq(stats_of(T).data_bytes, 2);
	ck_assert_int_eq(cfs_tree_set_content(T, f, NULL, 0), 0);
	ck_assert_int_eq(st_of(T, f).st_size, 0);
	ck_assert_uint_eq(stats_of(T).data_bytes, 0);
}
END_TEST

START_TEST(test_set_pattern_limits)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	static char big[CFS_PATTERN_MAX + 1];

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "", 0, 5), -EINVAL);
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, big, sizeof(big), 5), -EINVAL);
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "a", 1, 1ull << 63), -EFBIG);
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "", 0, 0), 0);
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, big, CFS_PATTERN_MAX, 3), 0);
	assert_content(T, f, "\0\0\0", 3);
}
END_TEST

START_TEST(test_shared_pattern_survives_a_change_of_the_other_file)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), g = mkf(T, CFS_ROOT, "g"), h = mkf(T, CFS_ROOT, "h");

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "abc", 3, 4), 0);
	ck_assert_int_eq(cfs_tree_set_pattern(T, g, "abc", 3, 5), 0);
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "xyz", 3, 4), 0);
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	ck_assert_int_eq(cfs_tree_set_pattern(T, h, "abc", 3, 2), 0);
	assert_content(T, g, "abcab", 5);
	assert_content(T, h, "ab", 2);
}
END_TEST

/* Many long names, targets and patterns, most removed: the arena is rebuilt, and what stays
 * reads the same. */
START_TEST(test_arena_rebuild_keeps_names_targets_and_patterns)
{
	enum { N = 3000 };
	uint32_t d = mkd(T, CFS_ROOT, "d");
	char name[256], target[1024];

	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "%0200d", i);
		snprintf(target, sizeof(target), "%01000d", i);
		if (i % 2) {
			uint32_t f = mkf(T, d, name);
			ck_assert_int_eq(cfs_tree_set_pattern(T, f, target, 100 + i % 7, 300), 0);
		} else {
			mkl(T, d, name, target);
		}
	}
	uint64_t full = stats_of(T).bytes;
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "%0200d", i);
		if (i % 5)
			ck_assert_int_eq(rm(T, d, name), 0);
	}
	ck_assert_uint_lt(stats_of(T).bytes, full / 2);
	for (int i = 0; i < N; i += 5) {
		const char *got;
		size_t len;
		char want[300];
		snprintf(name, sizeof(name), "%0200d", i);
		snprintf(target, sizeof(target), "%01000d", i);
		uint32_t id = at(T, d, name);
		ck_assert_uint_ne(id, 0);
		ck_assert_str_eq(name_of(T, id), name);
		if (i % 2) {
			for (int j = 0; j < 300; j++)
				want[j] = target[j % (100 + i % 7)];
			assert_content(T, id, want, 300);
			continue;
		}
		ck_assert_int_eq(cfs_tree_readlink(T, id, &got, &len), 0);
		ck_assert_uint_eq(len, 1000);
		ck_assert_mem_eq(got, target, len);
	}
	ck_assert_uint_eq(cfs_tree_dir_count(T, d), N / 5);
}
END_TEST

/* ---- the test cases ---- */

void tree_tcase_content(TCase *tc)
{
	tcase_add_test(tc, test_pattern_reads_right_at_every_offset_and_length);
	tcase_add_test(tc, test_pattern_of_one_byte_fills_a_large_read);
	tcase_add_test(tc, test_read_past_end_is_0_and_negative_offset_einval);
	tcase_add_test(tc, test_content_ops_on_dir_are_eisdir_and_on_link_einval);
	tcase_add_test(tc, test_write_past_end_leaves_a_zero_hole);
	tcase_add_test(tc, test_appending_writes_build_the_file);
	tcase_add_test(tc, test_write_into_pattern_file_keeps_the_rest_of_the_pattern);
	tcase_add_test(tc, test_write_into_huge_pattern_file_stores_only_the_touched_page);
	tcase_add_test(tc, test_sparse_writes_up_to_the_largest_offset_read_holes_as_zeros);
	tcase_add_test(tc, test_write_at_max_size_is_efbig_and_across_it_is_cut);
	tcase_add_test(tc, test_st_blocks_count_held_pages_as_tmpfs);
	tcase_add_test(tc, test_truncate_frees_pages_past_the_size_and_zeros_the_tail);
	tcase_add_test(tc, test_huge_pattern_truncated_then_grown_reads_zeros_past_the_cut);
	tcase_add_test(tc, test_small_file_holds_its_bytes_not_a_page);
	tcase_add_test(tc, test_data_limit_cuts_a_write_short_then_enospc);
	tcase_add_test(tc, test_enospc_leaves_the_tree_as_it_was);
	tcase_add_test(tc, test_meta_limit_stops_links_then_removal_frees_it);
	tcase_add_test(tc, test_meta_limit_stops_mkdir_and_long_names);
	tcase_add_test(tc, test_meta_limit_counts_names_renames_and_patterns);
	tcase_add_test(tc, test_layout_reports_pattern_and_written_runs);
	tcase_add_test(tc, test_random_writes_and_truncates_match_a_flat_model);
	tcase_add_test(tc, test_truncate_shrinks_and_grows_with_zeros);
	tcase_add_test(tc, test_truncate_pattern_file_grows_with_zeros_not_pattern);
	tcase_add_test(tc, test_truncate_empty_file_to_huge_size_reads_zeros_without_memory);
	tcase_add_test(tc, test_set_content_replaces_pattern_and_buffer);
	tcase_add_test(tc, test_set_pattern_limits);
	tcase_add_test(tc, test_shared_pattern_survives_a_change_of_the_other_file);
	tcase_add_test(tc, test_arena_rebuild_keeps_names_targets_and_patterns);
}
