/*
 * Deep walks: the resolver's stack use is constant, shallow walks never touch the heap, and a
 * failed allocation anywhere in a deep walk gives -ENOMEM and leaks nothing.
 */
#include "check_main.h"
#include "alloc_count.h"
#include "memtree.h"
#include "rs.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include) && __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_DEFINED(addr, len) ((void)0)
#endif

enum {
	BIG_CHAIN = 1000000,
	BIG_NEST = 100000,
	SMALL_STACK = 64 * 1024,
	PAINT = 0xa5,
};

/* One tree for the whole suite, built once before the tests fork: a serial chain of a
 * million links, a nesting of 100,000, and small ones to compare with. */
static struct mt_tree *m;
static uint64_t root, target;

/* Links PREFIX0 -> PREFIX1 -> ... in directory DIR, the last one to "/target"; NEST makes
 * each body "next/." so that every link nests one frame deeper. */
static void make_links(uint64_t dir, const char *prefix, unsigned n, int nest)
{
	char link[32], body[40];

	for (unsigned i = 0; i < n; i++) {
		snprintf(link, sizeof(link), "%s%u", prefix, i);
		snprintf(body, sizeof(body), "%s%u%s", prefix, i + 1, nest ? "/." : "");
		mt_link(m, dir, link, i + 1 == n ? "/target" : body);
	}
}

static void build_tree(void)
{
	m = mt_new();
	root = mt_root(m);
	target = mt_dir(m, root, "target");
	make_links(mt_dir(m, root, "chain"), "c", BIG_CHAIN, 0);
	make_links(mt_dir(m, root, "nest"), "n", BIG_NEST, 1);
	make_links(mt_dir(m, root, "chain10"), "c", 10, 0);
	make_links(mt_dir(m, root, "nest2"), "n", RS_INLINE_FRAMES, 1);
	make_links(mt_dir(m, root, "nest3"), "n", RS_INLINE_FRAMES + 1, 1);
	make_links(mt_dir(m, root, "nest10"), "n", 10, 1);
	make_links(mt_dir(m, root, "nest1000"), "n", 1000, 1);
	make_links(mt_dir(m, root, "nest50"), "n", 50, 1);
}

static void free_tree(void)
{
	mt_free(m);
}

static struct rs_ctx big_ctx(void)
{
	struct rs_ctx ctx = mt_ctx(m);

	ctx.limits = (struct rs_limits){BIG_NEST, BIG_CHAIN};
	return ctx;
}

/* ---- constant stack ---- */

struct walk_job {
	const char *path;
	struct rs_ctx ctx;
	struct rs_result res;
	int err;
};

static void *walk_thread(void *arg)
{
	struct walk_job *j = arg;

	j->err = rs_resolve(&j->ctx, root, j->path, RS_FOLLOW, &j->res);
	return NULL;
}

static size_t small_stack_size(void)
{
	long min = sysconf(_SC_THREAD_STACK_MIN);

	return min > SMALL_STACK ? (size_t)min : SMALL_STACK;
}

