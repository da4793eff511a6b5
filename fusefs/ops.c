/*
 * The FUSE low-level operations that read. Every lookup the kernel counts is counted only
 * once its reply call returned 0, and undone by FORGET; readdirplus counts every entry but
 * "." and "..".
 *
 * Nodeids: below CFS_PATH_BASE a nodeid is a tree handle (the root is handle 1); above, it
 * names a path reached through a link (server mode, see paths.h).
 */
#include "ops.h"
#include "fault.h"
#include "links.h"
#include "notify.h"
#include "paths.h"

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

enum {
	CFS_BOGO_DIRENT_SIZE = 20,   /* tmpfs counts this many bytes per entry in a dir's size */
	CFS_SHORT_SYMLINK_LEN = 128, /* tmpfs keeps shorter link bodies in the inode: 0 blocks */
	CFS_PAGE_BLOCKS = 8,	     /* a 4 KiB page in 512-byte blocks */
};

struct cfs_daemon *cfs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Every request starts here (before its handler: cfs_ops; or answered by a fault rule), so its
 * walks start afresh too. */
void cfs_count(struct cfs_daemon *d, enum cfs_op op)
{
	d->ops[op]++;
	d->walk_left = RS_WALK_BUDGET;
}

void cfs_reply_err(fuse_req_t req, int neg_errno)
{
	cfs_of(req)->reply_errno = -neg_errno; /* for the recording (record.h) */
	fuse_reply_err(req, -neg_errno);
}

void cfs_reply_changed(fuse_req_t req, struct cfs_daemon *d, fuse_ino_t ino, int err)
{
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	cfs_coherence_covered(d, ino);
	cfs_coherence_flush(d);
	cfs_coherence_reply_err(d, req);
}

uint32_t cfs_node(const struct cfs_daemon *d, fuse_ino_t ino)
{
	return cfs_is_path_id(ino) ? cfs_paths_target(d->paths, ino) : (uint32_t)ino;
}

/* A link's size is the length of what readlink answers, as tools size their buffers by it:
 * kernel mode may rewrite the target, collapse answers the chain's end (a walk per stat),
 * server mode shows only broken links as links, with answers of their own. */
static size_t cfs_link_size(struct cfs_daemon *d, uint32_t node, size_t stored)
{
	char buf[RS_PATH_MAX];
	/* attributes are kept for every caller: the size of the answer anyone would get */
	ssize_t n = cfs_link_answer(d, &cfs_anyone, node, buf);

	return n < 0 ? stored : (size_t)n;
}

void cfs_stat(struct cfs_daemon *d, uint32_t node, struct stat *st)
{
	cfs_tree_stat(d->tree, node, st);
	/* sizes and blocks as tmpfs reports them, so du and ls -l agree with a copy there */
	if (S_ISDIR(st->st_mode)) {
		st->st_size =
		    (off_t)(CFS_BOGO_DIRENT_SIZE * (2 + cfs_tree_dir_count(d->tree, node)));
		st->st_blocks = 0;
	} else if (S_ISLNK(st->st_mode)) {
		st->st_blocks = st->st_size < CFS_SHORT_SYMLINK_LEN ? 0 : CFS_PAGE_BLOCKS;
		st->st_size = (off_t)cfs_link_size(d, node, (size_t)st->st_size);
	} /* a file's blocks are the pages the tree holds for it (holes hold none), as tmpfs */
	if (d->fault_fx && d->fault_fx->attrs) /* a getattr or lookup an attr= rule lies in */
		cfs_fault_attr(d->fault_fx, st);
}

const struct rs_cred *cfs_req_cred(fuse_req_t req, const struct cfs_daemon *d, struct cfs_cred *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int n;

	/* search permission inside link targets is ours to check (the kernel checks the rest:
	 * default_permissions is always on); root may search everything anyway */
	if (ctx->uid == 0)
		return NULL;
	c->cred = (struct rs_cred){ctx->uid, ctx->gid, NULL, 0};
	n = fuse_req_getgroups(req, 64, c->groups);
	if (n > 0) {
		c->cred.groups = c->groups;
		c->cred.ngroups = n < 64 ? n : 64;
	}
	return &c->cred;
}

double cfs_attr_timeout(const struct cfs_daemon *d)
{
	return cfs_faults_active(d->faults) ? 0 : d->opts.attr_timeout;
}

