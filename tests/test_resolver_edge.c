/*
 * The resolver's edge cases, one behaviour per test, on a small hand-built tree. Expected
 * answers come from Linux's path resolution (verified on 6.18, see DESIGN.md), never from a
 * run of the code under test.
 *
 *   /                      root
 *   ├── d/                 directory
 *   │   ├── f              file
 *   │   ├── sub/           directory
 *   │   ├── up   -> ..
 *   │   └── abs  -> /f     absolute: the root's f, not d/f
 *   ├── f                  file
 *   ├── ld   -> d          link to a directory
 *   ├── lf   -> f          link to a file
 *   ├── lfs  -> f/         a body with a trailing slash
 *   ├── dang -> missing    dangling
 *   ├── self -> self       loops
 *   ├── loopa -> loopb,  loopb -> loopa
 *   ├── lsub -> /d/sub
 *   ├── empty -> ""        (memtree allows it; no kernel does)
 *   └── xxx...x            file named with 255 bytes
 */
#include "check_main.h"
#include "memtree.h"
#include "rs.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct mt_tree *m;
static struct rs_ctx ctx;
static struct rs_result res;
static uint64_t root, d, df, sub, f, ld, lf, dang, lsub, longf;
static char name255[RS_NAME_MAX + 1];

static void setup(void)
{
	m = mt_new();
	root = mt_root(m);
	d = mt_dir(m, root, "d");
	df = mt_file(m, d, "f");
	sub = mt_dir(m, d, "sub");
	mt_link(m, d, "up", "..");
	mt_link(m, d, "abs", "/f");
	f = mt_file(m, root, "f");
	ld = mt_link(m, root, "ld", "d");
	lf = mt_link(m, root, "lf", "f");
	mt_link(m, root, "lfs", "f/");
	dang = mt_link(m, root, "dang", "missing");
	mt_link(m, root, "self", "self");
	mt_link(m, root, "loopa", "loopb");
	mt_link(m, root, "loopb", "loopa");
	lsub = mt_link(m, root, "lsub", "/d/sub");
	mt_link(m, root, "empty", "");
	memset(name255, 'x', RS_NAME_MAX);
	longf = mt_file(m, root, name255);
	ctx = mt_ctx(m);
}

static void teardown(void)
{
	mt_free(m);
}

static int walk_from(uint64_t start, const char *path, unsigned flags)
{
	return rs_resolve(&ctx, start, path, flags, &res);
}

static int walk(const char *path, unsigned flags)
{
	return walk_from(root, path, flags);
}

#define expect_node(path, flags, want)                                                             \
	do {                                                                                       \
		ck_assert_int_eq(walk(path, flags), 0);                                            \
		ck_assert_uint_eq(res.node, want);                                                 \
	} while (0)

#define expect_err(path, flags, err) ck_assert_int_eq(walk(path, flags), -(err))

/* Links c0 -> c1 -> ... -> c<n-1> -> TARGET in a new directory NAME; returns that directory. */
static uint64_t make_chain(const char *name, unsigned n, const char *target)
{
	uint64_t dir = mt_dir(m, root, name);
	char link[32], next[32];

	for (unsigned i = 0; i < n; i++) {
		snprintf(link, sizeof(link), "c%u", i);
		snprintf(next, sizeof(next), "c%u", i + 1);
		mt_link(m, dir, link, i + 1 == n ? target : next);
	}
	return dir;
}

/* A nesting of depth n in a new directory NAME: n0 -> "n1/.", ..., n<n-1> -> TARGET. Each
 * body goes on after the next link, so every link adds a frame: n links, n frames. */
static uint64_t make_nest(const char *name, unsigned n, const char *target)
{
	uint64_t dir = mt_dir(m, root, name);
	char link[32], body[40];

	for (unsigned i = 0; i < n; i++) {
		snprintf(link, sizeof(link), "n%u", i);
		snprintf(body, sizeof(body), "n%u/.", i + 1);
		mt_link(m, dir, link, i + 1 == n ? target : body);
	}
	return dir;
}

