/*
 * Kernel mode's readlink answers (fusefs/links.c). The kernel walks an answer itself, and a
 * ".." at the mount's root takes it out of the mount. For random trees whose links are full
 * of "..", absolute targets and links on the way, no answer holds a ".." nor starts with a "/"
 * (so neither a later change to the tree nor one to the host above the mount can make one
 * leave it); a walk that reads the answers as the kernel does (the up name climbs, but not
 * past the root) ends where chainfs's in-root walk of the stored targets ends. Seeds are printed;
 * CHAINFS_SEED=N replays one. And collapse and server modes' walks along chains are each
 * counted once in the stats, with the links they followed.
 */
#include "check_main.h"
#include "daemon.h"
#include "links.h"
#include "spec.h"

#include <check.h>
#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MNT "/mnt/cfs" /* where the trees are mounted, for the answers */

enum {
	TREES = 2000,	  /* random trees per run */
	EXTRA_LINKS = 60, /* hand-rolled targets per tree, besides the generator's */
};

/* The kernel's view of the tree: links read as chainfs answers them. */
struct kview {
	struct cfs_daemon *d;
	GHashTable *answers; /* link -> its answer (the resolver keeps pointers into them) */
};

static int kv_lookup(void *tree, uint64_t dir, const char *name, size_t len, uint64_t *out)
{
	struct kview *k = tree;

	if (len == strlen(CFS_UP_NAME) && memcmp(name, CFS_UP_NAME, len) == 0) {
		*out = cfs_tree_rs_ops.parent(k->d->tree, dir); /* the root's is the root */
		return 0; /* the up name: DIR's parent, the root's is the root */
	}
	return cfs_tree_rs_ops.lookup(k->d->tree, dir, name, len, out);
}

static enum rs_kind kv_kind(void *tree, uint64_t node)
{
	struct kview *k = tree;

	return cfs_tree_rs_ops.kind(k->d->tree, node);
}

static uint64_t kv_parent(void *tree, uint64_t dir)
{
	struct kview *k = tree;

	return cfs_tree_rs_ops.parent(k->d->tree, dir);
}

static bool has_dotdot(const char *p)
{
	for (; *p; p += strcspn(p, "/"), p += strspn(p, "/"))
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || !p[2]))
			return true;
	return false;
}

static int kv_readlink(void *tree, uint64_t link, const char **target, size_t *len)
{
	struct kview *k = tree;
	char *a = g_hash_table_lookup(k->answers, GUINT_TO_POINTER((uint32_t)link));

	if (!a) {
		char buf[RS_PATH_MAX];
		bool dependent;
		ssize_t n = cfs_kernel_target(k->d, (uint32_t)link, buf, &dependent);

		if (n < 0)
			return (int)n;
		ck_assert_msg(!has_dotdot(buf), "'%s' holds a '..'", buf);
		ck_assert_msg(buf[0] != '/', "'%s' names a host path", buf);
		a = g_strndup(buf, (gsize)n);
		g_hash_table_insert(k->answers, GUINT_TO_POINTER((uint32_t)link), a);
	}
	*target = a;
	*len = strlen(a);
	return 0;
}

static const struct rs_tree_ops kv_ops = {kv_lookup, kv_kind, kv_readlink, kv_parent, NULL};