double cfs_entry_timeout(const struct cfs_daemon *d)
{
	return cfs_faults_active(d->faults) ? 0 : d->opts.entry_timeout;
}

void cfs_open_caching(const struct cfs_daemon *d, struct fuse_file_info *fi, bool dir, bool keep)
{
	if (cfs_faults_active(d->faults)) {
		/* reads and writes go to the daemon, past the pages; a shared map still works
		 * where the kernel took FUSE_DIRECT_IO_ALLOW_MMAP (d->direct_io_mmap) */
		fi->direct_io = !dir;
		fi->keep_cache = fi->cache_readdir = 0;
		return;
	}
	fi->keep_cache = keep;
	fi->cache_readdir = dir && keep;
}

int cfs_make_entry(fuse_req_t req, struct cfs_daemon *d, fuse_ino_t parent, const char *name,
		   size_t len, uint32_t child, bool follow, struct fuse_entry_param *e)
{
	bool via_link = false, broken = false, private = false, created;
	uint32_t node = child;
	int err;

	memset(e, 0, sizeof(*e));
	if (follow && cfs_follow_modes[d->opts.follow].lookups_follow &&
	    cfs_tree_kind(d->tree, child) == RS_LINK) {
		struct cfs_cred c;
		err = cfs_link_lookup(d, cfs_req_cred(req, d, &c), cfs_node(d, parent), name, len,
				      &node, &private);
		/* a link that does not resolve shows as the link it is, so it can be listed,
		 * removed and replaced; following it fails as the walk did (readlink) */
		broken = err && cfs_shows_as_link(err);
		if (err && !broken)
			return err;
		via_link = !broken;
	}
	/* the up name is its parent's alias: a nodeid of its own, as a path through a link */
	if (via_link || cfs_is_path_id(parent) || cfs_is_up_name(name, len)) {
		uint32_t gen;
		err = cfs_paths_get(d->paths, parent, name, len, node, &e->ino, &gen, &created);
		if (err)
			return err;
		e->generation = gen;
		if (created) /* the entry keeps its target alive, even past an unlink */
			cfs_tree_ref(d->tree, node, 1);
	} else {
		e->ino = node;
		e->generation = cfs_tree_generation(d->tree, node);
	}
	cfs_stat(d, node, &e->attr);
	/* A broken link is asked for again at every use, so it shows its target from the
	 * moment it resolves, for any caller (EACCES is one caller's answer): no invalidation
	 * has to find it. So is an answer that depends on who asks. */
	e->attr_timeout = broken || private ? 0 : cfs_attr_timeout(d);
	e->entry_timeout = broken || private ? 0 : cfs_entry_timeout(d);
	return 0;
}

void cfs_ref_entry(struct cfs_daemon *d, const struct fuse_entry_param *e)
{
	if (cfs_is_path_id(e->ino))
		cfs_paths_ref(d->paths, e->ino);
	else
		cfs_tree_ref(d->tree, (uint32_t)e->ino, 1);
}

static void cfs_forget_one(struct cfs_daemon *d, fuse_ino_t ino, uint64_t nlookup)
{
	bool gone;

	if (cfs_is_path_id(ino)) {
		uint32_t target = cfs_paths_forget(d->paths, ino, nlookup);
		gone = target != 0;
		if (target)
			cfs_tree_unref(d->tree, target, 1);
	} else {
		gone = nlookup >= cfs_tree_refs(d->tree, (uint32_t)ino);
		cfs_tree_unref(d->tree, (uint32_t)ino, nlookup);
	}
	/* the nodeid may be handed out again, as another kind: nothing queued before may
	 * reach it (nlookup 0: an entry whose reply failed, the kernel never had it) */
	if (gone && nlookup)
		cfs_notify_forgotten(d->notifier, ino);
}

void cfs_drop_entry(struct cfs_daemon *d, const struct fuse_entry_param *e)
{
	if (cfs_is_path_id(e->ino))
		cfs_forget_one(d, e->ino, 0);
}

void cfs_reply_entry(fuse_req_t req, struct cfs_daemon *d, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) == 0)
		cfs_ref_entry(d, e);
	else
		cfs_drop_entry(d, e);
}