/* ---- the path itself ---- */

START_TEST(test_empty_path_is_enoent)
{
	expect_err("", RS_FOLLOW, ENOENT);
}
END_TEST

START_TEST(test_dot_is_the_start)
{
	ck_assert_int_eq(walk_from(d, ".", 0), 0);
	ck_assert_uint_eq(res.node, d);
}
END_TEST

START_TEST(test_dotdot_is_the_parent)
{
	ck_assert_int_eq(walk_from(sub, "..", 0), 0);
	ck_assert_uint_eq(res.node, d);
}
END_TEST

START_TEST(test_dotdot_at_the_root_stays_there)
{
	expect_node("..", 0, root);
	expect_node("../../d", 0, d);
}
END_TEST

START_TEST(test_dotdot_at_a_subdirectory_root_stays_there)
{
	ctx.root = d; /* as openat2(dirfd of d, RESOLVE_IN_ROOT) */
	ck_assert_int_eq(walk_from(d, "..", 0), 0);
	ck_assert_uint_eq(res.node, d);
	ck_assert_int_eq(walk_from(sub, "../../f", 0), 0);
	ck_assert_uint_eq(res.node, df);
	ck_assert_int_eq(walk_from(sub, "/f", 0), 0);
	ck_assert_uint_eq(res.node, df);
	ck_assert_int_eq(walk_from(d, "abs", RS_FOLLOW), 0); /* "/f" inside that root */
	ck_assert_uint_eq(res.node, df);
}
END_TEST

START_TEST(test_slash_dotdot_is_the_root)
{
	ck_assert_int_eq(walk_from(sub, "/..", 0), 0);
	ck_assert_uint_eq(res.node, root);
}
END_TEST

START_TEST(test_double_slash_is_the_root)
{
	ck_assert_int_eq(walk_from(sub, "//", 0), 0);
	ck_assert_uint_eq(res.node, root);
}
END_TEST

START_TEST(test_runs_of_slashes_count_as_one)
{
	expect_node("//d///sub//", 0, sub);
}
END_TEST

START_TEST(test_absolute_path_starts_at_the_root)
{
	ck_assert_int_eq(walk_from(d, "/f", 0), 0);
	ck_assert_uint_eq(res.node, f);
}
END_TEST

START_TEST(test_dotdot_is_physical_after_a_link)
{
	expect_node("lsub/..", 0, d); /* lexically it would be the root */
}
END_TEST

START_TEST(test_dotdot_after_a_link_to_root_stays_at_root)
{
	expect_node("d/up/..", 0, root);
}
END_TEST

/* ---- trailing slashes ---- */

START_TEST(test_trailing_slash_on_file_is_enotdir)
{
	expect_err("f/", 0, ENOTDIR);
	expect_err("f/", RS_FOLLOW, ENOTDIR);
}
END_TEST

START_TEST(test_trailing_slash_on_dir_is_the_dir)
{
	expect_node("d/", 0, d);
	ck_assert_int_eq(res.trailing_slash, 1);
}
END_TEST

START_TEST(test_trailing_slash_on_link_to_dir_follows_it)
{
	expect_node("ld/", 0, d); /* even without RS_FOLLOW */
}
END_TEST

START_TEST(test_trailing_slash_on_link_to_file_is_enotdir)
{
	expect_err("lf/", 0, ENOTDIR);
	expect_err("lf/", RS_FOLLOW, ENOTDIR);
}
END_TEST

START_TEST(test_trailing_slash_on_dangling_link_is_enoent)
{
	expect_err("dang/", 0, ENOENT);
}
END_TEST

START_TEST(test_trailing_slash_in_a_link_body_requires_a_dir)
{
	expect_err("lfs", RS_FOLLOW, ENOTDIR);
}
END_TEST

START_TEST(test_file_dot_is_enotdir)
{
	expect_err("f/.", 0, ENOTDIR);
}
END_TEST

START_TEST(test_file_dotdot_is_enotdir)
{
	expect_err("f/..", 0, ENOTDIR);
}
END_TEST

