/*
 * Internal to the tree module (tree/tree*.c; the contract is tree.h): the layout, its
 * constants, the small accessors every file inlines, and the steps the files share, which
 * carry a tree_ prefix. Nothing outside the module includes it.
 *
 * The files, each calling only those below it (tools/callgraph.sh checks that no two call
 * each other, directly or round a circle):
 *
 *  tree_undo.c    the journal's ends: commit, and undo (putting back what tree_entry.c noted)
 *  tree.c         the tree's life, queries, creation, content, the resolver's view
 *  tree_attr.c    attributes (mode, owner, xattrs and ACLs, times), kernel references
 *  tree_rename.c  namespace changes: link, unlink, rmdir, rename
 *  tree_entry.c   the steps both stand on: names checked, entries found, reserved, attached
 *                 and detached, orphans kept and released, changes stamped and recorded,
 *                 and noted in the journal
 *  tree_data.c    file data: patterns, small buffers, paged writes
 *  tree_index.c   the (directory, name) hash, directory order, the extra names' ring heads
 *  tree_store.c   arena growth and rebuild, node handles, slots with free lists
 *  tree_acl.c     POSIX ACLs: their check, the mode they give, chmod, inheritance
 *  tree_xattr.c   extended attributes: a side table of sets by node handle
 *  tree_int.h     inline accessors that call nothing but each other (and the allocation
 *                 hooks): nodes, entries, arena, the metadata limit, table sizes, the clock
 *
 * Layout, sized for a million nodes at well under 100 bytes each:
 *
 *  nodes   72-byte struct cfs_node in chunks of CFS_CHUNK, indexed by handle: growth adds a
 *          chunk and never moves a node. Freed handles are chained through .data.
 *  entries a name (directory, name) -> child. A node's first name lives in the node (.e); the
 *          names hard links add live in the xname side table, a ring per child in creation
 *          order reached through a small child -> oldest-xname map. When the first name goes,
 *          the oldest extra one moves into the node, so .e is always the first name still
 *          linked. An entry is named by a 32-bit ref: the child's handle for the node's name,
 *          CFS_XREF | index for an extra one.
 *  orphans a node that lost its last name keeps it (.e: last directory and name) and lives on
 *          while the kernel holds it; it pins that directory (cfs_dir.pins), so the handle
 *          cfs_tree_parent gives stays valid, as a dentry pins its parent.
 *  hash    one open-addressed table of entry refs keyed by (directory, name): linear probing,
 *          backward-shift deletion (no tombstones), load at most 3/4.
 *  order   per directory, the entry refs in creation order; each entry carries its seq. A
 *          removed entry leaves CFS_TOMB | seq, so the array stays sorted by seq and binary
 *          search finds any seq again after compaction. Cookie = position << 32 | seq.
 *  arena   names, link targets and patterns behind 32-bit offsets. Removal leaves a hole; the
 *          arena is rebuilt when holes outweigh live bytes.
 *
 * Every mutating call first reserves what it needs (handle, arena bytes, hash slot, order
 * slot, xname or buffer slot), then changes the tree with steps that cannot fail.
 */
#ifndef CHAINFS_TREE_INT_H
#define CHAINFS_TREE_INT_H

#include "tree.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h> /* RENAME_NOREPLACE, RENAME_EXCHANGE (_GNU_SOURCE) */
#include <time.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0) /* <linux/fs.h> */
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

_Static_assert(sizeof(size_t) >= 8, "arena and buffer sizes assume a 64-bit size_t");

#define CFS_XREF      (UINT32_C(1) << 30) /* entry ref of an extra hard-link name */
#define CFS_TOMB      (UINT32_C(1) << 31) /* order slot of a removed entry; low bits keep its seq */
#define CFS_ID_MAX    (CFS_XREF - 1)	  /* handles and xname indexes stay below the tag bits */
#define CFS_SEQ_MAX   (CFS_TOMB - 1)	  /* a seq must fit beside CFS_TOMB */
#define CFS_ARENA_MAX UINT32_MAX	  /* arena offsets are 32-bit */
#define CFS_NONE      UINT32_MAX	  /* no last pattern */
#define CFS_MOVED     UINT32_MAX	  /* pattern header during a rebuild: already copied */
#define CFS_FILE_MAX  ((uint64_t)INT64_MAX) /* sizes must fit off_t */
#define CFS_NS	      INT64_C(1000000000)
#define CFS_SEC_MIN   INT64_C(-9223372036) /* times are int64 ns: about 1677 to 2262 */
#define CFS_SEC_MAX   INT64_C(9223372035)

