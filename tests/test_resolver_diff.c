/*
 * Differential tests: the resolver against two oracles on random trees.
 *
 *  - the kernel: each tree is materialized in a temp directory and every random path is
 *    resolved by openat2(O_PATH, RESOLVE_IN_ROOT ...) too; the file it opens is mapped back
 *    to a node by (st_dev, st_ino). Same node or same errno, every time.
 *  - the recursive reference resolver (refresolve.c), for what the kernel cannot show:
 *    other limits, RS_PARENT, permission hooks, empty link bodies.
 *
 * The seed changes every run and is printed; CHAINFS_SEED=N replays a run. A mismatch prints
 * the seed, the tree, the path, the flags and both answers.
 */
#include "check_main.h"
#include "memtree.h"
#include "refresolve.h"
#include "rs.h"
#include "rtree.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include) && __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

enum {
	KERNEL_TREES = 10,
	KERNEL_PATHS_PER_TREE = 12000, /* x10 trees: 120,000 paths in RESOLVE_IN_ROOT */
	KERNEL_SCOPED_PATHS = 3000,    /* per tree: BENEATH, NO_SYMLINKS, search permission */
	KERNEL_SUBROOTS = 6,	       /* directories also used as the root of a walk */
	REF_PATHS_PER_TREE = 5000,
	EAGAIN_RETRIES = 1000000, /* EAGAIN only means "a rename raced us": try again */
	PATH_BUF = RS_PATH_MAX + 8,
};

static uint64_t diff_seed;
static long diff_paths = -1; /* CHAINFS_DIFF_PATHS: fewer paths per tree, e.g. under valgrind */

/* An answer: a node of the tree, or an errno. */
struct answer {
	int err;   /* 0 or a positive errno */
	long node; /* rtree node; -1 for "a file that is not in the tree" */
};

/* How one walk is asked of both sides. */
struct query {
	size_t root, start; /* rtree nodes */
	unsigned flags;	    /* RS_* */
	int dirfd;	    /* kernel: the directory START is */
	uint64_t resolve;   /* kernel: RESOLVE_* */
	const char *path;
};

/* Outcome counts, to show the random paths reached every kind of answer. */
struct tally {
	long paths, ok, enoent, enotdir, eloop, enametoolong, exdev, eacces, other, eagain;
	long artifacts; /* kernel_recount_artifact() cases */
	uint32_t most_links;
};

/* What the paths looked like, to show the generator exercises every feature. */
struct features {
	long dot, dotdot, slashes, trailing, absolute, name255, name256, padded, nofollow, dir;
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t tree_seed(unsigned suite, unsigned tree)
{
	return mix(diff_seed ^ mix((uint64_t)suite << 32 | tree));
}

static long paths_per_tree(long normal)
{
	return diff_paths > 0 && diff_paths < normal ? diff_paths : normal;
}

static void count(struct tally *t, int err, uint32_t links)
{
	t->paths++;
	switch (err) {
	case 0:
		t->ok++;
		break;
	case ENOENT:
		t->enoent++;
		break;
	case ENOTDIR:
		t->enotdir++;
		break;
	case ELOOP:
		t->eloop++;
		break;
	case ENAMETOOLONG:
		t->enametoolong++;
		break;
	case EXDEV:
		t->exdev++;
		break;
	case EACCES:
		t->eacces++;
		break;
	default:
		t->other++;
	}
	if (links > t->most_links)
		t->most_links = links;
}

static void print_tally(const char *what, const struct tally *t, double secs)
{
	fprintf(stderr,
		"%s: %ld paths in %.2fs (ok %ld, ENOENT %ld, ENOTDIR %ld, ELOOP %ld, "
		"ENAMETOOLONG %ld, EXDEV %ld, EACCES %ld, other %ld; kernel EAGAIN retries %ld; "
		"kernel ELOOP after its RCU retry recount %ld; longest walk %" PRIu32 " links)\n",
		what, t->paths, secs, t->ok, t->enoent, t->enotdir, t->eloop, t->enametoolong,
		t->exdev, t->eacces, t->other, t->eagain, t->artifacts, t->most_links);
}

/* Count the features of PATH: ".", "..", "//", trailing '/', absolute, long names/paths. */
static void note_features(struct features *f, const char *path, unsigned flags)
{
	size_t len = strlen(path);
	bool has_dot = false, has_dotdot = false, has_255 = false, has_256 = false;

	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		has_dot |= n == 1 && p[0] == '.';
		has_dotdot |= n == 2 && p[0] == '.' && p[1] == '.';
		has_255 |= n == RS_NAME_MAX;
		has_256 |= n > RS_NAME_MAX;
		p += n;
		p += strspn(p, "/");
	}
	f->dot += has_dot;
	f->dotdot += has_dotdot;
	f->name255 += has_255;
	f->name256 += has_256;
	f->slashes += strstr(path, "//") != NULL;
	f->trailing += len && path[len - 1] == '/';
	f->absolute += path[0] == '/';
	f->padded += len >= RS_PATH_MAX - 2;
	f->nofollow += !(flags & RS_FOLLOW);
	f->dir += !!(flags & RS_DIRECTORY);
}