START_TEST(test_missing_dotdot_is_enoent)
{
	expect_err("missing/..", 0, ENOENT); /* ".." is physical: "missing" must exist */
}
END_TEST

/* ---- lengths ---- */

START_TEST(test_name_of_255_bytes_is_found)
{
	expect_node(name255, 0, longf);
}
END_TEST

START_TEST(test_name_of_256_bytes_is_enametoolong)
{
	char name[RS_NAME_MAX + 2];

	memset(name, 'x', RS_NAME_MAX + 1);
	name[RS_NAME_MAX + 1] = '\0';
	expect_err(name, 0, ENAMETOOLONG);
}
END_TEST

/* "./" repeated, then "d/f": LEN bytes in all (LEN odd). */
static char *padded_path(size_t len)
{
	char *p = malloc(len + 1);
	size_t pad = len - 3;

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(pad % 2, 0);
	for (size_t i = 0; i < pad; i += 2)
		memcpy(p + i, "./", 2);
	strcpy(p + pad, "d/f");
	ck_assert_uint_eq(strlen(p), len);
	return p;
}

START_TEST(test_path_of_4095_bytes_is_resolved)
{
	char *p = padded_path(RS_PATH_MAX - 1);

	expect_node(p, 0, df);
	free(p);
}
END_TEST

START_TEST(test_path_of_4096_bytes_is_enametoolong)
{
	char *p = padded_path(RS_PATH_MAX + 1);

	p[0] = '/'; /* 4097 bytes of which we drop one: "/" + "/./././.../d/f" */
	expect_err(p + 1, 0, ENAMETOOLONG);
	free(p);
}
END_TEST

START_TEST(test_link_body_of_4095_bytes_is_followed)
{
	char *body = padded_path(RS_PATH_MAX - 1);

	mt_link(m, root, "long", body);
	expect_node("long", RS_FOLLOW, df);
	free(body);
}
END_TEST

START_TEST(test_link_body_of_4096_bytes_is_enametoolong)
{
	char *body = padded_path(RS_PATH_MAX + 1);

	mt_link(m, root, "long", body + 1); /* 4096 bytes */
	expect_err("long", RS_FOLLOW, ENAMETOOLONG);
	free(body);
}
END_TEST

/* ---- components ---- */

START_TEST(test_file_as_intermediate_is_enotdir)
{
	expect_err("f/x", 0, ENOTDIR);
	expect_err("lf/x", 0, ENOTDIR);
	expect_err("d/f/sub", 0, ENOTDIR);
}
END_TEST

START_TEST(test_missing_component_is_enoent)
{
	expect_err("d/missing", 0, ENOENT);
	expect_err("d/missing/f", 0, ENOENT);
}
END_TEST

START_TEST(test_link_mid_path_is_followed)
{
	expect_node("ld/sub", 0, sub);
	expect_node("d/up/d/f", 0, df);
}
END_TEST

START_TEST(test_final_link_is_followed_only_when_asked)
{
	expect_node("ld", RS_FOLLOW, d);
	expect_node("ld", 0, ld);
}
END_TEST

START_TEST(test_dangling_link_followed_is_enoent)
{
	expect_err("dang", RS_FOLLOW, ENOENT);
}
END_TEST

START_TEST(test_dangling_link_not_followed_is_the_link)
{
	expect_node("dang", 0, dang);
}
END_TEST

START_TEST(test_absolute_target_restarts_at_root)
{
	expect_node("d/abs", RS_FOLLOW, f);
}
END_TEST

START_TEST(test_empty_link_body_is_enoent)
{
	expect_err("empty", RS_FOLLOW, ENOENT);
	expect_err("empty/x", 0, ENOENT);
}
END_TEST

START_TEST(test_must_be_dir_on_a_file_is_enotdir)
{
	expect_err("f", RS_DIRECTORY, ENOTDIR);
	expect_node("d", RS_DIRECTORY, d);
}
END_TEST

