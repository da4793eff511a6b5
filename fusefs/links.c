/*
 * What readlink answers in kernel mode. The kernel walks the answer itself, and a ".." at
 * the mount's root takes it out of the mount onto the host; an absolute target would start
 * at the host's root. In-root, such a ".." stays at the root and "/" means the tree's root.
 * An answer holding a ".." is never safe to hand out: the kernel keeps link bodies, walks
 * them after a rename it has not told us about yet, and uses one body for every name of a
 * hard-linked link. So a target with a ".." or a leading "/" is answered as the absolute
 * path, through the mountpoint, of where its in-root walk gets to, plus the rest.
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

/* Walk TARGET in-root from directory *AT up to LAST (the end of its last ".."), following
 * links on the way with at least the kernel's limits. *at ends where the walk got to and
 * *stop where it stopped in TARGET: at LAST, or at the component that failed (missing, under
 * a non-directory, a link that does not resolve), which the answer keeps so that the kernel
 * fails there too. 0, or -ENOMEM. */
static int cfs_climb(const struct cfs_daemon *d, uint32_t *at, const char *target,
		     const char *last, const char **stop)
{
	struct rs_ctx ctx = {
	    .ops = &cfs_tree_rs_ops,
	    .tree = d->tree,
	    .root = CFS_ROOT,
	    .limits = {MAX(d->opts.limits.max_nest, rs_limits_linux.max_nest),
		       MAX(d->opts.limits.max_total, rs_limits_linux.max_total)},
	};
	const char *p = target, *name;
	uint32_t next;
	size_t n;

	for (*stop = p; p < last && (n = cfs_component(&p, last, &name)) > 0; *stop = p) {
		if (cfs_tree_kind(d->tree, *at) != RS_DIR)
			return 0; /* ENOTDIR, even for "." and ".." */
		if (n == 1 && name[0] == '.')
			continue;
		if (cfs_is_dotdot(name, n)) {
			*at = cfs_tree_parent(d->tree, *at); /* the root's is the root */
			continue;
		}
		if (cfs_tree_lookup(d->tree, *at, name, n, &next) != 0)
			return 0; /* ENOENT */
		if (cfs_tree_kind(d->tree, next) == RS_LINK) {
			char buf[RS_NAME_MAX + 1];
			struct rs_result res;

			memcpy(buf, name, n);
			buf[n] = '\0';
			int err = rs_resolve(&ctx, *at, buf, RS_FOLLOW, &res);
			if (err)
				return err == -ENOMEM ? err : 0;
			next = (uint32_t)res.node;
		}
		*at = next;
	}
	*stop = last;
	return 0;
}

/* Append the components of [P, END) to the path OUT[0..N), every ".." turned into ".": the
 * walk stopped before them or they stayed at the root, and a "." keeps a stop under a file
 * ENOTDIR. A trailing slash is kept (it still asks for a directory). */
static ssize_t cfs_append_rest(char *out, size_t n, const char *p, const char *end)
{
	bool slash = p < end && end[-1] == '/';
	const char *name;
	size_t len;

	while ((len = cfs_component(&p, end, &name)) > 0 || (slash && p == end)) {
		bool up = cfs_is_dotdot(name, len);
		size_t put = up ? 1 : len;

		if (n + 1 + put >= RS_PATH_MAX)
			return -ENAMETOOLONG;
		if (out[n - 1] != '/')
			out[n++] = '/';
		memcpy(out + n, up ? "." : name, put);
		n += put;
		if (len == 0)
			break; /* the trailing slash */
	}
	out[n] = '\0';
	return (ssize_t)n;
}

ssize_t cfs_kernel_target(const struct cfs_daemon *d, uint32_t link, char *out, bool *dependent)
{
	const char *target, *end, *stop;
	size_t len;
	uint32_t at;
	int err = cfs_tree_readlink(d->tree, link, &target, &len);

	if (err)
		return err;
	end = target + len;
	const char *last = cfs_last_dotdot(target, end);
	/* A relative target without ".." only ever walks down from where the kernel finds the
	 * link, whatever the tree does meanwhile: it is answered as stored. So is every target
	 * with abslinks=raw, which asks for the host's meaning. */
	*dependent = !d->opts.abslinks_raw && (target[0] == '/' || last);
	if (!*dependent) {
		memcpy(out, target, len);
		out[len] = '\0';
		return (ssize_t)len;
	}
	/* Any other answer names where the in-root walk of the target gets to by its path
	 * through the mountpoint: no "..", so no rename racing the kernel's walk, no hard link
	 * elsewhere and no cached body can take it out of the mount. */
	at = target[0] == '/' ? CFS_ROOT : cfs_tree_parent(d->tree, link);
	err = last ? cfs_climb(d, &at, target, last, &stop) : 0;
	if (err)
		return err;
	if (!last)
		stop = target;
	ssize_t n = cfs_mount_path(d, at, out);
	return n < 0 ? n : cfs_append_rest(out, (size_t)n, stop, end);
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
		if (n < 0 || !(n >= 2 && out[0] == '.' && out[1] == '.' && (n == 2 || out[2] == '/')))
			return n;
	}
	return cfs_mount_path(d, node, out);
}
