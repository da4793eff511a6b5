/*
 * In-root link targets. The kernel walks what it is given itself, and a ".." at its root (the
 * mount's, or the copy's directory) takes it out onto the host; an absolute target would start
 * there. In-root, such a ".." stays at the root and "/" means the tree's root. So a target
 * that cannot climb past the root is given as stored, and any other with everything up to its
 * last climbing ".." replaced by the path from the link's directory up to the root: the
 * kernel's walk of that answer is the in-root walk of the target.
 */
#include "inroot.h"

#include <errno.h>
#include <string.h>

/* The next component of [*P, END), skipping slashes: its length (0 at the end). */
static size_t cfs_component(const char **p, const char *end, const char **name)
{
	while (*p < end && **p == '/')
		(*p)++;
	*name = *p;
	while (*p < end && **p != '/')
		(*p)++;
	return (size_t)(*p - *name);
}

static bool cfs_is_dotdot(const char *name, size_t n)
{
	return n == 2 && name[0] == '.' && name[1] == '.';
}

/* Where the last ".." of [P, END) that starts a component ends, or NULL without one. */
static const char *cfs_last_dotdot(const char *p, const char *end)
{
	const char *name, *last = NULL;
	size_t n;

	while ((n = cfs_component(&p, end, &name)) > 0)
		if (cfs_is_dotdot(name, n))
			last = p;
	return last;
}

bool cfs_target_may_climb(const char *target, size_t len)
{
	return (len > 0 && target[0] == '/') || cfs_last_dotdot(target, target + len);
}

/* Walk TARGET from directory DIR as the kernel will, up to LAST (the end of its last ".."):
 * *tail is set past every ".." that climbs above the root (left alone when none does). Links
 * on the way are followed in-root with LIMITS, so where this walk stops the kernel's fails
 * too and climbs no further. 0, or -ENOMEM. */
static int cfs_climb(const struct cfs_tree *t, struct rs_limits limits, uint32_t dir,
		     const char *target, const char *last, const char **tail)
{
	struct rs_ctx ctx = {
	    .ops = &cfs_tree_rs_ops, .tree = (void *)t, .root = CFS_ROOT, .limits = limits};
	const char *p = target, *name;
	uint32_t at = dir, next;
	size_t n;

	while (p < last && (n = cfs_component(&p, last, &name)) > 0) {
		if (cfs_tree_kind(t, at) != RS_DIR)
			return 0; /* ENOTDIR, even for "." and "..": the kernel stops here too */
		if (n == 1 && name[0] == '.')
			continue;
		if (cfs_is_dotdot(name, n)) {
			if (at == CFS_ROOT)
				*tail = p;
			else
				at = cfs_tree_parent(t, at);
			continue;
		}
		if (cfs_tree_lookup(t, at, name, n, &next) != 0)
			return 0; /* ENOENT: likewise */
		if (cfs_tree_kind(t, next) == RS_LINK) {
			char buf[RS_NAME_MAX + 1];
			struct rs_result res;

			memcpy(buf, name, n);
			buf[n] = '\0';
			int err = rs_resolve(&ctx, at, buf, RS_FOLLOW, &res);
			if (err)
				return err == -ENOMEM ? err : 0;
			next = (uint32_t)res.node;
		}
		at = next;
	}
	return 0;
}

ssize_t cfs_inroot_target(const struct cfs_tree *t, struct rs_limits limits, uint32_t link,
			  char *out)
{
	const char *target, *end, *tail;
	size_t len;
	uint32_t dir = cfs_tree_parent(t, link);
	int err = cfs_tree_readlink(t, link, &target, &len);

	if (err)
		return err;
	end = target + len;
	const char *last = cfs_last_dotdot(target, end);
	tail = target[0] == '/' ? target : NULL;
	if (last) {
		err = cfs_climb(t, limits, tail ? CFS_ROOT : dir, target, last, &tail);
		if (err)
			return err;
	}
	if (!tail) {
		memcpy(out, target, len);
		out[len] = '\0';
		return (ssize_t)len;
	}
	/* up to the root, then the rest without the "/", "." and ".." that stay there */
	const char *name = tail;
	size_t rest = 0;
	while (tail < end && (rest = cfs_component(&tail, end, &name)) > 0 &&
	       ((rest == 1 && name[0] == '.') || cfs_is_dotdot(name, rest)))
		;
	rest = rest ? (size_t)(end - name) : 0;
	ssize_t n = dir == CFS_ROOT ? 0 : cfs_relative_path(t, dir, CFS_ROOT, out);
	if (n < 0)
		return n;
	if ((size_t)n + 1 + rest >= RS_PATH_MAX)
		return -ENAMETOOLONG;
	if (n > 0 && rest > 0)
		out[n++] = '/';
	memcpy(out + n, name, rest);
	n += (ssize_t)rest;
	if (n == 0)
		out[n++] = '.';
	out[n] = '\0';
	return n;
}

/* ID's ancestors from the root down to ID itself, into CHAIN (at most MAX); the count, or
 * -ENAMETOOLONG when deeper than a path can be (every level costs at least 2 bytes). */
static int cfs_chain(const struct cfs_tree *t, uint32_t id, uint32_t *chain, int max)
{
	int n = 0;

	for (uint32_t x = id;; x = cfs_tree_parent(t, x)) {
		if (n == max)
			return -ENAMETOOLONG;
		chain[n++] = x;
		if (x == CFS_ROOT)
			break;
	}
	for (int i = 0; i < n / 2; i++) { /* root first */
		uint32_t tmp = chain[i];
		chain[i] = chain[n - 1 - i];
		chain[n - 1 - i] = tmp;
	}
	return n;
}

ssize_t cfs_relative_path(const struct cfs_tree *t, uint32_t from, uint32_t to, char *out)
{
	enum { MAX_DEPTH = RS_PATH_MAX / 2 + 1 };
	static _Thread_local uint32_t a[MAX_DEPTH], b[MAX_DEPTH];
	int na = cfs_chain(t, from, a, MAX_DEPTH), nb = cfs_chain(t, to, b, MAX_DEPTH), common = 0;
	size_t n = 0;

	if (na < 0 || nb < 0)
		return -ENAMETOOLONG;
	while (common < na && common < nb && a[common] == b[common])
		common++;
	for (int i = common; i < na; i++) {
		if (n + 3 >= RS_PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(out + n, "../", 3);
		n += 3;
	}
	for (int i = common; i < nb; i++) {
		const char *name;
		size_t len;
		cfs_tree_name(t, b[i], &name, &len);
		if (n + len + 1 >= RS_PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(out + n, name, len);
		n += len;
		out[n++] = '/';
	}
	if (n == 0)
		out[n++] = '.';
	else
		n--; /* the last '/' */
	out[n] = '\0';
	return (ssize_t)n;
}
