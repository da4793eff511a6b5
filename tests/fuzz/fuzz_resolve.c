/*
 * Fuzz target "resolve": rs_resolve() against the recursive reference ref_resolve() over a
 * small tree and paths, both drawn from the input, for every combination of the five flags
 * and several limits. Any difference aborts with the case spelled out.
 *
 * The input is text, one operation per line, so seeds and crash files read in an editor:
 *   dPN        directory named N in directory #P (P: a byte, '0'..'9' counting as 0..9,
 *              modulo the directories so far; #0 is the root, then in creation order)
 *   fPN        file named N in directory #P
 *   lPNTARGET  link named N in directory #P, its body the rest of the line
 *   mPB        directory #P gets mode bits and an owner from byte B (see fz_chmod)
 *   uB         walk as: no credentials, root, uid 1000 or uid 1001 (B modulo 4)
 *   nAB        also try the limits max_nest = fz_limit_table[A], max_total = ...[B]
 *   pSPATH     resolve PATH from directory #S
 * A name N is one byte: '+' stands for a 255-byte name, '.' for "..."; '/', NUL and a
 * repeated name make the line a no-op. In TARGET and PATH, bytes 1..4 are macros (fz_macros)
 * so that NAME_MAX and PATH_MAX are in reach of short inputs.
 *
 * Besides rs == ref (result, node, last component, trailing slash, links followed, deepest
 * nesting; for a loop rs proved (res.cycle) the errno only), each walk checks rs's own counters
 * (heap frames, allocations, its trace), that an allocator that always fails gives ENOMEM exactly
 * when the walk needed heap frames, and that the same walk over the daemon's cfs_tree (same tree
 * built with the tree.h calls) gives the same answer.
 */
#include "fuzz_util.h"
#include "memtree.h"
#include "refresolve.h"
#include "rs.h"
#include "tree.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	FZ_MAX_NODES = 64,
	FZ_MAX_PATHS = 16,
	FZ_MAX_LIMITS = 4,	   /* extra limit pairs from 'n' lines */
	FZ_BUF = RS_PATH_MAX + 64, /* paths and targets: room to pass PATH_MAX by a little */
	FZ_NFLAGS = 32,		   /* every combination of the five RS_* flags */
};

static const uint32_t fz_limit_table[] = {0, 1, 2, 3, 4, 5, 8, 39, 40, 41, 100, 1000};

/* Always tried: today's Linux, the classic kernel, and tiny ones where off-by-ones show. */
static const struct rs_limits fz_fixed_limits[] = {{40, 40}, {5, 40}, {1, 1}, {2, 3}, {0, 40}};

struct fz_macro {
	char byte;
	char fill[3]; /* repeated... */
	size_t len;   /* ...up to this many bytes */
};

static const struct fz_macro fz_macros[] = {
    {'\1', "n", 255}, /* the longest name ('+' names a node so) */
    {'\2', "n", 256}, /* one byte too long */
    {'\3', "./", 1024},
    {'\4', "/", 1000},
};

static char fz_long_name[RS_NAME_MAX + 1]; /* RS_NAME_MAX 'n's, made on first use */

struct fz_case {
	struct mt_tree *mt;
	struct cfs_tree *cfs; /* the same tree in the daemon's structure */
	bool cfs_ok;	      /* false once a link body cfs_tree refuses (empty, too long) */
	uint32_t cfs_id[FZ_MAX_NODES + 1]; /* memtree handle -> cfs handle */
	uint64_t dirs[FZ_MAX_NODES + 1];   /* memtree handles of the directories */
	size_t ndirs;
	struct rs_cred cred;
	bool has_cred;
	struct rs_limits limits[FZ_MAX_LIMITS];
	size_t nlimits;
};

/* ---- building the tree ---- */

/* memtree's lookup indexes its hash before the first entry creates it (UB on a tree that is
 * only the root): answer for it there. */
static int fz_mt_lookup(void *tree, uint64_t dir, const char *name, size_t len, uint64_t *out)
{
	if (mt_count(tree) == 1)
		return -ENOENT;
	return mt_ops.lookup(tree, dir, name, len, out);
}

static struct rs_tree_ops fz_mt_ops; /* mt_ops with that lookup, set up by the entry point */

