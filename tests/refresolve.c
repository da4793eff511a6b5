/*
 * The reference walk: one function per level of the grammar (path → body → component), and
 * a link's body is simply walked by a recursive call. Clarity over speed; see refresolve.h.
 */
#include "refresolve.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

struct ref_walk {
	const struct rs_ctx *ctx;
	struct rs_result *res;
	unsigned flags;
	uint64_t start;
	bool follow;   /* LOOKUP_FOLLOW: follow a link in the final position */
	bool must_dir; /* LOOKUP_DIRECTORY: the final node must be a directory */
};

static int ref_body(struct ref_walk *r, uint64_t *cur, const char *p, const char *end,
		    uint32_t depth, bool final_body);

static bool ref_is_dir(const struct ref_walk *r, uint64_t node)
{
	return r->ctx->ops->kind(r->ctx->tree, node) == RS_DIR;
}

static int ref_may_search(const struct ref_walk *r, uint64_t dir)
{
	const struct rs_ctx *c = r->ctx;

	return c->ops->may_search ? c->ops->may_search(c->tree, dir, c->cred) : 0;
}

/*
 * Follow LINK found in directory *CUR. DEPTH is the nesting of the body the link was found
 * in; TAIL says nothing followed the link in that body, in which case (as in Linux, and only
 * inside a link body) the link's body takes over its frame instead of nesting one deeper.
 */
static int ref_follow(struct ref_walk *r, uint64_t *cur, uint64_t link, uint32_t depth, bool tail,
		      bool final)
{
	const struct rs_ctx *c = r->ctx;
	const char *body;
	size_t len;

	if (r->flags & RS_NO_SYMLINKS)
		return -ELOOP;
	r->res->links++;
	if (r->res->links > c->limits.max_total)
		return -ELOOP;
	int err = c->ops->readlink(c->tree, link, &body, &len);
	if (err)
		return err;
	if (len == 0)
		return -ENOENT;
	if (len >= RS_PATH_MAX)
		return -ENAMETOOLONG;
	uint32_t nest = tail && depth > 0 ? depth : depth + 1;
	if (nest > c->limits.max_nest)
		return -ELOOP;
	if (nest > r->res->max_depth)
		r->res->max_depth = nest;
	return ref_body(r, cur, body, body + len, nest, final);
}

/* Walk one component NAME in directory *CUR (already known to be a searchable directory). */
static int ref_component(struct ref_walk *r, uint64_t *cur, const char *name, size_t len,
			 uint32_t depth, bool tail, bool final)
{
	const struct rs_ctx *c = r->ctx;
	uint64_t node;

	if (len == 1 && name[0] == '.')
		return 0;
	if (len == 2 && name[0] == '.' && name[1] == '.') {
		if ((r->flags & RS_BENEATH) && *cur == r->start)
			return -EXDEV;
		if (*cur != c->root)
			*cur = c->ops->parent(c->tree, *cur);
		return 0;
	}
	if (len > RS_NAME_MAX)
		return -ENAMETOOLONG;
	int err = c->ops->lookup(c->tree, *cur, name, len, &node);
	if (err)
		return err;
	if (c->ops->kind(c->tree, node) == RS_LINK && (!final || r->follow))
		return ref_follow(r, cur, node, depth, tail, final);
	*cur = node;
	return 0;
}

/*
 * Walk the body [P, END) from *CUR. FINAL_BODY: nothing follows this body in the bodies
 * enclosing it, so its last component is the last of the whole walk.
 */
static int ref_body(struct ref_walk *r, uint64_t *cur, const char *p, const char *end,
		    uint32_t depth, bool final_body)
{
	if (p < end && *p == '/') {
		if (r->flags & RS_BENEATH)
			return -EXDEV;
		*cur = r->ctx->root;
		while (p < end && *p == '/')
			p++;
	}
	while (p < end) {
		const char *name = p;
		bool slash = false;

		while (p < end && *p != '/')
			p++;
		size_t len = (size_t)(p - name);
		while (p < end && *p == '/') {
			p++;
			slash = true;
		}
		bool tail = p == end;
		bool final = tail && final_body;

		if (!ref_is_dir(r, *cur))
			return -ENOTDIR;
		int err = ref_may_search(r, *cur);
		if (err)
			return err;
		if (final && slash) /* "name/" at the very end: follow it, want a directory */
			r->follow = r->must_dir = true;
		if (final && depth == 0 && (r->flags & RS_PARENT)) {
			if (len > RS_NAME_MAX)
				return -ENAMETOOLONG;
			r->res->last = name;
			r->res->last_len = len;
			return 0;
		}
		err = ref_component(r, cur, name, len, depth, tail, final);
		if (err)
			return err;
		if (!final && !ref_is_dir(r, *cur))
			return -ENOTDIR;
	}
	return 0;
}

int ref_resolve(const struct rs_ctx *ctx, uint64_t start, const char *path, unsigned flags,
		struct rs_result *res)
{
	size_t len = strlen(path);
	struct ref_walk r = {
	    .ctx = ctx,
	    .res = res,
	    .flags = flags,
	    .start = start,
	    .follow = flags & RS_FOLLOW,
	    .must_dir = (flags & RS_DIRECTORY) && !(flags & RS_PARENT),
	};
	uint64_t cur = start;

	*res = (struct rs_result){.node = start};
	if (len == 0)
		return -ENOENT;
	if (len >= RS_PATH_MAX)
		return -ENAMETOOLONG;
	res->trailing_slash = path[len - 1] == '/';
	int err = ref_body(&r, &cur, path, path + len, 0, true);
	res->node = cur;
	if (!err && r.must_dir && !ref_is_dir(&r, cur))
		err = -ENOTDIR;
	return err;
}
