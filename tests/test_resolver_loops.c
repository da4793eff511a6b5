/*
 * Loops and long walks: a walk that can never end is cut (ELOOP, res.cycle) as soon as it
 * repeats a state, however high the limits, and never a walk that would end; a walk that
 * never repeats stops at RS_WALK_BUDGET components. Limits here are raised to RS_LIMIT_MAX
 * unless a test says otherwise, so that only the cycle check or the budget can end a loop
 * quickly: the old walk took a billion links (minutes) on each of these.
 */
#include "check_main.h"
#include "memtree.h"
#include "rs.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

enum {
	LONG_CHAIN = 1000000, /* the chain that must not be cut as a loop */
	SHORT_LOOP = 2,
	BIG_LOOP = 1000,
};

static const struct rs_limits huge = {RS_LIMIT_MAX, RS_LIMIT_MAX};

static struct mt_tree *m;
static struct rs_ctx ctx;
static struct rs_result res;
static uint64_t root, f;

static void setup(void)
{
	m = mt_new();
	root = mt_root(m);
	f = mt_file(m, root, "f");
	ctx = mt_ctx(m);
	ctx.limits = huge;
}

static void teardown(void)
{
	mt_free(m);
}

static int walk(const char *path)
{
	return rs_resolve(&ctx, root, path, RS_FOLLOW, &res);
}

/* A ring of N links in a new directory NAME: r0 -> r1 -> ... -> r<n-1> -> r0. */
static uint64_t make_ring(const char *name, unsigned n)
{
	uint64_t dir = mt_dir(m, root, name);
	char link[32], next[32];

	for (unsigned i = 0; i < n; i++) {
		snprintf(link, sizeof(link), "r%u", i);
		snprintf(next, sizeof(next), "r%u", (i + 1) % n);
		mt_link(m, dir, link, next);
	}
	return dir;
}

/* c0 -> c1 -> ... -> c<n-1> -> /f in a new directory NAME. */
static void make_chain(const char *name, unsigned n)
{
	uint64_t dir = mt_dir(m, root, name);
	char link[32], next[32];

	for (unsigned i = 0; i < n; i++) {
		snprintf(link, sizeof(link), "c%u", i);
		snprintf(next, sizeof(next), "c%u", i + 1);
		mt_link(m, dir, link, i + 1 == n ? "/f" : next);
	}
}

/* The loop was proven, early (Brent: within about 2m + 3n links for a loop of n links
 * entered after m). */
static void expect_cycle(const char *path, uint32_t most_links)
{
	ck_assert_int_eq(walk(path), -ELOOP);
	ck_assert_int_eq(res.cycle, 1);
	ck_assert_uint_le(res.links, most_links);
}

START_TEST(test_cycle_of_two_is_eloop_at_once)
{
	make_ring("ring", SHORT_LOOP);
	expect_cycle("ring/r0", 8);
	expect_cycle("ring/r1/", 8);
}
END_TEST

START_TEST(test_self_loop_is_eloop_at_once)
{
	make_ring("ring", 1);
	expect_cycle("ring/r0", 4);
}
END_TEST

START_TEST(test_cycle_of_a_thousand_is_found_within_three_turns)
{
	make_ring("ring", BIG_LOOP);
	expect_cycle("ring/r0", 3 * BIG_LOOP);
}
END_TEST

/* A cycle entered after a way in, with the rest of the path still pending below it. */
START_TEST(test_cycle_below_a_pending_path_is_eloop)
{
	make_ring("ring", SHORT_LOOP);
	mt_link(m, root, "in", "ring/r1");
	expect_cycle("in/x/y", 16);
}
END_TEST

/* a -> "b/c", b -> ".", c -> "a": b nests a frame that ends before c takes over a's frame
 * again, so the depth goes 2, 1, 1 each turn; the states at depth 1 repeat. */
START_TEST(test_cycle_through_nested_frames_is_eloop)
{
	uint64_t dir = mt_dir(m, root, "n");
	mt_link(m, dir, "a", "b/c");
	mt_link(m, dir, "b", ".");
	mt_link(m, dir, "c", "a");
	expect_cycle("n/a", 32);
	ck_assert_uint_eq(res.max_depth, 2);
}
END_TEST

