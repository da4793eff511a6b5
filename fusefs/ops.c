/*
 * The FUSE low-level operations. Every reply goes out from here; every lookup the kernel
 * counts is counted only once its reply call returned 0, and undone by FORGET.
 */
#include "daemon.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

static struct cfs_daemon *cfs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

#define CFS_OP_NAME(n) #n,
const char *const cfs_op_names[CFS_OP_MAX] = {CFS_OPS(CFS_OP_NAME)};
#undef CFS_OP_NAME

static void cfs_count(struct cfs_daemon *d, enum cfs_op op)
{
	d->ops[op]++;
}

/* The kernel's nodeids are tree handles (the root is handle 1 = FUSE_ROOT_ID). */
static uint32_t cfs_node(fuse_ino_t ino)
{
	return (uint32_t)ino;
}

void cfs_rs_ctx(const struct cfs_daemon *d, struct rs_ctx *ctx)
{
	*ctx = (struct rs_ctx){
		.ops = &cfs_tree_rs_ops,
		.tree = d->tree,
		.root = CFS_ROOT,
		.limits = d->opts.limits,
	};
}

static void cfs_fill_entry(struct cfs_daemon *d, uint32_t id, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = id;
	e->generation = cfs_tree_generation(d->tree, id);
	cfs_tree_stat(d->tree, id, &e->attr);
	e->attr_timeout = d->opts.attr_timeout;
	e->entry_timeout = d->opts.entry_timeout;
}

static void cfs_reply_err(fuse_req_t req, int neg_errno)
{
	fuse_reply_err(req, -neg_errno);
}

static void cfs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct cfs_daemon *d = userdata;

	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* A link's body never changes in place in kernel mode (a new link is a new node), so
	 * the kernel may keep it; in collapse mode the answer depends on the whole chain. */
	if (d->opts.follow == CFS_FOLLOW_KERNEL && (conn->capable & FUSE_CAP_CACHE_SYMLINKS))
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	cfs_count(d, CFS_OP_init);
}

static void cfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct cfs_daemon *d = cfs_of(req);
	struct fuse_entry_param e;
	uint32_t id;
	size_t len = strlen(name);
	int err;

	cfs_count(d, CFS_OP_lookup);
	if (len > RS_NAME_MAX)
		return cfs_reply_err(req, -ENAMETOOLONG);
	err = cfs_tree_lookup(d->tree, cfs_node(parent), name, len, &id);
	if (err)
		return cfs_reply_err(req, err);
	cfs_fill_entry(d, id, &e);
	if (fuse_reply_entry(req, &e) == 0)
		cfs_tree_ref(d->tree, id, 1);
}

static void cfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct cfs_daemon *d = cfs_of(req);

	cfs_count(d, CFS_OP_forget);
	cfs_tree_unref(d->tree, cfs_node(ino), nlookup);
	fuse_reply_none(req);
}

static void cfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct cfs_daemon *d = cfs_of(req);

	cfs_count(d, CFS_OP_forget_multi);
	for (size_t i = 0; i < count; i++)
		cfs_tree_unref(d->tree, cfs_node(forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void cfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	struct stat st;

	cfs_count(d, CFS_OP_getattr);
	cfs_tree_stat(d->tree, cfs_node(ino), &st);
	fuse_reply_attr(req, &st, d->opts.attr_timeout);
}

static void cfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct cfs_daemon *d = cfs_of(req);
	char buf[RS_PATH_MAX];
	const char *target;
	size_t len;
	int err;

	cfs_count(d, CFS_OP_readlink);
	err = cfs_tree_readlink(d->tree, cfs_node(ino), &target, &len);
	if (err)
		return cfs_reply_err(req, err);
	if (target[0] == '/' && !d->opts.abslinks_raw) {
		ssize_t n = cfs_inroot_target(d->tree, cfs_node(ino), target, len, buf);
		if (n < 0)
			return cfs_reply_err(req, (int)n);
		target = buf;
		len = (size_t)n;
	} else {
		memcpy(buf, target, len);
	}
	buf[len] = '\0';
	fuse_reply_readlink(req, buf);
}

static void cfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);

	cfs_count(d, CFS_OP_opendir);
	if (cfs_tree_kind(d->tree, cfs_node(ino)) != RS_DIR)
		return cfs_reply_err(req, -ENOTDIR);
	/* Listings change only through requests the kernel sees (it drops its cache then) or
	 * through control commands, which invalidate the directory. */
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Readdir offsets: 1 after ".", 2 after "..", tree cookie + 2 after an entry. */
enum { CFS_OFF_DOT = 1, CFS_OFF_DOTDOT = 2 };

struct cfs_dirbuf {
	char *buf;
	size_t size, used;
	uint32_t *added; /* readdirplus: entries whose lookup counts once the reply is sent */
	size_t nadded;
};

static bool cfs_dirbuf_add(fuse_req_t req, struct cfs_daemon *d, struct cfs_dirbuf *b,
			   bool plus, const char *name, uint32_t id, off_t next)
{
	char *at = b->buf + b->used;
	size_t room = b->size - b->used, need;

	if (plus) {
		struct fuse_entry_param e;
		cfs_fill_entry(d, id, &e);
		need = fuse_add_direntry_plus(req, at, room, name, &e, next);
	} else {
		struct stat st = {.st_ino = id};
		cfs_tree_stat(d->tree, id, &st);
		need = fuse_add_direntry(req, at, room, name, &st, next);
	}
	if (need > room)
		return false;
	b->used += need;
	return true;
}