static void check_features(const struct features *f)
{
	fprintf(stderr,
		"  paths with: . %ld, .. %ld, // %ld, trailing / %ld, absolute %ld, 255-byte name "
		"%ld, 256-byte name %ld, 4094..4097 bytes %ld; nofollow %ld, must-be-dir %ld\n",
		f->dot, f->dotdot, f->slashes, f->trailing, f->absolute, f->name255, f->name256,
		f->padded, f->nofollow, f->dir);
	const long all[] = {f->dot,	f->dotdot,  f->slashes, f->trailing, f->absolute,
			    f->name255, f->name256, f->padded,	f->nofollow, f->dir};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		ck_assert_int_gt(all[i], 0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *flag_names(unsigned f, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s%s%s", f & RS_FOLLOW ? "follow" : "nofollow",
		 f & RS_DIRECTORY ? "|directory" : "", f & RS_PARENT ? "|parent" : "",
		 f & RS_NO_SYMLINKS ? "|no_symlinks" : "", f & RS_BENEATH ? "|beneath" : "");
	return buf;
}

static void describe(char *buf, size_t size, const struct rtree *t, struct answer a)
{
	char path[PATH_BUF];

	if (a.err)
		snprintf(buf, size, "%s", strerror(a.err));
	else if (a.node < 0)
		snprintf(buf, size, "a file outside the tree");
	else if (rtree_path_of(t, (size_t)a.node, path, sizeof(path)) == 0)
		snprintf(buf, size, "node %ld (%s)", a.node, path);
	else
		snprintf(buf, size, "node %ld", a.node);
}

static void print_step(void *data, const struct rs_step *s)
{
	static const char *const kinds[] = {"component", "link", "root", "dot", "dotdot"};

	fprintf(stderr, "    %-9s depth %u  %.*s%s%.*s\n", kinds[s->kind], s->depth,
		(int)(s->name ? s->name_len : 0), s->name ? s->name : "", s->target ? " -> " : "",
		(int)(s->target ? s->target_len : 0), s->target ? s->target : "");
}

/* The resolver's walk of Q, step by step, to see where it parted from the oracle. */
static void print_walk(const struct rtree *t, const struct query *q, const struct rs_limits *lim)
{
	struct rs_ctx ctx = mt_ctx(rtree_mt(t));
	struct rs_result res;

	ctx.root = rtree_handle(t, q->root);
	ctx.limits = *lim;
	ctx.trace = print_step;
	fprintf(stderr, "  the resolver's walk:\n");
	rs_resolve(&ctx, rtree_handle(t, q->start), q->path, q->flags, &res);
}

/* Fail the test with everything needed to replay the case. */
static void report_mismatch(const char *oracle, unsigned tree, const struct rtree *t,
			    const struct query *q, struct answer ours, struct answer theirs,
			    const struct rs_limits *lim)
{
	char fl[96], a[PATH_BUF + 64], b[PATH_BUF + 64], root[PATH_BUF], start[PATH_BUF];

	describe(a, sizeof(a), t, ours);
	describe(b, sizeof(b), t, theirs);
	rtree_path_of(t, q->root, root, sizeof(root));
	rtree_path_of(t, q->start, start, sizeof(start));
	fprintf(stderr,
		"MISMATCH vs %s: CHAINFS_SEED=%" PRIu64 " tree %u limits %u/%u root %s start %s\n"
		"  path  [%s] (%zu bytes)\n  flags %s\n  resolver: %s\n  %s: %s\n",
		oracle, diff_seed, tree, lim->max_nest, lim->max_total, root, start, q->path,
		strlen(q->path), flag_names(q->flags, fl, sizeof(fl)), a, oracle, b);
	print_walk(t, q, lim);
	ck_abort_msg("resolver and %s disagree on [%.200s] (%s): %s vs %s; seed %" PRIu64, oracle,
		     q->path, fl, a, b, diff_seed);
}

static struct answer resolver_answer(const struct rtree *t, const struct rs_ctx *ctx,
				     const struct query *q, struct rs_result *res)
{
	int err = rs_resolve(ctx, rtree_handle(t, q->start), q->path, q->flags, res);

	return (struct answer){-err, err ? -1 : rtree_node_of_handle(t, res->node)};
}

/* ---- the kernel as oracle ---- */

/* Search permission is checked as this user (uid and gid 1000, no other groups). */
static const struct rs_cred nobody = {1000, 1000, NULL, 0};

/* One case: the question, the resolver's answer and, once asked, the kernel's. */
struct kcase {
	struct query q;
	struct answer ours, theirs;
	uint32_t links;
};

/* Cases for the kernel worker, and the credentials it asks with. */
struct kbatch {
	const struct rtree *t;
	struct kcase *cases;
	long n;
	const struct rs_cred *cred; /* NULL: as ourselves, root */
	long eagain;
	int err; /* errno of dropping the credentials */
};

/* The kernel's answer; runs on the worker thread, so no Check calls in here. A path that
 * keeps racing renames answers EAGAIN, which then shows as a mismatch naming it. */
static struct answer kernel_answer(const struct rtree *t, const struct query *q, long *eagain)
{
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC | (q->flags & RS_FOLLOW ? 0 : O_NOFOLLOW) |
		     (q->flags & RS_DIRECTORY ? O_DIRECTORY : 0),
	    .resolve = q->resolve,
	};
	struct stat st;

	for (long tries = 0; tries < EAGAIN_RETRIES; tries++) {
		int fd = (int)syscall(SYS_openat2, q->dirfd, q->path, &how, sizeof(how));
		if (fd < 0 && errno == EAGAIN) { /* a rename or mount raced a "..": again */
			(*eagain)++;
			continue;
		}
		if (fd < 0)
			return (struct answer){errno, -1};
		int err = fstat(fd, &st) ? errno : 0;
		close(fd);
		return (struct answer){err, err ? -1 : rtree_node_by_ino(t, st.st_dev, st.st_ino)};
	}
	return (struct answer){EAGAIN, -1};
}