/* A loop two bodies deep: p -> "q/.", q -> "x/.", x -> "y", y -> "x". The pending "/." of
 * both outer bodies stays below the loop. */
START_TEST(test_cycle_at_depth_three_is_eloop)
{
	uint64_t dir = mt_dir(m, root, "deep");
	mt_link(m, dir, "p", "q/.");
	mt_link(m, dir, "q", "x/.");
	mt_link(m, dir, "x", "y");
	mt_link(m, dir, "y", "x");
	expect_cycle("deep/p", 16);
	ck_assert_uint_eq(res.max_depth, 3);
}
END_TEST

/* l -> ".": the same link, the same body, each time with a shorter rest of the path. */
START_TEST(test_same_link_with_a_different_rest_is_no_loop)
{
	static char path[3 * 1000 + 2];
	size_t n = 0;

	mt_link(m, root, "l", ".");
	for (int i = 0; i < 1000; i++) {
		memcpy(path + n, "l/", 2);
		n += 2;
	}
	strcpy(path + n, "f");
	ck_assert_int_eq(walk(path), 0);
	ck_assert_uint_eq(res.node, f);
	ck_assert_uint_eq(res.links, 1000);
	ck_assert_int_eq(res.cycle, 0);
}
END_TEST

/* The same within a link's body: b -> "." is met again with less of a's body left. */
START_TEST(test_same_link_with_a_different_rest_of_a_body_is_no_loop)
{
	uint64_t dir = mt_dir(m, root, "w");
	uint64_t wf = mt_file(m, dir, "f");
	mt_link(m, dir, "b", ".");
	mt_link(m, dir, "a", "b/b/b/b/b/b/b/b/f");
	mt_link(m, dir, "a2", "a");
	ck_assert_int_eq(walk("w/a2"), 0);
	ck_assert_uint_eq(res.node, wf);
	ck_assert_uint_eq(res.links, 10);
	ck_assert_int_eq(res.cycle, 0);
}
END_TEST

/* u -> "../u" in every directory of a 300-deep line: the walk climbs through 300 links that
 * all look alike (same body, each from a directory one higher) and is no loop until the root,
 * where ".." stays put and the root's u names itself. */
START_TEST(test_same_body_from_another_directory_is_no_loop)
{
	enum { LEVELS = 300 };
	static char path[2 * LEVELS + 2];
	uint64_t dir = root;
	size_t n = 0;

	mt_link(m, root, "u", "../u");
	for (int i = 0; i < LEVELS; i++) {
		dir = mt_dir(m, dir, "d");
		mt_link(m, dir, "u", "../u");
		memcpy(path + n, "d/", 2);
		n += 2;
	}
	memcpy(path + n, "u", 2);
	expect_cycle(path, 2 * LEVELS + 8);
	ck_assert_uint_gt(res.links, LEVELS);
}
END_TEST

/* Within the limits, a chain of a million links resolves: nothing cuts it as a loop. */
START_TEST(test_chain_of_a_million_is_no_loop)
{
	make_chain("chain", LONG_CHAIN);
	ck_assert_int_eq(walk("chain/c0"), 0);
	ck_assert_uint_eq(res.node, f);
	ck_assert_uint_eq(res.links, LONG_CHAIN);
	ck_assert_int_eq(res.cycle, 0);
	ctx.limits.max_total = LONG_CHAIN - 1;
	ck_assert_int_eq(walk("chain/c0"), -ELOOP);
	ck_assert_int_eq(res.cycle, 0);
}
END_TEST

/* Under today's limits a loop ends as early, with the same errno. */
START_TEST(test_loop_under_linux_limits_is_still_eloop)
{
	ctx.limits = rs_limits_linux;
	make_ring("ring", 100);
	ck_assert_int_eq(walk("ring/r0"), -ELOOP);
	ck_assert_int_eq(res.cycle, 0); /* 41 links: the limit comes first */
	make_ring("ring2", 3);
	expect_cycle("ring2/r0", 12);
}
END_TEST

/* a -> "b/x", b -> "a": each turn nests one frame deeper, so no state repeats; only the
 * budget (or max_nest) ends it, not a billion links later. */