/* Copy [P, END) to OUT expanding macros; stops at a NUL (C strings) or when OUT is full. */
static size_t fz_expand(const char *p, const char *end, char *out)
{
	size_t o = 0;

	for (; p < end && *p && o < FZ_BUF - 1; p++) {
		const struct fz_macro *m = NULL;
		for (size_t i = 0; i < sizeof(fz_macros) / sizeof(fz_macros[0]); i++)
			if (*p == fz_macros[i].byte)
				m = &fz_macros[i];
		if (!m) {
			out[o++] = *p;
			continue;
		}
		size_t flen = strlen(m->fill);
		for (size_t k = 0; k < m->len && o < FZ_BUF - 1; k++)
			out[o++] = m->fill[k % flen];
	}
	out[o] = '\0';
	return o;
}

/* The name byte CH as a name; NULL if it cannot be one. */
static const char *fz_name(char ch, char *buf)
{
	if (ch == '/' || ch == '\0')
		return NULL;
	if (ch == '+') {
		if (!fz_long_name[0])
			memset(fz_long_name, 'n', RS_NAME_MAX);
		return fz_long_name;
	}
	if (ch == '.')
		return "...";
	buf[0] = ch;
	buf[1] = '\0';
	return buf;
}

/* Directory #B: a digit counts as its value, so hand-written seeds read naturally. */
static uint64_t fz_dir_at(const struct fz_case *c, unsigned char b)
{
	unsigned i = b >= '0' && b <= '9' ? (unsigned)(b - '0') : b;

	return c->dirs[i % c->ndirs];
}

/* One d/f/l line: [P, END) is what follows the operation byte. */
static void fz_add_node(struct fz_case *c, char op, const char *p, const char *end)
{
	char nbuf[2], target[FZ_BUF];
	const char *name;
	uint64_t dir, node;
	uint32_t id = 0;
	struct cfs_new a = {0755, 0, 0};

	if (end - p < 2 || mt_count(c->mt) >= FZ_MAX_NODES)
		return;
	dir = fz_dir_at(c, (unsigned char)p[0]);
	name = fz_name(p[1], nbuf);
	if (!name || fz_mt_lookup(c->mt, dir, name, strlen(name), &node) == 0)
		return;
	int err = 0;
	if (op == 'd') {
		node = mt_dir(c->mt, dir, name);
		c->dirs[c->ndirs++] = node;
		err = cfs_tree_mkdir(c->cfs, c->cfs_id[dir], name, strlen(name), &a, &id);
	} else if (op == 'f') {
		node = mt_file(c->mt, dir, name);
		err = cfs_tree_mkfile(c->cfs, c->cfs_id[dir], name, strlen(name), &a, &id);
	} else {
		size_t tlen = fz_expand(p + 2, end, target);
		node = mt_link(c->mt, dir, name, target);
		if (tlen == 0 || tlen >= RS_PATH_MAX) {
			c->cfs_ok = false; /* memtree keeps such bodies; the daemon refuses them */
			return;
		}
		a.mode = 0777;
		err = cfs_tree_symlink(c->cfs, c->cfs_id[dir], name, strlen(name), target, tlen, &a,
				       &id);
	}
	if (err)
		fz_fail("cfs_tree refused node %c '%s': %d", op, name, err);
	c->cfs_id[node] = id;
}

/* Mode bits from B: owner/group/other search bits; owner and group from 0, 1000, 1001. */
static void fz_chmod(struct fz_case *c, const char *p, const char *end)
{
	static const uid_t ids[] = {0, 1000, 1001, 1002};

	if (end - p < 2)
		return;
	uint64_t dir = fz_dir_at(c, (unsigned char)p[0]);
	unsigned b = (unsigned char)p[1];
	mode_t mode = 0644 | (b & 1 ? 0100 : 0) | (b & 2 ? 0010 : 0) | (b & 4 ? 0001 : 0);
	uid_t uid = ids[(b >> 3) & 3];
	gid_t gid = ids[(b >> 5) & 3];

	mt_chmod(c->mt, dir, mode, uid, gid);
	if (cfs_tree_chmod(c->cfs, c->cfs_id[dir], mode) ||
	    cfs_tree_chown(c->cfs, c->cfs_id[dir], uid, gid))
		fz_fail("cfs_tree chmod/chown failed");
}

static void fz_set_cred(struct fz_case *c, const char *p, const char *end)
{
	static const struct rs_cred creds[] = {
	    {0, 0, NULL, 0}, {1000, 1000, NULL, 0}, {1001, 1001, NULL, 0}};
	unsigned b = p < end ? (unsigned char)p[0] % 4 : 0;

	c->has_cred = b > 0;
	if (b > 0)
		c->cred = creds[b - 1];
}

