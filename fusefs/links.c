/*
 * What readlink answers in kernel mode: the in-root spelling of a target that could climb
 * out of the mount (inroot.c), and the links whose answer the kernel was given, so that a
 * change to the tree takes those answers back.
 */
#include "daemon.h"
#include "notify.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

/* Links whose answer was handed out and depends on where they are or on other links. */
struct cfs_linkset {
	GHashTable *ids;
};

ssize_t cfs_kernel_target(const struct cfs_daemon *d, uint32_t link, char *out, bool *dependent)
{
	/* at least the kernel's limits: where our walk gives up, the kernel's does too */
	struct rs_limits lim = {MAX(d->opts.limits.max_nest, rs_limits_linux.max_nest),
				MAX(d->opts.limits.max_total, rs_limits_linux.max_total)};
	const char *target;
	size_t len;
	int err = cfs_tree_readlink(d->tree, link, &target, &len);

	if (err)
		return err;
	/* where the link is and what other links lead to decide the answer from now on */
	*dependent = !d->opts.abslinks_raw && cfs_target_may_climb(target, len);
	if (*dependent)
		return cfs_inroot_target(d->tree, lim, link, out);
	memcpy(out, target, len);
	out[len] = '\0';
	return (ssize_t)len;
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