/* The raw set*id system calls change the calling thread's credentials only (glibc's
 * wrappers would change every thread's): the worker drops to the user, the test stays root
 * and can clean up. */
static void *kernel_worker(void *arg)
{
	struct kbatch *b = arg;

	if (b->cred && (syscall(SYS_setgroups, 0, NULL) ||
			syscall(SYS_setresgid, b->cred->gid, b->cred->gid, b->cred->gid) ||
			syscall(SYS_setresuid, b->cred->uid, b->cred->uid, b->cred->uid))) {
		b->err = errno;
		return NULL;
	}
	for (long i = 0; i < b->n; i++)
		b->cases[i].theirs = kernel_answer(b->t, &b->cases[i].q, &b->eagain);
	return NULL;
}

static void ask_kernel(struct kbatch *b)
{
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, kernel_worker, b), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_msg(b->err == 0, "dropping to uid %u: %s", b->cred ? b->cred->uid : 0,
		      strerror(b->err));
}

/*
 * Whether the kernel can be asked at all. Valgrind (3.19) does not know openat2 and answers
 * ENOSYS: there the walks still run, for memcheck's sake, but nothing is compared. Anywhere
 * else a missing openat2 fails the test: it must never pass without its oracle.
 */
static bool kernel_oracle_available(void)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how));

	if (fd >= 0) {
		close(fd);
		return true;
	}
	ck_assert_msg(errno == ENOSYS && RUNNING_ON_VALGRIND, "openat2 probe: %s", strerror(errno));
	fprintf(stderr, "openat2 is not available under valgrind: resolver walks only, the "
			"kernel comparison is skipped\n");
	return false;
}