/* Run the walk on a thread whose stack is STACK (painted beforehand) and SIZE bytes. */
static void walk_on_stack(struct walk_job *j, void *stack, size_t size)
{
	pthread_attr_t attr;
	pthread_t th;

	ck_assert_int_eq(pthread_attr_init(&attr), 0);
	if (stack)
		ck_assert_int_eq(pthread_attr_setstack(&attr, stack, size), 0);
	else
		ck_assert_int_eq(pthread_attr_setstacksize(&attr, size), 0);
	ck_assert_int_eq(pthread_create(&th, &attr, walk_thread, j), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	pthread_attr_destroy(&attr);
}

START_TEST(test_serial_chain_of_a_million_in_a_64k_stack)
{
	struct walk_job j = {.path = "chain/c0", .ctx = big_ctx()};

	walk_on_stack(&j, NULL, small_stack_size());
	ck_assert_int_eq(j.err, 0);
	ck_assert_uint_eq(j.res.node, target);
	ck_assert_uint_eq(j.res.links, BIG_CHAIN);
	ck_assert_uint_eq(j.res.max_depth, 1);
}
END_TEST

START_TEST(test_nesting_of_100000_in_a_64k_stack)
{
	struct walk_job j = {.path = "nest/n0", .ctx = big_ctx()};

	walk_on_stack(&j, NULL, small_stack_size());
	ck_assert_int_eq(j.err, 0);
	ck_assert_uint_eq(j.res.node, target);
	ck_assert_uint_eq(j.res.links, BIG_NEST);
	ck_assert_uint_eq(j.res.max_depth, BIG_NEST);
	ck_assert_uint_eq(j.res.heap_frames, BIG_NEST - RS_INLINE_FRAMES);
}
END_TEST

START_TEST(test_spilled_frames_grow_geometrically)
{
	struct rs_result res;
	struct rs_ctx ctx = big_ctx();

	ck_assert_int_eq(rs_resolve(&ctx, root, "nest/n0", RS_FOLLOW, &res), 0);
	/* growing by a constant factor, 100,000 frames take a few dozen reallocs at most;
	 * growing by a constant amount would take thousands */
	ck_assert_uint_le(res.allocs, 40);
}
END_TEST

/* Deepest point the thread's stack reached: bytes from the top not still painted. A first,
 * unmeasured walk binds the lazily resolved symbols, which costs ld.so some stack once. */
static size_t stack_used(const char *path)
{
	size_t size = small_stack_size();
	unsigned char *stack = aligned_alloc(4096, size);
	struct walk_job j = {.path = path, .ctx = big_ctx()};
	size_t low = 0;

	ck_assert_ptr_nonnull(stack);
	walk_on_stack(&j, NULL, size);
	memset(stack, PAINT, size);
	walk_on_stack(&j, stack, size);
	ck_assert_int_eq(j.err, 0);
	/* memcheck marks a dead thread's stack inaccessible; we own it, and read it on purpose */
	VALGRIND_MAKE_MEM_DEFINED(stack, size);
	while (low < size && stack[low] == PAINT)
		low++;
	free(stack);
	return size - low;
}

START_TEST(test_stack_use_is_the_same_for_any_chain_or_nesting)
{
	size_t chain10 = stack_used("chain10/c0");
	size_t chain = stack_used("chain/c0");
	size_t nest10 = stack_used("nest10/n0");
	size_t nest = stack_used("nest/n0");

	fprintf(stderr,
		"stack used: chain 10 %zu B, chain 1e6 %zu B, nest 10 %zu B, nest 1e5 %zu B\n",
		chain10, chain, nest10, nest);
	/* Recursion would need tens of bytes per link: megabytes here. The slack is for libc:
	 * realloc of a 1.6 MB frame array takes its mmap path, with a deeper call stack. */
	ck_assert_uint_le(chain, chain10 + 1024);
	ck_assert_uint_le(nest, nest10 + 1024);
}
END_TEST

/* ---- the heap ---- */

static int counted_walk(const char *path, struct rs_limits limits, struct rs_result *res)
{
	struct rs_ctx ctx = mt_ctx(m);

	ctx.limits = limits;
	ctx.realloc_fn = ac_realloc;
	ctx.free_fn = ac_free;
	return rs_resolve(&ctx, root, path, RS_FOLLOW, res);
}

START_TEST(test_walk_within_inline_frames_makes_no_allocation)
{
	static const char *const paths[] = {"nest2/n0", "chain10/c0", "chain/c0", "nest2/n0/"};
	struct rs_result res;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		ac_reset(0);
		ck_assert_int_eq(counted_walk(paths[i], big_ctx().limits, &res), 0);
		ck_assert_uint_le(res.max_depth, RS_INLINE_FRAMES);
		ck_assert_uint_eq(res.allocs, 0);
		ck_assert_int_eq(ac_stats().calls, 0);
		ck_assert_int_eq(ac_stats().frees, 0);
	}
}
END_TEST

