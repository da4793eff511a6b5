/*
 * The spec language: each keyword, errors with their exact place, the generators' shapes
 * checked with the resolver, dump round trips, materialize, and atomic lines under injected
 * allocation failures.
 */
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

static const struct cfs_spec_defaults def = {.uid = 4242, .gid = 4343};

/* ck_assert_msg records a mark point per call (a pipe write): too slow for 100k-node loops */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg(__VA_ARGS__);                                                 \
	} while (0)

/* ---------------------------------------------------------------------------------------- */
/* Helpers */

static struct cfs_tree *load_into(struct cfs_tree *t, const char *text)
{
	char *err = NULL;
	int rc = cfs_spec_load_text(t, "t.spec", text, strlen(text), &def, &err);

	ck_assert_msg(rc == 0, "load failed: %d %s", rc, err ? err : "(no message)");
	ck_assert_ptr_null(err);
	return t;
}

static struct cfs_tree *load(const char *text)
{
	struct cfs_tree *t = cfs_tree_new(NULL);

	ck_assert_ptr_nonnull(t);
	return load_into(t, text);
}

static struct rs_ctx ctx_for(const struct cfs_tree *t, struct rs_limits limits)
{
	return (struct rs_ctx){
	    .ops = &cfs_tree_rs_ops, .tree = (void *)t, .root = CFS_ROOT, .limits = limits};
}

static const struct rs_limits big_limits = {1000000, 1000000};

static int resolve_with(const struct cfs_tree *t, const char *path, struct rs_limits limits,
			unsigned flags, struct rs_result *res)
{
	struct rs_ctx ctx = ctx_for(t, limits);

	return rs_resolve(&ctx, CFS_ROOT, path, flags, res);
}

/* The node PATH names, following links (Linux limits); aborts the test if it does not. */
static uint32_t follow(const struct cfs_tree *t, const char *path)
{
	struct rs_result res;
	int rc = resolve_with(t, path, rs_limits_linux, RS_FOLLOW, &res);

	ck_assert_msg(rc == 0, "%s: %s", path, strerror(-rc));
	return (uint32_t)res.node;
}

/* The node PATH names itself (a final link is not followed). */
static uint32_t node(const struct cfs_tree *t, const char *path)
{
	struct rs_result res;
	int rc = resolve_with(t, path, rs_limits_linux, 0, &res);

	ck_assert_msg(rc == 0, "%s: %s", path, strerror(-rc));
	return (uint32_t)res.node;
}

static int follow_err(const struct cfs_tree *t, const char *path)
{
	struct rs_result res;

	return resolve_with(t, path, rs_limits_linux, RS_FOLLOW, &res);
}

static char *target_of(const struct cfs_tree *t, const char *path)
{
	const char *s;
	size_t len;

	ck_assert_int_eq(cfs_tree_readlink(t, node(t, path), &s, &len), 0);
	return g_strndup(s, len);
}

static char *content_of(const struct cfs_tree *t, uint32_t id)
{
	struct stat st;

	cfs_tree_stat(t, id, &st);
	char *buf = g_malloc((size_t)st.st_size + 1);
	ssize_t n = st.st_size ? cfs_tree_read(t, id, buf, (size_t)st.st_size, 0) : 0;
	ck_assert_int_eq(n, st.st_size);
	buf[n] = '\0';
	return buf;
}

static void assert_link(const struct cfs_tree *t, const char *path, const char *target)
{
	char *s = target_of(t, path);

	ck_assert_msg(strcmp(s, target) == 0, "%s -> '%s', expected '%s'", path, s, target);
	g_free(s);
}

static char *dump_of(const struct cfs_tree *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cfs_spec_dump(t, f), 0);
	fclose(f);
	return buf;
}

/* A description of T made without the spec module: every path with its kind, attributes,
 * link count, and content digest or target, in readdir order. */