/*
 * -o opens= (daemon.h). What the kernel does after an ENOSYS (fs/fuse/file.c, fuse_file_open):
 * it sets fc->no_open or fc->no_opendir, never clears them for the connection, and opens
 * every file with FOPEN_KEEP_CACHE and every directory with FOPEN_KEEP_CACHE |
 * FOPEN_CACHE_DIR, with no RELEASE or RELEASEDIR to follow. So from the first ENOSYS on,
 * every listing is kept (in the directory's page cache, fs/fuse/readdir.c) until the
 * directory changes through the kernel (its version is bumped) or we invalidate its inode,
 * whatever the follow mode is later. The state is the daemon's (d->opening).
 */
void cfs_faults_unsent_opens(struct cfs_daemon *d, bool open, bool opendir)
{
	static const char why[] = "the kernel sends none on this mount (-o opens=skip, the "
				  "default); mount with -o opens=answer to fault or delay it";

	cfs_faults_unsent(d->faults, CFS_OP_open, open ? why : NULL);
	cfs_faults_unsent(d->faults, CFS_OP_flush, open ? why : NULL); /* nothing was opened */
	cfs_faults_unsent(d->faults, CFS_OP_opendir, opendir ? why : NULL);
}

static void cfs_init_opens(struct cfs_daemon *d, struct fuse_conn_info *conn)
{
	if (d->opts.opens != CFS_OPENS_SKIP)
		return;
	d->opening.skip_open = conn->capable & FUSE_CAP_NO_OPEN_SUPPORT;
	d->opening.skip_opendir = conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
	/* With ATOMIC_O_TRUNC the kernel hands O_TRUNC over in OPEN only and then skips the
	 * SETATTR (fs/fuse/dir.c, fuse_do_setattr with ATTR_OPEN): without OPEN the file would
	 * never be truncated. Without it, open(O_TRUNC) sends a SETATTR of size 0. */
	if (d->opening.skip_open)
		conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	cfs_faults_unsent_opens(d, d->opening.skip_open, d->opening.skip_opendir);
}

/* xattrs off: after the first ENOSYS the kernel sends no request of that kind, so a rule
 * on one would be accepted and never seen */
static void cfs_init_xattrs(struct cfs_daemon *d)
{
	static const char why[] = "the kernel sends none on this mount (xattrs are off: mount "
				  "with -o xattrs=on)";
	static const enum cfs_op ops[] = {CFS_OP_getxattr, CFS_OP_listxattr, CFS_OP_setxattr,
					  CFS_OP_removexattr};

	if (!d->opts.xattrs_off)
		return;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		cfs_faults_unsent(d->faults, ops[i], why);
}

void cfs_ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct cfs_daemon *d = userdata;

	cfs_init_opens(d, conn);
	cfs_init_xattrs(d);
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* A link's body never changes in place (a new link is a new node), so in kernel mode
	 * the kernel may keep it; in the other modes the answer depends on other links. */
	if (cfs_follow_modes[d->opts.follow].keeps_links &&
	    (conn->capable & FUSE_CAP_CACHE_SYMLINKS)) {
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
		d->cache_symlinks = true;
	}
	/* POSIX ACLs as on tmpfs: the kernel enforces them (it asks for them as
	 * system.posix_acl_* xattrs) and leaves a new node's ACLs to us, from its directory's
	 * default ACL, and so the umask too (DONT_MASK: it comes apart, ops_write.c) */
	if (!d->opts.xattrs_off && (conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
	/* Let the kernel clear setuid/setgid on write and chown, as it does for tmpfs. */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
}

void cfs_ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct cfs_daemon *d = cfs_of(req);
	struct fuse_entry_param e;
	size_t len = strlen(name);
	uint32_t child;
	int err;

	if (len > RS_NAME_MAX) {
		cfs_reply_err(req, -ENAMETOOLONG);
		return;
	}
	uint32_t dir = cfs_node(d, parent);
	if (!cfs_is_up_name(name, len))
		err = cfs_tree_lookup(d->tree, dir, name, len, &child);
	else if (cfs_tree_kind(d->tree, dir) != RS_DIR)
		err = -ENOTDIR;
	else /* links.h: no entry holds it, every directory answers it */
		err = 0, child = cfs_tree_parent(d->tree, dir);
	if (!err)
		err = cfs_make_entry(req, d, parent, name, len, child, true, &e);
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	cfs_reply_entry(req, d, &e);
}

void cfs_ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct cfs_daemon *d = cfs_of(req);

	cfs_forget_one(d, ino, nlookup);
	fuse_reply_none(req);
}