static void fz_add_limits(struct fz_case *c, const char *p, const char *end)
{
	size_t n = sizeof(fz_limit_table) / sizeof(fz_limit_table[0]);

	if (end - p < 2 || c->nlimits == FZ_MAX_LIMITS)
		return;
	c->limits[c->nlimits++] = (struct rs_limits){fz_limit_table[(unsigned char)p[0] % n],
						     fz_limit_table[(unsigned char)p[1] % n]};
}

/* ---- checking one walk ---- */

struct fz_trace {
	uint32_t links, max_depth, max_nest;
	bool bad_depth;
};

static void fz_on_step(void *data, const struct rs_step *s)
{
	struct fz_trace *tr = data;

	if (s->kind == RS_STEP_LINK)
		tr->links++;
	if (s->depth > tr->max_depth)
		tr->max_depth = s->depth;
	if (s->depth > tr->max_nest)
		tr->bad_depth = true;
	if (s->kind == RS_STEP_COMPONENT && s->name_len > RS_NAME_MAX)
		tr->bad_depth = true;
}

static void *fz_no_memory(void *p, size_t size)
{
	return NULL;
}

struct fz_walk {
	const char *path;
	uint64_t start;
	unsigned flags;
	struct rs_limits limits;
};

static _Noreturn void fz_mismatch(const struct fz_walk *w, const char *what, int rc1,
				  const struct rs_result *r1, int rc2, const struct rs_result *r2)
{
	fprintf(stderr,
		"fuzz: %s\n  path '%.200s'%s (%zu bytes) from node %" PRIu64
		", flags 0x%x (follow %d directory %d parent %d no_symlinks %d beneath %d), "
		"limits %u/%u\n  first:  rc %d node %" PRIu64 " links %u depth %u slash %d\n"
		"  second: rc %d node %" PRIu64 " links %u depth %u slash %d\n",
		what, w->path, strlen(w->path) > 200 ? "..." : "", strlen(w->path), w->start,
		w->flags, !!(w->flags & RS_FOLLOW), !!(w->flags & RS_DIRECTORY),
		!!(w->flags & RS_PARENT), !!(w->flags & RS_NO_SYMLINKS), !!(w->flags & RS_BENEATH),
		w->limits.max_nest, w->limits.max_total, rc1, r1->node, r1->links, r1->max_depth,
		r1->trailing_slash, rc2, r2->node, r2->links, r2->max_depth, r2->trailing_slash);
	abort();
}

/* The fields both implementations must agree on (heap_frames and allocs are rs's own). */
static bool fz_same(int rc1, const struct rs_result *a, int rc2, const struct rs_result *b)
{
	/* a loop rs proved ends before the reference's walk reaches the limit: same errno */
	bool proved = rc1 == -ELOOP && (a->cycle || b->cycle);

	if (rc1 != rc2 || a->trailing_slash != b->trailing_slash ||
	    (!proved && (a->links != b->links || a->max_depth != b->max_depth)))
		return false;
	if (rc1 != 0)
		return true;
	return a->node == b->node && a->last == b->last && a->last_len == b->last_len;
}

/* rs's own counters: frames past the inline ones live on the heap, allocated geometrically. */
static void fz_check_counters(const struct fz_walk *w, int rc, const struct rs_result *r,
			      const struct fz_trace *tr)
{
	uint32_t heap = r->max_depth > RS_INLINE_FRAMES ? r->max_depth - RS_INLINE_FRAMES : 0;

	if (r->heap_frames != heap || (r->allocs == 0) != (heap == 0) || r->allocs > 32)
		fz_fail("counters: depth %u heap_frames %u allocs %u for '%.200s'", r->max_depth,
			r->heap_frames, r->allocs, w->path);
	if (tr->bad_depth)
		fz_fail("trace: a step past max_nest %u or a long name for '%.200s'",
			w->limits.max_nest, w->path);
	if (rc == 0 && (tr->links != r->links || tr->max_depth != r->max_depth))
		fz_fail("trace: %u links depth %u, result %u links depth %u for '%.200s'",
			tr->links, tr->max_depth, r->links, r->max_depth, w->path);
}

/* The walk's context over the memtree. */
static struct rs_ctx fz_ctx(const struct fz_case *c, const struct fz_walk *w)
{
	struct rs_ctx ctx = mt_ctx(c->mt);

	ctx.ops = &fz_mt_ops;
	ctx.limits = w->limits;
	ctx.cred = c->has_cred ? &c->cred : NULL;
	return ctx;
}

