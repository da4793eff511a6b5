/*
 * The iterative link_work walk. One loop in rs_walk(); each step either moves on, fails, or
 * hands back a link whose body becomes the next thing to walk. See rs.h for the contract.
 */
#include "rs.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const struct rs_limits rs_limits_linux = {RS_DEFAULT_NEST, RS_DEFAULT_TOTAL};
const struct rs_limits rs_limits_classic = {RS_CLASSIC_NEST, RS_CLASSIC_TOTAL};

/* The unwalked rest of a body, saved while a link found inside it is walked. */
struct rs_frame {
	const char *p;
	const char *end;
};

/*
 * A walk state taken as a checkpoint for cycle detection (rs_repeats). The frames are not
 * copied: while no pop goes below the checkpoint's depth (rs_walk.low), frames[0..depth) are
 * the very ones the checkpoint saw.
 */
struct rs_mark {
	uint64_t cur, below;
	const char *p, *end;
	uint32_t depth;
	bool path_done;
};

struct rs_walk {
	const struct rs_ctx *ctx;
	struct rs_result *res;
	unsigned flags;
	uint64_t cur;		      /* the directory we are in (or the final node) */
	const char *p, *end;	      /* what is left of the body being walked */
	bool slash;		      /* the component just taken was followed by '/' */
	bool must_dir;		      /* the final node must be a directory */
	bool path_done;		      /* frame 0 holds an empty rest: PATH ended in the link */
	uint64_t link;		      /* the link rs_step found and asked us to follow */
	uint64_t below;		      /* RS_BENEATH: how many levels below the start we are */
	uint32_t max_nest, max_total; /* the limits, clamped to RS_LIMIT_MAX */
	uint32_t depth;		      /* link bodies being walked = frames in use */
	uint32_t heap_cap;	      /* frames the heap array holds */
	struct rs_frame *heap;	      /* frames RS_INLINE_FRAMES and deeper */
	struct rs_frame inline_frames[RS_INLINE_FRAMES];
	uint32_t steps, budget; /* components taken, and how many it may take */
	uint32_t low;		/* lowest depth since the mark was taken */
	uint32_t lam, power;	/* Brent: links since the mark, and when to move it */
	struct rs_mark mark;
};

enum { RS_MOVED = 0, RS_FOLLOW_LINK = 1 };

static void rs_trace(struct rs_walk *w, enum rs_step_kind kind, const char *name, size_t len,
		     uint64_t node, const char *target, size_t target_len)
{
	if (!w->ctx->trace)
		return;
	struct rs_step s = {kind, name, len, node, w->depth, target, target_len};
	w->ctx->trace(w->ctx->trace_data, &s);
}

static struct rs_frame *rs_frame_at(struct rs_walk *w, uint32_t i)
{
	return i < RS_INLINE_FRAMES ? &w->inline_frames[i] : &w->heap[i - RS_INLINE_FRAMES];
}

/* The one place frames reach the heap: grow the spill array geometrically. */
static int rs_grow_stack(struct rs_walk *w)
{
	const struct rs_ctx *c = w->ctx;
	uint32_t cap = w->heap_cap ? w->heap_cap * 2 : 8;
	void *(*re)(void *, size_t) = c->realloc_fn ? c->realloc_fn : realloc;
	struct rs_frame *heap = re(w->heap, (size_t)cap * sizeof(*heap));

	if (!heap)
		return -ENOMEM;
	w->res->allocs++;
	w->heap = heap;
	w->heap_cap = cap;
	return 0;
}

/* Save the rest of the current body and walk BODY next. */
static int rs_push(struct rs_walk *w, const char *body, size_t len)
{
	if (w->depth >= w->max_nest)
		return -ELOOP;
	if (w->depth >= RS_INLINE_FRAMES + w->heap_cap) {
		int err = rs_grow_stack(w);
		if (err)
			return err;
	}
	if (w->depth == 0)
		w->path_done = w->p == w->end;
	*rs_frame_at(w, w->depth) = (struct rs_frame){w->p, w->end};
	w->depth++;
	if (w->depth > w->res->max_depth)
		w->res->max_depth = w->depth;
	if (w->depth > RS_INLINE_FRAMES && w->depth - RS_INLINE_FRAMES > w->res->heap_frames)
		w->res->heap_frames = w->depth - RS_INLINE_FRAMES;
	w->p = body;
	w->end = body + len;
	return 0;
}

static void rs_pop(struct rs_walk *w)
{
	struct rs_frame *f = rs_frame_at(w, --w->depth);

	w->p = f->p;
	w->end = f->end;
	if (w->depth < w->low)
		w->low = w->depth;
}