void cfs_ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct cfs_daemon *d = cfs_of(req);

	for (size_t i = 0; i < count; i++)
		cfs_forget_one(d, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

void cfs_ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	struct stat st;

	cfs_stat(d, cfs_node(d, ino), &st);
	fuse_reply_attr(req, &st, cfs_attr_timeout(d));
}

/* READLINK's answer for the caller of REQ (links.h says what each mode answers). */
static int cfs_readlink_answer(fuse_req_t req, struct cfs_daemon *d, uint32_t link, char *out)
{
	struct cfs_cred c;

	if (cfs_tree_kind(d->tree, link) != RS_LINK)
		return -EINVAL;
	ssize_t n = cfs_link_answer(d, cfs_req_cred(req, d, &c), link, out);
	return n < 0 ? (int)n : 0;
}

void cfs_ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct cfs_daemon *d = cfs_of(req);
	char buf[RS_PATH_MAX];
	int err;

	err = cfs_readlink_answer(req, d, cfs_node(d, ino), buf);
	if (err) {
		cfs_reply_err(req, err);
		return;
	}
	fuse_reply_readlink(req, buf);
}

void cfs_ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);

	if (d->opening.skip_opendir) {
		d->opening.listings_kept = true;
		cfs_reply_err(req, -ENOSYS);
		return;
	}
	if (cfs_tree_kind(d->tree, cfs_node(d, ino)) != RS_DIR) {
		cfs_reply_err(req, -ENOTDIR);
		return;
	}
	/* Listings change only through requests the kernel sees (it drops its cache then) or
	 * through control commands, which invalidate the directory. In server mode an entry's
	 * kind is its link's target's, which changes behind the directory's back. */
	cfs_open_caching(d, fi, true, cfs_follow_modes[d->opts.follow].keeps_listings);
	fuse_reply_open(req, fi);
}

/* Readdir offsets: 1 after ".", 2 after "..", tree cookie + 2 after an entry. */
enum { CFS_OFF_DOT = 1, CFS_OFF_DOTDOT = 2 };

struct cfs_dirbuf {
	char *buf;
	size_t size, used;
	struct fuse_entry_param *added; /* readdirplus: counted once the reply is sent */
	size_t nadded;
};

static bool cfs_dirbuf_put(fuse_req_t req, struct cfs_dirbuf *b, const char *name,
			   const struct fuse_entry_param *e, bool plus, off_t next)
{
	char *at = b->buf + b->used;
	size_t room = b->size - b->used;
	size_t need = plus ? fuse_add_direntry_plus(req, at, room, name, e, next)
			   : fuse_add_direntry(req, at, room, name, &e->attr, next);

	if (need > room)
		return false;
	b->used += need;
	return true;
}

/* One entry; false when the reply is full. Links that do not resolve (server mode) are
 * listed without attributes: the kernel asks again and gets the error. */
static bool cfs_dirbuf_entry(fuse_req_t req, struct cfs_daemon *d, struct cfs_dirbuf *b,
			     fuse_ino_t dir, const char *name, size_t len, uint32_t child,
			     bool plus, off_t next)
{
	struct fuse_entry_param e;
	char nm[RS_NAME_MAX + 1];

	memcpy(nm, name, len);
	nm[len] = '\0';
	if (cfs_make_entry(req, d, dir, nm, len, child, true, &e) != 0) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = child;
	}
	if (!cfs_dirbuf_put(req, b, nm, &e, plus, next)) {
		if (e.ino)
			cfs_drop_entry(d, &e);
		return false;
	}
	if (e.ino && plus)
		b->added[b->nadded++] = e;
	else if (e.ino)
		cfs_drop_entry(d, &e);
	return true;
}

/* "." and ".." carry no lookup count, even in readdirplus (nodeid 0: attributes only). */
static bool cfs_dirbuf_dots(fuse_req_t req, struct cfs_daemon *d, struct cfs_dirbuf *b,
			    uint32_t dir, off_t off, bool plus)
{
	struct fuse_entry_param e = {0};

	e.attr.st_mode = S_IFDIR;
	e.attr.st_ino = dir;
	if (off < CFS_OFF_DOT && !cfs_dirbuf_put(req, b, ".", &e, plus, CFS_OFF_DOT))
		return false;
	e.attr.st_ino = cfs_tree_parent(d->tree, dir);
	return off >= CFS_OFF_DOTDOT || cfs_dirbuf_put(req, b, "..", &e, plus, CFS_OFF_DOTDOT);
}

