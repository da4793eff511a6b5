/*
 * What readlink answers. In kernel mode an absolute target means "from the tree's root", so it
 * is rewritten as the path from the link's directory up to the root and down again; the
 * kernel then resolves it without leaving the mount.
 */
#include "daemon.h"

#include <errno.h>
#include <string.h>

static unsigned cfs_depth(const struct cfs_tree *t, uint32_t dir)
{
	unsigned n = 0;

	for (; dir != CFS_ROOT; dir = cfs_tree_parent(t, dir))
		n++;
	return n;
}

/* Drop the ".." components that would climb above the root (they stay at the root
 * in-root), and the "." and empty ones, from the front of an absolute target. */
static const char *cfs_skip_rootward(const char *p, const char *end)
{
	for (;;) {
		while (p < end && *p == '/')
			p++;
		size_t n = (size_t)(end - p);
		if (n >= 2 && p[0] == '.' && p[1] == '.' && (n == 2 || p[2] == '/'))
			p += 2;
		else if (n >= 1 && p[0] == '.' && (n == 1 || p[1] == '/'))
			p += 1;
		else
			return p;
	}
}

ssize_t cfs_inroot_target(const struct cfs_tree *t, uint32_t link, const char *target,
			  size_t len, char *out)
{
	const char *rest = cfs_skip_rootward(target, target + len);
	size_t rest_len = (size_t)(target + len - rest);
	unsigned up = cfs_depth(t, cfs_tree_parent(t, link));
	size_t n = 0;

	if ((size_t)up * 3 + rest_len + 2 > RS_PATH_MAX)
		return -ENAMETOOLONG;
	for (unsigned i = 0; i < up; i++) {
		memcpy(out + n, "../", 3);
		n += 3;
	}
	memcpy(out + n, rest, rest_len);
	n += rest_len;
	if (rest_len == 0) /* the root itself: "../.." or "." */
		n = n ? n - 1 : (out[0] = '.', 1);
	out[n] = '\0';
	return (ssize_t)n;
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