static uint64_t next_rand(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* A target made of "..", ".", names the generator uses and the top's name; absolute now
 * and then. */
static void random_target(GString *out, uint64_t *rng)
{
	static const char *const words[] = {"..", "..", "..", ".",  "t",  "d0", "d1", "d2", "d3",
					    "d4", "f0", "f1", "l0", "l1", "l2", "l3", "l4", "x"};
	unsigned n = 1 + (unsigned)(next_rand(rng) % 9);

	g_string_truncate(out, 0);
	if (next_rand(rng) % 5 == 0)
		g_string_append_c(out, '/');
	for (unsigned i = 0; i < n; i++)
		g_string_append_printf(out, "%s%s", i ? "/" : "",
				       words[next_rand(rng) % G_N_ELEMENTS(words)]);
	if (next_rand(rng) % 8 == 0)
		g_string_append_c(out, '/');
}

static struct cfs_tree *random_tree(uint64_t seed)
{
	struct cfs_tree *t = cfs_tree_new(NULL);
	GString *spec = g_string_new(NULL), *target = g_string_new(NULL);
	uint64_t rng = seed;
	char *err = NULL;

	ck_assert_ptr_nonnull(t);
	g_string_printf(spec, "tree /t depth=3 fanout=5 files=30%% links=30%% seed=%" PRIu64 "\n",
			seed);
	/* links in a few directories at every depth */
	static const char *const dirs[] = {"", "/t", "/t/q", "/t/q/r", "/t/q/r/s"};
	g_string_append(spec, "dir /t/q/r/s\n");
	for (unsigned i = 0; i < EXTRA_LINKS; i++) {
		random_target(target, &rng);
		g_string_append_printf(spec, "link %s/k%u \"%s\"\n",
				       dirs[next_rand(&rng) % G_N_ELEMENTS(dirs)], i, target->str);
	}
	ck_assert_msg(cfs_spec_load_text(t, "random", spec->str, spec->len, NULL, &err) == 0,
		      "seed %" PRIu64 ": %s", seed, err);
	g_string_free(spec, TRUE);
	g_string_free(target, TRUE);
	return t;
}

/* The path of NODE from the root, without the leading "/". */
static char *path_of(const struct cfs_tree *t, uint32_t node)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	GString *p = g_string_new(NULL);

	for (uint32_t x = node; x != CFS_ROOT; x = cfs_tree_parent(t, x)) {
		const char *n;
		size_t len;
		cfs_tree_name(t, x, &n, &len);
		g_ptr_array_add(names, g_strndup(n, len));
	}
	for (guint i = names->len; i-- > 0;)
		g_string_append_printf(p, "%s%s", p->len ? "/" : "", (char *)names->pdata[i]);
	g_ptr_array_free(names, TRUE);
	return g_string_free(p, FALSE);
}

struct counts {
	unsigned links, rewritten, both_ok, both_failed, loop_only_inroot;
};

static void check_link(struct cfs_daemon *d, struct kview *kv, uint32_t link, uint64_t seed,
		       struct counts *n)
{
	struct rs_ctx inroot = {
	    .ops = &cfs_tree_rs_ops, .tree = d->tree, .root = CFS_ROOT, .limits = rs_limits_linux};
	struct rs_ctx kernel = {
	    .ops = &kv_ops, .tree = kv, .root = CFS_ROOT, .limits = rs_limits_linux};
	struct rs_result ri, rk;
	char *path = path_of(d->tree, link), answer[RS_PATH_MAX];
	const char *stored;
	size_t slen;
	bool dependent;

	ck_assert_int_eq(cfs_tree_readlink(d->tree, link, &stored, &slen), 0);
	ck_assert_int_ge(cfs_kernel_target(d, link, answer, &dependent), 0);
	n->links++;
	n->rewritten += strlen(answer) != slen || memcmp(answer, stored, slen) != 0;
	int ei = rs_resolve(&inroot, CFS_ROOT, path, RS_FOLLOW, &ri);
	int ek = rs_resolve(&kernel, CFS_ROOT, path, RS_FOLLOW, &rk);

	if (ei == 0) {
		ck_assert_msg(ek == 0 && rk.node == ri.node,
			      "seed %" PRIu64 ": /%s -> '%.*s' answered '%s': in-root node %" PRIu64
			      ", kernel's walk %d node %" PRIu64,
			      seed, path, (int)slen, stored, answer, ri.node, ek, rk.node);
		n->both_ok++;
	} else if (ei == -ELOOP) {
		/* the answer may skip links the stored target passes through */
		n->loop_only_inroot += ek != -ELOOP;
	} else {
		ck_assert_msg(ek == ei, "seed %" PRIu64 ": /%s -> '%.*s' answered '%s': %d vs %d",
			      seed, path, (int)slen, stored, answer, ei, ek);
		n->both_failed++;
	}
	g_free(path);
}

static void check_tree(uint64_t seed, struct counts *n)
{
	struct cfs_daemon d = {.tree = random_tree(seed),
			       .opts = {.limits = rs_limits_linux, .mountpoint = MNT}};
	struct kview kv = {&d, g_hash_table_new_full(NULL, NULL, NULL, g_free)};
	GArray *todo = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	uint32_t dir = CFS_ROOT;

	g_array_append_val(todo, dir);
	while (todo->len) {
		const char *name;
		size_t len;
		uint32_t child;
		uint64_t cookie = 0;

		dir = g_array_index(todo, uint32_t, todo->len - 1);
		g_array_set_size(todo, todo->len - 1);
		while (cfs_tree_dir_next(d.tree, dir, &cookie, &name, &len, &child) == 0) {
			if (cfs_tree_kind(d.tree, child) == RS_DIR)
				g_array_append_val(todo, child);
			else if (cfs_tree_kind(d.tree, child) == RS_LINK)
				check_link(&d, &kv, child, seed, n);
		}
	}
	g_array_free(todo, TRUE);
	g_hash_table_destroy(kv.answers);
	cfs_tree_free(d.tree);
}