enum {
	CFS_CHUNK_BITS = 12, /* 4096 nodes (288 KiB) per chunk: mmap-sized, little slack */
	CFS_CHUNK = 1 << CFS_CHUNK_BITS,
	CFS_CHUNKS_MIN = 16,
	CFS_HASH_MIN = 64,     /* power of two */
	CFS_REHASH_BATCH = 16, /* prefetches in flight while a table grows */
	CFS_DIR_MIN = 4,       /* most directories of generated trees are small */
	CFS_DIR_TIDY = 32,     /* tombstones a directory keeps before compaction is considered */
	CFS_ARENA_MIN = 4096,
	CFS_ARENA_TIDY = 1 << 16, /* hole bytes tolerated before a rebuild is considered */
	CFS_TABLE_MIN = 16,	  /* first xname and buffer slots */
	CFS_PAT_HDR = 8,	  /* u32 refs + u32 length before a pattern's bytes */
	CFS_DIRENT_SIZE = 20,	  /* tmpfs's BOGO_DIRENT_SIZE: a directory's st_size per entry */
	CFS_BLKSIZE = 4096,
	CFS_BUF_SLACK = 1024, /* truncate gives back a buffer's tail only past this */
	CFS_PAGE = 4096,      /* file data: tmpfs's page, which st_blocks and statfs count */
	CFS_GROUP_BITS = 6,   /* pages grouped by 64: 8 bytes of table per page when dense */
	CFS_GROUP = 1 << CFS_GROUP_BITS,
	/* What the metadata limit (cfs_tree_set_meta_limit) charges, besides the arena's bytes
	 * (names, link targets, patterns): a node, for its 72 bytes and its share of the hash
	 * and order tables with their slack; an extra name, for its xname, xhead, hash and
	 * order slots. Round numbers a little above the real cost, so the limit bounds memory. */
	CFS_NODE_COST = 128,
	CFS_XNAME_COST = 64,
	/* ... and an extended attribute, besides its name and value (tmpfs charges its
	 * simple_xattr header the same way, to the same inode space) */
	CFS_XATTR_COST = 64,
};

/* file content (see "file data" in tree_data.c); zeros needs no memory */
enum { CFS_ZEROS, CFS_PATTERN, CFS_BUFFER, CFS_PAGED };

/* Where a name lives: shared by a node's first name and the xnames. */
struct cfs_ent {
	uint32_t dir;	   /* directory holding the name; 0: none (the root, a free xname) */
	uint32_t name_off; /* arena */
	uint32_t seq;	   /* creation order within dir */
};

struct cfs_node {
	uint16_t mode;	  /* S_IFMT | permission bits; 0: free slot */
	uint8_t name_len; /* length of e's name */
	uint8_t content;  /* files: CFS_ZEROS, CFS_PATTERN, CFS_BUFFER or CFS_PAGED */
	uint32_t gen;
	struct cfs_ent e; /* first name still linked, an orphan's last; e.dir 0: the root */
	uint32_t uid, gid;
	uint32_t nlink;
	uint32_t refs;		     /* kernel references; saturates at UINT32_MAX */
	uint32_t data;		     /* file: pattern offset, buffer or paged index; link: target;
					free slot: next free handle */
	int64_t atime, mtime, ctime; /* ns since the epoch */
	union {
		uint64_t size;	     /* files: content size; links: target length */
		struct cfs_dir *dir; /* directories: entry order; NULL until the first entry */
	} u;
};
_Static_assert(sizeof(struct cfs_node) == 72, "the node is the per-node memory budget");