START_TEST(test_deepening_loop_stops_at_the_budget)
{
	uint64_t dir = mt_dir(m, root, "g");
	mt_link(m, dir, "a", "b/x");
	mt_link(m, dir, "b", "a");
	ck_assert_int_eq(walk("g/a"), -ELOOP);
	ck_assert_int_eq(res.cycle, 0);
	ck_assert_uint_le(res.links, RS_WALK_BUDGET);
	ck_assert_uint_ge(res.links, RS_WALK_BUDGET / 2);
	ck_assert_uint_le(res.max_depth, RS_WALK_BUDGET / 2 + 1);
}
END_TEST

/* A walk of many components and no links stops at the budget too: each link body here
 * holds 2000 of them, and the bodies nest deeper each turn. */
START_TEST(test_long_bodies_count_against_the_budget)
{
	static char body[4095];
	uint64_t dir = mt_dir(m, root, "h");
	size_t n = 0;

	while (n + 2 < sizeof(body) - 8) {
		memcpy(body + n, "./", 2);
		n += 2;
	}
	strcpy(body + n, "b/x");
	mt_link(m, dir, "a", body);
	mt_link(m, dir, "b", "a");
	ck_assert_int_eq(walk("h/a"), -ELOOP);
	ck_assert_int_eq(res.cycle, 0);
	ck_assert_uint_le(res.links, 2 * (RS_WALK_BUDGET / 2000) + 4);
}
END_TEST

/* Walks that share a budget (a daemon's request) take from it what they use; once it is
 * spent, the next walk ends with ELOOP at its first component. */
START_TEST(test_walks_sharing_a_budget_stop_when_it_is_spent)
{
	uint32_t left = 10;

	make_chain("chain", 4);
	ctx.budget = &left;
	ck_assert_int_eq(walk("chain/c0"), 0); /* chain, c0, c1, c2, c3, f: 6 components */
	ck_assert_uint_eq(left, 4);
	ck_assert_int_eq(walk("chain/c0"), -ELOOP);
	ck_assert_int_eq(res.cycle, 0);
	ck_assert_uint_eq(left, 0);
	ck_assert_int_eq(walk("f"), -ELOOP);
	left = UINT32_MAX; /* never more than RS_WALK_BUDGET for one walk */
	make_ring("ring", 1);
	ck_assert_int_eq(walk("ring/r0"), -ELOOP);
	ck_assert_uint_ge(left, UINT32_MAX - 16);
}
END_TEST

static Suite *loops_suite(void)
{
	Suite *s = suite_create("resolver loops");
	TCase *cyc = tcase_create("cycles");
	TCase *no = tcase_create("not loops");
	TCase *budget = tcase_create("budget");

	tcase_add_checked_fixture(cyc, setup, teardown);
	tcase_add_checked_fixture(no, setup, teardown);
	tcase_add_checked_fixture(budget, setup, teardown);
	/* without the check each of these runs to a billion links: a timeout is the failure */
	tcase_set_timeout(cyc, 20);
	tcase_set_timeout(no, 60);
	tcase_set_timeout(budget, 60);
	tcase_add_test(cyc, test_cycle_of_two_is_eloop_at_once);
	tcase_add_test(cyc, test_self_loop_is_eloop_at_once);
	tcase_add_test(cyc, test_cycle_of_a_thousand_is_found_within_three_turns);
	tcase_add_test(cyc, test_cycle_below_a_pending_path_is_eloop);
	tcase_add_test(cyc, test_cycle_through_nested_frames_is_eloop);
	tcase_add_test(cyc, test_cycle_at_depth_three_is_eloop);
	tcase_add_test(cyc, test_loop_under_linux_limits_is_still_eloop);
	tcase_add_test(no, test_same_link_with_a_different_rest_is_no_loop);
	tcase_add_test(no, test_same_link_with_a_different_rest_of_a_body_is_no_loop);
	tcase_add_test(no, test_same_body_from_another_directory_is_no_loop);
	tcase_add_test(no, test_chain_of_a_million_is_no_loop);
	tcase_add_test(budget, test_deepening_loop_stops_at_the_budget);
	tcase_add_test(budget, test_long_bodies_count_against_the_budget);
	tcase_add_test(budget, test_walks_sharing_a_budget_stop_when_it_is_spent);
	suite_add_tcase(s, cyc);
	suite_add_tcase(s, no);
	suite_add_tcase(s, budget);
	return s;
}

void unit_add_suites(SRunner *sr)
{
	srunner_add_suite(sr, loops_suite());
}