START_TEST(test_must_be_dir_on_an_unfollowed_link_is_enotdir)
{
	expect_err("ld", RS_DIRECTORY, ENOTDIR);
	expect_node("ld", RS_DIRECTORY | RS_FOLLOW, d);
}
END_TEST

/* ---- limits ---- */

static const struct rs_limits chain_limits[] = {{40, 40}, {1, 40}, {1, 5}, {1000, 1}, {2, 1000}};

START_TEST(test_serial_chain_of_max_total_resolves)
{
	ctx.limits = chain_limits[_i];
	make_chain("chain", ctx.limits.max_total, "/d/f");
	expect_node("chain/c0", RS_FOLLOW, df);
	ck_assert_uint_eq(res.links, ctx.limits.max_total);
}
END_TEST

START_TEST(test_serial_chain_of_max_total_plus_one_is_eloop)
{
	ctx.limits = chain_limits[_i];
	make_chain("chain", ctx.limits.max_total + 1, "/d/f");
	expect_err("chain/c0", RS_FOLLOW, ELOOP);
}
END_TEST

START_TEST(test_serial_chain_mid_path_counts_against_max_total)
{
	make_chain("chain", RS_DEFAULT_TOTAL, "/d");
	expect_node("chain/c0/f", 0, df);
	expect_err("chain/c0/abs", RS_FOLLOW, ELOOP); /* the 41st link */
}
END_TEST

/* max_total raised far above: the nesting limit is the one that bites. */
static const unsigned nest_limits[] = {1, 2, 3, 5, 40};

START_TEST(test_nesting_of_max_nest_resolves)
{
	ctx.limits = (struct rs_limits){nest_limits[_i], 1000};
	make_nest("nest", nest_limits[_i], "/d");
	expect_node("nest/n0", RS_FOLLOW, d);
	ck_assert_uint_eq(res.max_depth, nest_limits[_i]);
}
END_TEST

START_TEST(test_nesting_of_max_nest_plus_one_is_eloop)
{
	ctx.limits = (struct rs_limits){nest_limits[_i], 1000};
	make_nest("nest", nest_limits[_i] + 1, "/d");
	expect_err("nest/n0", RS_FOLLOW, ELOOP);
}
END_TEST

/* max_nest raised far above: the total is the one that bites, on the same nestings. */
START_TEST(test_nesting_is_limited_by_max_total_too)
{
	ctx.limits = (struct rs_limits){1000, nest_limits[_i]};
	make_nest("ok", nest_limits[_i], "/d");
	make_nest("over", nest_limits[_i] + 1, "/d");
	expect_node("ok/n0", RS_FOLLOW, d);
	expect_err("over/n0", RS_FOLLOW, ELOOP);
}
END_TEST

START_TEST(test_serial_chain_inside_a_nesting_adds_no_depth)
{
	/* n0 -> "n1/." nests once, n1 -> a chain of 30: depth 2, 32 links, within 2/40 */
	ctx.limits = (struct rs_limits){2, 40};
	make_chain("chain", 30, "/d");
	make_nest("nest", 2, "/chain/c0");
	expect_node("nest/n0", RS_FOLLOW, d);
	ck_assert_uint_eq(res.links, 32);
	ck_assert_uint_eq(res.max_depth, 2);
}
END_TEST

START_TEST(test_classic_limits_pass_nesting_of_5)
{
	ctx.limits = rs_limits_classic;
	make_nest("nest", 5, "/d");
	expect_node("nest/n0", RS_FOLLOW, d);
}
END_TEST

START_TEST(test_classic_limits_fail_nesting_of_6)
{
	ctx.limits = rs_limits_classic;
	make_nest("nest", 6, "/d");
	expect_err("nest/n0", RS_FOLLOW, ELOOP);
}
END_TEST

START_TEST(test_classic_limits_pass_serial_chain_of_40)
{
	ctx.limits = rs_limits_classic;
	make_chain("chain", 40, "/d");
	expect_node("chain/c0", RS_FOLLOW, d);
}
END_TEST