/* A name added by a hard link. */
struct cfs_xname {
	struct cfs_ent e; /* e.dir 0: free slot, chained through child */
	uint32_t child;
	uint32_t prev, next; /* the child's extra names in creation order, a ring of indexes */
	uint8_t name_len;
};

/* The oldest extra name of a child that has any. */
struct cfs_xhead {
	uint32_t child; /* 0: empty slot */
	uint32_t head;	/* xname index */
};

struct cfs_dir {
	uint32_t len; /* slots used, live or dead */
	uint32_t cap;
	uint32_t dead;	   /* CFS_TOMB slots among them */
	uint32_t last_seq; /* seq given to the newest entry */
	uint32_t pins;	   /* orphans whose last directory this is: it must outlive them */
	uint32_t slot[];   /* entry refs by increasing seq */
};

/* One extended attribute: its name, a NUL, then its value, in one allocation. */
struct cfs_xattr {
	char *bytes;
	uint32_t name_len, value_len;
};

/* The extended attributes of node ID (0: empty slot), in the order listxattr shows them. */
struct cfs_xset {
	uint32_t id;
	uint32_t n, cap;
	struct cfs_xattr *a;
};

/* The bytes of a small written file. p NULL: free slot, chained through cap. */
struct cfs_buf {
	char *p;
	uint64_t cap;
};

/* CFS_GROUP consecutive pages of a paged file, NULL where not written. */
struct cfs_group {
	uint32_t used;	    /* pages present */
	uint64_t unwritten; /* bit k: page k was allocated by fallocate and never written since */
	char *page[CFS_GROUP];
};
_Static_assert(CFS_GROUP <= 64, "a group's unwritten pages are one 64-bit mask");

struct cfs_gref {
	uint64_t key; /* page index >> CFS_GROUP_BITS */
	struct cfs_group *g;
};

/* A paged file: its written pages in groups sorted by key (a lone page in a sparse file costs
 * a group, ~530 bytes; a dense file 8 bytes a page), over its base pattern. Free slot:
 * chained through pat (index + 1). */
struct cfs_pages {
	struct cfs_gref *grp;
	uint32_t ngrp, grp_cap;
	uint32_t pat;	  /* base pattern (arena offset); CFS_NONE: zeros */
	uint64_t pat_end; /* the base is the pattern below this offset (<= size), 0 without */
	uint64_t npages;
	uint64_t nextra; /* pages at or past pages_of(pat_end): st_blocks adds them */
};

struct cfs_tree {
	void *(*realloc_fn)(void *, size_t);
	void (*free_fn)(void *);
	uint64_t bytes; /* everything allocated, for stats */

	struct cfs_node **chunks; /* node i lives in chunks[i >> CFS_CHUNK_BITS] */
	uint32_t nchunks, chunk_cap;
	uint32_t next_id; /* first handle never used */
	uint32_t free_id; /* last freed handle, 0: none */

	struct cfs_xname *x;
	uint32_t x_len, x_cap, x_free; /* x_free: index + 1, 0: none */
	struct cfs_xhead *xh;	       /* open addressing, linear probing, load <= 1/2 */
	uint32_t xh_cap, xh_count;

	struct cfs_buf *bufs;
	uint32_t buf_len, buf_cap, buf_free; /* buf_free: index + 1, 0: none */
	struct cfs_pages *paged;	     /* paged files; allocated with the first one */
	uint32_t paged_len, paged_cap, paged_free;
	uint64_t data_limit; /* data_bytes may not grow past it: ENOSPC */
	uint64_t meta_limit; /* tree_meta_used may not grow past it: ENOSPC */
	uint64_t node_limit; /* nodes may not grow past it: ENOSPC */
	uint64_t xnames;     /* extra names in use */
	struct cfs_xset *xs; /* extended attributes by node: open addressing, load <= 1/2 */
	uint32_t xs_cap, xs_count;
	uint64_t xattr_bytes; /* what the metadata limit counts for them (tree_xattr_cost) */

	uint32_t *hash; /* entry refs, 0: empty; then hash_cap tags */
	uint32_t hash_cap, hash_count;

