/*
 * What readlink answers in kernel mode. The kernel walks the answer itself, and a ".." at
 * the mount's root takes it out of the mount onto the host; an absolute target would start
 * at the host's root. In-root, such a ".." stays at the root and "/" means the tree's root.
 * An answer holding a ".." is never safe to hand out: the kernel keeps link bodies, walks
 * them after a rename it has not told us about yet, and uses one body for every name of a
 * hard-linked link. So a target with a ".." or a leading "/" is answered as the absolute
 * path, through the mountpoint, of where its in-root walk gets to, plus the rest.
 */
#include "links.h"
#include "notify.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

/* Links whose answer was handed out and depends on where they are or on other links. */
struct cfs_linkset {
	GHashTable *ids;
};

/* The in-root answer for LINK (abslinks=inroot), into OUT: see cfs_kernel_target. */
static ssize_t cfs_inroot_answer(const struct cfs_daemon *d, uint32_t link, char *out,
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
	/* Any other answer names where the in-root walk of the target gets to by its path
	 * through the mountpoint: no "..", so no rename racing the kernel's walk, no hard link
	 * elsewhere and no cached body can take it out of the mount. */
	err = cfs_inroot_walk(d->tree, lim, d->walk_budget, link, &at, &rest, &end, &as_stored);
	if (err)
		return err;
	ssize_t n = cfs_mount_path(d, at, out);
	return n < 0 ? n : cfs_inroot_append(out, (size_t)n, rest, end);
}

ssize_t cfs_kernel_target(const struct cfs_daemon *d, uint32_t link, char *out, bool *dependent)
{
	const char *target;
	size_t len;
	int err;

	if (!d->opts.abslinks_raw)
		return cfs_inroot_answer(d, link, out, dependent);
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

ssize_t cfs_link_end(const struct cfs_daemon *d, const struct rs_cred *cred, uint32_t link,
		     char *out)
{
	struct rs_ctx ctx = {.ops = &cfs_tree_rs_ops,
			     .tree = d->tree,
			     .root = CFS_ROOT,
			     .limits = d->opts.limits,
			     .cred = cred,
			     .budget = d->walk_budget};
	char name[RS_NAME_MAX + 1];
	const char *nm;
	size_t len;
	struct rs_result res;

	cfs_tree_name(d->tree, link, &nm, &len);
	memcpy(name, nm, len);
	name[len] = '\0';
	int err = rs_resolve(&ctx, cfs_tree_parent(d->tree, link), name, RS_FOLLOW, &res);
	return err ? err : cfs_answer_path(d, link, (uint32_t)res.node, out);
}

ssize_t cfs_server_answer(const struct cfs_daemon *d, const struct rs_cred *cred, uint32_t link,
			  char *out)
{
	bool dependent;
	ssize_t n = cfs_link_end(d, cred, link, out);

	if (n >= 0 || !cfs_shows_as_link((int)n))
		return n;
	/* broken: its target (made safe), which fails for the kernel as it failed here; but a
	 * link past the limits may well resolve for the kernel a link further on, so those
	 * answer themselves: the kernel loops until its own limit, ELOOP */
	return n == -ELOOP ? cfs_mount_path(d, link, out)
			   : cfs_inroot_answer(d, link, out, &dependent);
}

void cfs_links_note(const struct cfs_daemon *d, uint32_t link)
{
	if (d->answered)
		g_hash_table_add(d->answered->ids, GUINT_TO_POINTER(link));
}

void cfs_links_changed(struct cfs_daemon *d)
{
	GHashTableIter it;
	gpointer id;

	if (!d->answered || g_hash_table_size(d->answered->ids) == 0)
		return;
	g_hash_table_iter_init(&it, d->answered->ids);
	while (g_hash_table_iter_next(&it, &id, NULL))
		cfs_notify_inode(d->notifier, GPOINTER_TO_UINT(id));
	g_hash_table_remove_all(d->answered->ids);
}

struct cfs_linkset *cfs_linkset_new(void)
{
	struct cfs_linkset *s = g_new(struct cfs_linkset, 1); /* like GLib, aborts on OOM */

	s->ids = g_hash_table_new(NULL, NULL);
	return s;
}

void cfs_linkset_free(struct cfs_linkset *s)
{
	if (!s)
		return;
	g_hash_table_destroy(s->ids);
	g_free(s);
}

ssize_t cfs_mount_path(const struct cfs_daemon *d, uint32_t node, char *out)
{
	char rel[RS_PATH_MAX];
	const char *mnt = d->opts.mountpoint;
	/* libfuse canonicalized the mountpoint (realpath): absolute, without links or ".." */
	size_t m = strcmp(mnt, "/") == 0 ? 0 : strlen(mnt);
	ssize_t n = node == CFS_ROOT ? 0 : cfs_relative_path(d->tree, CFS_ROOT, node, rel);

	if (n < 0 || m + 1 + (size_t)n >= RS_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(out, mnt, m);
	if (n == 0 && m > 0) {
		out[m] = '\0';
		return (ssize_t)m;
	}
	out[m] = '/';
	memcpy(out + m + 1, rel, (size_t)n);
	out[m + 1 + n] = '\0';
	return (ssize_t)(m + 1) + n;
}

ssize_t cfs_answer_path(const struct cfs_daemon *d, uint32_t link, uint32_t node, char *out)
{
	struct stat st;
	uint32_t dir = cfs_tree_parent(d->tree, link);
	ssize_t n;

	cfs_tree_stat(d->tree, link, &st);
	if (st.st_nlink == 1) {
		n = cfs_relative_path(d->tree, dir, node, out);
		if (n < 0 ||
		    !(n >= 2 && out[0] == '.' && out[1] == '.' && (n == 2 || out[2] == '/')))
			return n;
	}
	return cfs_mount_path(d, node, out);
}
