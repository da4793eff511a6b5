/*
 * The daemon's in-memory tree: its life, queries, creation and content; attributes and kernel
 * references are in tree_attr.c, the namespace changes in tree_rename.c, the entry steps both
 * use in tree_entry.c. The contract is in tree.h, the layout in tree_int.h.
 */
#include "tree_int.h"

#include <errno.h>
#include <fcntl.h>  /* FALLOC_FL_* */
#include <limits.h> /* SSIZE_MAX */
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h> /* XATTR_CREATE, XATTR_REPLACE */
#include <unistd.h>    /* R_OK, W_OK, X_OK */

/* ---- lifetime ---- */

static void tree_release(struct cfs_tree *t)
{
	for (uint32_t id = 1; id < t->next_id; id++) {
		struct cfs_node *n = nd(t, id);
		if (is_dir(n) && n->u.dir)
			mem_free(t, n->u.dir, dir_bytes(n->u.dir->cap)); /* pinned ones too */
	}
	for (uint32_t i = 0; i < t->buf_len; i++)
		mem_free(t, t->bufs[i].p, t->bufs[i].cap);
	for (uint32_t i = 0; i < t->paged_len; i++) { /* a free slot holds no pages */
		tree_pages_free_from(t, &t->paged[i], 0);
		mem_free(t, t->paged[i].grp, t->paged[i].grp_cap * sizeof(*t->paged[i].grp));
	}
	mem_free(t, t->paged, t->paged_cap * sizeof(*t->paged));
	for (uint32_t c = 0; c < t->nchunks; c++)
		mem_free(t, t->chunks[c], CFS_CHUNK * sizeof(struct cfs_node));
	mem_free(t, t->chunks, t->chunk_cap * sizeof(*t->chunks));
	mem_free(t, t->x, t->x_cap * sizeof(*t->x));
	mem_free(t, t->xh, t->xh_cap * sizeof(*t->xh));
	mem_free(t, t->bufs, t->buf_cap * sizeof(*t->bufs));
	mem_free(t, t->hash, hash_bytes(t->hash_cap));
	mem_free(t, t->arena, t->arena_cap);
	tree_xattr_release(t);
}

static int tree_alloc_tables(struct cfs_tree *t)
{
	t->chunks = mem_resize(t, NULL, 0, CFS_CHUNKS_MIN * sizeof(*t->chunks));
	t->x = mem_resize(t, NULL, 0, CFS_TABLE_MIN * sizeof(*t->x));
	t->xh = mem_resize(t, NULL, 0, CFS_TABLE_MIN * sizeof(*t->xh));
	t->bufs = mem_resize(t, NULL, 0, CFS_TABLE_MIN * sizeof(*t->bufs));
	t->hash = tree_hash_alloc(t, CFS_HASH_MIN);
	t->arena = mem_resize(t, NULL, 0, CFS_ARENA_MIN);
	t->chunk_cap = t->chunks ? CFS_CHUNKS_MIN : 0;
	t->x_cap = t->x ? CFS_TABLE_MIN : 0;
	t->xh_cap = t->xh ? CFS_TABLE_MIN : 0;
	t->buf_cap = t->bufs ? CFS_TABLE_MIN : 0;
	t->hash_cap = t->hash ? CFS_HASH_MIN : 0;
	t->arena_cap = t->arena ? CFS_ARENA_MIN : 0;
	if (!t->chunks || !t->x || !t->xh || !t->bufs || !t->hash || !t->arena)
		return -ENOMEM;
	memset(t->xh, 0, CFS_TABLE_MIN * sizeof(*t->xh));
	return 0;
}

static void node_init(struct cfs_node *n, mode_t mode, uid_t uid, gid_t gid, int64_t now)
{
	n->mode = (uint16_t)mode;
	n->name_len = 0;
	n->content = CFS_ZEROS;
	n->e = (struct cfs_ent){0, 0, 0};
	n->uid = uid;
	n->gid = gid;
	n->nlink = S_ISDIR(mode) ? 2 : 1;
	n->refs = 0;
	n->data = 0;
	n->atime = n->mtime = n->ctime = now;
	if (S_ISDIR(mode))
		n->u.dir = NULL;
	else
		n->u.size = 0;
}