	char *arena;
	uint32_t arena_len, arena_cap;
	uint32_t arena_holes; /* bytes of released strings inside arena_len */
	uint32_t last_pat;    /* newest pattern, shared by the next identical one */

	uint64_t nodes, dirs, files, links, data_bytes, total_refs;
	struct cfs_changes *changes;  /* where changes are recorded (NULL: nowhere) */
	struct tree_journal *journal; /* cfs_tree_journal_begin's notes (NULL: none kept) */
};

/* ---- the journal (cfs_tree_journal_begin): what undoes each change, newest last ---- */

enum tree_jkind {
	TJ_ATTR, /* a node's mode, owner and times before a change */
	TJ_NEW,	 /* a name made (a node, or a hard link): undone by removing it */
	TJ_MOVE, /* a name moved (rename to a free name, or over one: then a TJ_GONE before it) */
	TJ_SWAP, /* two names exchanged what they hold */
	TJ_GONE, /* a name removed: the node it named comes back with it */
	TJ_KEPT, /* a node that lost its last name, kept (an orphan) until the journal's end */
};

struct tree_jrec {
	uint8_t kind;
	bool first;	   /* TJ_GONE: the name was the node's first (tree_int.h's .e) */
	uint32_t rank;	   /* TJ_GONE, an extra name: older extra names of its node */
	uint16_t mode;	   /* TJ_ATTR */
	uint32_t id, gen;  /* TJ_ATTR, TJ_GONE, TJ_KEPT: the node */
	uint32_t dir, seq; /* TJ_NEW, TJ_GONE: the name's place; TJ_MOVE, TJ_SWAP: the old one */
	uint32_t dir2;	   /* TJ_MOVE, TJ_SWAP: the new name's directory */
	uint32_t name, len, name2, len2; /* names, in tree_journal.names */
	uint32_t uid, gid;		 /* TJ_ATTR */
	int64_t atime, mtime, ctime;	 /* TJ_ATTR */
};

struct tree_journal {
	struct tree_jrec *rec;
	uint32_t n, cap;
	char *names;
	uint32_t names_len, names_cap;
	bool lost; /* a note did not fit in memory: an undo would be incomplete */
};

/* ---- memory: every byte goes through the hooks and is counted ---- */

static inline void *mem_resize(struct cfs_tree *t, void *p, size_t old, size_t size)
{
	void *q = t->realloc_fn(p, size);

	if (q)
		t->bytes = t->bytes - old + size;
	return q;
}

static inline void mem_free(struct cfs_tree *t, void *p, size_t size)
{
	if (!p)
		return;
	t->free_fn(p);
	t->bytes -= size;
}

/* ---- nodes and entries ---- */

static inline struct cfs_node *nd(const struct cfs_tree *t, uint32_t id)
{
	assert(id && id < t->next_id);
	return &t->chunks[id >> CFS_CHUNK_BITS][id & (CFS_CHUNK - 1)];
}

static inline bool is_dir(const struct cfs_node *n)
{
	return S_ISDIR(n->mode);
}

/* CRED is in group GID (its own or a supplementary one) */
static inline bool cred_in_group(const struct rs_cred *cred, gid_t gid)
{
	if (cred->gid == gid)
		return true;
	for (int i = 0; i < cred->ngroups; i++)
		if (cred->groups[i] == gid)
			return true;
	return false;
}

static inline struct cfs_xname *xn(const struct cfs_tree *t, uint32_t r)
{
	return &t->x[r & ~CFS_XREF];
}

static inline struct cfs_ent *ent(const struct cfs_tree *t, uint32_t r)
{
	return r & CFS_XREF ? &xn(t, r)->e : &nd(t, r)->e;
}

static inline size_t ent_len(const struct cfs_tree *t, uint32_t r)
{
	return r & CFS_XREF ? xn(t, r)->name_len : nd(t, r)->name_len;
}

static inline void ent_set_len(const struct cfs_tree *t, uint32_t r, size_t len)
{
	if (r & CFS_XREF)
		xn(t, r)->name_len = (uint8_t)len;
	else
		nd(t, r)->name_len = (uint8_t)len;
}

