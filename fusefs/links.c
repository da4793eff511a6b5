/*
 * What readlink answers in each follow mode. The kernel walks an answer itself: a ".." at the
 * mount's root takes it out onto the host, and so does any path through the mountpoint once
 * someone renames or mounts over what that path names above the mount. So no answer names
 * anything outside the mount: an answer that must climb climbs with the up name (CFS_UP_NAME),
 * which every directory answers with its parent in the tree and the root with itself
 * (links.h). However the tree or the host change between the answer and the kernel's walk, and
 * whichever name of a hard-linked link the kernel follows, the walk climbs to the mount's root
 * and no further; and, a directory rather than a link, the up name costs none of the kernel's
 * 40 links.
 */
#include "links.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

const struct rs_cred cfs_anyone = {(uid_t)-2, (gid_t)-2, NULL, 0};

/* LINK's target made safe, into OUT (RS_PATH_MAX bytes): as stored when it is relative without
 * "..", else the way to where its in-root walk leads (cfs_answer_path) plus the rest, that walk
 * made with cfs_anyone's rights so that the answer shows nothing a caller could not see
 * itself (the kernel walks on from where it stopped, with the caller's rights). *dependent as
 * for cfs_kernel_target. Length or -errno. */
static ssize_t cfs_safe_target(const struct cfs_daemon *d, uint32_t link, char *out,
			       bool *dependent)
{
	/* at least the kernel's limits: where our walk gives up, the kernel's does too */
	struct rs_limits lim = {MAX(d->opts.limits.max_nest, rs_limits_linux.max_nest),
				MAX(d->opts.limits.max_total, rs_limits_linux.max_total)};
	const char *target, *rest, *end;
	size_t len;
	uint32_t at;
	bool as_stored; /* never enough here: the tree changes under the kernel's walks */
	int err = cfs_tree_readlink(d->tree, link, &target, &len);

	if (err)
		return err;
	/* A relative target without ".." only ever walks down from where the kernel finds the
	 * link, whatever the tree does meanwhile: it is answered as stored. */
	*dependent = cfs_target_may_climb(target, len);
	if (!*dependent) {
		memcpy(out, target, len);
		out[len] = '\0';
		return (ssize_t)len;
	}
	/* Any other answer names where the in-root walk of the target gets to, climbing with
	 * the up name: no ".." and no host path, so no rename racing the kernel's walk, no hard
	 * link elsewhere and no cached body can take it out of the mount. */
	err = cfs_inroot_walk(d->tree, lim, &cfs_anyone, d->walk_budget, d->root_alias, link, &at,
			      &rest, &end, &as_stored);
	if (err)
		return err;
	ssize_t n = cfs_answer_path(d, link, at, out);
	if (n == 1 && out[0] == '.' && rest + strspn(rest, "/") < end)
		n = 0; /* "x", not "./x" */
	return n < 0 ? n : cfs_inroot_append(out, (size_t)n, rest, end, CFS_UP_NAME);
}

ssize_t cfs_kernel_target(const struct cfs_daemon *d, uint32_t link, char *out, bool *dependent)
{
	const char *target;
	size_t len;
	int err;

	if (!d->opts.abslinks_raw)
		return cfs_safe_target(d, link, out, dependent);
	/* abslinks=raw asks for the host's meaning */
	if ((err = cfs_tree_readlink(d->tree, link, &target, &len)))
		return err;
	*dependent = false;
	memcpy(out, target, len);
	out[len] = '\0';
	return (ssize_t)len;
}

bool cfs_shows_as_link(int err)
{
	return err == -ENOENT || err == -ENOTDIR || err == -ELOOP || err == -EACCES ||
	       err == -ENAMETOOLONG;
}

/* The resolver's walk of NAME (LEN bytes) in DIR, following links, for CRED (NULL: no
 * permission checks), on the request's budget. Uncounted: a request's walks go through
 * cfs_walk, and only the private check (cfs_link_lookup) comes here directly. */
static int cfs_resolve(const struct cfs_daemon *d, const struct rs_cred *cred, uint32_t dir,
		       const char *name, size_t len, struct rs_result *res)
{
	struct rs_ctx ctx = {.ops = &cfs_tree_rs_ops,
			     .tree = d->tree,
			     .root = CFS_ROOT,
			     .limits = d->opts.limits,
			     .cred = cred,
			     .budget = d->walk_budget,
			     .root_alias = d->root_alias,
			     .root_alias_len = d->root_alias_len};
	char path[RS_NAME_MAX + 1];

	memcpy(path, name, len);
	path[len] = '\0';
	return rs_resolve(&ctx, dir, path, RS_FOLLOW, res);
}

/* Every walk a request makes along a chain (collapse and server modes) comes here, so that
 * `stats` counts it once, with the links it followed and its time; what it costs per link is
 * the resolver's alone. */
static int cfs_walk(struct cfs_daemon *d, const struct rs_cred *cred, uint32_t dir,
		    const char *name, size_t len, struct rs_result *res)
{
	struct cfs_walk_stats *w = &d->walk;
	uint64_t t0 = cfs_now_ns();
	int err = cfs_resolve(d, cred, dir, name, len, res);

	cfs_hist_add(&d->walk_ns, cfs_now_ns() - t0);
	w->walks++;
	w->links += res->links;
	w->heap_frames += res->heap_frames;
	w->allocs += res->allocs;
	w->max_depth = MAX(w->max_depth, res->max_depth);
	w->loops += res->cycle != 0;
	w->eloop += err == -ELOOP;
	w->errors += err && err != -ELOOP;
	return err;
}