START_TEST(test_self_loop_is_eloop)
{
	expect_err("self", RS_FOLLOW, ELOOP);
	expect_err("self/x", 0, ELOOP);
}
END_TEST

START_TEST(test_two_link_loop_is_eloop)
{
	expect_err("loopa", RS_FOLLOW, ELOOP);
	expect_err("loopb/", 0, ELOOP);
}
END_TEST

START_TEST(test_chain_of_1000_stays_at_depth_1)
{
	ctx.limits = (struct rs_limits){RS_DEFAULT_NEST, 1000};
	make_chain("chain", 1000, "/d");
	expect_node("chain/c0", RS_FOLLOW, d);
	ck_assert_uint_eq(res.links, 1000);
	ck_assert_uint_eq(res.max_depth, 1);
	ck_assert_uint_eq(res.heap_frames, 0);
	ck_assert_uint_eq(res.allocs, 0);
}
END_TEST

/* ---- RS_PARENT ---- */

START_TEST(test_parent_mode_gives_parent_and_last_name)
{
	expect_node("d/f", RS_PARENT, d);
	ck_assert_uint_eq(res.last_len, 1);
	ck_assert_int_eq(res.last[0], 'f');
	ck_assert_int_eq(res.trailing_slash, 0);
}
END_TEST

START_TEST(test_parent_mode_last_name_need_not_exist)
{
	const char *path = "d/sub/new";

	expect_node(path, RS_PARENT, sub);
	ck_assert_ptr_eq(res.last, path + 6);
	ck_assert_uint_eq(res.last_len, 3);
}
END_TEST

START_TEST(test_parent_mode_reports_trailing_slash)
{
	expect_node("d/sub//", RS_PARENT, d);
	ck_assert_uint_eq(res.last_len, 3);
	ck_assert_int_eq(strncmp(res.last, "sub", 3), 0);
	ck_assert_int_eq(res.trailing_slash, 1);
}
END_TEST

START_TEST(test_parent_mode_on_root_has_no_last_name)
{
	expect_node("/", RS_PARENT, root);
	ck_assert_ptr_null(res.last);
	expect_node("//", RS_PARENT, root);
	ck_assert_ptr_null(res.last);
}
END_TEST

START_TEST(test_parent_mode_does_not_follow_the_last_link)
{
	expect_node("ld", RS_PARENT | RS_FOLLOW, root);
	ck_assert_int_eq(strncmp(res.last, "ld", res.last_len), 0);
	ck_assert_uint_eq(res.links, 0);
}
END_TEST

START_TEST(test_parent_mode_follows_links_before_the_last_name)
{
	expect_node("ld/f", RS_PARENT, d);
	expect_err("lf/x", RS_PARENT, ENOTDIR);
}
END_TEST

/* ---- RS_NO_SYMLINKS ---- */

START_TEST(test_no_symlinks_followed_link_is_eloop)
{
	expect_err("ld/f", RS_NO_SYMLINKS, ELOOP);
	expect_err("lf", RS_NO_SYMLINKS | RS_FOLLOW, ELOOP);
	expect_err("ld/", RS_NO_SYMLINKS, ELOOP);
}
END_TEST

START_TEST(test_no_symlinks_unfollowed_link_is_the_link)
{
	expect_node("lf", RS_NO_SYMLINKS, lf);
}
END_TEST

START_TEST(test_no_symlinks_allows_paths_without_links)
{
	expect_node("d/sub/../f", RS_NO_SYMLINKS | RS_FOLLOW, df);
}
END_TEST

/* ---- RS_BENEATH ---- */

START_TEST(test_beneath_absolute_path_is_exdev)
{
	ck_assert_int_eq(walk_from(d, "/d", RS_BENEATH), -EXDEV);
}
END_TEST

START_TEST(test_beneath_absolute_target_is_exdev)
{
	ck_assert_int_eq(walk_from(d, "abs", RS_BENEATH | RS_FOLLOW), -EXDEV);
}
END_TEST