static inline uint32_t ent_child(const struct cfs_tree *t, uint32_t r)
{
	return r & CFS_XREF ? xn(t, r)->child : r;
}

static inline uint64_t dir_count(const struct cfs_node *n)
{
	return n->u.dir ? n->u.dir->len - n->u.dir->dead : 0;
}

static inline uint32_t dir_pins(const struct cfs_node *n)
{
	return is_dir(n) && n->u.dir ? n->u.dir->pins : 0;
}

/* Still needed by someone: the kernel, or an orphan whose last directory this is. */
static inline bool is_held(const struct cfs_node *n)
{
	return n->refs || dir_pins(n);
}

/* ---- arena: the small steps; growth and rebuild are in tree_store.c ---- */

static inline uint32_t arena_put(struct cfs_tree *t, const void *s, size_t n)
{
	uint32_t off = t->arena_len;

	assert(n <= t->arena_cap - t->arena_len);
	memcpy(t->arena + off, s, n);
	t->arena_len += (uint32_t)n;
	return off;
}

static inline void arena_drop(struct cfs_tree *t, size_t n)
{
	t->arena_holes += (uint32_t)n;
}

static inline void pat_header(const struct cfs_tree *t, uint32_t off, uint32_t *refs, uint32_t *len)
{
	uint32_t h[2];

	memcpy(h, t->arena + off, sizeof(h));
	*refs = h[0];
	*len = h[1];
}

static inline void pat_set_header(struct cfs_tree *t, uint32_t off, uint32_t refs, uint32_t len)
{
	uint32_t h[2] = {refs, len};

	memcpy(t->arena + off, h, sizeof(h));
}

/* ---- the metadata limit ---- */

/* What the metadata limit counts: live arena bytes and a cost per node and per extra name.
 * Holes in the arena are not counted: a rebuild drops them once they outweigh live bytes. */
static inline uint64_t tree_meta_used(const struct cfs_tree *t)
{
	return (uint64_t)(t->arena_len - t->arena_holes) + t->nodes * CFS_NODE_COST +
	       t->xnames * CFS_XNAME_COST + t->xattr_bytes;
}

/* 0 if MORE bytes of metadata fit under the limit, else -ENOSPC (as a full tmpfs). */
static inline int tree_meta_reserve(const struct cfs_tree *t, uint64_t more)
{
	uint64_t used = tree_meta_used(t);

	return used <= t->meta_limit && more <= t->meta_limit - used ? 0 : -ENOSPC;
}

/* ---- sizes of the index tables (tree_index.c), which lifetime frees too ---- */

static inline size_t hash_bytes(uint32_t cap)
{
	return (size_t)cap * (sizeof(uint32_t) + 1);
}

static inline size_t dir_bytes(uint32_t cap)
{
	return sizeof(struct cfs_dir) + (size_t)cap * sizeof(uint32_t);
}

/* ---- small shared steps ---- */

/* The coarse clock, as tmpfs's current_time(): a tick's resolution, a fraction of the cost. */
static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * CFS_NS + ts.tv_nsec;
}

static inline bool is_dot_or_dotdot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

/* ---- tree_store.c: arena growth and rebuild, slots with free lists ---- */

int tree_arena_reserve(struct cfs_tree *t, size_t n, const char **keep, int nkeep);
void tree_arena_tidy(struct cfs_tree *t);
int tree_id_reserve(struct cfs_tree *t);
uint32_t tree_id_take(struct cfs_tree *t);
int tree_xname_reserve(struct cfs_tree *t);
uint32_t tree_xname_take(struct cfs_tree *t, uint32_t child);
void tree_xname_put(struct cfs_tree *t, uint32_t r);
int tree_buf_slot_reserve(struct cfs_tree *t);
uint32_t tree_buf_slot_take(struct cfs_tree *t, char *p, uint64_t cap);
void tree_buf_release(struct cfs_tree *t, uint32_t i);

/* ---- tree_xattr.c: extended attributes ---- */

