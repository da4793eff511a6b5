/*
 * The FUSE operations that change the tree, as tmpfs behaves. With default_permissions the
 * kernel checks permissions and the sticky bit before a request reaches us; what is left
 * here is ownership of new nodes and the namespace rules (in the tree). What the kernel's
 * caches no longer know is coherence.c's: the tree records each change, a handler only says
 * which nodeids its reply covers, and flushes before replying.
 */
#include "ops.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Owner and mode of a new node: the caller's, with a setgid directory's group (and, for a
 * directory, its setgid bit) inherited, as the kernel's inode_init_owner does for tmpfs. */
static struct cfs_new cfs_new_attrs(fuse_req_t req, struct cfs_daemon *d, uint32_t dir, mode_t mode,
				    bool is_dir)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct cfs_new a = {mode & 07777, ctx->uid, ctx->gid};
	struct stat st;

	cfs_tree_stat(d->tree, dir, &st);
	if (st.st_mode & S_ISGID) {
		a.gid = st.st_gid;
		if (is_dir)
			a.mode |= S_ISGID;
	}
	return a;
}

/* Reply with the entry of a node just made under PARENT: the node itself, never followed
 * (the kernel checks the kind it asked for). */
static void cfs_reply_new(fuse_req_t req, struct cfs_daemon *d, fuse_ino_t parent, const char *name,
			  uint32_t child, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	size_t len = strlen(name);
	int err;

	cfs_coherence_covered(d, parent); /* the kernel drops its caches of PARENT itself */
	cfs_coherence_flush(d);
	err = cfs_make_entry(req, d, parent, name, len, child, false, &e);
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	if (cfs_tree_kind(d->tree, child) == RS_LINK &&
	    cfs_follow_modes[d->opts.follow].lookups_follow)
		e.entry_timeout = 0; /* next time, the name is looked up and followed */
	if ((fi ? fuse_reply_create(req, &e, fi) : fuse_reply_entry(req, &e)) == 0)
		cfs_ref_entry(d, &e);
	else
		cfs_drop_entry(d, &e);
}

/* New node CHILD (NAME in DIR) takes DIR's default ACL, or the caller's umask where DIR has
 * none: the kernel leaves both to us (FUSE_POSIX_ACL with DONT_MASK, ops.c's init). If that
 * fails (the metadata limit) the node goes again. */
static int cfs_new_acl(fuse_req_t req, struct cfs_daemon *d, uint32_t dir, const char *name,
		       uint32_t child)
{
	if (d->opts.xattrs_off) /* no ACLs; the kernel applied the umask (no DONT_MASK) */
		return 0;
	int err = cfs_tree_acl_create(d->tree, dir, child, fuse_req_ctx(req)->umask);

	if (err && cfs_tree_kind(d->tree, child) == RS_DIR)
		cfs_tree_rmdir(d->tree, dir, name, strlen(name));
	else if (err)
		cfs_tree_unlink(d->tree, dir, name, strlen(name));
	return err;
}

/* mknod, create and mkdir: a new file or directory NAME under PARENT, then its entry. */
static void cfs_new_node(fuse_req_t req, enum cfs_op op, fuse_ino_t parent, const char *name,
			 mode_t mode, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t dir = cfs_node(d, parent), child;
	bool is_dir = op == CFS_OP_mkdir;
	struct cfs_new a = cfs_new_attrs(req, d, dir, mode, is_dir);
	int err;

	err = (is_dir ? cfs_tree_mkdir : cfs_tree_mkfile)(d->tree, dir, name, strlen(name), &a,
							  &child);
	if (!err)
		err = cfs_new_acl(req, d, dir, name, child);
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	if (fi)
		cfs_open_caching(d, fi, false, true);
	cfs_reply_new(req, d, parent, name, child, fi);
}

void cfs_ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t dir = cfs_node(d, parent), child;
	struct cfs_new a;
	int err;

	if (S_ISREG(mode)) {
		cfs_new_node(req, CFS_OP_mknod, parent, name, mode, NULL);
		return;
	}
	/* fifos, sockets (bind) and devices: the tree stores them, the kernel does their I/O */
	a = cfs_new_attrs(req, d, dir, mode, false);
	err = cfs_tree_mknod(d->tree, dir, name, strlen(name), mode & S_IFMT, rdev, &a, &child);
	if (!err)
		err = cfs_new_acl(req, d, dir, name, child);
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	cfs_reply_new(req, d, parent, name, child, NULL);
}

/* O_TMPFILE (handed over as a CREATE of "/", gate.c): a file with no name, which the reply's
 * reference keeps until the last close, or linkat names (cfs_ll_link). Its nodeid is its
 * node in every mode: no path leads to it. */
