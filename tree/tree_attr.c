/*
 * The tree's attributes (mode, owner, extended attributes and ACLs, times) and the kernel's
 * references to its nodes. The contract is in tree.h, the layout in tree_int.h.
 */
#include "tree_int.h"

#include <errno.h>
#include <string.h>
#include <sys/xattr.h> /* XATTR_CREATE, XATTR_REPLACE */

/* ---- attributes ---- */

int cfs_tree_chmod(struct cfs_tree *t, uint32_t id, mode_t mode)
{
	struct cfs_node *n = nd(t, id);

	if (S_ISLNK(n->mode))
		return -EOPNOTSUPP; /* as Linux: a link's mode is always 0777 */
	tree_note_attr(t, id);
	n->mode = (uint16_t)((n->mode & S_IFMT) | (mode & 07777));
	tree_acl_chmod(t, id, mode);
	tree_touch(t, id, now_ns());
	return 0;
}

bool cfs_tree_drop_setid(struct cfs_tree *t, uint32_t id, const struct rs_cred *cred)
{
	struct cfs_node *n = nd(t, id);
	unsigned mode = n->mode;

	if (!cred || !S_ISREG(mode))
		return false;
	mode &= ~(unsigned)S_ISUID;
	if ((mode & S_IXGRP) || !cred_in_group(cred, n->gid))
		mode &= ~(unsigned)S_ISGID;
	if (mode == n->mode)
		return false;
	cfs_tree_chmod(t, id, mode & 07777);
	return true;
}

int cfs_tree_chown(struct cfs_tree *t, uint32_t id, uid_t uid, gid_t gid)
{
	struct cfs_node *n = nd(t, id);

	tree_note_attr(t, id);
	if (uid != (uid_t)-1)
		n->uid = uid;
	if (gid != (gid_t)-1)
		n->gid = gid;
	tree_touch(t, id, now_ns());
	return 0;
}

/* ---- extended attributes (the table: tree_xattr.c) ---- */

/* tmpfs's namespaces (its xattr handlers, the VFS's xattr_resolve_name and
 * xattr_permission), for a change of NAME on N. */
static int check_xattr(const struct cfs_node *n, const char *name, const void *value, size_t size)
{
	int r = tree_xattr_namespace(name);

	if (r)
		return r;
	if (size > CFS_XATTR_SIZE_MAX)
		return -E2BIG;
	if (!strncmp(name, "system.", 7)) { /* the two ACLs */
		if (S_ISLNK(n->mode))
			return -EOPNOTSUPP;
		if (name[17] == 'd' && !is_dir(n))
			return value ? -EACCES : 0;
		return value ? tree_acl_valid(value, size) : 0;
	}
	if (!strncmp(name, "user.", 5) && !S_ISREG(n->mode) && !is_dir(n))
		return -EPERM;
	return 0;
}

/* An access ACL sets the mode's permission bits, and is kept only if it says more than they
 * can (posix_acl_update_mode). */
static int set_access_acl(struct cfs_tree *t, uint32_t id, const void *value, size_t size,
			  int flags)
{
	static const char name[] = "system.posix_acl_access";
	struct cfs_node *n = nd(t, id);
	mode_t mode = n->mode;
	size_t len;
	bool had = tree_xattr_value(t, id, name, &len) != NULL;
	int r;

	if ((flags & XATTR_CREATE) && had)
		return -EEXIST;
	if ((flags & XATTR_REPLACE) && !had)
		return -ENODATA;
	r = tree_acl_mode(value, size, &mode);
	if (r)
		r = tree_xattr_set(t, id, name, value, size, 0);
	else if (had)
		tree_xattr_set(t, id, name, NULL, 0, 0); /* a removal: it cannot fail */
	if (!r)
		n->mode = (uint16_t)mode;
	return r;
}