START_TEST(test_kernel_answers_never_leave_and_end_in_root)
{
	const char *env = getenv("CHAINFS_SEED");
	uint64_t base = env ? strtoull(env, NULL, 10) : (uint64_t)g_get_real_time();
	unsigned trees = env ? 1 : TREES;
	struct counts n = {0};

	printf("test_links: seed %" PRIu64 " (CHAINFS_SEED=%" PRIu64 " replays the first tree)\n",
	       base, base);
	for (unsigned i = 0; i < trees; i++)
		check_tree(base + i, &n);
	printf("test_links: %u links, %u answers rewritten, %u walks agree, %u fail alike, "
	       "%u ELOOP in-root only\n",
	       n.links, n.rewritten, n.both_ok, n.both_failed, n.loop_only_inroot);
	if (env)
		return; /* one replayed tree need not exercise everything */
	/* the trees must exercise what is tested */
	ck_assert_uint_gt(n.rewritten, n.links / 20);
	ck_assert_uint_gt(n.both_ok, n.links / 10);
	ck_assert_uint_gt(n.both_failed, n.links / 20);
}
END_TEST

static uint32_t node(const struct cfs_tree *t, const char *path)
{
	uint32_t id = CFS_ROOT;

	for (const char *p = path + 1; *p;) {
		size_t len = strcspn(p, "/");
		ck_assert_int_eq(cfs_tree_lookup(t, id, p, len, &id), 0);
		p += len + (p[len] == '/');
	}
	return id;
}

/* Fixed cases: what readlink shows, and when the answer depends on the tree. */
START_TEST(test_kernel_answers_by_hand)
{
	static const struct {
		const char *link, *target, *answer;
		bool dependent;
	} cases[] = {
	    {"/a/b/up", "../../../../etc/passwd", ".^/.^/etc/passwd", true},
	    {"/a/b/ok", "../b/../b", ".^/b", true},
	    {"/a/b/gone", "../x/../b", ".^/x/.^/b", true}, /* ENOENT at x, or b if x comes */
	    {"/a/b/plain", "c/d", "c/d", false},
	    {"/a/b/dots", "./c//d/", "./c//d/", false},
	    {"/a/abs", "/etc/passwd", ".^/etc/passwd", true},
	    {"/a/absdots", "/./../etc/./passwd", ".^/etc/./passwd", true},
	    {"/a/root", "/", ".^", true},
	    {"/top", "../../..", ".", true},
	    {"/topabs", "/etc", "etc", true},
	    {"/a/b/slash", "../", ".^", true},
	    {"/a/b/slashed", "../b/", ".^/b/", true},
	    {"/a/b/viadl", "dl/../../etc", ".^/.^/etc", true},	/* dl -> the root */
	    {"/a/b/viafile", "f/../../..", "f/.^/.^/.^", true}, /* ENOTDIR at f */
	    {"/a/b/missing", "nope/../../../..", "nope/.^/.^/.^/.^", true},
	    /* a directory not everyone may search: the walk stops there, so the answer shows
	     * nothing past it (the kernel walks on with the caller's rights) */
	    {"/a/b/private", "../../p/l/../x", ".^/.^/p/l/.^/x", true},
	    {"/a/b/hl", "../../etc", ".^/.^/.^/etc", true}, /* its other name is one deeper */
	    {"/a/b/uplink", "../.^", ".^/.^", true},	    /* the up name is no entry */
	};
	struct cfs_tree *t = cfs_tree_new(NULL);
	GString *spec = g_string_new("dir /a/b/c\nfile /a/b/f x\nlink /a/b/dl ../..\n");
	char *err = NULL, answer[RS_PATH_MAX];

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
		g_string_append_printf(spec, "link %s \"%s\"\n", cases[i].link, cases[i].target);
	g_string_append(spec, "hardlink /a/b/c/hl2 /a/b/hl\n");
	g_string_append(spec, "dir /p mode=0700\nlink /p/l q\ndir /p/q\n");
	ck_assert_int_eq(cfs_spec_load_text(t, "cases", spec->str, spec->len, NULL, &err), 0);
	struct cfs_daemon d = {.tree = t, .opts = {.limits = rs_limits_linux, .mountpoint = MNT}};
	bool dependent;
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint32_t id = node(t, cases[i].link);

		ck_assert_int_ge(cfs_kernel_target(&d, id, answer, &dependent), 0);
		ck_assert_msg(strcmp(answer, cases[i].answer) == 0, "%s -> %s: '%s', want '%s'",
			      cases[i].link, cases[i].target, answer, cases[i].answer);
		ck_assert_msg(dependent == cases[i].dependent, "%s: dependent", cases[i].link);
	}
	d.opts.abslinks_raw = true; /* every target as stored */
	ck_assert_int_ge(cfs_kernel_target(&d, node(t, "/a/b/up"), answer, &dependent), 0);
	ck_assert_str_eq(answer, "../../../../etc/passwd");
	ck_assert(!dependent);
	ck_assert_int_eq(cfs_kernel_target(&d, node(t, "/a/b/f"), answer, &dependent), -EINVAL);
	g_string_free(spec, TRUE);
	cfs_tree_free(t);
}
END_TEST