static int fz_rs(const struct fz_case *c, const struct fz_walk *w, bool fail_alloc,
		 struct rs_result *r, struct fz_trace *tr)
{
	struct rs_ctx ctx = fz_ctx(c, w);

	ctx.trace = fz_on_step;
	ctx.trace_data = tr;
	if (fail_alloc)
		ctx.realloc_fn = fz_no_memory;
	*tr = (struct fz_trace){.max_nest = w->limits.max_nest};
	return rs_resolve(&ctx, w->start, w->path, w->flags, r);
}

/* The same walk over the cfs_tree copy, compared with nodes mapped through cfs_id. */
static void fz_check_cfs(const struct fz_case *c, const struct fz_walk *w, int rc,
			 const struct rs_result *r)
{
	struct rs_ctx ctx = {.ops = &cfs_tree_rs_ops,
			     .tree = c->cfs,
			     .root = CFS_ROOT,
			     .limits = w->limits,
			     .cred = c->has_cred ? &c->cred : NULL};
	struct rs_result rc_res, mapped = *r;
	int rc2 = rs_resolve(&ctx, c->cfs_id[w->start], w->path, w->flags, &rc_res);

	mapped.node = c->cfs_id[r->node];
	if (!fz_same(rc, &mapped, rc2, &rc_res))
		fz_mismatch(w, "rs over memtree != rs over cfs_tree", rc, &mapped, rc2, &rc_res);
}

static void fz_check_walk(const struct fz_case *c, const struct fz_walk *w, bool deep)
{
	struct rs_result r1, r2, r3;
	struct fz_trace tr;
	int rc1 = fz_rs(c, w, false, &r1, &tr);
	struct rs_ctx ctx = fz_ctx(c, w);
	int rc2 = ref_resolve(&ctx, w->start, w->path, w->flags, &r2);
	if (!fz_same(rc1, &r1, rc2, &r2))
		fz_mismatch(w, "rs_resolve != ref_resolve", rc1, &r1, rc2, &r2);
	fz_check_counters(w, rc1, &r1, &tr);
	if (!deep)
		return;
	int rc3 = fz_rs(c, w, true, &r3, &tr);
	int want = r1.heap_frames ? -ENOMEM : rc1;
	if (rc3 != want)
		fz_mismatch(w, "with a failing allocator", want, &r1, rc3, &r3);
	if (c->cfs_ok)
		fz_check_cfs(c, w, rc1, &r1);
}

/* Every flag combination under every set of limits; the costlier checks under Linux's. */
static void fz_check_path(const struct fz_case *c, const char *p, const char *end)
{
	char path[FZ_BUF];
	struct fz_walk w = {.path = path};
	size_t nfixed = sizeof(fz_fixed_limits) / sizeof(fz_fixed_limits[0]);

	if (p == end)
		return;
	w.start = fz_dir_at(c, (unsigned char)p[0]);
	fz_expand(p + 1, end, path);
	for (size_t l = 0; l < nfixed + c->nlimits; l++) {
		w.limits = l < nfixed ? fz_fixed_limits[l] : c->limits[l - nfixed];
		for (w.flags = 0; w.flags < FZ_NFLAGS; w.flags++)
			fz_check_walk(c, &w, l == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct fz_case *c = calloc(1, sizeof(*c));
	size_t paths = 0;

	if (!c)
		fz_fail("out of memory");
	fz_mt_ops = mt_ops;
	fz_mt_ops.lookup = fz_mt_lookup;
	c->mt = mt_new();
	c->cfs = cfs_tree_new(NULL);
	if (!c->cfs)
		fz_fail("cfs_tree_new failed");
	c->cfs_ok = true;
	c->cfs_id[mt_root(c->mt)] = CFS_ROOT;
	c->dirs[c->ndirs++] = mt_root(c->mt);
	while (p < end && paths < FZ_MAX_PATHS) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;

		switch (*p) {
		case 'd':
		case 'f':
		case 'l':
			fz_add_node(c, *p, p + 1, e);
			break;
		case 'm':
			fz_chmod(c, p + 1, e);
			break;
		case 'u':
			fz_set_cred(c, p + 1, e);
			break;
		case 'n':
			fz_add_limits(c, p + 1, e);
			break;
		case 'p':
			fz_check_path(c, p + 1, e);
			paths++;
			break;
		}
		p = nl ? nl + 1 : end;
	}
	cfs_tree_free(c->cfs);
	mt_free(c->mt);
	free(c);
	return 0;
}