/* Every tree is materialized under one directory per run, made and removed by an unchecked
 * fixture: that runs in the parent process, so the trees go away even when a failed assertion
 * ended the test (in its own process) before ktree_close(). */
static char run_dir[256];

static void make_run_dir(void)
{
	ck_assert_int_eq(rtree_mkdtemp(run_dir, sizeof(run_dir)), 0);
}

static void remove_run_dir(void)
{
	if (run_dir[0] && rtree_rmtree(run_dir))
		fprintf(stderr, "test_resolver_diff: could not remove %s\n", run_dir);
}

/* One materialized tree, with directory fds for the walks that start below its root. */
struct ktree {
	struct rtree *t;
	char dir[256];
	int rootfd;
	size_t sub[KERNEL_SUBROOTS];
	int subfd[KERNEL_SUBROOTS];
};

static void ktree_open(struct ktree *k, uint64_t seed, bool modes)
{
	struct rtree_opts o = rtree_defaults;
	char path[PATH_BUF];

	o.modes = modes;
	k->t = rtree_new(seed, &o);
	int n = snprintf(k->dir, sizeof(k->dir), "%s/tree-XXXXXX", run_dir);
	ck_assert_int_lt(n, (int)sizeof(k->dir));
	ck_assert_ptr_nonnull(mkdtemp(k->dir));
	int err = rtree_materialize(k->t, k->dir);
	ck_assert_msg(err == 0, "materializing in %s: %s", k->dir, strerror(-err));
	k->rootfd = open(k->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(k->rootfd, 0);
	for (int i = 0; i < KERNEL_SUBROOTS; i++) {
		k->sub[i] = rtree_dir(k->t, rtree_rand(k->t) % rtree_ndirs(k->t));
		ck_assert_int_eq(rtree_path_of(k->t, k->sub[i], path, sizeof(path)), 0);
		k->subfd[i] = openat(k->rootfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(k->subfd[i], 0);
	}
}

static void ktree_close(struct ktree *k)
{
	for (int i = 0; i < KERNEL_SUBROOTS; i++)
		close(k->subfd[i]);
	close(k->rootfd);
	ck_assert_int_eq(rtree_rmtree(k->dir), 0);
	rtree_free(k->t);
}

static unsigned random_flags(struct rtree *t)
{
	uint64_t r = rtree_rand(t);

	return (r & 1 ? RS_FOLLOW : 0) | (r % 8 < 2 ? RS_DIRECTORY : 0);
}

/* Pick where the walk starts: the tree's root mostly, else one of the open directories. */
static void pick_start(struct ktree *k, struct query *q, bool sub_is_root)
{
	size_t i = rtree_rand(k->t) % (KERNEL_SUBROOTS + 3);

	q->root = 0;
	q->start = 0;
	q->dirfd = k->rootfd;
	if (i < KERNEL_SUBROOTS) {
		q->start = k->sub[i];
		q->dirfd = k->subfd[i];
		if (sub_is_root)
			q->root = k->sub[i];
	}
}

/* How the kernel is asked, and what the resolver is told to match it. */
struct kmode {
	const char *what;
	uint64_t resolve;	    /* RESOLVE_* */
	unsigned extra;		    /* RS_* flags on every walk */
	long min_ok_ratio;	    /* at least 1/this of the walks must succeed */
	const struct rs_cred *cred; /* walk as this user, on trees with random modes */
};

/* The questions for one tree, and the resolver's answers. */
static void make_cases(struct ktree *k, const struct kmode *m, struct kcase *cases, long n)
{
	struct rs_ctx ctx = mt_ctx(rtree_mt(k->t));
	char path[PATH_BUF];

	ctx.cred = m->cred;
	for (long i = 0; i < n; i++) {
		struct kcase *c = &cases[i];
		struct rs_result res;
		c->q.resolve = m->resolve;
		pick_start(k, &c->q, m->resolve & RESOLVE_IN_ROOT);
		c->q.flags = random_flags(k->t) | m->extra;
		rtree_random_path(k->t, c->q.root, c->q.start, path, sizeof(path));
		c->q.path = strdup(path);
		ck_assert_ptr_nonnull(c->q.path);
		ctx.root = rtree_handle(k->t, c->q.root);
		c->ours = resolver_answer(k->t, &ctx, &c->q, &res);
		c->links = res.links;
	}
}

/*
 * A known kernel artifact, not a disagreement: under RESOLVE_BENEATH a ".." at the scoped
 * root makes the RCU walk give up (-ECHILD) and the kernel walks again in ref mode without
 * resetting its count of links followed, so a walk that followed N links before that ".."
 * fails with ELOOP once 2N passes 40 instead of EXDEV. Seen on Linux 6.18.
 */
static bool kernel_recount_artifact(const struct kcase *c, const struct rs_limits *lim)
{
	return (c->q.flags & RS_BENEATH) && c->ours.err == EXDEV && c->theirs.err == ELOOP &&
	       2 * c->links > lim->max_total;
}

/* Resolve NPATHS random paths on each of NTREES trees both ways: same node or same errno. */
static void kernel_differential(unsigned suite, unsigned ntrees, long npaths, const struct kmode *m)
{
	struct tally tl = {0};
	struct features feat = {0};
	double t0 = now();
	bool oracle = kernel_oracle_available();
	struct kcase *cases = calloc((size_t)npaths, sizeof(*cases));
	const struct rs_limits lim = rs_limits_linux;

	ck_assert_ptr_nonnull(cases);
	for (unsigned tree = 0; tree < ntrees; tree++) {
		struct ktree k;
		ktree_open(&k, tree_seed(suite, tree), m->cred != NULL);
		make_cases(&k, m, cases, npaths);
		struct kbatch b = {k.t, cases, npaths, m->cred, 0, 0};
		if (oracle)
			ask_kernel(&b);
		tl.eagain += b.eagain;
		for (long i = 0; i < npaths; i++) {
			struct kcase *c = &cases[i];
			if (!oracle)
				c->theirs = c->ours;
			if (kernel_recount_artifact(c, &lim))
				tl.artifacts++;
			else if (c->ours.err != c->theirs.err || c->ours.node != c->theirs.node)
				report_mismatch("kernel", tree, k.t, &c->q, c->ours, c->theirs,
						&lim);
			count(&tl, c->ours.err, c->links);
			note_features(&feat, c->q.path, c->q.flags);
			free((char *)c->q.path);
		}
		ktree_close(&k);
	}
	free(cases);
	print_tally(m->what, &tl, now() - t0);
	check_features(&feat);
	/* the generator must keep reaching every kind of answer, or this test proves little */
	ck_assert_int_gt(tl.ok, tl.paths / m->min_ok_ratio);
	ck_assert_int_gt(tl.enoent, 0);
	ck_assert_int_gt(tl.enotdir, 0);
	ck_assert_int_gt(tl.eloop, 0);
	ck_assert_int_gt(tl.enametoolong, 0);
	if (m->resolve & RESOLVE_BENEATH)
		ck_assert_int_gt(tl.exdev, 0);
	if (m->cred)
		ck_assert_int_gt(tl.eacces, 0);
	if (!(m->resolve & RESOLVE_NO_SYMLINKS))
		ck_assert_uint_ge(tl.most_links, RS_DEFAULT_TOTAL);
}

START_TEST(test_kernel_agrees_in_root)
{
	const struct kmode m = {"kernel RESOLVE_IN_ROOT", RESOLVE_IN_ROOT, 0, 10, NULL};

	kernel_differential(1, KERNEL_TREES, paths_per_tree(KERNEL_PATHS_PER_TREE), &m);
}
END_TEST

START_TEST(test_kernel_agrees_beneath)
{
	/* most walks leave the start directory: EXDEV */
	const struct kmode m = {"kernel RESOLVE_BENEATH", RESOLVE_BENEATH, RS_BENEATH, 20, NULL};

	kernel_differential(2, 4, paths_per_tree(KERNEL_SCOPED_PATHS), &m);
}
END_TEST

START_TEST(test_kernel_agrees_with_no_symlinks)
{
	/* most walks meet a link: ELOOP */
	const struct kmode m = {"kernel RESOLVE_NO_SYMLINKS", RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS,
				RS_NO_SYMLINKS, 10, NULL};

	kernel_differential(3, 4, paths_per_tree(KERNEL_SCOPED_PATHS), &m);
}
END_TEST

START_TEST(test_kernel_agrees_on_search_permission)
{
	const struct kmode m = {"kernel RESOLVE_IN_ROOT as uid 1000, random modes", RESOLVE_IN_ROOT,
				0, 10, &nobody};

	kernel_differential(4, 4, paths_per_tree(KERNEL_SCOPED_PATHS), &m);
}
END_TEST

/* ---- the reference resolver as oracle ---- */

static const struct rs_limits ref_limits[] = {
    {40, 40}, {5, 40}, {100, 100}, {1, 40}, {2, 3}, {40, 5}, {3, 1000},
};

static unsigned random_ref_flags(struct rtree *t)
{
	uint64_t r = rtree_rand(t);
	unsigned f = (r & 1 ? RS_FOLLOW : 0) | (r % 8 < 2 ? RS_DIRECTORY : 0);

	r >>= 8;
	if (r % 10 == 0)
		f |= RS_PARENT;
	if (r / 10 % 10 == 0)
		f |= RS_NO_SYMLINKS;
	if (r / 100 % 10 == 0)
		f |= RS_BENEATH;
	return f;
}

static bool same_result(const struct rs_result *a, const struct rs_result *b)
{
	return a->node == b->node && a->last == b->last && a->last_len == b->last_len &&
	       a->trailing_slash == b->trailing_slash && a->links == b->links &&
	       a->max_depth == b->max_depth;
}

static void reference_differential(unsigned limits_index)
{
	const struct rs_limits *lim = &ref_limits[limits_index];
	unsigned lo = lim->max_nest < lim->max_total ? lim->max_nest : lim->max_total;
	struct rtree_opts o = rtree_defaults;
	struct tally tl = {0};
	char path[PATH_BUF];
	double t0 = now();

	o.limit = lo;
	o.chain_max = (lim->max_total > lo ? lim->max_total : lo) + 5;
	o.empty_targets = o.modes = true;
	for (unsigned tree = 0; tree < 3; tree++) {
		struct rtree *t = rtree_new(tree_seed(10 + limits_index, tree), &o);
		struct rs_ctx ctx = mt_ctx(rtree_mt(t));
		ctx.limits = *lim;
		for (long i = 0; i < paths_per_tree(REF_PATHS_PER_TREE); i++) {
			struct query q = {.path = path};
			struct rs_result ours, theirs;
			q.start =
			    rtree_rand(t) % 4 ? 0 : rtree_dir(t, rtree_rand(t) % rtree_ndirs(t));
			q.flags = random_ref_flags(t);
			ctx.cred = rtree_rand(t) % 4 ? NULL : &nobody;
			rtree_random_path(t, 0, q.start, path, sizeof(path));
			uint64_t start = rtree_handle(t, q.start);
			int a = rs_resolve(&ctx, start, path, q.flags, &ours);
			int b = ref_resolve(&ctx, start, path, q.flags, &theirs);
			struct answer x = {-a, a ? -1 : rtree_node_of_handle(t, ours.node)};
			struct answer y = {-b, b ? -1 : rtree_node_of_handle(t, theirs.node)};
			if (a != b || (a == 0 && !same_result(&ours, &theirs))) {
				fprintf(stderr,
					"  resolver: last [%.*s] slash %d links %u depth %u\n"
					"  reference: last [%.*s] slash %d links %u depth %u\n",
					(int)ours.last_len, ours.last ? ours.last : "",
					ours.trailing_slash, ours.links, ours.max_depth,
					(int)theirs.last_len, theirs.last ? theirs.last : "",
					theirs.trailing_slash, theirs.links, theirs.max_depth);
				report_mismatch("reference", tree, t, &q, x, y, lim);
			}
			count(&tl, -a, ours.links);
		}
		rtree_free(t);
	}
	char what[64];
	snprintf(what, sizeof(what), "reference, limits %u/%u", lim->max_nest, lim->max_total);
	print_tally(what, &tl, now() - t0);
	ck_assert_int_gt(tl.ok, tl.paths / 10);
	ck_assert_int_gt(tl.eloop, 0);
}

START_TEST(test_reference_agrees_under_various_limits)
{
	reference_differential((unsigned)_i);
}
END_TEST

/* The oracle itself must not be trivially agreeable: it has to see the limits too. */
START_TEST(test_reference_sees_both_limits)
{
	struct mt_tree *m = mt_new();
	uint64_t d = mt_dir(m, mt_root(m), "d");
	struct rs_ctx ctx = mt_ctx(m);
	struct rs_result res;

	mt_link(m, mt_root(m), "n0", "n1/.");
	mt_link(m, mt_root(m), "n1", "n2/.");
	mt_link(m, mt_root(m), "n2", "d");
	mt_link(m, mt_root(m), "c0", "c1");
	mt_link(m, mt_root(m), "c1", "c2");
	mt_link(m, mt_root(m), "c2", "d");
	ctx.limits = (struct rs_limits){3, 3};
	ck_assert_int_eq(ref_resolve(&ctx, mt_root(m), "n0", RS_FOLLOW, &res), 0);
	ck_assert_uint_eq(res.node, d);
	ck_assert_uint_eq(res.max_depth, 3);
	ck_assert_int_eq(ref_resolve(&ctx, mt_root(m), "c0", RS_FOLLOW, &res), 0);
	ck_assert_uint_eq(res.max_depth, 1);
	ctx.limits = (struct rs_limits){2, 3};
	ck_assert_int_eq(ref_resolve(&ctx, mt_root(m), "n0", RS_FOLLOW, &res), -ELOOP);
	ck_assert_int_eq(ref_resolve(&ctx, mt_root(m), "c0", RS_FOLLOW, &res), 0);
	ctx.limits = (struct rs_limits){3, 2};
	ck_assert_int_eq(ref_resolve(&ctx, mt_root(m), "c0", RS_FOLLOW, &res), -ELOOP);
	mt_free(m);
}
END_TEST

static Suite *diff_suite(void)
{
	Suite *s = suite_create("resolver differential");
	TCase *k = tcase_create("kernel");
	TCase *r = tcase_create("reference");

	tcase_add_unchecked_fixture(k, make_run_dir, remove_run_dir);
	tcase_set_timeout(k, 600);
	tcase_set_timeout(r, 600);
	tcase_add_test(k, test_kernel_agrees_in_root);
	tcase_add_test(k, test_kernel_agrees_beneath);
	tcase_add_test(k, test_kernel_agrees_with_no_symlinks);
	tcase_add_test(k, test_kernel_agrees_on_search_permission);
	tcase_add_test(r, test_reference_sees_both_limits);
	tcase_add_loop_test(r, test_reference_agrees_under_various_limits, 0,
			    (int)(sizeof(ref_limits) / sizeof(ref_limits[0])));
	suite_add_tcase(s, k);
	suite_add_tcase(s, r);
	return s;
}

void unit_add_suites(SRunner *sr)
{
	const char *env = getenv("CHAINFS_SEED");
	const char *n = getenv("CHAINFS_DIFF_PATHS");

	diff_seed = env && *env ? strtoull(env, NULL, 0)
				: mix((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32));
	if (n && *n)
		diff_paths = strtol(n, NULL, 0);
	fprintf(stderr,
		"test_resolver_diff: seed %" PRIu64 " (replay with CHAINFS_SEED=%" PRIu64 ")\n",
		diff_seed, diff_seed);
	srunner_add_suite(sr, diff_suite());
}