/* 0 if NAME is in a namespace tmpfs keeps, -EOPNOTSUPP if not, -EINVAL for a bare prefix
 * (the VFS's xattr_resolve_name), -ERANGE for an empty or too long name. */
int tree_xattr_namespace(const char *name);
/* What one attribute costs under the metadata limit. */
uint64_t tree_xattr_cost(size_t name_len, size_t value_len);
/* Set NAME (checked by the caller) on ID to VALUE of SIZE bytes, or remove it (VALUE NULL);
 * FLAGS XATTR_CREATE (-EEXIST), XATTR_REPLACE (-ENODATA); -ENOSPC past the metadata limit,
 * -ENOMEM: nothing changed. No time is stamped. */
int tree_xattr_set(struct cfs_tree *t, uint32_t id, const char *name, const void *value,
		   size_t size, int flags);
/* The value of NAME on ID, changeable in place (its length stays), or NULL. */
char *tree_xattr_value(const struct cfs_tree *t, uint32_t id, const char *name, size_t *len);
void tree_xattr_drop(struct cfs_tree *t, uint32_t id); /* every attribute of a freed node */
void tree_xattr_release(struct cfs_tree *t);	       /* the whole table, with the tree */

/* ---- tree_acl.c: POSIX ACLs over their xattr form ---- */

/* 0 if VALUE is an ACL the kernel would take (posix_acl_valid), else -EINVAL. */
int tree_acl_valid(const void *value, size_t size);
/* The permission bits the access ACL VALUE gives *MODE; 1 if the ACL says more than a mode
 * can (it must be kept), 0 if the mode says it all (posix_acl_equiv_mode). */
int tree_acl_mode(const void *value, size_t size, mode_t *mode);
/* Rewrite ID's access ACL, if any, for a chmod to MODE. */
void tree_acl_chmod(struct cfs_tree *t, uint32_t id, mode_t mode);
/* New node ID's ACLs from directory DIR's default ACL, *MODE masked by it: 0; 1 when DIR has
 * none (nothing done); -ENOSPC, -ENOMEM: ID has no ACL. */
int tree_acl_inherit(struct cfs_tree *t, uint32_t dir, uint32_t id, mode_t *mode);

/* ---- tree_index.c: the (directory, name) hash, directory order, extra names ---- */

uint32_t *tree_hash_find(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len);
uint32_t *tree_hash_slot_of(const struct cfs_tree *t, uint32_t r);
void tree_hash_put(struct cfs_tree *t, uint32_t r);
void tree_hash_del(struct cfs_tree *t, uint32_t *slot);
uint32_t *tree_hash_alloc(struct cfs_tree *t, uint32_t cap);
int tree_hash_reserve(struct cfs_tree *t);
uint32_t tree_order_pos(const struct cfs_tree *t, const struct cfs_dir *d, uint32_t seq);
int tree_order_reserve(struct cfs_tree *t, struct cfs_node *dn, bool *fresh);
void tree_order_unreserve(struct cfs_tree *t, struct cfs_node *dn, bool fresh);
void tree_order_append(const struct cfs_tree *t, struct cfs_node *dn, uint32_t r);
void tree_order_remove(struct cfs_tree *t, struct cfs_node *dn, uint32_t seq);
void tree_order_insert(const struct cfs_tree *t, struct cfs_node *dn, uint32_t r, uint32_t seq);
void tree_order_place(const struct cfs_tree *t, struct cfs_node *dn, uint32_t r, uint32_t seq);
void tree_order_free(struct cfs_tree *t, struct cfs_node *dn);
uint32_t tree_order_resume(const struct cfs_tree *t, const struct cfs_dir *d, uint64_t cookie);
struct cfs_xhead *tree_xhead_find(const struct cfs_tree *t, uint32_t child);
int tree_xhead_reserve(struct cfs_tree *t);
void tree_xname_chain(struct cfs_tree *t, uint32_t i);
void tree_xname_unchain(struct cfs_tree *t, uint32_t i);
bool tree_has_xnames(const struct cfs_tree *t, uint32_t id);
uint32_t tree_xname_rank(const struct cfs_tree *t, uint32_t i);
void tree_xname_chain_at(struct cfs_tree *t, uint32_t i, uint32_t rank);