struct cfs_tree *cfs_tree_new(const struct cfs_alloc *alloc)
{
	void *(*re)(void *, size_t) = alloc && alloc->realloc_fn ? alloc->realloc_fn : realloc;
	struct cfs_tree *t = re(NULL, sizeof(*t));

	if (!t)
		return NULL;
	*t = (struct cfs_tree){.realloc_fn = re,
			       .free_fn = alloc && alloc->free_fn ? alloc->free_fn : free,
			       .bytes = sizeof(*t),
			       .next_id = CFS_ROOT,
			       .last_pat = CFS_NONE,
			       .data_limit = UINT64_MAX,
			       .meta_limit = UINT64_MAX,
			       .node_limit = UINT64_MAX};
	if (tree_alloc_tables(t) || tree_id_reserve(t)) {
		tree_release(t);
		t->free_fn(t);
		return NULL;
	}
	uint32_t root = tree_id_take(t);
	assert(root == CFS_ROOT);
	node_init(nd(t, root), S_IFDIR | 0755, 0, 0, now_ns());
	t->nodes = t->dirs = 1;
	return t;
}

void cfs_tree_free(struct cfs_tree *t)
{
	if (!t)
		return;
	tree_journal_free(t);
	tree_release(t);
	t->free_fn(t);
}

/* ---- queries ---- */

static int check_file(const struct cfs_node *n)
{
	if (is_dir(n))
		return -EISDIR;
	return S_ISREG(n->mode) ? 0 : -EINVAL;
}

uint32_t cfs_tree_parent(const struct cfs_tree *t, uint32_t id)
{
	const struct cfs_node *n = nd(t, id);

	return n->e.dir ? n->e.dir : id; /* only the root has no name */
}

void cfs_tree_name(const struct cfs_tree *t, uint32_t id, const char **name, size_t *len)
{
	const struct cfs_node *n = nd(t, id);

	*name = n->e.dir ? t->arena + n->e.name_off : "";
	*len = n->e.dir ? n->name_len : 0;
}

int cfs_tree_lookup(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		    uint32_t *out)
{
	uint32_t *slot;

	if (!is_dir(nd(t, dir)))
		return -ENOTDIR;
	if (is_dot_or_dotdot(name, len)) {
		*out = len == 1 ? dir : cfs_tree_parent(t, dir);
		return 0;
	}
	int err = tree_find_entry(t, dir, name, len, &slot);
	if (!err)
		*out = ent_child(t, *slot);
	return err;
}

enum rs_kind cfs_tree_kind(const struct cfs_tree *t, uint32_t id)
{
	const struct cfs_node *n = nd(t, id);

	if (is_dir(n))
		return RS_DIR;
	return S_ISLNK(n->mode) ? RS_LINK : S_ISREG(n->mode) ? RS_FILE : RS_OTHER;
}

uint32_t cfs_tree_generation(const struct cfs_tree *t, uint32_t id)
{
	return nd(t, id)->gen;
}

static struct timespec ts_of(int64_t ns)
{
	int64_t s = ns / CFS_NS, r = ns % CFS_NS;

	if (r < 0) {
		s--;
		r += CFS_NS;
	}
	return (struct timespec){.tv_sec = s, .tv_nsec = r};
}

void cfs_tree_stat(const struct cfs_tree *t, uint32_t id, struct stat *st)
{
	const struct cfs_node *n = nd(t, id);
	uint64_t size = is_dir(n) ? CFS_DIRENT_SIZE * (dir_count(n) + 2) : n->u.size;

	memset(st, 0, sizeof(*st));
	st->st_ino = id;
	st->st_mode = n->mode;
	st->st_nlink = n->nlink;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_size = (off_t)size;
	st->st_blksize = CFS_BLKSIZE;
	if (S_ISREG(n->mode))
		st->st_blocks = (blkcnt_t)(tree_content_pages(t, n) * (CFS_PAGE / 512));
	if (S_ISCHR(n->mode) || S_ISBLK(n->mode)) /* data: 12-bit major, 20-bit minor */
		st->st_rdev = makedev(n->data >> 20, n->data & 0xfffff);
	st->st_atim = ts_of(n->atime);
	st->st_mtim = ts_of(n->mtime);
	st->st_ctim = ts_of(n->ctime);
}