static void cfs_tmpfile(fuse_req_t req, fuse_ino_t parent, mode_t mode, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t dir = cfs_node(d, parent), child;
	struct cfs_new a = cfs_new_attrs(req, d, dir, mode, false);
	struct fuse_entry_param e = {0};
	int err = cfs_tree_mkfile_unnamed(d->tree, dir, &a, &child);

	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	cfs_coherence_covered(d, parent);
	cfs_coherence_flush(d);
	e.ino = child;
	e.generation = cfs_tree_generation(d->tree, child);
	cfs_stat(d, child, &e.attr);
	e.attr_timeout = cfs_attr_timeout(d);
	cfs_open_caching(d, fi, false, true);
	if (fuse_reply_create(req, &e, fi) == 0)
		cfs_ref_entry(d, &e);
	cfs_tree_unref(d->tree, child, 1); /* the tree's hold: the kernel's reference keeps it */
}

void cfs_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		   struct fuse_file_info *fi)
{
	if (strcmp(name, "/") == 0)
		cfs_tmpfile(req, parent, mode, fi);
	else
		cfs_new_node(req, CFS_OP_create, parent, name, mode, fi);
}

void cfs_ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	cfs_new_node(req, CFS_OP_mkdir, parent, name, mode, NULL);
}

void cfs_ll_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t dir = cfs_node(d, parent), child;
	struct cfs_new a = cfs_new_attrs(req, d, dir, 0777, false);
	int err;

	err =
	    cfs_tree_symlink(d->tree, dir, name, strlen(name), target, strlen(target), &a, &child);
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	cfs_reply_new(req, d, parent, name, child, NULL);
}

void cfs_ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t node = cfs_node(d, ino);
	struct stat st;
	int err;

	/* a file with no name is an O_TMPFILE one: the kernel sends its link only when it may */
	cfs_tree_stat(d->tree, node, &st);
	err = (st.st_nlink ? cfs_tree_link : cfs_tree_link_unnamed)(
	    d->tree, node, cfs_node(d, newparent), newname, strlen(newname));
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	cfs_coherence_covered(d, ino); /* the reply carries its new link count */
	cfs_reply_new(req, d, newparent, newname, node, NULL);
}

void cfs_ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t dir = cfs_node(d, parent);
	size_t len = strlen(name);

	cfs_coherence_named(d, parent, name);
	cfs_reply_changed(req, d, parent, cfs_tree_unlink(d->tree, dir, name, len));
}

void cfs_ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t dir = cfs_node(d, parent), child;
	size_t len = strlen(name);
	int err;

	cfs_coherence_named(d, parent, name);
	err = cfs_tree_lookup(d->tree, dir, name, len, &child);
	/* Server mode shows a link to a directory as a directory: rmdir removes the link. */
	if (!err && cfs_follow_modes[d->opts.follow].lookups_follow &&
	    cfs_tree_kind(d->tree, child) == RS_LINK)
		err = cfs_tree_unlink(d->tree, dir, name, len);
	else if (!err)
		err = cfs_tree_rmdir(d->tree, dir, name, len);
	cfs_reply_changed(req, d, parent, err);
}

void cfs_ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		   const char *newname, unsigned int flags)
{
	struct cfs_daemon *d = cfs_of(req);
	size_t len = strlen(name), newlen = strlen(newname);
	int err;

	cfs_coherence_named(d, parent, name);
	cfs_coherence_named(d, newparent, newname);
	err = cfs_tree_rename(d->tree, cfs_node(d, parent), name, len, cfs_node(d, newparent),
			      newname, newlen, flags);
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	cfs_coherence_covered(d, parent);
	cfs_coherence_covered(d, newparent);
	cfs_coherence_flush(d);
	cfs_coherence_moved(d, newparent, newname, newlen);
	if (flags & RENAME_EXCHANGE)
		cfs_coherence_moved(d, parent, name, len);
	cfs_coherence_reply_err(d, req);
}

/* What a SETATTR may change besides times. */
#define CFS_SETATTR_CHANGES                                                                        \
	(FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | FUSE_SET_ATTR_SIZE)

/* The times TO_SET names. One that sets nothing (chown(f, -1, -1): the kernel sends the
 * SETATTR all the same) still marks a change, as tmpfs does: ctime moves. */