static void cfs_do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct cfs_daemon *d = cfs_of(req);
	uint32_t dir = cfs_node(d, ino);
	struct cfs_dirbuf b = {.size = size};
	uint64_t cookie = off > CFS_OFF_DOTDOT ? (uint64_t)off - CFS_OFF_DOTDOT : 0;
	const char *name;
	size_t len;
	uint32_t child;

	cfs_coherence_listing(d, ino, d->opening.listings_kept);
	b.buf = malloc(size);
	/* the smallest plus entry takes a little over 128 bytes: a bound on one reply */
	b.added = plus ? malloc((size / 128 + 1) * sizeof(*b.added)) : NULL;
	if (!b.buf || (plus && !b.added)) {
		free(b.buf);
		free(b.added);
		cfs_reply_err(req, -ENOMEM);
		return;
	}
	if (cfs_dirbuf_dots(req, d, &b, dir, off, plus))
		while (cfs_tree_dir_next(d->tree, dir, &cookie, &name, &len, &child) == 0 &&
		       cfs_dirbuf_entry(req, d, &b, ino, name, len, child, plus,
					(off_t)(cookie + CFS_OFF_DOTDOT)))
			;
	bool sent = fuse_reply_buf(req, b.buf, b.used) == 0;
	for (size_t i = 0; i < b.nadded; i++) {
		if (sent)
			cfs_ref_entry(d, &b.added[i]);
		else
			cfs_drop_entry(d, &b.added[i]);
	}
	free(b.buf);
	free(b.added);
}

void cfs_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	cfs_do_readdir(req, ino, size, off, false);
}

void cfs_ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	cfs_do_readdir(req, ino, size, off, true);
}

void cfs_ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

void cfs_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	if (!buf) {
		cfs_reply_err(req, -ENOMEM);
		return;
	}
	n = cfs_tree_read(d->tree, cfs_node(d, ino), buf, size, off);
	if (n > 0 && d->fault_fx && d->fault_fx->corrupt) /* the tree keeps its bytes */
		cfs_fault_corrupt(d->fault_fx, buf, (size_t)n, (uint64_t)off);
	if (n < 0)
		cfs_reply_err(req, (int)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* Everything lives in memory and writes are answered when done: nothing to flush. With
 * opens=skip, ENOSYS makes the kernel stop sending FLUSH on every close (fc->no_flush). */
void cfs_ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);

	cfs_reply_err(req, d->opts.opens == CFS_OPENS_SKIP ? -ENOSYS : 0);
}

/* Files made by CREATE are released even with opens=skip (CREATE opens them). */
void cfs_ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

void cfs_ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct cfs_daemon *d = cfs_of(req);
	struct cfs_tree_stats ts;
	struct statvfs sv = {0};

	cfs_tree_stats(d->tree, &ts);
	/* as tmpfs: blocks are data pages, the total is the data limit (-o max_data); inodes
	 * are what the metadata limit (-o max_meta) leaves room for, at a node's cost */
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = ts.data_limit / 4096;
	sv.f_bfree = sv.f_bavail =
	    ts.data_bytes < ts.data_limit ? (ts.data_limit - ts.data_bytes) / 4096 : 0;
	sv.f_ffree = sv.f_favail = cfs_tree_nodes_room(d->tree);
	sv.f_files = ts.nodes + sv.f_ffree;
	sv.f_namemax = RS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

void cfs_ll_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct cfs_daemon *d = cfs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct cfs_cred c;
	const struct rs_cred *cred;

	c.cred = (struct rs_cred){ctx->uid, ctx->gid, NULL, 0};
	cred = cfs_req_cred(req, d, &c);
	if (!cred)
		cred = &c.cred;
	cfs_reply_err(req, mask == F_OK ? 0 : cfs_tree_may(d->tree, cfs_node(d, ino), cred, mask));
}

/* SEEK_DATA and SEEK_HOLE (the kernel answers the other whences itself): the pages the tree
 * holds, as tmpfs answers from its page cache. */
void cfs_ll_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	struct cfs_daemon *d = cfs_of(req);
	off_t at;

	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		cfs_reply_err(req, -EINVAL);
		return;
	}
	at = cfs_tree_seek(d->tree, cfs_node(d, ino), off, whence == SEEK_DATA);
	if (at < 0)
		cfs_reply_err(req, (int)at);
	else
		fuse_reply_lseek(req, at);
}