/* The counterpart, so that the test above could fail: one frame more reaches the allocator. */
START_TEST(test_walk_past_inline_frames_allocates_through_the_hook)
{
	struct rs_result res;

	ac_reset(0);
	ck_assert_int_eq(counted_walk("nest3/n0", rs_limits_linux, &res), 0);
	ck_assert_uint_eq(res.max_depth, RS_INLINE_FRAMES + 1);
	ck_assert_uint_eq(res.heap_frames, 1);
	ck_assert_uint_ge(res.allocs, 1);
	ck_assert_int_eq(ac_stats().allocs, res.allocs);
	ck_assert_int_eq(ac_stats().live, 0);
}
END_TEST

START_TEST(test_heap_frames_count_frames_past_the_inline_ones)
{
	struct rs_result res;

	ac_reset(0);
	ck_assert_int_eq(counted_walk("nest10/n0", rs_limits_linux, &res), 0);
	ck_assert_uint_eq(res.max_depth, 10);
	ck_assert_uint_eq(res.heap_frames, 10 - RS_INLINE_FRAMES);
	ck_assert_int_eq(ac_stats().live, 0);
}
END_TEST

START_TEST(test_failed_deep_walk_frees_its_frames)
{
	struct rs_result res;

	ac_reset(0);
	ck_assert_int_eq(counted_walk("nest50/n0", rs_limits_linux, &res), -ELOOP);
	ck_assert_int_gt(ac_stats().allocs, 0);
	ck_assert_int_eq(ac_stats().live, 0);
}
END_TEST

START_TEST(test_every_failed_allocation_gives_enomem_without_leaks)
{
	const struct rs_limits lim = {1000, 1000};
	struct rs_result res;
	long calls;

	ac_reset(0);
	ck_assert_int_eq(counted_walk("nest1000/n0", lim, &res), 0);
	calls = ac_stats().calls;
	ck_assert_int_ge(calls, 2); /* geometric growth to 1000 frames: several reallocs */
	for (long k = 1; k <= calls + 1; k++) {
		ac_reset(k);
		int err = counted_walk("nest1000/n0", lim, &res);
		struct ac_stats st = ac_stats();
		if (k <= calls) {
			ck_assert_msg(err == -ENOMEM, "failing allocation %ld gave %d", k, err);
			ck_assert_int_eq(st.fails, 1);
		} else {
			ck_assert_int_eq(err, 0);
			ck_assert_uint_eq(res.node, target);
		}
		ck_assert_msg(st.live == 0, "failing allocation %ld leaked %ld blocks", k, st.live);
	}
}
END_TEST

static Suite *deep_suite(void)
{
	Suite *s = suite_create("resolver deep walks");
	TCase *tc = tcase_create("deep"); /* one case: the big tree is built once */

	tcase_add_unchecked_fixture(tc, build_tree, free_tree);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_serial_chain_of_a_million_in_a_64k_stack);
	tcase_add_test(tc, test_nesting_of_100000_in_a_64k_stack);
	tcase_add_test(tc, test_stack_use_is_the_same_for_any_chain_or_nesting);
	tcase_add_test(tc, test_walk_within_inline_frames_makes_no_allocation);
	tcase_add_test(tc, test_walk_past_inline_frames_allocates_through_the_hook);
	tcase_add_test(tc, test_heap_frames_count_frames_past_the_inline_ones);
	tcase_add_test(tc, test_spilled_frames_grow_geometrically);
	tcase_add_test(tc, test_failed_deep_walk_frees_its_frames);
	tcase_add_test(tc, test_every_failed_allocation_gives_enomem_without_leaks);
	suite_add_tcase(s, tc);
	return s;
}

void unit_add_suites(SRunner *sr)
{
	srunner_add_suite(sr, deep_suite());
}
