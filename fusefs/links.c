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