static char *canon(const struct cfs_tree *t, bool times)
{
	GString *out = g_string_new(NULL);
	GArray *stack = g_array_new(FALSE, FALSE, sizeof(uint64_t) * 2);
	GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
	uint64_t top[2] = {CFS_ROOT, 0};
	char *buf = g_malloc(65536);

	g_array_append_val(stack, top);
	g_ptr_array_add(paths, g_strdup(""));
	while (stack->len > 0) {
		uint64_t *f = &g_array_index(stack, uint64_t, (stack->len - 1) * 2);
		const char *name;
		size_t len;
		uint32_t child;
		struct stat st;

		if (cfs_tree_dir_next(t, (uint32_t)f[0], &f[1], &name, &len, &child) != 0) {
			g_array_set_size(stack, stack->len - 1);
			g_ptr_array_remove_index(paths, paths->len - 1);
			continue;
		}
		char *raw = g_strndup(name, len), *esc = g_strescape(raw, NULL);
		char *path = g_strdup_printf("%s/%s", (char *)paths->pdata[paths->len - 1], esc);
		enum rs_kind kind = cfs_tree_kind(t, child);

		cfs_tree_stat(t, child, &st);
		g_string_append_printf(out, "%s k%d m%o u%u g%u n%lu s%lld", path, kind,
				       (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
				       (unsigned)st.st_gid, (unsigned long)st.st_nlink,
				       (long long)st.st_size);
		if (times)
			g_string_append_printf(out, " a%lld.%09ld m%lld.%09ld c%lld.%09ld",
					       (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
					       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
					       (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
		if (kind == RS_LINK) {
			const char *s;
			size_t tl;
			CHECK(cfs_tree_readlink(t, child, &s, &tl) == 0, "readlink");
			char *r = g_strndup(s, tl), *e = g_strescape(r, NULL);
			g_string_append_printf(out, " -> %s", e);
			g_free(e);
			g_free(r);
		} else if (kind == RS_FILE) {
			GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA1);
			/* the first 64 MiB: enough to tell contents apart, and a 1 PiB pattern
			 * file stays cheap */
			for (off_t off = 0; off < st.st_size && off < (64 << 20);) {
				ssize_t n = cfs_tree_read(t, child, buf, 65536, off);
				CHECK(n > 0, "read");
				g_checksum_update(sum, (const guchar *)buf, n);
				off += n;
			}
			g_string_append_printf(out, " %s", g_checksum_get_string(sum));
			g_checksum_free(sum);
		}
		g_string_append_c(out, '\n');
		if (kind == RS_DIR) {
			uint64_t sub[2] = {child, 0};
			g_array_append_val(stack, sub);
			g_ptr_array_add(paths, path);
		} else {
			g_free(path);
		}
		g_free(esc);
		g_free(raw);
	}
	struct stat st;
	cfs_tree_stat(t, CFS_ROOT, &st);
	g_string_append_printf(out, "/ m%o u%u g%u", (unsigned)(st.st_mode & 07777),
			       (unsigned)st.st_uid, (unsigned)st.st_gid);
	if (times)
		g_string_append_printf(out, " m%lld.%09ld c%lld.%09ld",
				       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
				       (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	g_free(buf);
	g_array_free(stack, TRUE);
	g_ptr_array_free(paths, TRUE);
	return g_string_free(out, FALSE);
}

static uint64_t node_count(const struct cfs_tree *t)
{
	struct cfs_tree_stats st;

	cfs_tree_stats(t, &st);
	return st.nodes;
}

/* ---------------------------------------------------------------------------------------- */
/* Node keywords */

START_TEST(test_dir_with_attributes)
{
	struct cfs_tree *t = load("dir /a mode=0700 uid=12 gid=34 atime=1 mtime=5.25 "
				  "ctime=-2.000000001\n");
	struct stat st;

	cfs_tree_stat(t, node(t, "/a"), &st);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(st.st_uid, 12);
	ck_assert_int_eq(st.st_gid, 34);
	ck_assert_int_eq(st.st_atim.tv_sec, 1);
	ck_assert_int_eq(st.st_atim.tv_nsec, 0);
	ck_assert_int_eq(st.st_mtim.tv_sec, 5);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 250000000);
	ck_assert_int_eq(st.st_ctim.tv_sec, -2);
	ck_assert_int_eq(st.st_ctim.tv_nsec, 1);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_missing_parents_are_made_0755_with_default_owner)
{
	struct cfs_tree *t = load("file /a/b/c x\n");
	struct stat st;

	cfs_tree_stat(t, node(t, "/a/b"), &st);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(st.st_uid, def.uid);
	ck_assert_int_eq(st.st_gid, def.gid);
	cfs_tree_stat(t, node(t, "/a/b/c"), &st);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0644);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_times_on_a_dir_survive_later_entries)
{
	struct cfs_tree *t = load("dir /a mtime=5 ctime=6\nfile /a/b\nlink /a/c b\n");
	struct stat st;

	cfs_tree_stat(t, node(t, "/a"), &st);
	ck_assert_int_eq(st.st_mtim.tv_sec, 5);
	ck_assert_int_eq(st.st_ctim.tv_sec, 6);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_stamp_gives_every_node_the_spec_time_but_explicit_times_win)
{
	struct cfs_spec_defaults d = {.uid = 1, .gid = 1, .stamp = true, .time = {777, 5}};
	const char *text = "dir /a\nfile /a/b\nlink /a/c b\nchain /d/e 3 /a/b\nfile /x mtime=9\n";
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;
	struct stat st;

	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", text, strlen(text), &d, &err), 0);
	const char *paths[] = {"/", "/a", "/a/b", "/a/c", "/d", "/d/.e.chain/1", "/d/e"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		cfs_tree_stat(t, node(t, paths[i]), &st);
		ck_assert_msg(st.st_mtim.tv_sec == 777 && st.st_ctim.tv_nsec == 5, "%s", paths[i]);
	}
	cfs_tree_stat(t, node(t, "/x"), &st);
	ck_assert_int_eq(st.st_mtim.tv_sec, 9);
	ck_assert_int_eq(st.st_atim.tv_sec, 777);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_dir_root_sets_root_attributes)
{
	struct cfs_tree *t = load("dir / mode=0711 uid=7 gid=8 mtime=9\ndir /x\n");
	struct stat st;

	cfs_tree_stat(t, CFS_ROOT, &st);
	ck_assert_int_eq(st.st_mode & 07777, 0711);
	ck_assert_int_eq(st.st_uid, 7);
	ck_assert_int_eq(st.st_gid, 8);
	ck_assert_int_eq(st.st_mtim.tv_sec, 9);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_file_literal_with_escapes)
{
	struct cfs_tree *t = load("file /f \"a\\tb\\n\\x00\\xff\\\"\\\\\\r\\0\" mode=0600\n");
	static const char want[] = "a\tb\n\0\xff\"\\\r";
	uint32_t id = node(t, "/f");
	struct stat st;
	char *s = content_of(t, id);

	cfs_tree_stat(t, id, &st);
	ck_assert_int_eq(st.st_size, sizeof(want));
	ck_assert_int_eq(memcmp(s, want, sizeof(want)), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	g_free(s);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_file_size_with_pattern_and_suffix)
{
	struct cfs_tree *t = load("file /p size=1k pattern=ab\nfile /d size=20\n"
				  "file /big size=3T\nfile /e\n");
	struct stat st;
	char *s = content_of(t, node(t, "/p"));

	ck_assert_int_eq(strlen(s), 1024);
	ck_assert_int_eq(strncmp(s, "ababab", 6), 0);
	ck_assert_int_eq(s[1023], 'b');
	g_free(s);
	s = content_of(t, node(t, "/d"));
	ck_assert_str_eq(s, "chainfs\nchainfs\nchai");
	g_free(s);
	cfs_tree_stat(t, node(t, "/big"), &st);
	ck_assert_int_eq(st.st_size, 3ll << 40);
	cfs_tree_stat(t, node(t, "/e"), &st);
	ck_assert_int_eq(st.st_size, 0);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_append_extends_a_file)
{
	struct cfs_tree *t = load("file /f \"one\\n\" mtime=3\nappend /f two\nappend /f \" 3\"\n");
	struct stat st;
	char *s = content_of(t, node(t, "/f"));

	ck_assert_str_eq(s, "one\ntwo 3");
	cfs_tree_stat(t, node(t, "/f"), &st);
	ck_assert_int_eq(st.st_mtim.tv_sec, 3);
	g_free(s);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_link_target_is_byte_exact)
{
	struct cfs_tree *t = load("link /l \"../a b//c\\x01\\xfe/\" uid=5\nlink /m /x/../y\n");
	const char *s;
	size_t len;
	struct stat st;

	ck_assert_int_eq(cfs_tree_readlink(t, node(t, "/l"), &s, &len), 0);
	ck_assert_int_eq(len, 12);
	ck_assert_int_eq(memcmp(s, "../a b//c\x01\xfe/", 12), 0);
	cfs_tree_stat(t, node(t, "/l"), &st);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(st.st_uid, 5);
	assert_link(t, "/m", "/x/../y");
	cfs_tree_free(t);
}
END_TEST

/* A target is a path: an escaped '/' there is a separator, as the target means. */
START_TEST(test_escaped_slash_in_a_target_is_a_slash)
{
	struct cfs_tree *t = load("link /l \"a\\x2fb\"\n");

	assert_link(t, "/l", "a/b");
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_hardlink_names_the_same_node)
{
	struct cfs_tree *t = load("file /a/f hello\nhardlink /b/g /a/f\nlink /l f\n"
				  "hardlink /a/l2 /l\n");
	struct stat st;

	ck_assert_uint_eq(node(t, "/a/f"), node(t, "/b/g"));
	cfs_tree_stat(t, node(t, "/a/f"), &st);
	ck_assert_int_eq(st.st_nlink, 2);
	ck_assert_uint_eq(node(t, "/l"), node(t, "/a/l2"));
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_comments_blank_lines_and_hash_inside_words)
{
	struct cfs_tree *t = load("# a comment\n\n   \t\ndir /a # trailing comment\n"
				  "file /a/x#y \"#not a comment\"\r\n");
	char *s = content_of(t, node(t, "/a/x#y"));

	ck_assert_str_eq(s, "#not a comment");
	g_free(s);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_quoted_key_is_content)
{
	struct cfs_tree *t = load("file /f \"mode=0600\" mode=0640\n");
	struct stat st;
	char *s = content_of(t, node(t, "/f"));

	ck_assert_str_eq(s, "mode=0600");
	cfs_tree_stat(t, node(t, "/f"), &st);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	g_free(s);
	cfs_tree_free(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Generators */

START_TEST(test_chain_is_serial_at_nesting_one)
{
	struct cfs_tree *t = load("file /c/t end\nchain /c/x 7 t\n");
	struct rs_result res;

	assert_link(t, "/c/x", ".x.chain/6");
	assert_link(t, "/c/.x.chain/6", "5");
	assert_link(t, "/c/.x.chain/2", "1");
	assert_link(t, "/c/.x.chain/1", "../t");
	ck_assert_int_eq(resolve_with(t, "/c/x", big_limits, RS_FOLLOW, &res), 0);
	ck_assert_uint_eq(res.node, node(t, "/c/t"));
	ck_assert_uint_eq(res.links, 7);
	ck_assert_uint_eq(res.max_depth, 1);
	ck_assert_uint_eq(cfs_tree_dir_count(t, node(t, "/c/.x.chain")), 6);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_chain_absolute_target_and_length_one)
{
	struct cfs_tree *t = load("file /c/t end\nchain /c/abs 3 /c/t\nchain /c/one 1 t\n");
	struct rs_result res;

	assert_link(t, "/c/.abs.chain/1", "/c/t");
	assert_link(t, "/c/one", "t");
	ck_assert_int_eq(resolve_with(t, "/c/abs", big_limits, RS_FOLLOW, &res), 0);
	ck_assert_uint_eq(res.node, node(t, "/c/t"));
	ck_assert_uint_eq(res.links, 3);
	ck_assert_int_eq(follow_err(t, "/c/one"), 0);
	ck_assert_uint_eq(follow(t, "/c/one"), node(t, "/c/t"));
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_chain_40_passes_and_41_is_eloop)
{
	struct cfs_tree *t = load("file /t x\nchain /c40 40 t\nchain /c41 41 t\n");
	struct rs_result res;

	ck_assert_uint_eq(follow(t, "/c40"), node(t, "/t"));
	ck_assert_int_eq(follow_err(t, "/c41"), -ELOOP);
	ck_assert_int_eq(resolve_with(t, "/c41", big_limits, RS_FOLLOW, &res), 0);
	ck_assert_uint_eq(res.links, 41);
	cfs_tree_free(t);
}
END_TEST

/* nest PATH DEPTH TARGET: DEPTH links followed, DEPTH deep, for every kind of TARGET. */
static const struct nest_case {
	const char *target;
	const char *reached; /* what the walk must end at */
} nest_cases[] = {
    {"dir/file", "/n/dir/file"},
    {"file0", "/n/file0"},
    {"/n/dir/file", "/n/dir/file"},
    {"/top", "/top"},
    {"dir/", "/n/dir"},
    {"dir", "/n/dir"},
    {"../top", "/top"},
    {"dir//file", "/n/dir/file"},
    {".", "/n"},
    {"/", "/"},
    {"..", "/"},
};

START_TEST(test_nest_depth_and_links_equal_depth)
{
	static const unsigned depths[] = {1, 2, 3, 8, 40, 41, 100};
	const struct nest_case *nc = &nest_cases[_i];

	for (size_t d = 0; d < G_N_ELEMENTS(depths); d++) {
		struct cfs_tree *t = load("file /n/dir/file x\nfile /n/file0 y\nfile /top z\n");
		char *line = g_strdup_printf("nest /n/x %u %s\n", depths[d], nc->target);
		struct rs_result res;
		int rc;

		load_into(t, line);
		rc = resolve_with(t, "/n/x", big_limits, RS_FOLLOW, &res);
		ck_assert_msg(rc == 0, "%s: %s", line, strerror(-rc));
		ck_assert_uint_eq(res.node, node(t, nc->reached));
		ck_assert_msg(res.links == depths[d] && res.max_depth == depths[d],
			      "%s: links %u depth %u", line, res.links, res.max_depth);
		rc = resolve_with(t, "/n/x", rs_limits_linux, RS_FOLLOW, &res);
		ck_assert_int_eq(rc, depths[d] <= 40 ? 0 : -ELOOP);
		g_free(line);
		cfs_tree_free(t);
	}
}
END_TEST

START_TEST(test_nest_layout)
{
	struct cfs_tree *t = load("file /n/dir/file x\nnest /n/x 4 dir/file\n");

	assert_link(t, "/n/x", ".x.nest/3/file");
	assert_link(t, "/n/.x.nest/3", "2/.");
	assert_link(t, "/n/.x.nest/2", "1/.");
	assert_link(t, "/n/.x.nest/1", "../dir");
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_loops_self_pair_ring)
{
	struct cfs_tree *t = load("loop /l/self 1\nloop /l/pair 2\nloop /l/ring 4\n");

	assert_link(t, "/l/self", "self");
	assert_link(t, "/l/pair", "pair.1");
	assert_link(t, "/l/pair.1", "pair");
	assert_link(t, "/l/ring", "ring.1");
	assert_link(t, "/l/ring.1", "ring.2");
	assert_link(t, "/l/ring.3", "ring");
	ck_assert_uint_eq(cfs_tree_dir_count(t, node(t, "/l")), 7);
	ck_assert_int_eq(follow_err(t, "/l/self"), -ELOOP);
	ck_assert_int_eq(follow_err(t, "/l/pair.1"), -ELOOP);
	ck_assert_int_eq(follow_err(t, "/l/ring.2"), -ELOOP);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_wide_makes_count_files)
{
	struct cfs_tree *t = load("wide /w 500 prefix=f\nwide /v 3\n");

	ck_assert_uint_eq(cfs_tree_dir_count(t, node(t, "/w")), 500);
	ck_assert_int_eq(cfs_tree_kind(t, node(t, "/w/f1")), RS_FILE);
	ck_assert_int_eq(cfs_tree_kind(t, node(t, "/w/f500")), RS_FILE);
	ck_assert_int_eq(cfs_tree_kind(t, node(t, "/v/3")), RS_FILE);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_deep_makes_nested_directories)
{
	struct cfs_tree *t = load("deep /d 300\ndeep /e 3 prefix=lvl\n");
	GString *p = g_string_new("/d");

	for (int i = 1; i <= 300; i++)
		g_string_append_printf(p, "/%d", i);
	ck_assert_int_eq(cfs_tree_kind(t, node(t, p->str)), RS_DIR);
	ck_assert_int_eq(cfs_tree_kind(t, node(t, "/e/lvl1/lvl2/lvl3")), RS_DIR);
	ck_assert_uint_eq(cfs_tree_dir_count(t, node(t, p->str)), 0);
	g_string_free(p, TRUE);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_tree_makes_exactly_the_counted_nodes)
{
	struct cfs_tree *t = load("dir /x\n");
	uint64_t before = node_count(t);

	/* fanout 10: 2 files, 1 link, 7 directories each: 1 + 10 + 70 + 490 */
	load_into(t, "tree /t depth=3 fanout=10 files=20% links=10% seed=3\n");
	ck_assert_uint_eq(node_count(t) - before, 571);
	ck_assert_uint_eq(cfs_tree_dir_count(t, node(t, "/t")), 10);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_tree_same_seed_same_tree)
{
	const char *spec = "tree /t depth=4 fanout=6 files=30% links=30% seed=42\n";
	struct cfs_tree *a = load(spec), *b = load(spec);
	struct cfs_tree *c = load("tree /t depth=4 fanout=6 files=30% links=30% seed=43\n");
	char *ca = canon(a, false), *cb = canon(b, false), *cc = canon(c, false);

	ck_assert_str_eq(ca, cb);
	ck_assert_str_ne(ca, cc);
	g_free(ca);
	g_free(cb);
	g_free(cc);
	cfs_tree_free(a);
	cfs_tree_free(b);
	cfs_tree_free(c);
}
END_TEST

/* The generated links mix every kind of target and resolve to all sorts of ends, and those
 * that reach a directory reach an ancestor of their own. */
START_TEST(test_tree_links_mix_target_kinds)
{
	struct cfs_tree *t = load("tree /t depth=4 fanout=8 files=25% links=40% seed=7\n");
	GArray *stack = g_array_new(FALSE, FALSE, sizeof(uint64_t) * 2);
	uint64_t top[2] = {node(t, "/t"), 0};
	unsigned absolute = 0, dangling = 0, through = 0, relative = 0;
	unsigned to_dir = 0, enoent = 0, enotdir = 0, reached = 0;

	g_array_append_val(stack, top);
	while (stack->len > 0) {
		uint64_t *f = &g_array_index(stack, uint64_t, (stack->len - 1) * 2);
		const char *name, *s;
		size_t len, tl;
		uint32_t child;

		if (cfs_tree_dir_next(t, (uint32_t)f[0], &f[1], &name, &len, &child) != 0) {
			g_array_set_size(stack, stack->len - 1);
			continue;
		}
		if (cfs_tree_kind(t, child) == RS_DIR) {
			uint64_t sub[2] = {child, 0};
			g_array_append_val(stack, sub);
			continue;
		}
		if (cfs_tree_kind(t, child) != RS_LINK)
			continue;
		ck_assert_int_eq(cfs_tree_readlink(t, child, &s, &tl), 0);
		char *target = g_strndup(s, tl);
		if (target[0] == '/')
			absolute++;
		else if (g_str_has_suffix(target, "/nowhere"))
			dangling++;
		else if (g_str_has_suffix(target, "/.") || g_str_has_suffix(target, "/.."))
			through++;
		else
			relative++;
		g_free(target);

		struct rs_ctx ctx = ctx_for(t, big_limits);
		struct rs_result res;
		char *rel = g_strndup(name, len);
		int rc = rs_resolve(&ctx, f[0], rel, RS_FOLLOW, &res);

		g_free(rel);
		if (rc == 0 && cfs_tree_kind(t, (uint32_t)res.node) == RS_DIR) {
			/* never sideways: following a link adds no paths to a walk */
			uint32_t up = (uint32_t)f[0];
			while (up != res.node && up != top[0])
				up = cfs_tree_parent(t, up);
			ck_assert_msg(up == res.node, "a link to a directory that is no ancestor");
			to_dir++;
		}
		enoent += rc == -ENOENT;
		enotdir += rc == -ENOTDIR;
		reached += rc == 0;
	}
	ck_assert_msg(absolute && dangling && through && relative,
		      "abs %u dangling %u through %u rel %u", absolute, dangling, through,
		      relative);
	ck_assert_msg(to_dir && enoent && enotdir && reached, "dir %u enoent %u enotdir %u ok %u",
		      to_dir, enoent, enotdir, reached);
	g_array_free(stack, TRUE);
	cfs_tree_free(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Errors */

static const struct bad_case {
	const char *text;
	const char *message; /* the start of the message */
} bad_cases[] = {
    {"frob /a\n", "t.spec:1: unknown keyword frob"},
    {"dir /ok\n\n# fine\nfrob", "t.spec:4: unknown keyword frob"},
    {"dir\n", "t.spec:1: dir: missing argument (dir PATH [attrs])"},
    {"dir /a /b\n", "t.spec:1: dir: too many arguments"},
    {"mode=0644\n", "t.spec:1: missing keyword"},
    {"dir a\n", "t.spec:1: a: path not absolute"},
    {"dir /a/../b\n", "t.spec:1: /a/../b: '.' and '..' are not allowed in paths"},
    {"dir /a mode=999\n", "t.spec:1: bad value 999 for mode"},
    {"dir /a mode=17777\n", "t.spec:1: bad value 17777 for mode"},
    {"dir /a uid=-1\n", "t.spec:1: bad value -1 for uid"},
    {"dir /a mtime=1.2.3\n", "t.spec:1: bad value 1.2.3 for mtime"},
    {"dir /a mtime=1.1234567890\n", "t.spec:1: bad value 1.1234567890 for mtime"},
    {"dir /a atime=-9223372036\n", "t.spec:1: bad value -9223372036 for atime"},
    {"link /l x mode=0700\n", "t.spec:1: attribute 'mode' not allowed with link"},
    {"dir /a colour=red\n", "t.spec:1: unknown attribute 'colour'"},
    {"file /g a=b\"c\"\n", "t.spec:1: unknown attribute 'a'"},
    {"dir /a size=1\n", "t.spec:1: attribute 'size' not allowed with dir"},
    {"dir /a mode=0700 mode=0755\n", "t.spec:1: duplicate attribute 'mode'"},
    {"file /a\nfile /a/b\n", "t.spec:2: /a/b: parent /a is not a directory"},
    {"link /l x\ndir /l/sub/d\n", "t.spec:2: /l/sub/d: parent /l is not a directory"},
    {"dir /a\ndir /a\n", "t.spec:2: /a: name exists"},
    {"dir /a\nfile /a\n", "t.spec:2: /a: name exists"},
    {"file /\n", "t.spec:1: /: name exists"},
    {"link /l \"\"\n", "t.spec:1: empty target"},
    {"link /l \"a\\x00b\"\n", "t.spec:1: NUL byte in target"},
    {"file /f \"abc\n", "t.spec:1: unterminated quote"},
    {"file /f \"abc\\\"\n", "t.spec:1: unterminated quote"},
    {"file /f \"a\\qb\"\n", "t.spec:1: bad escape '\\q'"},
    {"file /f \"\\x4g\"\n", "t.spec:1: bad escape '\\x4g'"},
    {"file /f size=10 content\n", "t.spec:1: file: content and size= exclude each other"},
    {"file /f pattern=ab\n", "t.spec:1: file: pattern= needs size="},
    {"file /f size=1 pattern=\"\"\n", "t.spec:1: empty pattern"},
    {"file /f size=1e18\n", "t.spec:1: bad value 1e18 for size"},
    {"file /f size=1000000000000000000\n",
     "t.spec:1: size 1000000000000000000 too big (limit 1125899906842624)"},
    {"file /f size=2P\n", "t.spec:1: size 2P too big"},
    {"file /f size=99999999999999999999999\n", "t.spec:1: size 99999999999999999999999 too big"},
    {"file /\"a\\x00b\"\n", "t.spec:1: \"/a\\x00b\": NUL byte in path"},
    {"dir /a\nfile /\"a\\x2fb\"\n", "t.spec:2: /a/b: '\\x2f' in a path: a name cannot hold '/'"},
    {"file /\"\\x2F\"x\n", "t.spec:1: //x: '\\x2f' in a path"},
    {"link /\"a\\x2fb\" t\n", "t.spec:1: /a/b: '\\x2f' in a path"},
    {"chain /\"c\\x2f\"d 3 t\n", "t.spec:1: /c/d: '\\x2f' in a path"},
    {"append /nothing x\n", "t.spec:1: /nothing: no such node"},
    {"dir /d\nappend /d x\n", "t.spec:2: /d: not a regular file"},
    {"file /f\nappend /f x at=9223372036854775807\n", "t.spec:2: bad value"},
    {"file /f\nappend /f xy at=9223372036854775806\n", "t.spec:2: append: file would exceed"},
    {"file /f\nappend /f x at=-1\n", "t.spec:2: bad value -1 for at"},
    {"file /f\nappend /f x size=1\n", "t.spec:2: attribute 'size' not allowed with append"},
    {"dir /d\ntruncate /d 5\n", "t.spec:2: /d: not a regular file"},
    {"truncate /nothing 5\n", "t.spec:1: /nothing: no such node"},
    {"file /f\ntruncate /f x\n", "t.spec:2: bad number x for size"},
    {"file /f\ntruncate /f 9223372036854775808\n",
     "t.spec:2: size 9223372036854775808 out of range"},
    {"file /f\ntruncate /f\n", "t.spec:2: truncate: missing argument"},
    {"hardlink /h /nothing\n", "t.spec:1: /nothing: no such node"},
    {"dev /d x 1 2\n", "t.spec:1: dev: the kind is c or b"},
    {"dev /d c 4096 0\n", "t.spec:1: major 4096 out of range 0..4095"},
    {"dev /d b 1 1048576\n", "t.spec:1: minor 1048576 out of range 0..1048575"},
    {"dev /d c 1\n", "t.spec:1: dev"},
    {"fifo /f\nfifo /f\n", "t.spec:2: /f"},
    {"hardlink /h /\n", "t.spec:1: /: is a directory"},
    {"chain /c x t\n", "t.spec:1: bad number x for chain length"},
    {"chain /c 0 t\n", "t.spec:1: chain length 0 out of range 1..19999999"},
    {"chain /c 1000000000 t\n", "t.spec:1: chain length 1000000000 out of range"},
    {"chain /c 3 \"\"\n", "t.spec:1: empty target"},
    {"nest /n 1000000000 t\n", "t.spec:1: nest depth 1000000000 out of range"},
    {"loop /l 0\n", "t.spec:1: loop size 0 out of range"},
    {"wide /w 1000000000\n", "t.spec:1: wide count 1000000000 out of range"},
    {"wide /w 3 prefix=a/b\n", "t.spec:1: bad prefix"},
    {"deep /d 1000000000\n", "t.spec:1: deep depth 1000000000 out of range"},
    {"tree /t depth=3\n", "t.spec:1: tree: depth= and fanout= are required"},
    {"tree /t depth=1000000000 fanout=2\n", "t.spec:1: tree depth 1000000000 out of range"},
    {"tree /t depth=3 fanout=3 files=80% links=30%\n", "t.spec:1: tree: files + links exceed 100%"},
    {"tree /t depth=3 fanout=3 files=101%\n", "t.spec:1: bad value 101% for files"},
    {"tree /t depth=8 fanout=100\n", "t.spec:1: tree too big: more than 20000000 nodes"},
    {"tree /t depth=256 fanout=1000000000\n", "t.spec:1: tree fanout 1000000000 out of range"},
    {"dir /a\ntree /a depth=1 fanout=1\n", "t.spec:2: /a: name exists"},
    {"chain /c 5 t\nchain /c 5 t\n", "t.spec:2: /c: name exists"},
    {"dir /x\ndir /.c.chain\nchain /c 5 t\n", "t.spec:3: /.c.chain: name exists"},
    {"dir /a\"b\"c\"\n", "t.spec:1: unterminated quote"},
};

START_TEST(test_bad_spec_reports_place_and_reason)
{
	const struct bad_case *bc = &bad_cases[_i];
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;
	int rc = cfs_spec_load_text(t, "t.spec", bc->text, strlen(bc->text), &def, &err);

	ck_assert_msg(rc == -EINVAL, "'%s': rc %d", bc->text, rc);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strncmp(err, bc->message, strlen(bc->message)) == 0,
		      "'%s': got '%s', want '%s'", bc->text, err, bc->message);
	free(err);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_nul_byte_in_text)
{
	static const char text[] = "dir /a\ndir /b\0c\n";
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;

	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", text, sizeof(text) - 1, &def, &err),
			 -EINVAL);
	ck_assert_str_eq(err, "t.spec:2: NUL byte in file");
	free(err);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_line_of_100k_is_too_long)
{
	size_t n = 100 * 1024;
	char *text = g_malloc(n + 32);
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;

	memcpy(text, "dir /a\nfile /f ", 15);
	memset(text + 15, 'x', n);
	strcpy(text + 15 + n, "\n");
	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", text, strlen(text), &def, &err), -EINVAL);
	ck_assert_msg(g_str_has_prefix(err, "t.spec:2: line too long (102408 bytes, limit 65536)"),
		      "%s", err);
	free(err);
	g_free(text);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_name_and_target_too_long)
{
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *name = g_strnfill(256, 'n'), *target = g_strnfill(4096, 't'), *err = NULL;
	char *l1 = g_strdup_printf("dir /%s\n", name),
	     *l2 = g_strdup_printf("link /l %s\n", target);

	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", l1, strlen(l1), &def, &err), -EINVAL);
	ck_assert_msg(strstr(err, ": name too long (256 bytes, limit 255)"), "%s", err);
	free(err);
	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", l2, strlen(l2), &def, &err), -EINVAL);
	ck_assert_str_eq(err, "t.spec:1: target too long (4096 bytes, limit 4095)");
	free(err);
	target[4095] = '\0'; /* 4095 bytes is fine */
	g_free(l2);
	l2 = g_strdup_printf("link /l %s\n", target);
	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", l2, strlen(l2), &def, &err), 0);
	g_free(l1);
	g_free(l2);
	g_free(name);
	g_free(target);
	cfs_tree_free(t);
}
END_TEST

/* A file is read a chunk at a time: lines of every length across the chunk boundaries (up to
 * the longest allowed, a last line without a newline) make the same tree as the same text
 * given whole, and a line past the limit is refused with its own line number. */
START_TEST(test_load_file_streams_lines_across_chunks)
{
	char dir[] = "/tmp/test_spec.XXXXXX";
	GString *text = g_string_new("dir /d\n");
	uint64_t rng = 5;
	char *path, *err = NULL;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	path = g_strdup_printf("%s/s.spec", dir);
	for (unsigned i = 0; text->len < 600000; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t pad = i % 50 == 7 ? CFS_SPEC_MAX_LINE - 40 : (rng >> 33) % 3000;
		g_string_append_printf(text, "file /d/f%u \"", i);
		for (size_t j = 0; j < pad; j++)
			g_string_append_c(text, (char)('a' + j % 26));
		g_string_append(text, "\"\n");
	}
	g_string_append(text, "# a full-length comment: ");
	while (text->len % 65536 != 0)
		g_string_append_c(text, 'c');
	g_string_append(text, "\nlink /d/last f1"); /* no newline */
	ck_assert(g_file_set_contents(path, text->str, (gssize)text->len, NULL));

	struct cfs_tree *a = cfs_tree_new(NULL), *b = cfs_tree_new(NULL);
	struct cfs_spec_defaults d = def;
	ck_assert_int_eq(cfs_spec_load_file(a, path, &def, &err), 0);
	ck_assert_ptr_null(err);
	d.stamp = true; /* what load_file gives nodes without times: the file's mtime */
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	d.time = st.st_mtim;
	ck_assert_int_eq(cfs_spec_load_text(b, path, text->str, text->len, &d, &err), 0);
	char *ca = canon(a, true), *cb = canon(b, true);
	ck_assert_str_eq(ca, cb);
	ck_assert_int_eq(cfs_tree_kind(a, node(a, "/d/last")), RS_LINK);
	g_free(ca);
	g_free(cb);
	cfs_tree_free(a);
	cfs_tree_free(b);

	/* line 3 is one byte too long; line 2 is exactly the limit */
	g_string_assign(text, "dir /d\n#");
	for (unsigned i = 1; i < CFS_SPEC_MAX_LINE; i++)
		g_string_append_c(text, 'x');
	g_string_append(text, "\n#");
	for (unsigned i = 0; i < CFS_SPEC_MAX_LINE; i++)
		g_string_append_c(text, 'y');
	g_string_append(text, "\ndir /e\n");
	ck_assert(g_file_set_contents(path, text->str, (gssize)text->len, NULL));
	a = cfs_tree_new(NULL);
	ck_assert_int_eq(cfs_spec_load_file(a, path, &def, &err), -EINVAL);
	char *want = g_strdup_printf("%s:3: line too long", path);
	ck_assert_msg(g_str_has_prefix(err, want), "%s", err);
	free(err);
	g_free(want);
	/* and one far too long, never held whole */
	g_string_truncate(text, 7);
	for (unsigned i = 0; i < 5 * CFS_SPEC_MAX_LINE; i++)
		g_string_append_c(text, 'z');
	ck_assert(g_file_set_contents(path, text->str, (gssize)text->len, NULL));
	cfs_tree_free(a);
	a = cfs_tree_new(NULL);
	ck_assert_int_eq(cfs_spec_load_file(a, path, &def, &err), -EINVAL);
	want = g_strdup_printf("%s:2: line too long", path);
	ck_assert_msg(g_str_has_prefix(err, want), "%s", err);
	free(err);
	g_free(want);
	cfs_tree_free(a);
	unlink(path);
	rmdir(dir);
	g_free(path);
	g_string_free(text, TRUE);
}
END_TEST

START_TEST(test_load_file_errors)
{
	char dir[] = "/tmp/test_spec.XXXXXX";
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL, *missing, *bad, *good;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	missing = g_strdup_printf("%s/missing", dir);
	bad = g_strdup_printf("%s/bad.spec", dir);
	good = g_strdup_printf("%s/good.spec", dir);
	ck_assert_int_eq(cfs_spec_load_file(t, missing, &def, &err), -ENOENT);
	char *want = g_strdup_printf("%s: No such file or directory", missing);
	ck_assert_str_eq(err, want);
	free(err);
	g_free(want);

	ck_assert_int_eq(cfs_spec_load_file(t, dir, &def, &err), -EINVAL);
	want = g_strdup_printf("%s: not a regular file", dir);
	ck_assert_str_eq(err, want);
	free(err);
	g_free(want);

	char *fifo = g_strdup_printf("%s/fifo", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(cfs_spec_load_file(t, fifo, &def, &err), -EINVAL);
	ck_assert(g_str_has_suffix(err, "/fifo: not a regular file"));
	free(err);
	unlink(fifo);
	g_free(fifo);

	ck_assert(g_file_set_contents(bad, "dir /a\n\nlink /b\n", -1, NULL));
	ck_assert_int_eq(cfs_spec_load_file(t, bad, &def, &err), -EINVAL);
	want = g_strdup_printf("%s:3: link: missing argument", bad);
	ck_assert_msg(g_str_has_prefix(err, want), "%s", err);
	free(err);
	g_free(want);

	struct cfs_tree *u = cfs_tree_new(NULL);
	ck_assert(g_file_set_contents(good, "file /x/y hi\n", -1, NULL));
	ck_assert_int_eq(cfs_spec_load_file(u, good, &def, &err), 0);
	ck_assert_ptr_null(err);
	ck_assert_int_eq(cfs_tree_kind(u, node(u, "/x/y")), RS_FILE);

	unlink(bad);
	unlink(good);
	rmdir(dir);
	g_free(missing);
	g_free(bad);
	g_free(good);
	cfs_tree_free(u);
	cfs_tree_free(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* apply_line: one line at a time, all or nothing */

START_TEST(test_apply_line_adds_and_fails_cleanly)
{
	struct cfs_tree *t = load("file /t x\ndir /c\n");
	char *err = NULL, *before;

	ck_assert_int_eq(cfs_spec_apply_line(t, "chain /c/x 5 ../t\n", &def, &err), 0);
	ck_assert_ptr_null(err);
	ck_assert_uint_eq(follow(t, "/c/x"), node(t, "/t"));

	before = canon(t, true);
	ck_assert_int_eq(cfs_spec_apply_line(t, "chain /c/x 5 ../t", &def, &err), -EINVAL);
	ck_assert_str_eq(err, "line:1: /c/x: name exists");
	free(err);
	/* the hidden directory of another chain is in the way: everything made is undone */
	ck_assert_int_eq(cfs_spec_apply_line(t, "dir /d/.y.chain", &def, &err), 0);
	char *mid = canon(t, true);
	ck_assert_int_eq(cfs_spec_apply_line(t, "chain /d/y 5 t", &def, &err), -EINVAL);
	ck_assert_str_eq(err, "line:1: /d/.y.chain: name exists");
	free(err);
	char *after = canon(t, true);
	ck_assert_str_eq(mid, after);
	ck_assert_int_eq(cfs_spec_apply_line(t, "dir /a\ndir /b", &def, &err), -EINVAL);
	ck_assert_str_eq(err, "line:1: one line expected");
	free(err);
	g_free(before);
	g_free(mid);
	g_free(after);
	cfs_tree_free(t);
}
END_TEST

static long alloc_calls, alloc_fail_at;

static void *failing_realloc(void *p, size_t n)
{
	if (++alloc_calls == alloc_fail_at)
		return NULL;
	return realloc(p, n);
}

static const struct cfs_alloc failing_alloc = {failing_realloc, free};

static const char *const atomic_lines[] = {
    "chain /base/c 30 f",
    "chain /new/deeper/c 12 /base/f",
    "nest /base/n 20 f",
    "loop /base/ring 9",
    "tree /base/t depth=3 fanout=5 files=20% links=40% seed=5",
    "tree /fresh/t depth=2 fanout=12 seed=9",
    "wide /base/w 200",
    "deep /base/d 40",
    "file /base/g \"some content\" mode=0600 mtime=1",
    "file /base/h size=1M pattern=xyz",
    "hardlink /base/f2 /base/f",
    "append /base/f \" and more\"",
    "dir / mode=0700 uid=3 mtime=4",
    "dir /p/q/r/s mtime=5",
};

/* Fail the k-th allocation for every k until the line goes through: each failure must
 * leave the tree exactly as it was, times included. */
START_TEST(test_apply_line_is_atomic_under_allocation_failure)
{
	const char *line = atomic_lines[_i];
	struct cfs_tree *t = cfs_tree_new(&failing_alloc);
	char *before, *err = NULL;
	long k, failures = 0;
	int rc;

	ck_assert_ptr_nonnull(t);
	load_into(t, "dir /base mtime=100\nfile /base/f data\ndir /other\n");
	before = canon(t, true);
	for (k = 1;; k++) {
		alloc_calls = 0;
		alloc_fail_at = k;
		rc = cfs_spec_apply_line(t, line, &def, &err);
		alloc_fail_at = 0;
		if (rc == 0)
			break;
		ck_assert_msg(rc == -ENOMEM, "%s: k=%ld rc=%d %s", line, k, rc, err);
		ck_assert_msg(err && strstr(err, "out of memory"), "%s: %s", line, err);
		free(err);
		failures++;
		char *now = canon(t, true);
		ck_assert_msg(strcmp(now, before) == 0, "%s: k=%ld changed the tree", line, k);
		g_free(now);
		ck_assert(k < 1000000);
	}
	ck_assert_ptr_null(err);
	char *after = canon(t, true);
	ck_assert_str_ne(after, before);
	if (getenv("SPEC_ATOMIC_VERBOSE"))
		fprintf(stderr, "%-60s %ld failures\n", line, failures);
	if (strncmp(line, "tree", 4) == 0 || strncmp(line, "chain", 5) == 0)
		ck_assert_msg(failures > 0, "%s: no allocation to fail", line);
	g_free(after);
	g_free(before);
	cfs_tree_free(t);
}
END_TEST

/* The test binary is linked with --wrap=malloc,calloc,realloc: every allocation spec.c and
 * tree.c make themselves (not those inside GLib or libc) comes here, and the k-th after
 * wrap_fail_at is set fails. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
static long wrap_calls, wrap_fail_at;

static bool wrap_fails(void)
{
	return wrap_fail_at && ++wrap_calls == wrap_fail_at;
}

void *__wrap_malloc(size_t n)
{
	return wrap_fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return wrap_fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return wrap_fails() ? NULL : __real_realloc(p, n);
}

/* Loading a spec file with every kind of line fails cleanly at each of its own allocations
 * (the line buffer, undo records, names, the time-stamping stack, generator state and the
 * tree's): -ENOMEM with its message, and nothing leaked (ASan's and valgrind's runs). */
START_TEST(test_load_file_under_allocation_failure)
{
	char dir[] = "/tmp/test_spec.XXXXXX";
	char *path, *err = NULL;
	GString *text = g_string_new(NULL);
	long k, failures = 0;
	int rc;

	for (size_t i = 0; i < G_N_ELEMENTS(atomic_lines); i++)
		g_string_append_printf(text, "%s\n", atomic_lines[i]);
	g_string_prepend(text, "dir /base mtime=100\nfile /base/f data\ndir /other\n");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	path = g_strdup_printf("%s/s.spec", dir);
	ck_assert(g_file_set_contents(path, text->str, (gssize)text->len, NULL));
	for (k = 1;; k++) {
		struct cfs_tree *t = cfs_tree_new(NULL);

		ck_assert_ptr_nonnull(t);
		wrap_calls = 0;
		wrap_fail_at = k;
		rc = cfs_spec_load_file(t, path, NULL, &err);
		wrap_fail_at = 0;
		cfs_tree_free(t);
		if (rc == 0)
			break;
		ck_assert_msg(rc == -ENOMEM, "k=%ld rc=%d %s", k, rc, err);
		ck_assert_msg(err && strstr(err, "out of memory"), "k=%ld: %s", k, err);
		free(err);
		failures++;
		ck_assert(k < 1000000);
	}
	ck_assert_ptr_null(err);
	ck_assert_msg(failures > 100, "only %ld allocations failed", failures);
	unlink(path);
	rmdir(dir);
	g_free(path);
	g_string_free(text, TRUE);
}
END_TEST

/* A runtime line fails at any of spec.c's own allocations as atomically as at the tree's. */
START_TEST(test_apply_line_is_atomic_when_spec_allocations_fail)
{
	const char *line = atomic_lines[_i];
	struct cfs_tree *t = load("dir /base mtime=100\nfile /base/f data\ndir /other\n");
	char *before = canon(t, true), *err = NULL;
	long k;
	int rc;

	for (k = 1;; k++) {
		wrap_calls = 0;
		wrap_fail_at = k;
		rc = cfs_spec_apply_line(t, line, &def, &err);
		wrap_fail_at = 0;
		if (rc == 0)
			break;
		ck_assert_msg(rc == -ENOMEM, "%s: k=%ld rc=%d %s", line, k, rc, err);
		free(err);
		char *now = canon(t, true);
		ck_assert_msg(strcmp(now, before) == 0, "%s: k=%ld changed the tree", line, k);
		g_free(now);
		ck_assert(k < 1000000);
	}
	ck_assert_ptr_null(err);
	g_free(before);
	cfs_tree_free(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Dump */

/* fifos, sockets and devices: made by their lines, dumped as such, refused when malformed */
START_TEST(test_special_nodes_load_and_dump)
{
	struct cfs_tree *t =
	    load("fifo /f mode=0640 uid=3 gid=4 atime=1 mtime=1 ctime=1\n"
		 "socket /s mode=0755 uid=0 gid=0 atime=1 mtime=1 ctime=1\n"
		 "dev /c c 1 3 mode=0666 uid=0 gid=0 atime=1 mtime=1 ctime=1\n"
		 "dev /b b 4095 1048575 mode=0600 uid=0 gid=0 atime=1 mtime=1 ctime=1\n");
	struct stat st;
	char *d = dump_of(t);

	cfs_tree_stat(t, node(t, "/f"), &st);
	ck_assert(S_ISFIFO(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(cfs_tree_kind(t, node(t, "/f")), RS_OTHER);
	cfs_tree_stat(t, node(t, "/s"), &st);
	ck_assert(S_ISSOCK(st.st_mode));
	cfs_tree_stat(t, node(t, "/c"), &st);
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_uint_eq(major(st.st_rdev), 1);
	ck_assert_uint_eq(minor(st.st_rdev), 3);
	cfs_tree_stat(t, node(t, "/b"), &st);
	ck_assert(S_ISBLK(st.st_mode));
	ck_assert_uint_eq(major(st.st_rdev), 4095);
	ck_assert_uint_eq(minor(st.st_rdev), 1048575);
	ck_assert_ptr_nonnull(strstr(d, "\nfifo /f mode=0640 uid=3 gid=4 "));
	ck_assert_ptr_nonnull(strstr(d, "\nsocket /s mode=0755 "));
	ck_assert_ptr_nonnull(strstr(d, "\ndev /c c 1 3 mode=0666 "));
	ck_assert_ptr_nonnull(strstr(d, "\ndev /b b 4095 1048575 mode=0600 "));
	struct cfs_tree *again = load(d); /* the dump loads back to the same dump */
	char *d2 = dump_of(again);
	ck_assert_str_eq(d, d2);
	free(d);
	free(d2);
	cfs_tree_free(again);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_dump_writes_each_kind)
{
	struct cfs_tree *t =
	    load("dir / mode=0755 uid=0 gid=0 atime=1 mtime=2 ctime=3\n"
		 "dir /a mode=0700 uid=1 gid=2 atime=4 mtime=5.5 ctime=6\n"
		 "file /a/f \"hi there\\n\" mode=0644 uid=1 gid=2 atime=7 mtime=8 "
		 "ctime=9\n"
		 "hardlink /a/g /a/f\n"
		 "file /p size=100 pattern=ab mode=0600 uid=0 gid=0 atime=1 mtime=1 "
		 "ctime=1\n"
		 "link \"/l x\" \"../a b\" uid=0 gid=0 atime=1 mtime=1 ctime=1\n");
	char *d = dump_of(t);
	static const char want[] =
	    "# chainfs spec (cfs_spec_dump)\n"
	    "dir / mode=0755 uid=0 gid=0 atime=1.000000000 mtime=2.000000000 "
	    "ctime=3.000000000\n"
	    "dir /a mode=0700 uid=1 gid=2 atime=4.000000000 mtime=5.500000000 "
	    "ctime=6.000000000\n"
	    "file /a/f \"hi there\\n\" mode=0644 uid=1 gid=2 atime=7.000000000 "
	    "mtime=8.000000000 ctime=9.000000000\n"
	    "hardlink /a/g /a/f\n"
	    "file /p size=100 pattern=ab mode=0600 uid=0 gid=0 atime=1.000000000 "
	    "mtime=1.000000000 ctime=1.000000000\n"
	    "link \"/l x\" \"../a b\" uid=0 gid=0 atime=1.000000000 "
	    "mtime=1.000000000 ctime=1.000000000\n";

	ck_assert_str_eq(d, want);
	free(d);
	cfs_tree_free(t);
}
END_TEST

/* A node with several names is written under its first name (collapse and server modes walk
 * a link's relative target from there, and answer paths to a file by it), though the walk
 * meets another of its names first. */
START_TEST(test_dump_writes_a_hard_linked_node_under_its_first_name)
{
	struct cfs_tree *t = load("dir /a\ndir /z\nfile /z/0\nlink /z/l ../a\nfile /z/9\n"
				  "hardlink /a/h /z/l\nfile /z/g y\nhardlink /a/g2 /z/g\n");
	char *d = dump_of(t);
	struct cfs_tree *u = load(d);
	uint32_t l, z, a;

	ck_assert_ptr_nonnull(strstr(d, "\nlink /z/l ../a"));
	ck_assert_ptr_nonnull(strstr(d, "\nhardlink /a/h /z/l\n"));
	ck_assert_ptr_nonnull(strstr(d, "\nfile /z/g y"));
	ck_assert_ptr_nonnull(strstr(d, "\nhardlink /a/g2 /z/g\n"));
	ck_assert_int_eq(cfs_tree_lookup(u, CFS_ROOT, "z", 1, &z), 0);
	ck_assert_int_eq(cfs_tree_lookup(u, z, "l", 1, &l), 0);
	ck_assert_uint_eq(cfs_tree_parent(u, l), z);
	ck_assert_int_eq(cfs_tree_lookup(u, CFS_ROOT, "a", 1, &a), 0);
	ck_assert_int_eq(cfs_tree_lookup(u, a, "h", 1, &l), 0);
	struct stat st;
	cfs_tree_stat(u, l, &st);
	ck_assert_uint_eq(st.st_nlink, 2);
	free(d);
	cfs_tree_free(u);
	cfs_tree_free(t);
}
END_TEST

/* A streamed dump whose tree loses the first name before the walk reaches it: the names
 * that waited for it get the node line under the first of them. */
START_TEST(test_streamed_dump_writes_a_link_whose_first_name_went)
{
	struct cfs_tree *t = load("dir /a\ndir /z\nlink /z/l ../a\nhardlink /a/h /z/l\n");
	struct cfs_spec_dumper *dd = cfs_spec_dumper_new(t);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	uint32_t z, a, h;

	/* a piece a line: the walk has met /a/h and waits for /z/l */
	while (!strstr(buf ? buf : "", "dir /z") && cfs_spec_dumper_next(dd, f, 1) > 0)
		fflush(f);
	fflush(f);
	ck_assert_ptr_null(strstr(buf, "link"));
	ck_assert_int_eq(cfs_tree_lookup(t, CFS_ROOT, "z", 1, &z), 0);
	ck_assert_int_eq(cfs_tree_unlink(t, z, "l", 1), 0);
	while (cfs_spec_dumper_next(dd, f, 1) > 0)
		;
	fclose(f);
	cfs_spec_dumper_free(dd);
	ck_assert_ptr_nonnull(strstr(buf, "\nlink /a/h ../a"));
	struct cfs_tree *u = load(buf);
	ck_assert_int_eq(cfs_tree_lookup(u, CFS_ROOT, "a", 1, &a), 0);
	ck_assert_int_eq(cfs_tree_lookup(u, a, "h", 1, &h), 0);
	ck_assert_int_eq(cfs_tree_kind(u, h), RS_LINK);
	free(buf);
	cfs_tree_free(u);
	cfs_tree_free(t);
}
END_TEST

static void assert_round_trip(struct cfs_tree *t)
{
	char *d1 = dump_of(t), *c1 = canon(t, true);
	struct cfs_tree *u = load(d1);
	char *d2 = dump_of(u), *c2 = canon(u, true);

	ck_assert_str_eq(d1, d2);
	ck_assert_str_eq(c1, c2);
	free(d1);
	free(d2);
	g_free(c1);
	g_free(c2);
	cfs_tree_free(u);
}

START_TEST(test_dump_round_trips_odd_names_and_bytes)
{
	struct cfs_tree *t = load("file \"/q/a b\" x\nfile \"/q/#hash\" x\nfile /q/x=y x\n"
				  "file \"/q/\\\"quote\\\\\" x\nfile \"/q/\\x01\\x7f\\xff\\t\" x\n"
				  "link \"/q/l\" \"a  b\\n\"\nfile /q/bin \"\\x00\\x01\\xfe\"\n"
				  "file \"/q/mode=1\" \"mode=1\"\nfile /q/e\n"
				  "file /q/big size=300000 pattern=\"0123456789\"\n"
				  "file /q/aa \"aa\"\nfile /q/chain size=5\n");
	GString *big = g_string_new(NULL);

	/* a literal bigger than one dump line holds: written as file + append lines */
	for (int i = 0; i < 20000; i++)
		g_string_append_printf(big, "%d,", i);
	load_into(t, "file /q/lit x\nfile /q/almost x\nfile /q/huge size=1P pattern=\"ab\\n\"\n");
	ck_assert_int_eq(cfs_tree_set_content(t, node(t, "/q/lit"), big->str, big->len), 0);
	/* a repetition but for its last byte, longer than the window dump looks at first */
	g_string_truncate(big, 0);
	for (int i = 0; i < 100000; i++)
		g_string_append(big, "ab");
	big->str[big->len - 1] = 'x';
	ck_assert_int_eq(cfs_tree_set_content(t, node(t, "/q/almost"), big->str, big->len), 0);
	assert_round_trip(t);
	char *d = dump_of(t);
	ck_assert_ptr_nonnull(strstr(d, "append /q/lit "));
	ck_assert_ptr_nonnull(strstr(d, "file /q/big size=300000 pattern=0123456789 "));
	ck_assert_ptr_nonnull(strstr(d, "file /q/chain chain "));
	ck_assert_ptr_nonnull(strstr(d, "append /q/almost "));
	ck_assert_ptr_nonnull(strstr(d, "file /q/huge size=1125899906842624 pattern=\"ab\\n\" "));
	free(d);
	g_string_free(big, TRUE);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_dump_round_trips_the_default_tree)
{
	struct cfs_tree *t = load(cfs_default_spec);

	assert_round_trip(t);
	char *d = dump_of(t);
	ck_assert_ptr_nonnull(strstr(d, "\nfile /files/big size=16777216 pattern=\"chainfs\\n\" "));
	ck_assert_ptr_nonnull(strstr(d, "\nhardlink /files/hello.hard /files/hello\n"));
	free(d);
	cfs_tree_free(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* The default tree */

START_TEST(test_default_spec_loads_fast_with_100k_nodes)
{
	struct timespec a, b;
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;

	clock_gettime(CLOCK_MONOTONIC, &a);
	int rc = cfs_spec_load_text(t, "<default>", cfs_default_spec, strlen(cfs_default_spec),
				    &def, &err);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ck_assert_msg(rc == 0, "%s", err);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	struct cfs_tree_stats st;
	cfs_tree_stats(t, &st);
	fprintf(stderr,
		"default tree: %" PRIu64 " nodes (%" PRIu64 " dirs, %" PRIu64 " files, %" PRIu64
		" links), %.1f MiB, loaded in %.3f s\n",
		st.nodes, st.dirs, st.files, st.links, (double)st.bytes / (1 << 20), s);
	ck_assert_msg(s < 10, "%.3f s: a load-time regression", s); /* loose: valgrind too */
	ck_assert_uint_ge(st.nodes, 100000);
	ck_assert_uint_le(st.nodes, 120000);
	ck_assert_uint_eq(cfs_tree_dir_count(t, node(t, "/wide")), 10000);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_default_spec_matches_the_source_file)
{
	char *text = NULL;
	gsize len;

	ck_assert(g_file_get_contents(CFS_SRCDIR "/fusefs/default.spec", &text, &len, NULL));
	ck_assert_uint_eq(strlen(cfs_default_spec), len);
	ck_assert_str_eq(cfs_default_spec, text);
	g_free(text);
}
END_TEST

static const struct default_case {
	const char *path;
	int err;	     /* with Linux's limits, following the final link */
	const char *reaches; /* NULL: don't care; else the node it must end at */
} default_cases[] = {
    {"/README", 0, NULL},
    {"/chains/5", 0, "/chains/target"},
    {"/chains/40", 0, "/chains/target"},
    {"/chains/41", -ELOOP, NULL},
    {"/chains/1000", -ELOOP, NULL},
    {"/nest/8", 0, "/nest/dir/file"},
    {"/nest/40", 0, "/nest/dir/file"},
    {"/nest/41", -ELOOP, NULL},
    {"/nest/100", -ELOOP, NULL},
    {"/loops/self", -ELOOP, NULL},
    {"/loops/pair", -ELOOP, NULL},
    {"/loops/ring", -ELOOP, NULL},
    {"/loops/ring.3", -ELOOP, NULL},
    {"/dangling/missing", -ENOENT, NULL},
    {"/dangling/deeper", -ENOENT, NULL},
    {"/dangling/up", -ENOENT, NULL},
    {"/dangling/absolute", -ENOENT, NULL},
    {"/dangling/notdir", -ENOTDIR, NULL},
    {"/dangling/tolink", -ENOENT, NULL},
    {"/abs/target", 0, "/chains/target"},
    {"/abs/chain40", -ELOOP, NULL}, /* 1 + 40 links */
    {"/abs/tree", 0, "/tree"},
    {"/abs/root", 0, "/"},
    {"/abs/dotdot", 0, "/"},
    {"/dirlinks/deep/1/2/3", 0, "/deep/1/2/3"},
    {"/dirlinks/linklink/1", 0, "/deep/1"},
    {"/dirlinks/bottom", 0, "/deep/1/2/3/4/5/6/7/8/9/10"},
    {"/dirlinks/nest/file", 0, "/nest/dir/file"},
    {"/files/hello.hard", 0, "/files/hello"},
    {"/wide/f10000", 0, NULL},
};

START_TEST(test_default_paths_resolve_as_documented)
{
	struct cfs_tree *t = load(cfs_default_spec);

	for (size_t i = 0; i < G_N_ELEMENTS(default_cases); i++) {
		const struct default_case *dc = &default_cases[i];
		struct rs_result res;
		int rc = resolve_with(t, dc->path, rs_limits_linux, RS_FOLLOW, &res);

		ck_assert_msg(rc == dc->err, "%s: %d, expected %d", dc->path, rc, dc->err);
		if (dc->reaches)
			ck_assert_msg(res.node == node(t, dc->reaches), "%s", dc->path);
	}
	/* the deep bottom, and the long chains with the limits raised */
	GString *p = g_string_new("/deep");
	for (int i = 1; i <= 200; i++)
		g_string_append_printf(p, "/%d", i);
	g_string_append(p, "/bottom");
	ck_assert_int_eq(cfs_tree_kind(t, follow(t, p->str)), RS_FILE);
	g_string_free(p, TRUE);
	struct rs_result res;
	ck_assert_int_eq(resolve_with(t, "/chains/1000", big_limits, RS_FOLLOW, &res), 0);
	ck_assert_uint_eq(res.links, 1000);
	ck_assert_uint_eq(res.max_depth, 1);
	ck_assert_int_eq(resolve_with(t, "/nest/100", big_limits, RS_FOLLOW, &res), 0);
	ck_assert_uint_eq(res.links, 100);
	ck_assert_uint_eq(res.max_depth, 100);
	ck_assert_uint_eq(cfs_tree_dir_count(t, node(t, "/tree")), 20);
	char *readme = content_of(t, node(t, "/README"));
	ck_assert_ptr_nonnull(strstr(readme, "/chains"));
	g_free(readme);
	cfs_tree_free(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Materialize */

/* A fresh directory for materialize: on tmpfs when there is one, since a disk-backed /tmp
 * makes each mkdir or symlink cost half a millisecond. */
static char *make_temp_dir(void)
{
	struct stat st;
	const char *base = getenv("TMPDIR");

	if (!base)
		base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	char *dir = g_strdup_printf("%s/test_spec.XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_entry, 64, FTW_DEPTH | FTW_PHYS);
}

/* Compare every node of T with what lstat/readlink/read find under DIR, materialized with
 * FLAGS: links hold their in-root spelling, set-id bits and owners only with
 * CFS_MAT_KEEP_IDS. */
static void assert_materialized(const struct cfs_tree *t, const char *dir, unsigned flags)
{
	bool keep = flags & CFS_MAT_KEEP_IDS;
	GArray *stack = g_array_new(FALSE, FALSE, sizeof(uint64_t) * 2);
	GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
	uint64_t top[2] = {CFS_ROOT, 0};
	char *buf = g_malloc(65536), *real = g_malloc(65536);
	bool root = geteuid() == 0 && keep;
	uint64_t checked = 0;

	g_array_append_val(stack, top);
	g_ptr_array_add(paths, g_strdup(dir));
	while (stack->len > 0) {
		uint64_t *f = &g_array_index(stack, uint64_t, (stack->len - 1) * 2);
		const char *name;
		size_t len;
		uint32_t child;
		struct stat st, rst;

		if (cfs_tree_dir_next(t, (uint32_t)f[0], &f[1], &name, &len, &child) != 0) {
			g_array_set_size(stack, stack->len - 1);
			g_ptr_array_remove_index(paths, paths->len - 1);
			continue;
		}
		char *path = g_strdup_printf("%s/%.*s", (char *)paths->pdata[paths->len - 1],
					     (int)len, name);
		enum rs_kind kind = cfs_tree_kind(t, child);

		cfs_tree_stat(t, child, &st);
		CHECK(lstat(path, &rst) == 0, "%s: %s", path, strerror(errno));
		CHECK((st.st_mode & S_IFMT) == (rst.st_mode & S_IFMT), "%s", path);
		bool dev = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode);
		if (kind != RS_LINK)
			CHECK((st.st_mode & (keep  ? 07777
					     : dev ? 0600
						   : 01777)) == (rst.st_mode & 07777),
			      "%s", path);
		if (root)
			CHECK(st.st_uid == rst.st_uid && st.st_gid == rst.st_gid, "%s", path);
		CHECK(st.st_mtim.tv_sec == rst.st_mtim.tv_sec &&
			  st.st_mtim.tv_nsec == rst.st_mtim.tv_nsec,
		      "%s: mtime", path);
		if (kind == RS_FILE)
			CHECK(st.st_size == rst.st_size, "%s: size", path);
		if (kind == RS_LINK) {
			ssize_t n = readlink(path, real, 65536);
			ssize_t want =
			    cfs_inroot_target(t, rs_limits_linux, child, (uint32_t)f[0], buf);
			CHECK(want >= 0 && n == want && memcmp(buf, real, (size_t)n) == 0,
			      "%s: '%.*s', want '%s'", path, (int)(n > 0 ? n : 0), real, buf);
			CHECK(rst.st_size == want, "%s: size", path);
		} else if (kind == RS_FILE && st.st_size <= 65536) {
			int fd = open(path, O_RDONLY | O_NOFOLLOW);
			CHECK(fd >= 0, "%s", path);
			ssize_t n = read(fd, real, 65536);
			ssize_t m = cfs_tree_read(t, child, buf, 65536, 0);
			close(fd);
			CHECK(n == m && memcmp(real, buf, (size_t)n) == 0, "%s", path);
		}
		checked++;
		if (kind == RS_DIR) {
			uint64_t sub[2] = {child, 0};
			g_array_append_val(stack, sub);
			g_ptr_array_add(paths, path);
		} else {
			g_free(path);
		}
	}
	ck_assert_uint_gt(checked, 0);
	g_free(buf);
	g_free(real);
	g_array_free(stack, TRUE);
	g_ptr_array_free(paths, TRUE);
}

static int kernel_stat(const char *dir, const char *rel, struct stat *st)
{
	char *p = g_strdup_printf("%s%s", dir, rel);
	int rc = stat(p, st) == 0 ? 0 : -errno;

	g_free(p);
	return rc;
}

START_TEST(test_materialize_the_default_tree)
{
	char *dir = make_temp_dir();
	struct cfs_tree *t = load(cfs_default_spec);
	char *err = NULL;
	struct stat a, b;

	ck_assert_msg(cfs_materialize(t, dir, CFS_MAT_KEEP_IDS, &err) == 0, "%s", err);
	ck_assert_ptr_null(err);
	assert_materialized(t, dir, CFS_MAT_KEEP_IDS);

	/* the kernel agrees with the resolver on the documented paths */
	ck_assert_int_eq(kernel_stat(dir, "/chains/40", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/chains/target", &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(kernel_stat(dir, "/chains/41", &a), -ELOOP);
	ck_assert_int_eq(kernel_stat(dir, "/nest/40", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/nest/41", &a), -ELOOP);
	ck_assert_int_eq(kernel_stat(dir, "/loops/ring", &a), -ELOOP);
	ck_assert_int_eq(kernel_stat(dir, "/dangling/missing", &a), -ENOENT);
	ck_assert_int_eq(kernel_stat(dir, "/dangling/notdir", &a), -ENOTDIR);
	ck_assert_int_eq(kernel_stat(dir, "/dirlinks/bottom", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/files/hello.hard", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/files/hello", &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(b.st_nlink, 2);

	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_materialize_modes_times_and_readonly_dirs)
{
	char *dir = make_temp_dir();
	struct cfs_tree *t = load("dir /ro mode=0555 mtime=10.5\nfile /ro/f data mode=0400 "
				  "mtime=20\nlink /ro/l f mtime=30.25\ndir /ro/sub mode=0500 "
				  "atime=1 mtime=2\nfile \"/odd name\\t\\xff\" x\n"
				  "dir / mode=0750 mtime=40\n");
	char *err = NULL;
	struct stat st;

	ck_assert_msg(cfs_materialize(t, dir, 0, &err) == 0, "%s", err);
	assert_materialized(t, dir, 0);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0750);
	ck_assert_int_eq(st.st_mtim.tv_sec, 40);
	/* the tree may be materialized only into an empty directory */
	ck_assert_int_eq(cfs_materialize(t, dir, 0, &err), -ENOTEMPTY);
	ck_assert_msg(g_str_has_prefix(err, dir) && strstr(err, "Directory not empty"), "%s", err);
	free(err);
	char *sub = g_strdup_printf("%s/ro", dir);
	chmod(sub, 0755);
	g_free(sub);
	sub = g_strdup_printf("%s/ro/sub", dir);
	chmod(sub, 0755);
	g_free(sub);
	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

/* path relative to DIR's link, as readlink finds it in the copy */
static char *copy_readlink(const char *dir, const char *rel)
{
	char *p = g_strdup_printf("%s%s", dir, rel), buf[4096];
	ssize_t n = readlink(p, buf, sizeof(buf) - 1);

	g_free(p);
	ck_assert_msg(n >= 0, "%s: %s", rel, strerror(errno));
	return g_strndup(buf, (gsize)n);
}

/* Links whose target would climb above the copy (absolute, or a ".." past its top) are
 * written as their in-root meaning: the kernel's walk of the copy never leaves it. */
START_TEST(test_materialize_keeps_links_inside_the_copy)
{
	static const struct {
		const char *link, *want;
	} cases[] = {
	    {"/x/y/l", "../../a/b"}, /* absolute: the copy's root, not the host's */
	    {"/x/up", "../etc"},     /* ".." past the top stays at the top */
	    {"/root", "."},	     {"/rel", "x"},
	    {"/x/ok", "../x/y"},    /* cannot climb: as stored */
	    {"/x/t", "s/../../.."}, /* through a link: .. is physical, reaches the top */
	    {"/x/u", ".."},	    /* ... and one more climbs out */
	};
	char *dir = make_temp_dir(), *err = NULL;
	struct cfs_tree *t = load("dir /x/y\nfile /a/b hi\nlink /x/y/l /a/b\n"
				  "link /x/up ../../../etc\nlink /root /\nlink /rel ../x\n"
				  "link /x/ok ../x/y\ndir /deep/a/b\nlink /x/s /deep/a/b\n"
				  "link /x/t s/../../..\nlink /x/u s/../../../..\n");
	struct stat a, b;

	ck_assert_msg(cfs_materialize(t, dir, 0, &err) == 0, "%s", err);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		char *got = copy_readlink(dir, cases[i].link);
		ck_assert_msg(strcmp(got, cases[i].want) == 0, "%s: '%s', want '%s'", cases[i].link,
			      got, cases[i].want);
		g_free(got);
	}
	assert_materialized(t, dir, 0);
	/* what the kernel finds through them */
	ck_assert_int_eq(kernel_stat(dir, "/x/y/l", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/a/b", &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(kernel_stat(dir, "/x/up", &a), -ENOENT); /* not the host's /etc */
	ck_assert_int_eq(kernel_stat(dir, "/root", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "", &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(kernel_stat(dir, "/x/u", &a), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(kernel_stat(dir, "/x/t", &a), 0); /* up from /deep/a/b: the root */
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_append_at_writes_at_an_offset_and_truncate_sets_the_size)
{
	struct cfs_tree *t = load("file /f abc\nappend /f XY at=6\ntruncate /f 10\n"
				  "file /g abcdef\ntruncate /g 2\nfile /h\ntruncate /h 1T\n");
	uint32_t f = node(t, "/f");
	struct stat st;
	char buf[16];

	cfs_tree_stat(t, f, &st);
	ck_assert_int_eq(st.st_size, 10);
	ck_assert_int_eq(cfs_tree_read(t, f, buf, sizeof(buf), 0), 10);
	ck_assert(!memcmp(buf, "abc\0\0\0XY\0\0", 10));
	char *s = content_of(t, node(t, "/g"));
	ck_assert_str_eq(s, "ab");
	g_free(s);
	cfs_tree_stat(t, node(t, "/h"), &st);
	ck_assert_int_eq(st.st_size, 1ll << 40);
	ck_assert_int_eq(st.st_blocks, 0);
	cfs_tree_free(t);
}
END_TEST

/* Files with holes, written over a pattern, or up to the largest size dump as lines that
 * load back into the same content, without writing the holes out. */
START_TEST(test_dump_round_trips_sparse_files)
{
	static const struct {
		const char *path;
		int64_t off;
	} probes[] = {
	    {"/s/zeros", (1ll << 40) - 4}, {"/s/far", 1ll << 31}, {"/s/far", INT64_MAX - 4},
	    {"/s/far", 1ll << 35},	   {"/s/pat", 1ll << 45}, {"/s/pat", (1ll << 48) - 2},
	    {"/s/pat", (1ll << 49) - 4},   {"/s/small", 0},	  {"/s/small", 4000}};
	struct cfs_tree *t = load("file /s/zeros\ntruncate /s/zeros 1T\n"
				  "file /s/far\nappend /s/far a at=2G\n"
				  "append /s/far end at=9223372036854775804\n"
				  "file /s/pat size=1P pattern=\"ab\\n\"\nappend /s/pat X at=32T\n"
				  "truncate /s/pat 256T\ntruncate /s/pat 512T\n"
				  "file /s/small hello\ntruncate /s/small 5000\n");
	char *d = dump_of(t);
	struct cfs_tree *u = load(d);
	char *d2 = dump_of(u);
	char a[8], b[8];

	ck_assert_str_eq(d, d2);
	ck_assert_uint_lt(strlen(d), 16384); /* holes are not written out */
	ck_assert_ptr_nonnull(strstr(d, "truncate /s/zeros 1099511627776\n"));
	ck_assert_ptr_nonnull(strstr(d, "append /s/far a at=2147483648\n"));
	ck_assert_ptr_nonnull(strstr(d, "file /s/pat size=281474976710656 pattern=\"ab\\n\" "));
	for (size_t i = 0; i < G_N_ELEMENTS(probes); i++) {
		struct stat st, su;
		cfs_tree_stat(t, node(t, probes[i].path), &st);
		cfs_tree_stat(u, node(u, probes[i].path), &su);
		ck_assert_int_eq(st.st_size, su.st_size);
		ck_assert_int_eq(st.st_blocks, su.st_blocks);
		ssize_t n = cfs_tree_read(t, node(t, probes[i].path), a, 8, probes[i].off);
		ck_assert_int_eq(cfs_tree_read(u, node(u, probes[i].path), b, 8, probes[i].off), n);
		ck_assert_msg(n > 0 && !memcmp(a, b, (size_t)n), "%s at %lld", probes[i].path,
			      (long long)probes[i].off);
	}
	ck_assert_int_eq(cfs_tree_read(u, node(u, "/s/pat"), a, 1, 1ll << 45), 1);
	ck_assert_int_eq(a[0], 'X');
	free(d);
	free(d2);
	cfs_tree_free(u);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_materialize_leaves_holes_as_holes)
{
	char *dir = make_temp_dir();
	struct cfs_tree *t = load("file /f\nappend /f a at=1G\nfile /p size=10 pattern=x\n"
				  "truncate /p 100000\nappend /p y at=50000\n");
	char *err = NULL, *path = g_strdup_printf("%s/f", dir), c = 0;
	struct stat st;
	int fd;

	ck_assert_msg(cfs_materialize(t, dir, 0, &err) == 0, "%s", err);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, (1ll << 30) + 1);
	ck_assert_int_lt(st.st_blocks, 1024); /* not a gigabyte of zeros */
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(pread(fd, &c, 1, 1ll << 30), 1);
	ck_assert_int_eq(c, 'a');
	close(fd);
	g_free(path);
	assert_materialized(t, dir, 0);
	path = g_strdup_printf("%s/p", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 100000);
	fd = open(path, O_RDONLY);
	char buf[12];
	ck_assert_int_eq(pread(fd, buf, 12, 0), 12);
	ck_assert(!memcmp(buf, "xxxxxxxxxx\0\0", 12));
	ck_assert_int_eq(pread(fd, buf, 1, 50000), 1);
	ck_assert_int_eq(buf[0], 'y');
	close(fd);
	g_free(path);
	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

/* A spec is not trusted with set-id programs or owners: only CFS_MAT_KEEP_IDS applies them. */
START_TEST(test_materialize_drops_set_id_bits_unless_asked)
{
	struct cfs_tree *t = load("file /s x mode=06755 uid=4242 gid=4243\n"
				  "dir /d mode=02775 uid=4242\ndir /tmp mode=01777\n");
	struct stat st;

	for (unsigned flags = 0; flags <= CFS_MAT_KEEP_IDS; flags += CFS_MAT_KEEP_IDS) {
		char *dir = make_temp_dir(), *err = NULL;
		bool keep = flags, owners = keep && geteuid() == 0;

		ck_assert_msg(cfs_materialize(t, dir, flags, &err) == 0, "%s", err);
		ck_assert_int_eq(kernel_stat(dir, "/s", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, keep ? 06755 : 0755);
		ck_assert_int_eq(st.st_uid, owners ? 4242 : geteuid());
		ck_assert_int_eq(st.st_gid, owners ? 4243 : getegid());
		ck_assert_int_eq(kernel_stat(dir, "/d", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, keep ? 02775 : 0775);
		ck_assert_int_eq(st.st_uid, owners ? 4242 : geteuid());
		ck_assert_int_eq(kernel_stat(dir, "/tmp", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, 01777); /* sticky is no privilege */
		assert_materialized(t, dir, flags);
		rm_rf(dir);
		g_free(dir);
	}
	cfs_tree_free(t);
}
END_TEST

/* One body cannot mean the same place from two directories: each name of a hard-linked link
 * gets the body right for its own, as a link of its own where they differ. */
START_TEST(test_materialize_gives_each_name_of_a_link_its_own_body)
{
	char *dir = make_temp_dir(), *err = NULL;
	struct cfs_tree *t = load("dir /a/b\nlink /a/b/l /x\nhardlink /h /a/b/l\n"
				  "hardlink /a/h2 /a/b/l\nhardlink /h3 /a/b/l\n"
				  "link /a/b/rel y\nhardlink /hrel /a/b/rel\n");
	struct stat a, b, c;

	ck_assert_msg(cfs_materialize(t, dir, 0, &err) == 0, "%s", err);
	assert_materialized(t, dir, 0);
	char *l = copy_readlink(dir, "/a/b/l"), *h = copy_readlink(dir, "/h");
	ck_assert_str_eq(l, "../../x");
	ck_assert_str_eq(h, "x");
	g_free(l);
	g_free(h);
	/* names whose bodies agree are still one link */
	char *p = g_strdup_printf("%s/h", dir), *q = g_strdup_printf("%s/h3", dir);
	ck_assert_int_eq(lstat(p, &a), 0);
	ck_assert_int_eq(lstat(q, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_uint_eq(a.st_nlink, 2);
	g_free(p);
	g_free(q);
	p = g_strdup_printf("%s/hrel", dir);
	q = g_strdup_printf("%s/a/b/rel", dir);
	ck_assert_int_eq(lstat(p, &b), 0);
	ck_assert_int_eq(lstat(q, &c), 0);
	ck_assert_uint_eq(b.st_ino, c.st_ino);
	ck_assert_uint_eq(b.st_nlink, 2);
	g_free(p);
	g_free(q);
	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

/* A device node keeps the spec's mode only with CFS_MAT_KEEP_IDS, else at most 0600. */
START_TEST(test_materialize_makes_devices_private_unless_asked)
{
	struct cfs_tree *t = load("dev /null c 1 3 mode=0666\ndev /ro c 1 3 mode=0440\n"
				  "fifo /p mode=0666\n");
	struct stat st;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: devices: making device nodes needs root\n");
		cfs_tree_free(t);
		return;
	}
	for (unsigned flags = 0; flags <= CFS_MAT_KEEP_IDS; flags += CFS_MAT_KEEP_IDS) {
		char *dir = make_temp_dir(), *err = NULL;

		ck_assert_msg(cfs_materialize(t, dir, flags, &err) == 0, "%s", err);
		ck_assert_int_eq(kernel_stat(dir, "/null", &st), 0);
		ck_assert(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));
		ck_assert_int_eq(st.st_mode & 07777, flags ? 0666 : 0600);
		ck_assert_int_eq(kernel_stat(dir, "/ro", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, flags ? 0440 : 0400);
		ck_assert_int_eq(kernel_stat(dir, "/p", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, 0666); /* a fifo is no privilege */
		assert_materialized(t, dir, flags);
		rm_rf(dir);
		g_free(dir);
	}
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_materialize_refuses_too_much_data)
{
	char *dir = make_temp_dir();
	struct cfs_tree *t = load("file /a size=600M\nfile /b size=600M\n");
	char *err = NULL, *want;

	ck_assert_int_eq(cfs_materialize(t, dir, 0, &err), -EFBIG);
	want = g_strdup_printf("%s: the tree holds 1258291200 bytes of file data, more than the "
			       "1073741824 materialize writes",
			       dir);
	ck_assert_str_eq(err, want);
	free(err);
	g_free(want);
	/* a hard link is counted once */
	struct cfs_tree *u = load("file /a size=600M\nhardlink /b /a\nfile /c size=1\n");
	ck_assert_int_eq(cfs_materialize(u, "/nonexistent/dir", 0, &err), -ENOENT);
	ck_assert_str_eq(err, "/nonexistent/dir: open: No such file or directory");
	free(err);
	rmdir(dir);
	g_free(dir);
	cfs_tree_free(u);
	cfs_tree_free(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static Suite *spec_suite(void)
{
	Suite *s = suite_create("spec");
	TCase *kw = tcase_create("keywords"), *gen = tcase_create("generators");
	TCase *bad = tcase_create("errors"), *atomic = tcase_create("atomic");
	TCase *dump = tcase_create("dump"), *dflt = tcase_create("default");
	TCase *mat = tcase_create("materialize");

	tcase_add_test(kw, test_dir_with_attributes);
	tcase_add_test(kw, test_missing_parents_are_made_0755_with_default_owner);
	tcase_add_test(kw, test_times_on_a_dir_survive_later_entries);
	tcase_add_test(kw, test_dir_root_sets_root_attributes);
	tcase_add_test(kw, test_stamp_gives_every_node_the_spec_time_but_explicit_times_win);
	tcase_add_test(kw, test_file_literal_with_escapes);
	tcase_add_test(kw, test_file_size_with_pattern_and_suffix);
	tcase_add_test(kw, test_append_extends_a_file);
	tcase_add_test(kw, test_link_target_is_byte_exact);
	tcase_add_test(kw, test_escaped_slash_in_a_target_is_a_slash);
	tcase_add_test(kw, test_hardlink_names_the_same_node);
	tcase_add_test(kw, test_comments_blank_lines_and_hash_inside_words);
	tcase_add_test(kw, test_quoted_key_is_content);
	suite_add_tcase(s, kw);

	tcase_add_test(gen, test_chain_is_serial_at_nesting_one);
	tcase_add_test(gen, test_chain_absolute_target_and_length_one);
	tcase_add_test(gen, test_chain_40_passes_and_41_is_eloop);
	tcase_add_loop_test(gen, test_nest_depth_and_links_equal_depth, 0,
			    G_N_ELEMENTS(nest_cases));
	tcase_add_test(gen, test_nest_layout);
	tcase_add_test(gen, test_loops_self_pair_ring);
	tcase_add_test(gen, test_wide_makes_count_files);
	tcase_add_test(gen, test_deep_makes_nested_directories);
	tcase_add_test(gen, test_tree_makes_exactly_the_counted_nodes);
	tcase_add_test(gen, test_tree_same_seed_same_tree);
	tcase_add_test(gen, test_tree_links_mix_target_kinds);
	tcase_set_timeout(gen, 60);
	suite_add_tcase(s, gen);

	tcase_add_loop_test(bad, test_bad_spec_reports_place_and_reason, 0,
			    G_N_ELEMENTS(bad_cases));
	tcase_add_test(bad, test_nul_byte_in_text);
	tcase_add_test(bad, test_line_of_100k_is_too_long);
	tcase_add_test(bad, test_name_and_target_too_long);
	tcase_add_test(bad, test_load_file_errors);
	tcase_add_test(bad, test_load_file_streams_lines_across_chunks);
	suite_add_tcase(s, bad);

	tcase_add_test(atomic, test_apply_line_adds_and_fails_cleanly);
	tcase_add_loop_test(atomic, test_apply_line_is_atomic_under_allocation_failure, 0,
			    G_N_ELEMENTS(atomic_lines));
	tcase_add_loop_test(atomic, test_apply_line_is_atomic_when_spec_allocations_fail, 0,
			    G_N_ELEMENTS(atomic_lines));
	tcase_add_test(atomic, test_load_file_under_allocation_failure);
	tcase_set_timeout(atomic, 300);
	suite_add_tcase(s, atomic);

	tcase_add_test(dump, test_dump_writes_each_kind);
	tcase_add_test(dump, test_dump_writes_a_hard_linked_node_under_its_first_name);
	tcase_add_test(dump, test_streamed_dump_writes_a_link_whose_first_name_went);
	tcase_add_test(dump, test_special_nodes_load_and_dump);
	tcase_add_test(dump, test_dump_round_trips_odd_names_and_bytes);
	tcase_add_test(dump, test_dump_round_trips_the_default_tree);
	tcase_add_test(dump, test_dump_round_trips_sparse_files);
	tcase_add_test(dump, test_append_at_writes_at_an_offset_and_truncate_sets_the_size);
	tcase_add_test(dump, test_materialize_leaves_holes_as_holes);
	tcase_set_timeout(dump, 300);
	suite_add_tcase(s, dump);

	tcase_add_test(dflt, test_default_spec_loads_fast_with_100k_nodes);
	tcase_add_test(dflt, test_default_spec_matches_the_source_file);
	tcase_add_test(dflt, test_default_paths_resolve_as_documented);
	tcase_set_timeout(dflt, 120);
	suite_add_tcase(s, dflt);

	tcase_add_test(mat, test_materialize_the_default_tree);
	tcase_add_test(mat, test_materialize_modes_times_and_readonly_dirs);
	tcase_add_test(mat, test_materialize_refuses_too_much_data);
	tcase_add_test(mat, test_materialize_keeps_links_inside_the_copy);
	tcase_add_test(mat, test_materialize_drops_set_id_bits_unless_asked);
	tcase_add_test(mat, test_materialize_gives_each_name_of_a_link_its_own_body);
	tcase_add_test(mat, test_materialize_makes_devices_private_unless_asked);
	tcase_set_timeout(mat, 600);
	suite_add_tcase(s, mat);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(spec_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