START_TEST(test_beneath_dotdot_escaping_the_start_is_exdev)
{
	ck_assert_int_eq(walk_from(d, "..", RS_BENEATH), -EXDEV);
	ck_assert_int_eq(walk_from(d, "sub/../..", RS_BENEATH), -EXDEV);
	ck_assert_int_eq(walk_from(d, "up", RS_BENEATH | RS_FOLLOW), -EXDEV);
	ck_assert_int_eq(walk_from(root, "..", RS_BENEATH), -EXDEV);
}
END_TEST

START_TEST(test_beneath_dotdot_inside_the_start_is_allowed)
{
	ck_assert_int_eq(walk_from(d, "sub/../f", RS_BENEATH), 0);
	ck_assert_uint_eq(res.node, df);
	ck_assert_int_eq(walk_from(root, "ld/../f", RS_BENEATH), 0); /* physical: d/.. = root */
	ck_assert_uint_eq(res.node, f);
}
END_TEST

/* ---- permissions ---- */

static const struct rs_cred user = {1000, 1000, NULL, 0};

START_TEST(test_unsearchable_dir_is_eacces)
{
	mt_chmod(m, d, 0700, 0, 0);
	ctx.cred = &user;
	expect_err("d/f", 0, EACCES);
	expect_err("ld/f", 0, EACCES);
	expect_err("d/.", 0, EACCES);
}
END_TEST

START_TEST(test_unsearchable_dir_can_still_be_the_result)
{
	mt_chmod(m, d, 0000, 0, 0);
	ctx.cred = &user;
	expect_node("d", 0, d);
}
END_TEST

START_TEST(test_search_permission_by_owner_group_and_other)
{
	ctx.cred = &user;
	mt_chmod(m, d, 0100, 1000, 0);
	expect_node("d/f", 0, df);
	mt_chmod(m, d, 0010, 0, 1000);
	expect_node("d/f", 0, df);
	mt_chmod(m, d, 0001, 0, 0);
	expect_node("d/f", 0, df);
	mt_chmod(m, d, 0770, 0, 0);
	expect_err("d/f", 0, EACCES);
}
END_TEST

/* ---- trace ---- */

struct trace_log {
	int n;
	struct rs_step steps[32];
	char names[32][16];
};

static void record(void *data, const struct rs_step *s)
{
	struct trace_log *log = data;

	ck_assert_int_lt(log->n, 32);
	log->steps[log->n] = *s;
	snprintf(log->names[log->n], sizeof(log->names[0]), "%.*s", (int)s->name_len,
		 s->name ? s->name : "");
	log->n++;
}

START_TEST(test_trace_reports_steps_in_order)
{
	static const struct {
		enum rs_step_kind kind;
		const char *name;
		int node; /* 0 root, 1 d, 2 sub, 3 lsub */
		uint32_t depth;
	} want[] = {
	    {RS_STEP_DOT, ".", 0, 0},	    {RS_STEP_COMPONENT, "d", 1, 0},
	    {RS_STEP_DOTDOT, "..", 0, 0},   {RS_STEP_COMPONENT, "lsub", 3, 0},
	    {RS_STEP_LINK, "lsub", 3, 1},   {RS_STEP_ROOT, "", 0, 1},
	    {RS_STEP_COMPONENT, "d", 1, 1}, {RS_STEP_COMPONENT, "sub", 2, 1},
	    {RS_STEP_DOTDOT, "..", 1, 0},
	};
	const uint64_t nodes[] = {root, d, sub, lsub};
	struct trace_log log = {0};

	ctx.trace = record;
	ctx.trace_data = &log;
	expect_node("./d/../lsub/..", 0, d);
	ck_assert_int_eq(log.n, (int)(sizeof(want) / sizeof(want[0])));
	for (int i = 0; i < log.n; i++) {
		ck_assert_int_eq(log.steps[i].kind, want[i].kind);
		ck_assert_str_eq(log.names[i], want[i].name);
		ck_assert_uint_eq(log.steps[i].node, nodes[want[i].node]);
		ck_assert_uint_eq(log.steps[i].depth, want[i].depth);
	}
	ck_assert_int_eq(strncmp(log.steps[4].target, "/d/sub", log.steps[4].target_len), 0);
	ck_assert_uint_eq(log.steps[4].target_len, 6);
}
END_TEST