int cfs_tree_readlink(const struct cfs_tree *t, uint32_t id, const char **target, size_t *len)
{
	const struct cfs_node *n = nd(t, id);

	if (!S_ISLNK(n->mode))
		return -EINVAL;
	*target = t->arena + n->data;
	*len = n->u.size;
	return 0;
}

ssize_t cfs_tree_read(const struct cfs_tree *t, uint32_t id, char *buf, size_t size, off_t off)
{
	const struct cfs_node *n = nd(t, id);
	int err = check_file(n);

	if (err)
		return err;
	if (off < 0)
		return -EINVAL;
	if ((uint64_t)off >= n->u.size)
		return 0;
	uint64_t left = n->u.size - (uint64_t)off;
	if (size > left)
		size = left;
	if (size > SSIZE_MAX)
		size = SSIZE_MAX;
	tree_content_copy(t, n, buf, (uint64_t)off, size);
	return (ssize_t)size;
}

int cfs_tree_may(const struct cfs_tree *t, uint32_t id, const struct rs_cred *cred, int mask)
{
	const struct cfs_node *n = nd(t, id);
	unsigned bits;

	mask &= R_OK | W_OK | X_OK;
	if (cred->uid == 0) {
		if (!(mask & X_OK) || is_dir(n) || (n->mode & 0111))
			return 0;
		return -EACCES;
	}
	if (cred->uid == n->uid)
		bits = n->mode >> 6;
	else if (cred_in_group(cred, n->gid))
		bits = n->mode >> 3;
	else
		bits = n->mode;
	return (unsigned)mask & ~bits & 7 ? -EACCES : 0;
}

void cfs_tree_stats(const struct cfs_tree *t, struct cfs_tree_stats *st)
{
	*st = (struct cfs_tree_stats){.nodes = t->nodes,
				      .dirs = t->dirs,
				      .files = t->files,
				      .links = t->links,
				      .bytes = t->bytes,
				      .data_bytes = t->data_bytes,
				      .data_limit = t->data_limit,
				      .meta_bytes = tree_meta_used(t),
				      .meta_limit = t->meta_limit,
				      .node_limit = t->node_limit};
}

int cfs_tree_dir_next(const struct cfs_tree *t, uint32_t dir, uint64_t *cookie, const char **name,
		      size_t *len, uint32_t *child)
{
	const struct cfs_node *n = nd(t, dir);

	if (!is_dir(n))
		return -ENOTDIR;
	const struct cfs_dir *d = n->u.dir;
	if (!d)
		return 1;
	uint32_t pos = tree_order_resume(t, d, *cookie);
	while (pos < d->len && d->slot[pos] & CFS_TOMB)
		pos++; /* at most as many as live entries: compaction sees to that */
	if (pos >= d->len)
		return 1;
	uint32_t r = d->slot[pos];
	const struct cfs_ent *e = ent(t, r);
	*name = t->arena + e->name_off;
	*len = ent_len(t, r);
	*child = ent_child(t, r);
	*cookie = (uint64_t)pos << 32 | e->seq;
	return 0;
}

uint64_t cfs_tree_dir_count(const struct cfs_tree *t, uint32_t dir)
{
	const struct cfs_node *n = nd(t, dir);

	return is_dir(n) ? dir_count(n) : 0;
}

/* ---- creation ---- */

static void count_kind(struct cfs_tree *t, mode_t mode)
{
	t->nodes++;
	if (S_ISDIR(mode))
		t->dirs++;
	else if (S_ISLNK(mode))
		t->links++;
	else
		t->files++;
}