static int cfs_setattr_times(struct cfs_daemon *d, uint32_t node, const struct stat *attr,
			     int to_set)
{
	struct timespec now, at, mt;
	const struct timespec *a = NULL, *m = NULL;

	clock_gettime(CLOCK_REALTIME, &now);
	if (to_set & FUSE_SET_ATTR_ATIME) {
		at = (to_set & FUSE_SET_ATTR_ATIME_NOW) ? now : attr->st_atim;
		a = &at;
	}
	if (to_set & FUSE_SET_ATTR_MTIME) {
		mt = (to_set & FUSE_SET_ATTR_MTIME_NOW) ? now : attr->st_mtim;
		m = &mt;
	}
	if (!a && !m && (to_set & CFS_SETATTR_CHANGES))
		return 0;
	return cfs_tree_set_times(d->tree, node, a, m, &now);
}

/* The kernel's FUSE code drops set-uid, and set-gid from group-executable files, before a
 * write or truncate, but keeps set-gid on a file without group execute, which tmpfs drops
 * when the caller is outside the file's group. The whole rule is applied here again (once
 * done it changes nothing), so the answers are tmpfs's whichever way the kernel asked. The
 * kernel's copy of the mode goes before the reply: a write or an open invalidates only size
 * and times, so `stat -c %a` would keep showing the old bits. */
static void cfs_drop_setid(fuse_req_t req, struct cfs_daemon *d, fuse_ino_t ino, uint32_t node)
{
	struct cfs_cred c;
	struct stat st;

	/* the caller's groups cost a read of /proc: only for a file that has set-id bits */
	cfs_tree_stat(d->tree, node, &st);
	if (!(st.st_mode & (S_ISUID | S_ISGID)))
		return;
	if (cfs_tree_drop_setid(d->tree, node, cfs_req_cred(req, d, &c)))
		cfs_coherence_attrs_now(d, ino);
}

static int cfs_truncate_by(fuse_req_t req, struct cfs_daemon *d, fuse_ino_t ino, uint32_t node,
			   uint64_t size)
{
	int err = cfs_tree_truncate(d->tree, node, size);

	if (!err)
		cfs_drop_setid(req, d, ino, node);
	return err;
}

void cfs_ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t node = cfs_node(d, ino);
	struct stat st;
	int err = 0;

	if (to_set & FUSE_SET_ATTR_MODE)
		err = cfs_tree_chmod(d->tree, node, attr->st_mode & 07777);
	if (!err && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		err = cfs_tree_chown(d->tree, node,
				     (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
				     (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1);
	if (!err && (to_set & FUSE_SET_ATTR_SIZE))
		err = cfs_truncate_by(req, d, ino, node, (uint64_t)attr->st_size);
	if (!err)
		err = cfs_setattr_times(d, node, attr, to_set);
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	cfs_coherence_covered(d, ino);
	cfs_coherence_flush(d);
	cfs_stat(d, node, &st);
	cfs_coherence_reply_attr(d, req, &st, cfs_attr_timeout(d));
}

void cfs_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t node = cfs_node(d, ino);
	ssize_t n;

	cfs_drop_setid(req, d, ino, node);
	n = cfs_tree_write(d->tree, node, buf, size, off);
	if (n < 0) {
		cfs_reply_err(req, (int)n);
		return;
	}
	cfs_coherence_covered(d, ino);
	cfs_coherence_flush(d);
	cfs_coherence_reply_write(d, req, (size_t)n);
}

/* An open that truncates (O_TRUNC with atomic_o_trunc, opens=answer) changes the file. */
void cfs_ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t node = cfs_node(d, ino);

	if (d->opening.skip_open) {
		cfs_reply_err(req, -ENOSYS);
		return;
	}
	if (cfs_tree_kind(d->tree, node) == RS_DIR) {
		cfs_reply_err(req, -EISDIR);
		return;
	}
	if (fi->flags & O_TRUNC) {
		int err = cfs_truncate_by(req, d, ino, node, 0);
		if (err) {
			cfs_reply_err(req, err);
			return;
		}
		cfs_coherence_covered(d, ino);
		cfs_coherence_flush(d);
	}
	/* content changes only through writes, which invalidate the other nodeids' pages */
	cfs_open_caching(d, fi, false, true);
	fuse_reply_open(req, fi);
}

/* fallocate as tmpfs (cfs_tree_fallocate): the modes it takes, EOPNOTSUPP for the others,
 * which the kernel passes on without remembering (only ENOSYS would stop it asking). */
void cfs_ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		      struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	int err = cfs_tree_fallocate(d->tree, cfs_node(d, ino), mode, off, len);

	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	cfs_coherence_covered(d, ino); /* the kernel drops the punched range of its own pages */
	cfs_coherence_flush(d);
	cfs_coherence_reply_err(d, req);
}

/* Everything lives in memory: there is nothing to sync. */
void cfs_ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

void cfs_ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}