/* ---- tree_data.c: file data, small and paged writes ---- */

void tree_content_copy(const struct cfs_tree *t, const struct cfs_node *n, char *dst, uint64_t off,
		       size_t len);
uint64_t tree_content_pages(const struct cfs_tree *t, const struct cfs_node *n);
void tree_content_release(struct cfs_tree *t, struct cfs_node *n);
ssize_t tree_content_write(struct cfs_tree *t, struct cfs_node *n, const char *buf, size_t size,
			   uint64_t off);
void tree_content_shrink(struct cfs_tree *t, struct cfs_node *n, uint64_t size);
int tree_content_grow(struct cfs_tree *t, struct cfs_node *n, uint64_t size);
int tree_pat_acquire(struct cfs_tree *t, const char *pattern, size_t plen, uint32_t *off);
void tree_pages_free_from(struct cfs_tree *t, struct cfs_pages *fp, uint64_t first);
bool tree_paged_next_run(const struct cfs_pages *fp, uint64_t idx, uint64_t *start, uint64_t *end);
int tree_content_allocate(struct cfs_tree *t, struct cfs_node *n, uint64_t off, uint64_t end);
int tree_content_punch(struct cfs_tree *t, struct cfs_node *n, uint64_t off, uint64_t end);
uint64_t tree_content_seek(const struct cfs_tree *t, const struct cfs_node *n, uint64_t idx,
			   bool data);

/* ---- tree_entry.c: the steps tree.c and tree_rename.c share: names, entries, orphans,
 * changes ---- */

int tree_check_name(const char *name, size_t len);
int tree_check_new_name(const char *name, size_t len);
void tree_node_orphan(struct cfs_tree *t, uint32_t id);
void tree_node_release(struct cfs_tree *t, uint32_t id);
void tree_ent_attach(struct cfs_tree *t, uint32_t r, uint32_t dir, uint32_t off, size_t len);
void tree_xname_promote(struct cfs_tree *t, uint32_t id);
void tree_ent_detach(struct cfs_tree *t, uint32_t *slot, uint32_t r);
int tree_find_entry(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		    uint32_t **slot);
int tree_check_new_entry(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len);
/* The journal's notes (no-ops without one): attributes before they change, and each name made,
 * moved, swapped or removed, noted once the change is made (after its stamps, so an undo puts
 * the structure back first and the times after). */
void tree_note_attr(struct cfs_tree *t, uint32_t id);
void tree_note_new(struct cfs_tree *t, uint32_t dir, const char *name, size_t len);
void tree_note_move(struct cfs_tree *t, enum tree_jkind kind, uint32_t olddir, const char *oldname,
		    size_t oldlen, uint32_t oldseq, uint32_t newdir, const char *newname,
		    size_t newlen);
/* What tree_note_gone needs of entry REF before it goes: TJ_FIRST for a node's first name, else
 * the extra name's place in its node's ring (tree_xname_rank). */
#define TJ_FIRST UINT32_MAX
uint32_t tree_note_rank(const struct cfs_tree *t, uint32_t ref);
void tree_note_gone(struct cfs_tree *t, uint32_t dir, const char *name, size_t len, uint32_t id,
		    uint32_t seq, uint32_t rank);
bool tree_note_kept(struct cfs_tree *t, uint32_t id);
void tree_journal_free(struct cfs_tree *t);
int tree_entry_reserve(struct cfs_tree *t, uint32_t dir, size_t bytes, const char **keep, int nkeep,
		       uint32_t xchild, bool *fresh);
/* Every change to an existing node stamps its ctime, through tree_touch() (attributes, link
 * count) or tree_stamp() (content, and so mtime; a directory's content is its entries), and so
 * is recorded for the kernel's caches (cfs_tree_record): a change cannot be made without being
 * recorded. */
void tree_touch(struct cfs_tree *t, uint32_t id, int64_t now);
void tree_stamp(struct cfs_tree *t, uint32_t id, int64_t now);

#endif