/* MODE carries the kind; TARGET (TLEN bytes) is a link's body. */
static int node_create(struct cfs_tree *t, uint32_t dir, const char *name, size_t len, mode_t mode,
		       const char *target, size_t tlen, const struct cfs_new *a, uint32_t *out)
{
	const char *keep[2] = {name, target};
	bool fresh;
	int err = tree_check_new_entry(t, dir, name, len);

	if (!err && t->nodes >= t->node_limit)
		err = -ENOSPC;
	if (!err)
		err = tree_meta_reserve(t, CFS_NODE_COST + len + tlen);
	if (!err)
		err = tree_entry_reserve(t, dir, len + tlen, keep, 2, 0, &fresh);
	if (err)
		return err;
	err = tree_id_reserve(t);
	if (err) {
		tree_order_unreserve(t, nd(t, dir), fresh);
		return err;
	}
	int64_t now = now_ns();
	uint32_t id = tree_id_take(t);
	struct cfs_node *n = nd(t, id), *p = nd(t, dir);
	node_init(n, mode, a->uid, a->gid, now);
	if (tlen) {
		n->data = arena_put(t, keep[1], tlen);
		n->u.size = tlen;
	}
	tree_ent_attach(t, id, dir, arena_put(t, keep[0], len), len);
	if (S_ISDIR(mode))
		p->nlink++;
	tree_stamp(t, dir, now);
	count_kind(t, mode);
	tree_note_new(t, dir, keep[0], len);
	*out = id;
	return 0;
}

int cfs_tree_mkdir(struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		   const struct cfs_new *a, uint32_t *out)
{
	return node_create(t, dir, name, len, S_IFDIR | (a->mode & 07777), NULL, 0, a, out);
}

int cfs_tree_mkfile(struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		    const struct cfs_new *a, uint32_t *out)
{
	return node_create(t, dir, name, len, S_IFREG | (a->mode & 07777), NULL, 0, a, out);
}

int cfs_tree_mknod(struct cfs_tree *t, uint32_t dir, const char *name, size_t len, mode_t type,
		   dev_t rdev, const struct cfs_new *a, uint32_t *out)
{
	bool dev = type == S_IFCHR || type == S_IFBLK;
	int err;

	if (!dev && type != S_IFIFO && type != S_IFSOCK)
		return -EINVAL;
	if (dev && (major(rdev) > 0xfff || minor(rdev) > 0xfffff))
		return -EINVAL;
	err = node_create(t, dir, name, len, type | (a->mode & 07777), NULL, 0, a, out);
	if (!err && dev)
		nd(t, *out)->data = (uint32_t)(major(rdev) << 20 | minor(rdev));
	return err;
}

int cfs_tree_symlink(struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		     const char *target, size_t target_len, const struct cfs_new *a, uint32_t *out)
{
	if (!target_len)
		return -ENOENT; /* as getname(""): the kernel checks the target first */
	if (target_len >= RS_PATH_MAX)
		return -ENAMETOOLONG;
	/* Links are always 0777, as on Linux. */
	return node_create(t, dir, name, len, S_IFLNK | 0777, target, target_len, a, out);
}

/* ---- content ---- */

int cfs_tree_set_pattern(struct cfs_tree *t, uint32_t id, const char *pattern, size_t plen,
			 uint64_t size)
{
	struct cfs_node *n = nd(t, id);
	uint32_t off = 0;
	int err = check_file(n);

	if (err)
		return err;
	if (plen > CFS_PATTERN_MAX || (!plen && size))
		return -EINVAL;
	if (size > CFS_FILE_MAX)
		return -EFBIG;
	if (size) {
		/* before releasing: it may be shared */
		err = tree_pat_acquire(t, pattern, plen, &off);
		if (err)
			return err;
	}
	tree_content_release(t, n);
	if (size) {
		n->content = CFS_PATTERN;
		n->data = off;
	}
	n->u.size = size;
	tree_stamp(t, id, now_ns());
	tree_arena_tidy(t);
	return 0;
}