/* Nothing follows the component just taken, in this body or any body it is nested in. */
static bool rs_is_final(const struct rs_walk *w)
{
	return w->p == w->end && (w->depth == 0 || (w->depth == 1 && w->path_done));
}

/* Take the next component, finishing bodies that are done; false when the walk is over. */
static bool rs_next(struct rs_walk *w, const char **name, size_t *len)
{
	while (w->p == w->end) {
		if (w->depth == 0)
			return false;
		rs_pop(w);
	}
	const char *slash = memchr(w->p, '/', (size_t)(w->end - w->p));
	const char *e = slash ? slash : w->end;

	*name = w->p;
	*len = (size_t)(e - w->p);
	w->p = e;
	w->slash = false;
	while (w->p < w->end && *w->p == '/') {
		w->p++;
		w->slash = true;
	}
	return true;
}

/* An absolute path or body: back to the root, past any run of slashes. */
static int rs_jump_root(struct rs_walk *w)
{
	if (w->flags & RS_BENEATH)
		return -EXDEV;
	w->cur = w->ctx->root;
	while (w->p < w->end && *w->p == '/')
		w->p++;
	rs_trace(w, RS_STEP_ROOT, NULL, 0, w->cur, NULL, 0);
	return 0;
}

/* We are about to look a name up in w->cur: it must be a directory we may search. */
static int rs_may_enter(struct rs_walk *w)
{
	const struct rs_ctx *c = w->ctx;

	if (c->ops->kind(c->tree, w->cur) != RS_DIR)
		return -ENOTDIR;
	if (c->ops->may_search)
		return c->ops->may_search(c->tree, w->cur, c->cred);
	return 0;
}

static int rs_dotdot(struct rs_walk *w, const char *name)
{
	const struct rs_ctx *c = w->ctx;

	if (w->flags & RS_BENEATH) {
		if (w->below == 0)
			return -EXDEV;
		w->below--;
	}
	if (w->cur != c->root) /* ".." at the root stays there */
		w->cur = c->ops->parent(c->tree, w->cur);
	rs_trace(w, RS_STEP_DOTDOT, name, 2, w->cur, NULL, 0);
	return RS_MOVED;
}

/* Links are followed inside bodies always; a final one only when asked to (or by a '/'). */
static bool rs_should_follow(const struct rs_walk *w, bool final)
{
	return !final || w->depth > 0 || w->slash || (w->flags & RS_FOLLOW);
}

/* Walk one component: RS_MOVED, RS_FOLLOW_LINK (w->link set) or a negative errno. */
static int rs_step(struct rs_walk *w, const char *name, size_t len, bool final)
{
	const struct rs_ctx *c = w->ctx;
	uint64_t node;
	int err = rs_may_enter(w);

	if (err)
		return err;
	if (len == 1 && name[0] == '.') {
		rs_trace(w, RS_STEP_DOT, name, 1, w->cur, NULL, 0);
		return RS_MOVED;
	}
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return rs_dotdot(w, name);
	if (len > RS_NAME_MAX)
		return -ENAMETOOLONG;
	err = c->ops->lookup(c->tree, w->cur, name, len, &node);
	if (err)
		return err;
	rs_trace(w, RS_STEP_COMPONENT, name, len, node, NULL, 0);
	if (c->ops->kind(c->tree, node) == RS_LINK && rs_should_follow(w, final)) {
		w->link = node;
		return RS_FOLLOW_LINK;
	}
	w->cur = node;
	w->below++;
	return RS_MOVED;
}

/*
 * Cycle detection, called each time a link's body has become the thing to walk. The state
 * (directory, rest of the body, the frames below it, path_done, below) then fully decides
 * the rest of the walk, since the tree does not change during a walk; the same state twice
 * means the walk can never end. Brent's method: compare with a mark, and move the mark to
 * the current state after 1, 2, 4, ... links, which finds a cycle of n links entered after
 * m within about 2m + 3n links. The comparison is exact, so no walk is ever called a loop wrongly:
 * the frames below the mark's depth are known equal when no pop went below it (w->low), and
 * once a pop did, the mark can never match again and moves here. Every cycle has a state at
 * its lowest depth (the body at that depth can only restart through a link in tail position,
 * or the walk would move on), so the mark lands on one and stays there.
 */