/* ---- root_alias: another spelling of the root in absolute bodies ---- */

/* The alias names the root in a body: what follows it is walked from there. */
START_TEST(test_alias_in_a_body_is_the_root)
{
	ctx.root_alias = "/mnt/x";
	ctx.root_alias_len = 6;
	mt_link(m, d, "self", "/mnt/x/f");
	mt_link(m, d, "top", "/mnt/x");
	mt_link(m, d, "top2", "/mnt/x//d/");
	mt_link(m, d, "updot", "/mnt/x/../f");
	expect_node("d/self", RS_FOLLOW, f);
	expect_node("d/top", RS_FOLLOW, root);
	expect_node("d/top2", RS_FOLLOW, d);
	expect_node("d/updot", RS_FOLLOW, f); /* ".." at the root stays there */
}
END_TEST

/* Only the alias then '/' or the end: a shared string prefix is a path of the tree's own. */
START_TEST(test_alias_prefix_of_a_name_is_not_the_alias)
{
	uint64_t mnt = mt_dir(m, root, "mnt");
	uint64_t xf = mt_file(m, mt_dir(m, mnt, "xy"), "f");

	ctx.root_alias = "/mnt/x";
	ctx.root_alias_len = 6;
	mt_link(m, root, "px", "/mnt/xy/f");
	mt_link(m, root, "dbl", "//mnt/x/f");
	expect_node("px", RS_FOLLOW, xf);
	expect_err("dbl", RS_FOLLOW, ENOENT); /* not the alias byte for byte: the tree's /mnt/x */
}
END_TEST

/* The path given to rs_resolve is the caller's: never rewritten, nor are relative bodies. */
START_TEST(test_alias_leaves_paths_and_relative_bodies)
{
	uint64_t x = mt_dir(m, mt_dir(m, root, "mnt"), "x");
	uint64_t xf = mt_file(m, x, "f");

	ctx.root_alias = "/mnt/x";
	ctx.root_alias_len = 6;
	mt_link(m, root, "rel", "mnt/x/f");
	expect_node("/mnt/x/f", 0, xf);
	expect_node("rel", RS_FOLLOW, xf);
	ck_assert_uint_eq(rs_alias_skip("/mnt/x", 6, "/mnt/x", 6), 6);
	ck_assert_uint_eq(rs_alias_skip("/mnt/x", 6, "/mnt/x/", 7), 6);
	ck_assert_uint_eq(rs_alias_skip("/mnt/x", 6, "/mnt/xy", 7), 0);
	ck_assert_uint_eq(rs_alias_skip("/mnt/x", 6, "/mnt", 4), 0);
	ck_assert_uint_eq(rs_alias_skip(NULL, 0, "/mnt/x", 6), 0);
}
END_TEST