int cfs_tree_set_content(struct cfs_tree *t, uint32_t id, const char *data, size_t len)
{
	struct cfs_node *n = nd(t, id);
	struct cfs_node fresh = {.content = CFS_ZEROS};
	int err = check_file(n);

	if (err)
		return err;
	if (len > CFS_FILE_MAX)
		return -EFBIG;
	/* written into a node of its own first, so that a failure leaves N as it was */
	ssize_t w = len ? tree_content_write(t, &fresh, data, len, 0) : 0;
	if (w < 0)
		return (int)w;
	if ((size_t)w < len) {
		tree_content_release(t, &fresh);
		return -ENOSPC;
	}
	tree_content_release(t, n);
	n->content = fresh.content;
	n->data = fresh.data;
	n->u.size = len;
	tree_stamp(t, id, now_ns());
	tree_arena_tidy(t);
	return 0;
}

ssize_t cfs_tree_write(struct cfs_tree *t, uint32_t id, const char *buf, size_t size, off_t off)
{
	struct cfs_node *n = nd(t, id);
	int err = check_file(n);

	if (err)
		return err;
	if (off < 0)
		return -EINVAL;
	if (!size)
		return 0;
	if ((uint64_t)off >= CFS_FILE_MAX)
		return -EFBIG;
	if (size > CFS_FILE_MAX - (uint64_t)off) /* as the kernel: a write stops at the limit */
		size = (size_t)(CFS_FILE_MAX - (uint64_t)off);
	ssize_t w = tree_content_write(t, n, buf, size, (uint64_t)off);
	if (w < 0)
		return w;
	tree_stamp(t, id, now_ns());
	tree_arena_tidy(t); /* a materialized pattern left a hole */
	return w;
}

int cfs_tree_truncate(struct cfs_tree *t, uint32_t id, uint64_t size)
{
	struct cfs_node *n = nd(t, id);
	int err = check_file(n);

	if (err)
		return err;
	if (size > CFS_FILE_MAX)
		return -EFBIG;
	if (size == n->u.size)
		return 0;
	if (!size)
		tree_content_release(t, n);
	if (size < n->u.size)
		tree_content_shrink(t, n, size);
	else if ((err = tree_content_grow(t, n, size)))
		return err;
	tree_stamp(t, id, now_ns());
	tree_arena_tidy(t);
	return 0;
}

/* The modes tmpfs's fallocate takes (shmem_fallocate); the VFS already refuses PUNCH_HOLE
 * without KEEP_SIZE, the tree again for its own callers. */
static bool fallocate_mode_ok(int mode)
{
	return mode == 0 || mode == FALLOC_FL_KEEP_SIZE ||
	       mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE);
}

int cfs_tree_fallocate(struct cfs_tree *t, uint32_t id, int mode, off_t off, off_t len)
{
	struct cfs_node *n = nd(t, id);
	int err = check_file(n);
	uint64_t end;

	if (!err && !fallocate_mode_ok(mode))
		err = -EOPNOTSUPP;
	if (!err && (off < 0 || len <= 0))
		err = -EINVAL;
	if (!err && (uint64_t)len > CFS_FILE_MAX - (uint64_t)off)
		err = -EFBIG;
	if (err)
		return err;
	end = (uint64_t)off + (uint64_t)len;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		err = tree_content_punch(t, n, (uint64_t)off, end);
	else
		err = tree_content_allocate(t, n, (uint64_t)off, end);
	if (err)
		return err;
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > n->u.size)
		n->u.size = end; /* the new pages hold zeros: nothing else to do */
	tree_stamp(t, id, now_ns());
	tree_arena_tidy(t);
	return 0;
}

off_t cfs_tree_seek(const struct cfs_tree *t, uint32_t id, off_t off, bool data)
{
	const struct cfs_node *n = nd(t, id);
	int err = check_file(n);
	uint64_t idx, at;

	if (err)
		return err;
	if (off < 0 || (uint64_t)off >= n->u.size)
		return -ENXIO;
	idx = tree_content_seek(t, n, (uint64_t)off / CFS_PAGE, data);
	if (data && (idx == UINT64_MAX || idx >= (n->u.size + CFS_PAGE - 1) / CFS_PAGE))
		return -ENXIO;
	at = idx * CFS_PAGE > (uint64_t)off ? idx * CFS_PAGE : (uint64_t)off;
	return (off_t)(at < n->u.size ? at : n->u.size);
}