/* Each walk along a chain is counted once, with the links it followed (links.c, cfs_walk):
 * collapse's answer walks once for anyone; server's lookup walks once for the caller, and its
 * no-rights check counts as a private check, in no other counter. */
START_TEST(test_each_chain_walk_counted_once)
{
	static const uint32_t lens[] = {1, 40, 1000};
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL, answer[RS_PATH_MAX];
	GString *spec = g_string_new("dir /c\nfile /c/target x\n");

	for (size_t i = 0; i < G_N_ELEMENTS(lens); i++)
		g_string_append_printf(spec, "chain /c/%u %u target\n", lens[i], lens[i]);
	ck_assert_int_eq(cfs_spec_load_text(t, "chains", spec->str, spec->len, NULL, &err), 0);
	for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
		char name[16], path[32];
		int len = snprintf(name, sizeof(name), "%u", lens[i]);
		uint32_t end = 0;
		bool private = true;

		snprintf(path, sizeof(path), "/c/%s", name);
		struct cfs_daemon d = {.tree = t, .opts = {.limits = {2000, 2000}}};
		d.opts.follow = CFS_FOLLOW_COLLAPSE;
		ck_assert_int_eq(cfs_link_answer(&d, NULL, node(t, path), answer), 6);
		ck_assert_str_eq(answer, "target");
		ck_assert_uint_eq(d.walk.walks, 1);
		ck_assert_uint_eq(d.walk.links, lens[i]);
		ck_assert_uint_eq(d.walk_ns.count, 1);
		ck_assert_uint_eq(d.walk.private_checks, 0);

		memset(&d.walk, 0, sizeof(d.walk));
		d.opts.follow = CFS_FOLLOW_SERVER;
		ck_assert_int_eq(
		    cfs_link_lookup(&d, NULL, node(t, "/c"), name, (size_t)len, &end, &private), 0);
		ck_assert_uint_eq(end, node(t, "/c/target"));
		ck_assert(!private);
		ck_assert_uint_eq(d.walk.walks, 1);
		ck_assert_uint_eq(d.walk.links, lens[i]);
		ck_assert_uint_eq(d.walk.private_checks, 1);
	}
	g_string_free(spec, TRUE);
	cfs_tree_free(t);
}
END_TEST

/* An end no one but the caller may reach: the answer is the caller's alone. */
START_TEST(test_server_lookup_past_a_private_dir_is_private)
{
	static const char spec[] = "dir /p mode=0700\nfile /p/f x\nlink /l p/f\n";
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;
	struct cfs_daemon d = {.tree = t, .opts = {.limits = rs_limits_linux}};
	uint32_t end = 0;
	bool private = false;

	ck_assert_int_eq(cfs_spec_load_text(t, "private", spec, sizeof(spec) - 1, NULL, &err), 0);
	d.opts.follow = CFS_FOLLOW_SERVER;
	ck_assert_int_eq(cfs_link_lookup(&d, NULL, CFS_ROOT, "l", 1, &end, &private), 0);
	ck_assert_uint_eq(end, node(t, "/p/f"));
	ck_assert(private);
	ck_assert_uint_eq(d.walk.walks, 1);
	ck_assert_uint_eq(d.walk.links, 1);
	ck_assert_uint_eq(d.walk.private_checks, 1);
	ck_assert_uint_eq(d.walk.errors, 0); /* the refused check is no failed walk */
	cfs_tree_free(t);
}
END_TEST

static Suite *links_suite(void)
{
	Suite *s = suite_create("links");
	TCase *tc = tcase_create("kernel answers");

	tcase_add_test(tc, test_kernel_answers_by_hand);
	tcase_add_test(tc, test_kernel_answers_never_leave_and_end_in_root);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tc = tcase_create("walks counted");
	tcase_add_test(tc, test_each_chain_walk_counted_once);
	tcase_add_test(tc, test_server_lookup_past_a_private_dir_is_private);
	suite_add_tcase(s, tc);
	return s;
}

void unit_add_suites(SRunner *sr)
{
	srunner_add_suite(sr, links_suite());
}