/* Collapse mode: the end of LINK's whole chain, walked for CRED (NULL: no permission checks),
 * as cfs_answer_path spells it, into OUT; when CRED may not search a directory on the way,
 * LINK's safe target (cfs_safe_target). The length, or the walk's -errno. */
static ssize_t cfs_link_end(struct cfs_daemon *d, const struct rs_cred *cred, uint32_t link,
			    char *out)
{
	const char *name;
	size_t len;
	struct rs_result res;
	bool dependent; /* the kernel keeps no body in these modes but those coherence drops */

	cfs_tree_name(d->tree, link, &name, &len);
	int err = cfs_walk(d, cred, cfs_tree_parent(d->tree, link), name, len, &res);
	/* an end CRED may not reach would show it where the chain goes: the kernel walks the
	 * link's safe target instead, link by link, with the rights of whoever asks */
	if (err == -EACCES)
		return cfs_safe_target(d, link, out, &dependent);
	return err ? err : cfs_answer_path(d, link, (uint32_t)res.node, out);
}

/* Server mode: what readlink answers for LINK, into OUT, for CRED: when it resolves, the path to
 * its end (cfs_answer_path); when broken (cfs_shows_as_link), something the kernel's walk fails
 * on with the same errno: the target made safe, or for ELOOP the way to the link itself. */
static ssize_t cfs_server_answer(struct cfs_daemon *d, const struct rs_cred *cred, uint32_t link,
				 char *out)
{
	bool dependent;
	ssize_t n = cfs_link_end(d, cred, link, out);

	if (n >= 0 || !cfs_shows_as_link((int)n))
		return n;
	/* broken: its target (made safe), which fails for the kernel as it failed here; but a
	 * link past the limits may well resolve for the kernel a link further on, so those
	 * answer themselves: the kernel loops until its own limit, ELOOP */
	return n == -ELOOP ? cfs_answer_path(d, link, link, out)
			   : cfs_safe_target(d, link, out, &dependent);
}

ssize_t cfs_link_answer(struct cfs_daemon *d, const struct rs_cred *cred, uint32_t link, char *out)
{
	bool dependent = false;
	ssize_t n;

	switch (d->opts.follow) {
	case CFS_FOLLOW_COLLAPSE: /* the kernel may keep it for every caller: anyone's */
		n = cfs_link_end(d, &cfs_anyone, link, out);
		break;
	case CFS_FOLLOW_SERVER: /* asked only by a caller the link shows as a link to */
		n = cfs_server_answer(d, cred, link, out);
		break;
	default:
		n = cfs_kernel_target(d, link, out, &dependent);
	}
	if (n >= 0 && dependent)
		cfs_coherence_answered(d, link);
	return n;
}

int cfs_link_lookup(struct cfs_daemon *d, const struct rs_cred *cred, uint32_t dir,
		    const char *name, size_t len, uint32_t *node, bool *private)
{
	struct rs_result res;
	int err = cfs_walk(d, cred, dir, name, len, &res);

	if (err)
		return err;
	*node = (uint32_t)res.node;
	/* the same walk with no rights: it decides how long the kernel may keep the answer, not
	 * what it is, so it is counted apart, once, and its links in no counter */
	*private = cfs_resolve(d, &cfs_anyone, dir, name, len, &res) == -EACCES;
	d->walk.private_checks++;
	return 0;
}

/* DEPTH up steps from where the kernel finds a link, then down from the mount's root to NODE:
 * right from every directory no deeper than DEPTH, as the up name stops at the root. */
static ssize_t cfs_rooted_path(const struct cfs_daemon *d, uint32_t depth, uint32_t node, char *out)
{
	static const char up[] = CFS_UP_NAME "/";
	const size_t step = sizeof(up) - 1;
	char rel[RS_PATH_MAX];
	ssize_t n = node == CFS_ROOT ? 0 : cfs_relative_path(d->tree, CFS_ROOT, node, rel);

	if (n < 0 || (size_t)depth * step + (size_t)n + 2 >= RS_PATH_MAX)
		return -ENAMETOOLONG;
	for (uint32_t i = 0; i < depth; i++)
		memcpy(out + i * step, up, step);
	size_t at = depth * step;
	if (n == 0 && depth > 0)
		at--; /* ".^/.^", not ".^/.^/" */
	else if (n == 0)
		out[at++] = '.';
	memcpy(out + at, rel, (size_t)n);
	out[at + (size_t)n] = '\0';
	return (ssize_t)(at + (size_t)n);
}

_Static_assert(sizeof(CFS_UP_NAME) == sizeof(".."), "the up name stands in for a \"..\" in place");

ssize_t cfs_answer_path(const struct cfs_daemon *d, uint32_t link, uint32_t node, char *out)
{
	struct stat st;

	cfs_tree_stat(d->tree, link, &st);
	/* one body serves every name of a hard-linked link: climb to the root from the
	 * deepest of them (the up name stops there), then down */
	if (st.st_nlink > 1)
		return cfs_rooted_path(d, cfs_tree_name_depth(d->tree, link), node, out);
	ssize_t n = cfs_relative_path(d->tree, cfs_tree_parent(d->tree, link), node, out);
	/* cfs_relative_path's ".." steps all come first: each becomes the up name, of the
	 * same length */
	for (ssize_t i = 0; i + 1 < n && memcmp(out + i, "..", 2) == 0; i += 3)
		out[i + 1] = CFS_UP_NAME[1];
	return n;
}
