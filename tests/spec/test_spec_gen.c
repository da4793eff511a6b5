/*
 * The generators (spec_gen.c): their shapes checked with the resolver.
 */
#include "test_spec.h"

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

/* A line that would pass the tree's node budget (-o max_nodes) is refused before it makes a
 * node, with a message naming the option, and the tree stays as it was. */
static void refused_over_budget(struct cfs_tree *t, const char *line, const char *want)
{
	char *before = dump_of(t), *after, *err = NULL;
	uint64_t n = node_count(t);

	ck_assert_int_eq(cfs_spec_apply_line(t, line, &def, &err), -EINVAL);
	ck_assert_msg(err && strstr(err, want) && strstr(err, "-o max_nodes=N"), "%s: %s", line,
		      err ? err : "(no message)");
	free(err);
	ck_assert_uint_eq(node_count(t), n);
	after = dump_of(t);
	ck_assert_str_eq(after, before);
	free(before);
	free(after);
}

START_TEST(test_node_budget_refuses_lines_unchanged)
{
	struct cfs_tree *t = load("dir /x\nwide /w 5\n");
	char *err = NULL;

	/* the root, /x, /w and its 5 files: 8 nodes, 2 more allowed */
	cfs_tree_set_node_limit(t, 10);
	refused_over_budget(t, "wide /v 2", "3 more nodes would pass the node budget of 10");
	refused_over_budget(t, "tree /t depth=2 fanout=3", "10 more nodes");
	refused_over_budget(t, "chain /c 2 x", "3 more nodes");
	refused_over_budget(t, "dir /a/b/c", "1 more nodes"); /* the third made */
	/* a whole spec: refused at the line that would pass it (the daemon then drops the tree) */
	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", "dir /y\ndeep /d 3\n", 18, &def, &err),
			 -EINVAL);
	ck_assert_msg(err && strstr(err, "t.spec:2: 4 more nodes would pass"), "%s", err);
	free(err);
	load_into(t, "dir /a\n");
	refused_over_budget(t, "file /f", "1 more nodes");
	cfs_tree_free(t);
}
END_TEST

/* Counts past the old fixed cap of 20,000,000 parse: only the budget refuses them (a small one
 * here, so nothing is built). */
START_TEST(test_node_counts_past_20M_parse)
{
	struct cfs_tree *t = load("");

	cfs_tree_set_node_limit(t, 100);
	refused_over_budget(t, "wide /w 25000000", "25000001 more nodes");
	refused_over_budget(t, "deep /d 30000000", "30000001 more nodes");
	refused_over_budget(t, "chain /c 40000000 t", "40000001 more nodes");
	/* fanout 300: 150 files, 30 links, 120 directories each: 1 + 300 + 36000 + 4320000 +
	 * 518400000 */
	refused_over_budget(t, "tree /t depth=4 fanout=300 files=50% links=10%",
			    "522756301 more nodes");
	cfs_tree_free(t);
}
END_TEST

void spec_gen_tests(TCase *gen)
{
	tcase_add_test(gen, test_node_budget_refuses_lines_unchanged);
	tcase_add_test(gen, test_node_counts_past_20M_parse);
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
}