static bool rs_repeats(struct rs_walk *w)
{
	struct rs_mark *m = &w->mark;

	if (w->low == m->depth && w->depth == m->depth && w->p == m->p && w->end == m->end &&
	    w->cur == m->cur && w->below == m->below && w->path_done == m->path_done)
		return true;
	if (++w->lam < w->power && w->low >= m->depth)
		return false;
	if (w->lam >= w->power)
		w->power *= 2;
	w->lam = 0;
	w->low = w->depth;
	*m = (struct rs_mark){w->cur, w->below, w->p, w->end, w->depth, w->path_done};
	return false;
}

/* Make the body of w->link the next thing to walk, from the link's directory. */
static int rs_follow(struct rs_walk *w, const char *name, size_t len)
{
	const struct rs_ctx *c = w->ctx;
	const char *body;
	size_t blen;
	int err;

	if (w->flags & RS_NO_SYMLINKS)
		return -ELOOP;
	if (++w->res->links > w->max_total)
		return -ELOOP;
	err = c->ops->readlink(c->tree, w->link, &body, &blen);
	if (err)
		return err;
	if (blen == 0)
		return -ENOENT;
	if (blen >= RS_PATH_MAX)
		return -ENAMETOOLONG;
	if (w->p == w->end && w->depth > 0) {
		/* tail position: this body is finished, its frame serves the new one */
		w->p = body;
		w->end = body + blen;
	} else {
		err = rs_push(w, body, blen);
		if (err)
			return err;
	}
	rs_trace(w, RS_STEP_LINK, name, len, w->link, body, blen);
	if (*body == '/') {
		w->p += rs_alias_skip(c->root_alias, c->root_alias_len, body, blen);
		if ((err = rs_jump_root(w)))
			return err;
	}
	if (rs_repeats(w)) {
		w->res->cycle = 1;
		return -ELOOP;
	}
	return 0;
}

static int rs_walk(struct rs_walk *w)
{
	const char *name;
	size_t len;

	while (rs_next(w, &name, &len)) {
		bool final = rs_is_final(w);

		if (++w->steps > w->budget)
			return -ELOOP;
		if (final && w->slash)
			w->must_dir = true;
		if (final && w->depth == 0 && (w->flags & RS_PARENT)) {
			int err = rs_may_enter(w);
			if (err)
				return err;
			if (len > RS_NAME_MAX)
				return -ENAMETOOLONG;
			w->res->last = name;
			w->res->last_len = len;
			return 0;
		}
		int r = rs_step(w, name, len, final);
		if (r == RS_FOLLOW_LINK)
			r = rs_follow(w, name, len);
		if (r < 0)
			return r;
	}
	if (w->must_dir && w->ctx->ops->kind(w->ctx->tree, w->cur) != RS_DIR)
		return -ENOTDIR;
	return 0;
}

size_t rs_alias_skip(const char *alias, size_t alias_len, const char *body, size_t len)
{
	if (!alias || alias_len == 0 || len < alias_len || memcmp(body, alias, alias_len) != 0)
		return 0;
	return len == alias_len || body[alias_len] == '/' ? alias_len : 0;
}

int rs_resolve(const struct rs_ctx *ctx, uint64_t start, const char *path, unsigned flags,
	       struct rs_result *res)
{
	size_t len = strnlen(path, RS_PATH_MAX);
	struct rs_walk w = {
	    .ctx = ctx,
	    .res = res,
	    .flags = flags,
	    .cur = start,
	    .p = path,
	    .end = path + len,
	    .must_dir = (flags & RS_DIRECTORY) && !(flags & RS_PARENT),
	    /* clamped, so the 32-bit counters can never wrap past a limit */
	    .max_nest = ctx->limits.max_nest < RS_LIMIT_MAX ? ctx->limits.max_nest : RS_LIMIT_MAX,
	    .max_total =
		ctx->limits.max_total < RS_LIMIT_MAX ? ctx->limits.max_total : RS_LIMIT_MAX,
	    .budget = ctx->budget && *ctx->budget < RS_WALK_BUDGET ? *ctx->budget : RS_WALK_BUDGET,
	    .low = UINT32_MAX,
	    .power = 1,
	    .mark = {.depth = UINT32_MAX},
	};
	int err;

	*res = (struct rs_result){.node = start};
	if (len == 0)
		return -ENOENT;
	if (len == RS_PATH_MAX)
		return -ENAMETOOLONG;
	res->trailing_slash = path[len - 1] == '/';
	if (path[0] == '/') {
		err = rs_jump_root(&w);
		if (err)
			goto out;
	}
	err = rs_walk(&w);
	res->node = w.cur;
	if (ctx->budget) /* the step past the budget was never taken */
		*ctx->budget -= w.steps < w.budget ? w.steps : w.budget;
out:
	if (w.heap)
		(ctx->free_fn ? ctx->free_fn : free)(w.heap);
	return err;
}