static void cfs_do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t dir = cfs_node(ino);
	struct cfs_dirbuf b = {.size = size};
	uint64_t cookie = off > CFS_OFF_DOTDOT ? (uint64_t)off - CFS_OFF_DOTDOT : 0;
	const char *name;
	size_t len;
	uint32_t child;

	cfs_count(d, plus ? CFS_OP_readdirplus : CFS_OP_readdir);
	b.buf = malloc(size);
	/* the smallest plus entry is a little over 128 bytes: a bound on what one reply holds */
	b.added = plus ? malloc((size / 128 + 1) * sizeof(*b.added)) : NULL;
	if (!b.buf || (plus && !b.added))
		goto nomem;
	/* "." and ".." carry no lookup count, even in readdirplus */
	if (off < CFS_OFF_DOT && !cfs_dirbuf_add(req, d, &b, false, ".", dir, CFS_OFF_DOT))
		goto send;
	if (off < CFS_OFF_DOTDOT &&
	    !cfs_dirbuf_add(req, d, &b, false, "..", cfs_tree_parent(d->tree, dir), CFS_OFF_DOTDOT))
		goto send;
	while (cfs_tree_dir_next(d->tree, dir, &cookie, &name, &len, &child) == 0) {
		char nm[RS_NAME_MAX + 1];
		memcpy(nm, name, len);
		nm[len] = '\0';
		if (!cfs_dirbuf_add(req, d, &b, plus, nm, child, (off_t)(cookie + CFS_OFF_DOTDOT)))
			break;
		if (plus)
			b.added[b.nadded++] = child;
	}
send:
	if (fuse_reply_buf(req, b.buf, b.used) == 0)
		for (size_t i = 0; i < b.nadded; i++)
			cfs_tree_ref(d->tree, b.added[i], 1);
	free(b.buf);
	free(b.added);
	return;
nomem:
	free(b.buf);
	free(b.added);
	cfs_reply_err(req, -ENOMEM);
}

static void cfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	cfs_do_readdir(req, ino, size, off, false);
}

static void cfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			    struct fuse_file_info *fi)
{
	cfs_do_readdir(req, ino, size, off, true);
}

static void cfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cfs_count(cfs_of(req), CFS_OP_releasedir);
	fuse_reply_err(req, 0);
}

static void cfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	enum rs_kind kind = cfs_tree_kind(d->tree, cfs_node(ino));

	cfs_count(d, CFS_OP_open);
	if (kind == RS_DIR)
		return cfs_reply_err(req, -EISDIR);
	/* content changes only through writes the kernel sees itself */
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void cfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	cfs_count(d, CFS_OP_read);
	if (!buf)
		return cfs_reply_err(req, -ENOMEM);
	n = cfs_tree_read(d->tree, cfs_node(ino), buf, size, off);
	if (n < 0)
		cfs_reply_err(req, (int)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void cfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cfs_count(cfs_of(req), CFS_OP_release);
	fuse_reply_err(req, 0);
}

static void cfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct cfs_daemon *d = cfs_of(req);
	struct cfs_tree_stats ts;
	struct statvfs sv = {0};

	cfs_count(d, CFS_OP_statfs);
	cfs_tree_stats(d->tree, &ts);
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = (ts.bytes + 4095) / 4096;
	sv.f_files = ts.nodes;
	sv.f_namemax = RS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

static void cfs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct cfs_daemon *d = cfs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct rs_cred cred = {ctx->uid, ctx->gid, NULL, 0};
	gid_t groups[64];
	int n = fuse_req_getgroups(req, 64, groups);

	cfs_count(d, CFS_OP_access);
	if (n > 0) {
		cred.groups = groups;
		cred.ngroups = n < 64 ? n : 64;
	}
	cfs_reply_err(req, mask == F_OK ? 0 : cfs_tree_may(d->tree, cfs_node(ino), &cred, mask));
}

/* No extended attributes: ENOSYS makes the kernel stop asking (users see EOPNOTSUPP). */
static void cfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	cfs_count(cfs_of(req), CFS_OP_getxattr);
	fuse_reply_err(req, ENOSYS);
}

static void cfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	cfs_count(cfs_of(req), CFS_OP_listxattr);
	fuse_reply_err(req, ENOSYS);
}

const struct fuse_lowlevel_ops cfs_ops = {
	.init = cfs_init,
	.lookup = cfs_lookup,
	.forget = cfs_forget,
	.forget_multi = cfs_forget_multi,
	.getattr = cfs_getattr,
	.readlink = cfs_readlink,
	.opendir = cfs_opendir,
	.readdir = cfs_readdir,
	.readdirplus = cfs_readdirplus,
	.releasedir = cfs_releasedir,
	.open = cfs_open,
	.read = cfs_read,
	.release = cfs_release,
	.statfs = cfs_statfs,
	.access = cfs_access,
	.getxattr = cfs_getxattr,
	.listxattr = cfs_listxattr,
};