int cfs_tree_setxattr(struct cfs_tree *t, uint32_t id, const char *name, const void *value,
		      size_t size, int flags)
{
	int r = check_xattr(nd(t, id), name, value ? value : "", size);

	if (!value)
		value = "";
	if (!r && !strcmp(name, "system.posix_acl_access"))
		r = set_access_acl(t, id, value, size, flags);
	else if (!r)
		r = tree_xattr_set(t, id, name, value, size, flags);
	if (!r)
		tree_touch(t, id, now_ns());
	return r;
}

int cfs_tree_acl_create(struct cfs_tree *t, uint32_t dir, uint32_t id, mode_t umask)
{
	struct cfs_node *n = nd(t, id);
	mode_t mode = n->mode;
	int r;

	if (S_ISLNK(n->mode))
		return 0;
	r = tree_acl_inherit(t, dir, id, &mode);
	if (r < 0)
		return r;
	if (r)
		mode &= ~(umask & 0777);
	n->mode = (uint16_t)mode;
	return 0;
}

int cfs_tree_removexattr(struct cfs_tree *t, uint32_t id, const char *name)
{
	int r = check_xattr(nd(t, id), name, NULL, 0);

	if (!r)
		r = tree_xattr_set(t, id, name, NULL, 0, 0);
	if (!r)
		tree_touch(t, id, now_ns());
	return r;
}

/* Outside int64 ns (before 1677 or after 2262) a time is clamped, as the kernel clamps to a
 * filesystem's range. */
static int ns_of(const struct timespec *ts, int64_t *ns)
{
	if (ts->tv_nsec < 0 || ts->tv_nsec >= CFS_NS)
		return -EINVAL;
	if (ts->tv_sec < CFS_SEC_MIN)
		*ns = CFS_SEC_MIN * CFS_NS;
	else if (ts->tv_sec > CFS_SEC_MAX)
		*ns = CFS_SEC_MAX * CFS_NS + (CFS_NS - 1);
	else
		*ns = (int64_t)ts->tv_sec * CFS_NS + ts->tv_nsec;
	return 0;
}

int cfs_tree_set_times(struct cfs_tree *t, uint32_t id, const struct timespec *atime,
		       const struct timespec *mtime, const struct timespec *ctime)
{
	struct cfs_node *n = nd(t, id);
	int64_t a = n->atime, m = n->mtime, c = n->ctime;
	int err = 0;

	if (atime)
		err = ns_of(atime, &a);
	if (!err && mtime)
		err = ns_of(mtime, &m);
	if (!err && ctime)
		err = ns_of(ctime, &c);
	if (err)
		return err;
	tree_note_attr(t, id);
	n->atime = a;
	n->mtime = m;
	tree_touch(t, id, c);
	return 0;
}

/* ---- kernel references ---- */

void cfs_tree_ref(struct cfs_tree *t, uint32_t id, uint64_t n)
{
	struct cfs_node *nn = nd(t, id);
	uint64_t add = n < UINT32_MAX - nn->refs ? n : UINT32_MAX - nn->refs;

	nn->refs += (uint32_t)add;
	t->total_refs += add;
}

void cfs_tree_unref(struct cfs_tree *t, uint32_t id, uint64_t n)
{
	struct cfs_node *nn = nd(t, id);

	if (nn->refs == UINT32_MAX)
		return; /* saturated: the true count is unknown, so the node stays */
	uint64_t sub = n < nn->refs ? n : nn->refs;
	nn->refs -= (uint32_t)sub;
	t->total_refs -= sub;
	tree_node_release(t, id);
	tree_arena_tidy(t);
}

uint64_t cfs_tree_refs(const struct cfs_tree *t, uint32_t id)
{
	return nd(t, id)->refs;
}

uint64_t cfs_tree_total_refs(const struct cfs_tree *t)
{
	return t->total_refs;
}

void cfs_tree_each_referenced(const struct cfs_tree *t, void (*fn)(void *data, uint32_t id),
			      void *data)
{
	/* a freed handle has no references: only live nodes are visited */
	for (uint32_t id = CFS_ROOT; id < t->next_id; id++)
		if (nd(t, id)->refs)
			fn(data, id);
}