static Suite *edge_suite(void)
{
	Suite *s = suite_create("resolver edge cases");
	struct {
		const char *name;
		const TTest *tests[16];
	} groups[] = {
	    {"path",
	     {test_empty_path_is_enoent, test_dot_is_the_start, test_dotdot_is_the_parent,
	      test_dotdot_at_the_root_stays_there, test_dotdot_at_a_subdirectory_root_stays_there,
	      test_slash_dotdot_is_the_root, test_double_slash_is_the_root,
	      test_runs_of_slashes_count_as_one, test_absolute_path_starts_at_the_root,
	      test_dotdot_is_physical_after_a_link,
	      test_dotdot_after_a_link_to_root_stays_at_root}},
	    {"trailing",
	     {test_trailing_slash_on_file_is_enotdir, test_trailing_slash_on_dir_is_the_dir,
	      test_trailing_slash_on_link_to_dir_follows_it,
	      test_trailing_slash_on_link_to_file_is_enotdir,
	      test_trailing_slash_on_dangling_link_is_enoent,
	      test_trailing_slash_in_a_link_body_requires_a_dir, test_file_dot_is_enotdir,
	      test_file_dotdot_is_enotdir, test_missing_dotdot_is_enoent}},
	    {"lengths",
	     {test_name_of_255_bytes_is_found, test_name_of_256_bytes_is_enametoolong,
	      test_path_of_4095_bytes_is_resolved, test_path_of_4096_bytes_is_enametoolong,
	      test_link_body_of_4095_bytes_is_followed,
	      test_link_body_of_4096_bytes_is_enametoolong}},
	    {"components",
	     {test_file_as_intermediate_is_enotdir, test_missing_component_is_enoent,
	      test_link_mid_path_is_followed, test_final_link_is_followed_only_when_asked,
	      test_dangling_link_followed_is_enoent, test_dangling_link_not_followed_is_the_link,
	      test_absolute_target_restarts_at_root, test_empty_link_body_is_enoent,
	      test_must_be_dir_on_a_file_is_enotdir,
	      test_must_be_dir_on_an_unfollowed_link_is_enotdir}},
	    {"limits",
	     {test_serial_chain_mid_path_counts_against_max_total,
	      test_serial_chain_inside_a_nesting_adds_no_depth,
	      test_classic_limits_pass_nesting_of_5, test_classic_limits_fail_nesting_of_6,
	      test_classic_limits_pass_serial_chain_of_40, test_self_loop_is_eloop,
	      test_two_link_loop_is_eloop, test_chain_of_1000_stays_at_depth_1}},
	    {"parent",
	     {test_parent_mode_gives_parent_and_last_name,
	      test_parent_mode_last_name_need_not_exist, test_parent_mode_reports_trailing_slash,
	      test_parent_mode_on_root_has_no_last_name,
	      test_parent_mode_does_not_follow_the_last_link,
	      test_parent_mode_follows_links_before_the_last_name}},
	    {"scoped",
	     {test_no_symlinks_followed_link_is_eloop, test_no_symlinks_unfollowed_link_is_the_link,
	      test_no_symlinks_allows_paths_without_links, test_beneath_absolute_path_is_exdev,
	      test_beneath_absolute_target_is_exdev,
	      test_beneath_dotdot_escaping_the_start_is_exdev,
	      test_beneath_dotdot_inside_the_start_is_allowed}},
	    {"permissions",
	     {test_unsearchable_dir_is_eacces, test_unsearchable_dir_can_still_be_the_result,
	      test_search_permission_by_owner_group_and_other}},
	    {"trace", {test_trace_reports_steps_in_order}},
	    {"alias",
	     {test_alias_in_a_body_is_the_root, test_alias_prefix_of_a_name_is_not_the_alias,
	      test_alias_leaves_paths_and_relative_bodies}},
	};
	int nchain = (int)(sizeof(chain_limits) / sizeof(chain_limits[0]));
	int nnest = (int)(sizeof(nest_limits) / sizeof(nest_limits[0]));

	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		TCase *tc = tcase_create(groups[g].name);
		tcase_add_checked_fixture(tc, setup, teardown);
		for (int i = 0; i < 16 && groups[g].tests[i]; i++)
			tcase_add_test(tc, groups[g].tests[i]);
		if (strcmp(groups[g].name, "limits") == 0) {
			tcase_add_loop_test(tc, test_serial_chain_of_max_total_resolves, 0, nchain);
			tcase_add_loop_test(tc, test_serial_chain_of_max_total_plus_one_is_eloop, 0,
					    nchain);
			tcase_add_loop_test(tc, test_nesting_of_max_nest_resolves, 0, nnest);
			tcase_add_loop_test(tc, test_nesting_of_max_nest_plus_one_is_eloop, 0,
					    nnest);
			tcase_add_loop_test(tc, test_nesting_is_limited_by_max_total_too, 0, nnest);
		}
		suite_add_tcase(s, tc);
	}
	return s;
}

void unit_add_suites(SRunner *sr)
{
	srunner_add_suite(sr, edge_suite());
}
