/*
 * Extended attributes, as tmpfs keeps them (the tree's side table, tree.h). The kernel has
 * already decided who may read or write which namespace (fs/xattr.c's xattr_permission and
 * the security hooks: user.* needs write permission and a file or directory, trusted.* and
 * security.* need CAP_SYS_ADMIN); what is left here is the listing's rule, that only
 * CAP_SYS_ADMIN sees trusted.* names. A nodeid answers for the node it stands for, so in
 * server mode a link's attributes are its target's, as its other attributes are.
 */
#include "ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CFS_CAP_SYS_ADMIN = 21 }; /* linux/capability.h */

/* Whether the caller has CAP_SYS_ADMIN in its effective set (/proc/PID/status), as tmpfs's
 * simple_xattr_list asks before listing trusted.*; without its status (it has gone, or the
 * pid is not in our namespace), whether it is root. */
static bool cfs_req_sys_admin(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[64], line[256];
	unsigned long long caps = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)ctx->pid);
	f = ctx->pid > 0 ? fopen(path, "re") : NULL;
	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &caps) == 1;
	if (f)
		fclose(f);
	return found ? (caps >> CFS_CAP_SYS_ADMIN) & 1 : ctx->uid == 0;
}

/* Reply to a get or list of SIZE with the N bytes in BUF (size 0: the length alone). */
static void cfs_reply_xattr(fuse_req_t req, const char *buf, ssize_t n, size_t size)
{
	if (n < 0)
		cfs_reply_err(req, (int)n);
	else if (!size)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

/* A buffer for an answer of SIZE bytes into *BUF (NULL for size 0: the caller asks only the
 * length); false, with ENOMEM answered, when there is no memory for it. */
static bool cfs_xattr_buf(fuse_req_t req, size_t size, char **buf)
{
	*buf = size ? malloc(size) : NULL;
	if (size && !*buf) {
		cfs_reply_err(req, -ENOMEM);
		return false;
	}
	return true;
}

/* xattrs off: ENOSYS, which the kernel takes as "never again" for this request kind */
static bool cfs_xattrs_off(fuse_req_t req, const struct cfs_daemon *d)
{
	if (d->opts.xattrs_off)
		cfs_reply_err(req, -ENOSYS);
	return d->opts.xattrs_off;
}

void cfs_ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct cfs_daemon *d = cfs_of(req);
	char *buf;

	if (cfs_xattrs_off(req, d) || !cfs_xattr_buf(req, size, &buf))
		return;
	cfs_reply_xattr(req, buf, cfs_tree_getxattr(d->tree, cfs_node(d, ino), name, buf, size),
			size);
	free(buf);
}

void cfs_ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct cfs_daemon *d = cfs_of(req);
	char *buf;

	if (cfs_xattrs_off(req, d) || !cfs_xattr_buf(req, size, &buf))
		return;
	bool trusted = cfs_req_sys_admin(req); /* read from /proc: not before the checks */
	cfs_reply_xattr(req, buf, cfs_tree_listxattr(d->tree, cfs_node(d, ino), buf, size, trusted),
			size);
	free(buf);
}

/* An access ACL set by a caller outside the file's group (and not root) drops its set-gid
 * bit, as posix_acl_update_mode does on tmpfs (the kernel cannot tell us: that needs
 * FUSE_SETXATTR_EXT, which libfuse 3.14 does not take). */
static void cfs_acl_drop_setgid(fuse_req_t req, struct cfs_daemon *d, uint32_t node)
{
	struct cfs_cred c;
	const struct rs_cred *cred = cfs_req_cred(req, d, &c);
	struct stat st;
	bool member = false;

	cfs_tree_stat(d->tree, node, &st);
	if (!cred || !(st.st_mode & S_ISGID))
		return;
	member = cred->gid == st.st_gid;
	for (int i = 0; !member && i < cred->ngroups; i++)
		member = cred->groups[i] == st.st_gid;
	if (!member)
		cfs_tree_chmod(d->tree, node, st.st_mode & 07777 & ~(mode_t)S_ISGID);
}

void cfs_ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		     size_t size, int flags)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t node = cfs_node(d, ino);

	if (cfs_xattrs_off(req, d))
		return;
	int err = cfs_tree_setxattr(d->tree, node, name, value, size, flags);

	if (!err && !strcmp(name, "system.posix_acl_access"))
		cfs_acl_drop_setgid(req, d, node);
	cfs_reply_changed(req, d, ino, err);
}

void cfs_ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct cfs_daemon *d = cfs_of(req);

	if (!cfs_xattrs_off(req, d))
		cfs_reply_changed(req, d, ino,
				  cfs_tree_removexattr(d->tree, cfs_node(d, ino), name));
}