void cfs_tree_set_data_limit(struct cfs_tree *t, uint64_t bytes)
{
	t->data_limit = bytes;
}

void cfs_tree_set_meta_limit(struct cfs_tree *t, uint64_t bytes)
{
	t->meta_limit = bytes;
}

void cfs_tree_set_node_limit(struct cfs_tree *t, uint64_t nodes)
{
	t->node_limit = nodes;
}

uint64_t cfs_tree_nodes_room(const struct cfs_tree *t)
{
	uint64_t used = tree_meta_used(t);
	uint64_t room = used < t->meta_limit ? (t->meta_limit - used) / CFS_NODE_COST : 0;
	uint64_t left = t->nodes < t->node_limit ? t->node_limit - t->nodes : 0;

	return room < left ? room : left;
}

int cfs_tree_file_pattern(const struct cfs_tree *t, uint32_t id, const char **pat, size_t *plen,
			  uint64_t *end)
{
	const struct cfs_node *n = nd(t, id);
	uint32_t off = CFS_NONE, refs, len;
	int err = check_file(n);

	if (err)
		return err;
	*end = 0;
	if (n->content == CFS_PATTERN) {
		off = n->data;
		*end = n->u.size;
	} else if (n->content == CFS_PAGED && t->paged[n->data].pat != CFS_NONE) {
		off = t->paged[n->data].pat;
		*end = t->paged[n->data].pat_end;
	}
	*pat = NULL;
	*plen = 0;
	if (off != CFS_NONE) {
		pat_header(t, off, &refs, &len);
		*pat = t->arena + off + CFS_PAT_HDR;
		*plen = len;
	}
	return 0;
}

int cfs_tree_next_written(const struct cfs_tree *t, uint32_t id, uint64_t off, uint64_t *start,
			  uint64_t *end)
{
	const struct cfs_node *n = nd(t, id);
	uint64_t size = n->u.size, s = 0, e = 0;
	int err = check_file(n);

	if (err)
		return err;
	if (n->content == CFS_BUFFER) {
		e = t->bufs[n->data].cap;
	} else if (n->content == CFS_PAGED) {
		if (!tree_paged_next_run(&t->paged[n->data], off / CFS_PAGE, &s, &e))
			return 1;
		s *= CFS_PAGE;
		e *= CFS_PAGE;
	}
	if (s < off)
		s = off;
	if (e > size)
		e = size;
	if (s >= e)
		return 1;
	*start = s;
	*end = e;
	return 0;
}

/* ---- the resolver's view ---- */

static int tree_rs_lookup(void *tree, uint64_t dir, const char *name, size_t len, uint64_t *out)
{
	uint32_t id;
	int err = cfs_tree_lookup(tree, (uint32_t)dir, name, len, &id);

	if (!err)
		*out = id;
	return err;
}

static enum rs_kind tree_rs_kind(void *tree, uint64_t node)
{
	return cfs_tree_kind(tree, (uint32_t)node);
}

static int tree_rs_readlink(void *tree, uint64_t id, const char **target, size_t *len)
{
	return cfs_tree_readlink(tree, (uint32_t)id, target, len);
}

static uint64_t tree_rs_parent(void *tree, uint64_t dir)
{
	return cfs_tree_parent(tree, (uint32_t)dir);
}

static int tree_rs_may_search(void *tree, uint64_t dir, const struct rs_cred *cred)
{
	return cred ? cfs_tree_may(tree, (uint32_t)dir, cred, X_OK) : 0;
}

const struct rs_tree_ops cfs_tree_rs_ops = {
    .lookup = tree_rs_lookup,
    .kind = tree_rs_kind,
    .readlink = tree_rs_readlink,
    .parent = tree_rs_parent,
    .may_search = tree_rs_may_search,
};
