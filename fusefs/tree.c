/*
 * The daemon's in-memory tree; the contract is in tree.h. Layout, sized for a million nodes
 * at well under 100 bytes each:
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
#include "tree.h"

#include <assert.h>
#include <errno.h>
#include <limits.h> /* SSIZE_MAX */
#include <stdbool.h>
#include <stdio.h> /* RENAME_NOREPLACE, RENAME_EXCHANGE (_GNU_SOURCE) */
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h> /* R_OK, W_OK, X_OK */

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
};

/* file content (see "file data" below); zeros needs no memory */
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

/* The bytes of a small written file. p NULL: free slot, chained through cap. */
struct cfs_buf {
	char *p;
	uint64_t cap;
};

/* CFS_GROUP consecutive pages of a paged file, NULL where not written. */
struct cfs_group {
	uint32_t used; /* pages present */
	char *page[CFS_GROUP];
};

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

	uint32_t *hash; /* entry refs, 0: empty; then hash_cap tags */
	uint32_t hash_cap, hash_count;

	char *arena;
	uint32_t arena_len, arena_cap;
	uint32_t arena_holes; /* bytes of released strings inside arena_len */
	uint32_t last_pat;    /* newest pattern, shared by the next identical one */

	uint64_t nodes, dirs, files, links, data_bytes, total_refs;
};

/* ---- memory: every byte goes through the hooks and is counted ---- */

static void *mem_resize(struct cfs_tree *t, void *p, size_t old, size_t size)
{
	void *q = t->realloc_fn(p, size);

	if (q)
		t->bytes = t->bytes - old + size;
	return q;
}

static void mem_free(struct cfs_tree *t, void *p, size_t size)
{
	if (!p)
		return;
	t->free_fn(p);
	t->bytes -= size;
}

/* ---- nodes and entries ---- */

static struct cfs_node *nd(const struct cfs_tree *t, uint32_t id)
{
	assert(id && id < t->next_id);
	return &t->chunks[id >> CFS_CHUNK_BITS][id & (CFS_CHUNK - 1)];
}

static bool is_dir(const struct cfs_node *n)
{
	return S_ISDIR(n->mode);
}

static struct cfs_xname *xn(const struct cfs_tree *t, uint32_t r)
{
	return &t->x[r & ~CFS_XREF];
}

static struct cfs_ent *ent(const struct cfs_tree *t, uint32_t r)
{
	return r & CFS_XREF ? &xn(t, r)->e : &nd(t, r)->e;
}

static size_t ent_len(const struct cfs_tree *t, uint32_t r)
{
	return r & CFS_XREF ? xn(t, r)->name_len : nd(t, r)->name_len;
}

static void ent_set_len(const struct cfs_tree *t, uint32_t r, size_t len)
{
	if (r & CFS_XREF)
		xn(t, r)->name_len = (uint8_t)len;
	else
		nd(t, r)->name_len = (uint8_t)len;
}

static uint32_t ent_child(const struct cfs_tree *t, uint32_t r)
{
	return r & CFS_XREF ? xn(t, r)->child : r;
}

static bool ent_is(const struct cfs_tree *t, uint32_t r, uint32_t dir, const char *name, size_t len)
{
	const struct cfs_ent *e = ent(t, r);

	return e->dir == dir && ent_len(t, r) == len && !memcmp(t->arena + e->name_off, name, len);
}

static uint64_t dir_count(const struct cfs_node *n)
{
	return n->u.dir ? n->u.dir->len - n->u.dir->dead : 0;
}

/* ---- arena ---- */

/* Room for N more bytes. The arena may move: pointers in KEEP that point into it are moved
 * along (a caller may pass a name it got from cfs_tree_dir_next or a target from readlink). */
static int arena_reserve(struct cfs_tree *t, size_t n, const char **keep, int nkeep)
{
	uintptr_t base = (uintptr_t)t->arena, end = base + t->arena_len;
	size_t off[2];

	if (n <= (size_t)(t->arena_cap - t->arena_len))
		return 0;
	if (n > (size_t)(CFS_ARENA_MAX - t->arena_len))
		return -ENOSPC;
	assert(nkeep <= 2);
	for (int i = 0; i < nkeep; i++)
		off[i] = (uintptr_t)keep[i] - base;
	uint64_t cap = (uint64_t)t->arena_cap + t->arena_cap / 2;
	if (cap < (uint64_t)t->arena_len + n)
		cap = (uint64_t)t->arena_len + n;
	if (cap > CFS_ARENA_MAX)
		cap = CFS_ARENA_MAX;
	char *a = mem_resize(t, t->arena, t->arena_cap, cap);
	if (!a)
		return -ENOMEM;
	for (int i = 0; i < nkeep; i++)
		if (keep[i] && (uintptr_t)keep[i] >= base && (uintptr_t)keep[i] < end)
			keep[i] = a + off[i];
	t->arena = a;
	t->arena_cap = (uint32_t)cap;
	return 0;
}

static uint32_t arena_put(struct cfs_tree *t, const void *s, size_t n)
{
	uint32_t off = t->arena_len;

	assert(n <= t->arena_cap - t->arena_len);
	memcpy(t->arena + off, s, n);
	t->arena_len += (uint32_t)n;
	return off;
}

static void arena_drop(struct cfs_tree *t, size_t n)
{
	t->arena_holes += (uint32_t)n;
}

static void pat_header(const struct cfs_tree *t, uint32_t off, uint32_t *refs, uint32_t *len)
{
	uint32_t h[2];

	memcpy(h, t->arena + off, sizeof(h));
	*refs = h[0];
	*len = h[1];
}

static void pat_set_header(struct cfs_tree *t, uint32_t off, uint32_t refs, uint32_t len)
{
	uint32_t h[2] = {refs, len};

	memcpy(t->arena + off, h, sizeof(h));
}

static uint32_t arena_copy(const struct cfs_tree *t, char *to, uint32_t *len, uint32_t off,
			   size_t n)
{
	uint32_t at = *len;

	memcpy(to + at, t->arena + off, n);
	*len += (uint32_t)n;
	return at;
}

/* A pattern may be shared: the first copy leaves a forwarding header in the old arena. */
static uint32_t pat_move(struct cfs_tree *t, char *to, uint32_t *len, uint32_t off)
{
	uint32_t refs, plen;

	pat_header(t, off, &refs, &plen);
	if (refs == CFS_MOVED)
		return plen;
	uint32_t at = arena_copy(t, to, len, off, CFS_PAT_HDR + (size_t)plen);
	pat_set_header(t, off, CFS_MOVED, at);
	return at;
}

static void arena_move_node(struct cfs_tree *t, char *to, uint32_t *len, struct cfs_node *n)
{
	if (!n->mode)
		return;
	if (n->e.dir)
		n->e.name_off = arena_copy(t, to, len, n->e.name_off, n->name_len);
	if (S_ISLNK(n->mode))
		n->data = arena_copy(t, to, len, n->data, n->u.size);
	else if (S_ISREG(n->mode) && n->content == CFS_PATTERN)
		n->data = pat_move(t, to, len, n->data);
	else if (S_ISREG(n->mode) && n->content == CFS_PAGED && t->paged[n->data].pat != CFS_NONE)
		t->paged[n->data].pat = pat_move(t, to, len, t->paged[n->data].pat);
}

/* Rebuild the arena without its holes once they outweigh the live bytes (amortized O(1) per
 * released byte). Best effort: without memory the holes simply stay. Moves every string, so
 * it runs only at the end of a call. */
static void arena_tidy(struct cfs_tree *t)
{
	uint32_t live = t->arena_len - t->arena_holes, len = 0;

	if (t->arena_holes < CFS_ARENA_TIDY || t->arena_holes < live)
		return;
	uint64_t cap = (uint64_t)live + live / 2;
	if (cap < CFS_ARENA_MIN)
		cap = CFS_ARENA_MIN;
	if (cap > CFS_ARENA_MAX)
		cap = CFS_ARENA_MAX;
	char *to = mem_resize(t, NULL, 0, cap);
	if (!to)
		return;
	for (uint32_t id = 1; id < t->next_id; id++)
		arena_move_node(t, to, &len, nd(t, id));
	for (uint32_t i = 0; i < t->x_len; i++)
		if (t->x[i].e.dir)
			t->x[i].e.name_off =
			    arena_copy(t, to, &len, t->x[i].e.name_off, t->x[i].name_len);
	if (t->last_pat != CFS_NONE) {
		uint32_t moved, at;
		pat_header(t, t->last_pat, &moved, &at);
		t->last_pat = at;
	}
	assert(len == live);
	mem_free(t, t->arena, t->arena_cap);
	t->arena = to;
	t->arena_len = len;
	t->arena_cap = (uint32_t)cap;
	t->arena_holes = 0;
}

/* ---- hash of (directory, name) -> entry ---- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

static uint64_t hash_key(uint32_t dir, const char *name, size_t len)
{
	uint64_t h = mix64((uint64_t)dir << 9 | len), w;

	for (; len >= 8; name += 8, len -= 8) {
		memcpy(&w, name, 8);
		h = (h ^ w) * UINT64_C(0x9e3779b97f4a7c15);
		h ^= h >> 29;
	}
	if (len) {
		w = 0;
		memcpy(&w, name, len);
		h = (h ^ w) * UINT64_C(0x9e3779b97f4a7c15);
	}
	return mix64(h);
}

static uint64_t hash_of(const struct cfs_tree *t, uint32_t r)
{
	const struct cfs_ent *e = ent(t, r);

	return hash_key(e->dir, t->arena + e->name_off, ent_len(t, r));
}

/* Eight more bits of the hash beside each slot: a probe looks at an entry itself (a cache
 * miss into the nodes) only when its tag matches, so a miss costs no dereference at all. */
static uint8_t hash_tag(uint64_t h)
{
	return (uint8_t)(h >> 56);
}

static uint8_t *hash_tags(uint32_t *slots, uint32_t cap)
{
	return (uint8_t *)(slots + cap);
}

static size_t hash_bytes(uint32_t cap)
{
	return (size_t)cap * (sizeof(uint32_t) + 1);
}

static uint32_t *hash_find(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	uint32_t mask = t->hash_cap - 1;
	uint64_t h = hash_key(dir, name, len);
	const uint8_t *tags = hash_tags(t->hash, t->hash_cap), tag = hash_tag(h);

	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		if (!t->hash[i])
			return NULL;
		if (tags[i] == tag && ent_is(t, t->hash[i], dir, name, len))
			return &t->hash[i];
	}
}

/* The slot holding entry R, which must be in the table. */
static uint32_t *hash_slot_of(const struct cfs_tree *t, uint32_t r)
{
	uint32_t mask = t->hash_cap - 1, i = hash_of(t, r) & mask;

	while (t->hash[i] != r)
		i = (i + 1) & mask;
	return &t->hash[i];
}

static void hash_insert(uint32_t *slots, uint32_t cap, uint64_t h, uint32_t r)
{
	uint32_t i = h & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = r;
	hash_tags(slots, cap)[i] = hash_tag(h);
}

static void hash_put(struct cfs_tree *t, uint32_t r)
{
	hash_insert(t->hash, t->hash_cap, hash_of(t, r), r);
	t->hash_count++;
}

/* Backward-shift deletion: pull later entries of the cluster into the gap when their home
 * allows it, so lookups never meet tombstones. */
static void hash_del(struct cfs_tree *t, uint32_t *slot)
{
	uint32_t mask = t->hash_cap - 1, i = (uint32_t)(slot - t->hash), j = i;
	uint8_t *tags = hash_tags(t->hash, t->hash_cap);

	for (;;) {
		j = (j + 1) & mask;
		if (!t->hash[j])
			break;
		uint32_t home = hash_of(t, t->hash[j]) & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->hash[i] = t->hash[j];
			tags[i] = tags[j];
			i = j;
		}
	}
	t->hash[i] = 0;
	t->hash_count--;
}

#if defined(__GNUC__)
#define CFS_PREFETCH(p) __builtin_prefetch((p), 1)
#else
#define CFS_PREFETCH(p) ((void)(p))
#endif

/* Moving entries into a bigger table: each insert is a cache miss at a random slot, so
 * hashes are computed a batch ahead and their slots prefetched. */
struct cfs_rehash {
	uint32_t *slots;
	uint32_t cap;
	int n;
	uint32_t r[CFS_REHASH_BATCH];
	uint64_t h[CFS_REHASH_BATCH];
};

static void rehash_flush(struct cfs_rehash *rh)
{
	for (int i = 0; i < rh->n; i++)
		hash_insert(rh->slots, rh->cap, rh->h[i], rh->r[i]);
	rh->n = 0;
}

static void rehash_add(const struct cfs_tree *t, struct cfs_rehash *rh, uint32_t r)
{
	uint64_t h = hash_of(t, r);
	uint32_t i = h & (rh->cap - 1);

	CFS_PREFETCH(&rh->slots[i]);
	CFS_PREFETCH(&hash_tags(rh->slots, rh->cap)[i]);
	rh->r[rh->n] = r;
	rh->h[rh->n++] = h;
	if (rh->n == CFS_REHASH_BATCH)
		rehash_flush(rh);
}

/* A table of CAP empty slots, or NULL. */
static uint32_t *hash_alloc(struct cfs_tree *t, uint32_t cap)
{
	uint32_t *slots = mem_resize(t, NULL, 0, hash_bytes(cap));

	if (slots)
		memset(slots, 0, (size_t)cap * sizeof(*slots));
	return slots;
}

/* Room for one more entry at a load of at most 3/4. */
static int hash_reserve(struct cfs_tree *t)
{
	uint32_t cap = t->hash_cap;

	if (((uint64_t)t->hash_count + 1) * 4 <= (uint64_t)cap * 3)
		return 0;
	if (cap >= UINT32_C(1) << 31)
		return -ENOSPC;
	struct cfs_rehash rh = {.slots = hash_alloc(t, cap * 2), .cap = cap * 2};
	if (!rh.slots)
		return -ENOMEM;
	/* Entries in memory order, not slot order: nodes and names are then read sequentially
	 * instead of at random. A node's own name is in the table unless it is an orphan's. */
	for (uint32_t id = 1; id < t->next_id; id++) {
		const struct cfs_node *n = nd(t, id);
		if (n->mode && n->e.dir && n->nlink)
			rehash_add(t, &rh, id);
	}
	for (uint32_t i = 0; i < t->x_len; i++)
		if (t->x[i].e.dir)
			rehash_add(t, &rh, CFS_XREF | i);
	rehash_flush(&rh);
	mem_free(t, t->hash, hash_bytes(cap));
	t->hash = rh.slots;
	t->hash_cap = cap * 2;
	return 0;
}

/* ---- directory order ---- */

static size_t dir_bytes(uint32_t cap)
{
	return sizeof(struct cfs_dir) + (size_t)cap * sizeof(uint32_t);
}

static uint32_t order_seq_at(const struct cfs_tree *t, const struct cfs_dir *d, uint32_t pos)
{
	uint32_t v = d->slot[pos];

	return v & CFS_TOMB ? v & ~CFS_TOMB : ent(t, v)->seq;
}

/* The first position whose seq is SEQ or later (d->len if none). */
static uint32_t order_lower_bound(const struct cfs_tree *t, const struct cfs_dir *d, uint32_t seq)
{
	uint32_t lo = 0, hi = d->len;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (order_seq_at(t, d, mid) < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint32_t order_pos(const struct cfs_tree *t, const struct cfs_dir *d, uint32_t seq)
{
	uint32_t pos = order_lower_bound(t, d, seq);

	assert(pos < d->len && !(d->slot[pos] & CFS_TOMB) && ent(t, d->slot[pos])->seq == seq);
	return pos;
}

static void order_compact(struct cfs_dir *d)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < d->len; i++)
		if (!(d->slot[i] & CFS_TOMB))
			d->slot[n++] = d->slot[i];
	d->len = n;
	d->dead = 0;
}

/* After 2^31 creations in one directory: seqs restart at 1. Only cookies handed out before
 * this point can then skip or repeat entries. */
static void order_renumber(const struct cfs_tree *t, struct cfs_dir *d)
{
	order_compact(d);
	for (uint32_t i = 0; i < d->len; i++)
		ent(t, d->slot[i])->seq = i + 1;
	d->last_seq = d->len;
}

/* A free slot at the end of DN's order: *FRESH tells that the array was created for it. */
static int order_reserve(struct cfs_tree *t, struct cfs_node *dn, bool *fresh)
{
	struct cfs_dir *d = dn->u.dir;

	*fresh = false;
	if (!d) {
		d = mem_resize(t, NULL, 0, dir_bytes(CFS_DIR_MIN));
		if (!d)
			return -ENOMEM;
		*d = (struct cfs_dir){.cap = CFS_DIR_MIN};
		dn->u.dir = d;
		*fresh = true;
		return 0;
	}
	if (d->last_seq == CFS_SEQ_MAX)
		order_renumber(t, d);
	if (d->len < d->cap)
		return 0;
	if (d->dead * 2 >= d->len) { /* compaction frees half: amortized O(1) */
		order_compact(d);
		return 0;
	}
	if (d->cap >= CFS_ID_MAX)
		return -ENOSPC;
	d = mem_resize(t, d, dir_bytes(d->cap), dir_bytes(d->cap * 2));
	if (!d)
		return -ENOMEM;
	d->cap *= 2;
	dn->u.dir = d;
	return 0;
}

static void order_unreserve(struct cfs_tree *t, struct cfs_node *dn, bool fresh)
{
	if (!fresh)
		return;
	mem_free(t, dn->u.dir, dir_bytes(dn->u.dir->cap));
	dn->u.dir = NULL;
}

static void order_append(const struct cfs_tree *t, struct cfs_node *dn, uint32_t r)
{
	struct cfs_dir *d = dn->u.dir;

	assert(d->len < d->cap);
	d->slot[d->len++] = r;
	ent(t, r)->seq = ++d->last_seq;
}

/* Best effort: give back most of an order array that emptied out. Keeps a free slot, so a
 * reservation made before a removal still holds. */
static void order_shrink(struct cfs_tree *t, struct cfs_node *dn)
{
	struct cfs_dir *d = dn->u.dir;
	uint32_t cap = d->len * 2 > CFS_DIR_MIN ? d->len * 2 : CFS_DIR_MIN;

	if (d->cap <= CFS_DIR_TIDY || d->len > d->cap / 4)
		return;
	d = mem_resize(t, d, dir_bytes(d->cap), dir_bytes(cap));
	if (!d)
		return;
	d->cap = cap;
	dn->u.dir = d;
}

static void order_remove(struct cfs_tree *t, struct cfs_node *dn, uint32_t seq)
{
	struct cfs_dir *d = dn->u.dir;

	d->slot[order_pos(t, d, seq)] = CFS_TOMB | seq;
	d->dead++;
	while (d->len && d->slot[d->len - 1] & CFS_TOMB) { /* removing the newest is free */
		d->len--;
		d->dead--;
	}
	if (d->dead > CFS_DIR_TIDY && d->dead * 2 > d->len)
		order_compact(d);
	order_shrink(t, dn);
}

/* A removed directory's order goes, unless orphans pin it: their count lives there. */
static void order_free(struct cfs_tree *t, struct cfs_node *dn)
{
	if (!dn->u.dir || dn->u.dir->pins)
		return;
	mem_free(t, dn->u.dir, dir_bytes(dn->u.dir->cap));
	dn->u.dir = NULL;
}

/* Where a listing continues: just after the cookie's entry, found by its position hint, or
 * by its seq when the entries moved (compaction) or it is gone. */
static uint32_t order_resume(const struct cfs_tree *t, const struct cfs_dir *d, uint64_t cookie)
{
	uint32_t seq = (uint32_t)cookie, hint = (uint32_t)(cookie >> 32);

	if (!cookie)
		return 0;
	if (seq > CFS_SEQ_MAX)
		return d->len;
	if (hint < d->len && order_seq_at(t, d, hint) == seq)
		return hint + 1;
	return order_lower_bound(t, d, seq + 1);
}

/* ---- handles, xnames, buffers: slots with free lists ---- */

static int id_reserve(struct cfs_tree *t)
{
	uint32_t c = t->next_id >> CFS_CHUNK_BITS;

	if (t->free_id || c < t->nchunks)
		return 0;
	if (t->next_id > CFS_ID_MAX)
		return -ENOSPC;
	if (c == t->chunk_cap) {
		struct cfs_node **chunks = mem_resize(t, t->chunks, t->chunk_cap * sizeof(*chunks),
						      t->chunk_cap * 2 * sizeof(*chunks));
		if (!chunks)
			return -ENOMEM;
		t->chunks = chunks;
		t->chunk_cap *= 2;
	}
	t->chunks[c] = mem_resize(t, NULL, 0, CFS_CHUNK * sizeof(struct cfs_node));
	if (!t->chunks[c])
		return -ENOMEM;
	t->nchunks++;
	return 0;
}

static uint32_t id_take(struct cfs_tree *t)
{
	uint32_t id = t->free_id;

	if (id) {
		struct cfs_node *n = nd(t, id);
		t->free_id = n->data;
		n->gen++;
		return id;
	}
	id = t->next_id++;
	nd(t, id)->gen = 1;
	return id;
}

static int xname_reserve(struct cfs_tree *t)
{
	if (t->x_free || t->x_len < t->x_cap)
		return 0;
	if (t->x_cap >= CFS_ID_MAX / 2)
		return -ENOSPC;
	struct cfs_xname *x = mem_resize(t, t->x, t->x_cap * sizeof(*x), t->x_cap * 2 * sizeof(*x));
	if (!x)
		return -ENOMEM;
	t->x = x;
	t->x_cap *= 2;
	return 0;
}

static uint32_t xname_take(struct cfs_tree *t, uint32_t child)
{
	uint32_t i = t->x_free ? t->x_free - 1 : t->x_len++;

	if (t->x_free)
		t->x_free = t->x[i].child;
	t->x[i].child = child;
	return CFS_XREF | i;
}

static void xname_put(struct cfs_tree *t, uint32_t r)
{
	struct cfs_xname *x = xn(t, r);

	x->e.dir = 0;
	x->child = t->x_free;
	t->x_free = (r & ~CFS_XREF) + 1;
}

/* ---- extra names of one child: a ring in creation order, its oldest found by child ---- */

static struct cfs_xhead *xhead_find(const struct cfs_tree *t, uint32_t child)
{
	uint32_t mask = t->xh_cap - 1;

	for (uint32_t i = mix64(child) & mask; t->xh[i].child; i = (i + 1) & mask)
		if (t->xh[i].child == child)
			return &t->xh[i];
	return NULL;
}

static void xhead_insert(struct cfs_xhead *slots, uint32_t mask, struct cfs_xhead h)
{
	uint32_t i = mix64(h.child) & mask;

	while (slots[i].child)
		i = (i + 1) & mask;
	slots[i] = h;
}

/* Room for one more child with extra names, at a load of at most 1/2. */
static int xhead_reserve(struct cfs_tree *t)
{
	uint32_t cap = t->xh_cap;

	if (((uint64_t)t->xh_count + 1) * 2 <= cap)
		return 0;
	if (cap >= UINT32_C(1) << 31)
		return -ENOSPC;
	struct cfs_xhead *slots = mem_resize(t, NULL, 0, (size_t)cap * 2 * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0, (size_t)cap * 2 * sizeof(*slots));
	for (uint32_t i = 0; i < cap; i++)
		if (t->xh[i].child)
			xhead_insert(slots, cap * 2 - 1, t->xh[i]);
	mem_free(t, t->xh, (size_t)cap * sizeof(*slots));
	t->xh = slots;
	t->xh_cap = cap * 2;
	return 0;
}

/* Backward-shift deletion, as hash_del. */
static void xhead_del(struct cfs_tree *t, struct cfs_xhead *slot)
{
	uint32_t mask = t->xh_cap - 1, i = (uint32_t)(slot - t->xh), j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!t->xh[j].child)
			break;
		uint32_t home = mix64(t->xh[j].child) & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->xh[i] = t->xh[j];
			i = j;
		}
	}
	t->xh[i].child = 0;
	t->xh_count--;
}

/* Append xname I to its child's ring (xhead_reserve done when it is the first). */
static void xname_chain(struct cfs_tree *t, uint32_t i)
{
	struct cfs_xname *x = &t->x[i];
	struct cfs_xhead *h = xhead_find(t, x->child);

	if (!h) {
		x->prev = x->next = i;
		xhead_insert(t->xh, t->xh_cap - 1, (struct cfs_xhead){x->child, i});
		t->xh_count++;
		return;
	}
	uint32_t tail = t->x[h->head].prev;
	x->prev = tail;
	x->next = h->head;
	t->x[tail].next = i;
	t->x[h->head].prev = i;
}

static void xname_unchain(struct cfs_tree *t, uint32_t i)
{
	struct cfs_xname *x = &t->x[i];
	struct cfs_xhead *h = xhead_find(t, x->child);

	if (x->next == i) {
		xhead_del(t, h);
		return;
	}
	t->x[x->prev].next = x->next;
	t->x[x->next].prev = x->prev;
	if (h->head == i)
		h->head = x->next;
}

static bool has_xnames(const struct cfs_tree *t, uint32_t id)
{
	return t->xh_count && xhead_find(t, id);
}

static int buf_slot_reserve(struct cfs_tree *t)
{
	if (t->buf_free || t->buf_len < t->buf_cap)
		return 0;
	if (t->buf_cap >= UINT32_MAX / 2)
		return -ENOSPC;
	struct cfs_buf *b =
	    mem_resize(t, t->bufs, t->buf_cap * sizeof(*b), t->buf_cap * 2 * sizeof(*b));
	if (!b)
		return -ENOMEM;
	t->bufs = b;
	t->buf_cap *= 2;
	return 0;
}

static uint32_t buf_slot_take(struct cfs_tree *t, char *p, uint64_t cap)
{
	uint32_t i = t->buf_free ? t->buf_free - 1 : t->buf_len++;

	if (t->buf_free)
		t->buf_free = (uint32_t)t->bufs[i].cap;
	t->bufs[i] = (struct cfs_buf){p, cap};
	return i;
}

static void buf_release(struct cfs_tree *t, uint32_t i)
{
	mem_free(t, t->bufs[i].p, t->bufs[i].cap);
	t->bufs[i] = (struct cfs_buf){NULL, t->buf_free};
	t->buf_free = i + 1;
}

/* ---- file data ----
 *
 * A file's bytes are held in one of four ways (node .content, .data):
 *  ZEROS    nothing stored: reads as zeros (a new file, or one grown by truncate)
 *  PATTERN  .data: a shared pattern (arena) repeated over the whole size
 *  BUFFER   .data: a bufs slot holding the first cap (<= CFS_PAGE) bytes; the rest reads as
 *           zeros. Small files cost their bytes, not a page.
 *  PAGED    .data: a paged slot: 4 KiB pages where written, over a base that reads as the
 *           file's pattern below pat_end and as zeros past it (holes).
 * Stored bytes at or past the size are always zero, so a file grown by truncate reads zeros
 * there without touching anything. t->data_bytes counts buffer capacities and pages: what
 * the data limit (cfs_tree_set_data_limit) bounds.
 */

static uint64_t pages_of(uint64_t bytes)
{
	return bytes / CFS_PAGE + (bytes % CFS_PAGE != 0);
}

static uint64_t data_room(const struct cfs_tree *t)
{
	return t->data_bytes >= t->data_limit ? 0 : t->data_limit - t->data_bytes;
}

static void pat_release(struct cfs_tree *t, uint32_t off)
{
	uint32_t refs, plen;

	pat_header(t, off, &refs, &plen);
	if (--refs) {
		pat_set_header(t, off, refs, plen);
		return;
	}
	arena_drop(t, CFS_PAT_HDR + (size_t)plen);
	if (t->last_pat == off)
		t->last_pat = CFS_NONE;
}

/* Store PATTERN once; the next identical pattern (a generator filling many files) shares it. */
static int pat_acquire(struct cfs_tree *t, const char *pattern, size_t plen, uint32_t *off)
{
	uint32_t refs, len;

	if (t->last_pat != CFS_NONE) {
		pat_header(t, t->last_pat, &refs, &len);
		if (len == plen && !memcmp(t->arena + t->last_pat + CFS_PAT_HDR, pattern, plen)) {
			pat_set_header(t, t->last_pat, refs + 1, len);
			*off = t->last_pat;
			return 0;
		}
	}
	int err = arena_reserve(t, CFS_PAT_HDR + plen, &pattern, 1);
	if (err)
		return err;
	uint32_t h[2] = {1, (uint32_t)plen};
	*off = arena_put(t, h, sizeof(h));
	arena_put(t, pattern, plen);
	t->last_pat = *off;
	return 0;
}

/* DST gets LEN bytes of the endless repetition of PAT starting at index PHASE. The first period
 * is copied from PAT, the rest doubles from DST itself (DST[k] = DST[k - plen]). */
static void pattern_fill(char *dst, const char *pat, size_t plen, size_t phase, size_t len)
{
	size_t done = len < plen - phase ? len : plen - phase;

	memcpy(dst, pat + phase, done);
	if (done < len) {
		size_t more = len - done < phase ? len - done : phase;
		memcpy(dst + done, pat, more);
		done += more;
	}
	while (done < len) {
		size_t c = done < len - done ? done : len - done;
		memcpy(dst + done, dst, c);
		done += c;
	}
}

/* LEN bytes from OFF of pattern PAT repeated up to END, zeros past it. */
static void pattern_part(const struct cfs_tree *t, uint32_t pat, uint64_t end, char *dst,
			 uint64_t off, size_t len)
{
	uint32_t refs, plen;
	size_t n = off >= end ? 0 : end - off < len ? (size_t)(end - off) : len;

	if (n) {
		pat_header(t, pat, &refs, &plen);
		pattern_fill(dst, t->arena + pat + CFS_PAT_HDR, plen, off % plen, n);
	}
	memset(dst + n, 0, len - n);
}

/* The first group of FP with key KEY or above (fp->ngrp: none). */
static uint32_t grp_search(const struct cfs_pages *fp, uint64_t key)
{
	uint32_t lo = 0, hi = fp->ngrp;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (fp->grp[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct cfs_group *grp_find(const struct cfs_pages *fp, uint64_t key)
{
	uint32_t i = grp_search(fp, key);

	return i < fp->ngrp && fp->grp[i].key == key ? fp->grp[i].g : NULL;
}

static char *page_at(const struct cfs_pages *fp, uint64_t idx)
{
	struct cfs_group *g = grp_find(fp, idx >> CFS_GROUP_BITS);

	return g ? g->page[idx & (CFS_GROUP - 1)] : NULL;
}

static void paged_read(const struct cfs_tree *t, const struct cfs_pages *fp, char *dst,
		       uint64_t off, size_t len)
{
	while (len) {
		size_t in = off % CFS_PAGE, c = CFS_PAGE - in < len ? CFS_PAGE - in : len;
		const char *p = page_at(fp, off / CFS_PAGE);

		if (p)
			memcpy(dst, p + in, c);
		else if (fp->pat != CFS_NONE)
			pattern_part(t, fp->pat, fp->pat_end, dst, off, c);
		else
			memset(dst, 0, c);
		dst += c;
		off += c;
		len -= c;
	}
}

/* LEN bytes of file N from OFF; past its size, zeros (a page being filled may reach there). */
static void content_copy(const struct cfs_tree *t, const struct cfs_node *n, char *dst,
			 uint64_t off, size_t len)
{
	const struct cfs_buf *b;
	size_t c;

	switch (n->content) {
	case CFS_BUFFER:
		b = &t->bufs[n->data];
		c = off >= b->cap ? 0 : b->cap - off < len ? (size_t)(b->cap - off) : len;
		if (c)
			memcpy(dst, b->p + off, c);
		memset(dst + c, 0, len - c);
		break;
	case CFS_PATTERN:
		pattern_part(t, n->data, n->u.size, dst, off, len);
		break;
	case CFS_PAGED:
		paged_read(t, &t->paged[n->data], dst, off, len);
		break;
	default:
		memset(dst, 0, len);
	}
}

/* Pages st_blocks counts, as tmpfs would hold them: the pattern's and the written ones. */
static uint64_t content_pages(const struct cfs_tree *t, const struct cfs_node *n)
{
	const struct cfs_pages *fp;

	switch (n->content) {
	case CFS_PATTERN:
		return pages_of(n->u.size);
	case CFS_BUFFER:
		return 1;
	case CFS_PAGED:
		fp = &t->paged[n->data];
		return pages_of(fp->pat_end) + fp->nextra;
	default:
		return 0;
	}
}

static int paged_slot_reserve(struct cfs_tree *t)
{
	uint32_t cap = t->paged_cap ? t->paged_cap * 2 : CFS_TABLE_MIN;

	if (t->paged_free || t->paged_len < t->paged_cap)
		return 0;
	if (t->paged_cap >= UINT32_MAX / 2)
		return -ENOSPC;
	struct cfs_pages *f =
	    mem_resize(t, t->paged, t->paged_cap * sizeof(*f), cap * sizeof(*f));
	if (!f)
		return -ENOMEM;
	t->paged = f;
	t->paged_cap = cap;
	return 0;
}

static uint32_t paged_slot_take(struct cfs_tree *t, const struct cfs_pages *fp)
{
	uint32_t i = t->paged_free ? t->paged_free - 1 : t->paged_len++;

	if (t->paged_free)
		t->paged_free = t->paged[i].pat;
	t->paged[i] = *fp;
	return i;
}

static void paged_slot_put(struct cfs_tree *t, uint32_t i)
{
	t->paged[i] = (struct cfs_pages){.pat = t->paged_free};
	t->paged_free = i + 1;
}

/* Free FP's pages from index FIRST on. Groups are in key order: they go from the end. */
static void pages_free_from(struct cfs_tree *t, struct cfs_pages *fp, uint64_t first)
{
	uint64_t pat_pages = pages_of(fp->pat_end);

	while (fp->ngrp) {
		struct cfs_gref *r = &fp->grp[fp->ngrp - 1];
		if ((r->key + 1) * CFS_GROUP <= first)
			break;
		for (uint64_t k = 0; k < CFS_GROUP; k++) {
			uint64_t idx = r->key * CFS_GROUP + k;
			if (idx < first || !r->g->page[k])
				continue;
			mem_free(t, r->g->page[k], CFS_PAGE);
			r->g->page[k] = NULL;
			r->g->used--;
			fp->npages--;
			fp->nextra -= idx >= pat_pages;
			t->data_bytes -= CFS_PAGE;
		}
		if (r->g->used)
			break;
		mem_free(t, r->g, sizeof(*r->g));
		fp->ngrp--;
	}
}

static void paged_release(struct cfs_tree *t, uint32_t i)
{
	struct cfs_pages *fp = &t->paged[i];

	pages_free_from(t, fp, 0);
	mem_free(t, fp->grp, fp->grp_cap * sizeof(*fp->grp));
	if (fp->pat != CFS_NONE)
		pat_release(t, fp->pat);
	paged_slot_put(t, i);
}

static void content_release(struct cfs_tree *t, struct cfs_node *n)
{
	if (n->content == CFS_PATTERN) {
		pat_release(t, n->data);
	} else if (n->content == CFS_BUFFER) {
		t->data_bytes -= t->bufs[n->data].cap;
		buf_release(t, n->data);
	} else if (n->content == CFS_PAGED) {
		paged_release(t, n->data);
	}
	n->content = CFS_ZEROS;
	n->data = 0;
}

/* ---- writing a small file: one buffer ---- */

/* Whether a write ending at END keeps file N in one buffer (cut at the data limit). */
static bool fits_buffer(const struct cfs_node *n, uint64_t end)
{
	if (end > CFS_PAGE)
		return false;
	return n->content == CFS_ZEROS || n->content == CFS_BUFFER ||
	       (n->content == CFS_PATTERN && n->u.size <= CFS_PAGE);
}

/* Turn a zeros or small pattern file into a buffer of CAP bytes holding its content. */
static int buf_materialize(struct cfs_tree *t, struct cfs_node *n, uint64_t cap)
{
	int err = buf_slot_reserve(t);

	if (err)
		return err;
	char *p = mem_resize(t, NULL, 0, cap);
	if (!p)
		return -ENOMEM;
	content_copy(t, n, p, 0, cap);
	content_release(t, n);
	n->content = CFS_BUFFER;
	n->data = buf_slot_take(t, p, cap);
	t->data_bytes += cap;
	return 0;
}

static int buf_grow(struct cfs_tree *t, struct cfs_buf *b, uint64_t need, uint64_t room)
{
	uint64_t cap = b->cap + b->cap / 2; /* appending writes: amortized O(1) per byte */

	if (need <= b->cap)
		return 0;
	if (cap < need)
		cap = need;
	if (cap > CFS_PAGE)
		cap = CFS_PAGE;
	if (cap > room)
		cap = room; /* >= need: the caller checked */
	char *p = mem_resize(t, b->p, b->cap, cap);
	if (!p)
		return -ENOMEM;
	memset(p + b->cap, 0, cap - b->cap);
	t->data_bytes += cap - b->cap;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* Write into a file that stays (or becomes) one buffer: END <= CFS_PAGE (fits_buffer). At the
 * data limit the write is cut short; nothing fits: -ENOSPC. */
static ssize_t buf_write(struct cfs_tree *t, struct cfs_node *n, const char *buf, size_t size,
			 uint64_t off)
{
	uint64_t have = n->content == CFS_BUFFER ? t->bufs[n->data].cap : 0;
	uint64_t keep = n->content == CFS_PATTERN ? n->u.size : 0; /* to materialize */
	uint64_t room = data_room(t) + have, end = off + size;
	int err;

	if (end > room) {
		if (off >= room || keep > room)
			return -ENOSPC;
		end = room;
		size = (size_t)(end - off);
	}
	if (n->content == CFS_BUFFER)
		err = buf_grow(t, &t->bufs[n->data], end, room);
	else
		err = buf_materialize(t, n, end > keep ? end : keep);
	if (err)
		return err;
	memcpy(t->bufs[n->data].p + off, buf, size);
	if (end > n->u.size)
		n->u.size = end;
	return (ssize_t)size;
}

/* Best effort: give back the tail of a buffer that shrank a lot. */
static void buf_trim(struct cfs_tree *t, struct cfs_buf *b, uint64_t size)
{
	if (b->cap - size < CFS_BUF_SLACK || b->cap / 2 < size)
		return;
	char *p = mem_resize(t, b->p, b->cap, size);
	if (!p)
		return;
	t->data_bytes -= b->cap - size;
	b->p = p;
	b->cap = size;
}

/* ---- writing a paged file: everything reserved first ---- */

/*
 * What a change to a paged file needs, counted and then allocated before anything changes:
 * the pages [first, end) the change touches that are not there yet (end cut at the data
 * limit), page 0 for a buffer's bytes (page0), groups for them, a slot and a group array for
 * a file not paged yet. New pages are chained through their first bytes, groups through
 * page[0].
 */
struct cfs_plan {
	uint64_t first, end;
	bool page0;
	uint64_t npages;
	uint32_t ngroups;
	char *pages;
	struct cfs_group *groups;
	struct cfs_gref *grp; /* the new group array of a file not paged yet */
	uint32_t grp_cap;
};

static const struct cfs_pages *paged_of(const struct cfs_tree *t, const struct cfs_node *n)
{
	return n->content == CFS_PAGED ? &t->paged[n->data] : NULL;
}

static int plan_count(const struct cfs_tree *t, const struct cfs_node *n, uint64_t first,
		      uint64_t end, struct cfs_plan *pl)
{
	const struct cfs_pages *fp = paged_of(t, n);
	uint64_t room = data_room(t), last_key = UINT64_MAX;

	*pl = (struct cfs_plan){.first = first, .end = first};
	if (n->content == CFS_BUFFER) {
		room += t->bufs[n->data].cap; /* freed when its bytes move to page 0 */
		if (first > 0) {
			pl->page0 = true;
			pl->npages = pl->ngroups = 1;
			last_key = 0;
		}
	}
	room /= CFS_PAGE;
	if (pl->npages > room)
		return -ENOSPC;
	for (uint64_t i = first; i < end; pl->end = ++i) {
		if (fp && page_at(fp, i))
			continue;
		if (pl->npages == room)
			break;
		pl->npages++;
		if (i >> CFS_GROUP_BITS != last_key && !(fp && grp_find(fp, i >> CFS_GROUP_BITS)))
			pl->ngroups++;
		last_key = i >> CFS_GROUP_BITS;
	}
	return 0;
}

static char *plan_pop_page(struct cfs_plan *pl)
{
	char *p = pl->pages;

	pl->pages = *(char **)(void *)p;
	return p;
}

static void plan_free(struct cfs_tree *t, struct cfs_plan *pl)
{
	while (pl->pages) {
		char *p = plan_pop_page(pl);
		mem_free(t, p, CFS_PAGE);
	}
	while (pl->groups) {
		struct cfs_group *g = pl->groups;
		pl->groups = (struct cfs_group *)g->page[0];
		mem_free(t, g, sizeof(*g));
	}
	mem_free(t, pl->grp, pl->grp_cap * sizeof(*pl->grp));
	pl->grp = NULL;
}

/* Room for the plan's groups in the file's group array (a new array when not paged yet). */
static int plan_grp_reserve(struct cfs_tree *t, struct cfs_node *n, struct cfs_plan *pl)
{
	struct cfs_pages *fp = n->content == CFS_PAGED ? &t->paged[n->data] : NULL;
	uint64_t need = (fp ? (uint64_t)fp->ngrp : 0) + pl->ngroups, have = fp ? fp->grp_cap : 0;

	if (need <= have)
		return 0;
	if (need > UINT32_MAX / 2)
		return -EFBIG;
	if (need < have * 2)
		need = have * 2;
	if (!fp) {
		pl->grp = mem_resize(t, NULL, 0, need * sizeof(*pl->grp));
		pl->grp_cap = pl->grp ? (uint32_t)need : 0;
		return pl->grp ? 0 : -ENOMEM;
	}
	struct cfs_gref *g = mem_resize(t, fp->grp, have * sizeof(*g), need * sizeof(*g));
	if (!g)
		return -ENOMEM;
	fp->grp = g;
	fp->grp_cap = (uint32_t)need;
	return 0;
}

static int plan_alloc(struct cfs_tree *t, struct cfs_node *n, struct cfs_plan *pl)
{
	bool first_table = !t->paged; /* made here: a failure takes it back */
	int err = n->content == CFS_PAGED ? 0 : paged_slot_reserve(t);

	if (!err)
		err = plan_grp_reserve(t, n, pl);
	for (uint32_t i = 0; !err && i < pl->ngroups; i++) {
		struct cfs_group *g = mem_resize(t, NULL, 0, sizeof(*g));
		if (!g) {
			err = -ENOMEM;
			break;
		}
		g->page[0] = (char *)pl->groups;
		pl->groups = g;
	}
	for (uint64_t i = 0; !err && i < pl->npages; i++) {
		char *p = mem_resize(t, NULL, 0, CFS_PAGE);
		if (!p) {
			err = -ENOMEM;
			break;
		}
		*(char **)(void *)p = pl->pages; /* malloc'd: aligned for a pointer */
		pl->pages = p;
	}
	if (err && first_table && t->paged) {
		mem_free(t, t->paged, t->paged_cap * sizeof(*t->paged));
		t->paged = NULL;
		t->paged_cap = 0;
	}
	if (err)
		plan_free(t, pl);
	return err;
}

/* Page IDX of file N, filled with what N reads there now, into FP (N's table, or the one it
 * is getting). Cannot fail: the plan holds the page, its group and room in the array. */
static void plan_put(struct cfs_tree *t, const struct cfs_node *n, struct cfs_pages *fp,
		     struct cfs_plan *pl, uint64_t idx)
{
	uint64_t key = idx >> CFS_GROUP_BITS;
	uint32_t i = grp_search(fp, key);
	char *p = plan_pop_page(pl);

	content_copy(t, n, p, idx * CFS_PAGE, CFS_PAGE);
	if (i == fp->ngrp || fp->grp[i].key != key) {
		struct cfs_group *g = pl->groups;
		pl->groups = (struct cfs_group *)g->page[0];
		memset(g, 0, sizeof(*g));
		memmove(&fp->grp[i + 1], &fp->grp[i], (fp->ngrp - i) * sizeof(*fp->grp));
		fp->grp[i] = (struct cfs_gref){key, g};
		fp->ngrp++;
	}
	fp->grp[i].g->page[idx & (CFS_GROUP - 1)] = p;
	fp->grp[i].g->used++;
	fp->npages++;
	fp->nextra += idx >= pages_of(fp->pat_end);
	t->data_bytes += CFS_PAGE;
}

/* Put the planned pages in place, making N paged if it was not (its pattern becomes the base,
 * its buffer page 0). Nothing here can fail. */
static void plan_commit(struct cfs_tree *t, struct cfs_node *n, struct cfs_plan *pl)
{
	struct cfs_pages local = {.grp = pl->grp, .grp_cap = pl->grp_cap, .pat = CFS_NONE};
	struct cfs_pages *fp = n->content == CFS_PAGED ? &t->paged[n->data] : &local;

	if (n->content == CFS_PATTERN) {
		local.pat = n->data; /* the reference moves to the table */
		local.pat_end = n->u.size;
	}
	pl->grp = NULL;
	if (pl->page0)
		plan_put(t, n, fp, pl, 0);
	for (uint64_t i = pl->first; i < pl->end; i++)
		if (!page_at(fp, i))
			plan_put(t, n, fp, pl, i);
	assert(!pl->pages && !pl->groups);
	if (fp != &local)
		return;
	if (n->content == CFS_BUFFER) {
		t->data_bytes -= t->bufs[n->data].cap;
		buf_release(t, n->data);
	}
	n->data = paged_slot_take(t, &local);
	n->content = CFS_PAGED;
}

static void paged_copy_in(struct cfs_pages *fp, const char *buf, size_t size, uint64_t off)
{
	while (size) {
		size_t in = off % CFS_PAGE, c = CFS_PAGE - in < size ? CFS_PAGE - in : size;
		char *p = page_at(fp, off / CFS_PAGE);

		assert(p);
		memcpy(p + in, buf, c);
		buf += c;
		off += c;
		size -= c;
	}
}

/* Write into pages, allocating the touched ones that are missing; cut short at the data
 * limit (-ENOSPC when not a byte fits); all or nothing on ENOMEM. */
static ssize_t paged_write(struct cfs_tree *t, struct cfs_node *n, const char *buf, size_t size,
			   uint64_t off)
{
	struct cfs_plan pl;
	uint64_t end = off + size;
	int err = plan_count(t, n, off / CFS_PAGE, pages_of(end), &pl);

	if (err)
		return err;
	if (pl.end * CFS_PAGE < end) {
		if (pl.end * CFS_PAGE <= off)
			return -ENOSPC;
		end = pl.end * CFS_PAGE;
		size = (size_t)(end - off);
	}
	err = plan_alloc(t, n, &pl);
	if (err)
		return err;
	plan_commit(t, n, &pl);
	paged_copy_in(&t->paged[n->data], buf, size, off);
	if (end > n->u.size)
		n->u.size = end;
	return (ssize_t)size;
}

static ssize_t content_write(struct cfs_tree *t, struct cfs_node *n, const char *buf, size_t size,
			     uint64_t off)
{
	if (fits_buffer(n, off + size))
		return buf_write(t, n, buf, size, off);
	return paged_write(t, n, buf, size, off);
}

/* Shrink file N to SIZE (> 0). Never needs memory. */
static void content_shrink(struct cfs_tree *t, struct cfs_node *n, uint64_t size)
{
	struct cfs_buf *b;
	struct cfs_pages *fp;
	char *p;

	if (n->content == CFS_BUFFER) {
		b = &t->bufs[n->data];
		if (size < b->cap) {
			memset(b->p + size, 0, b->cap - size);
			buf_trim(t, b, size);
		}
	} else if (n->content == CFS_PAGED) {
		fp = &t->paged[n->data];
		pages_free_from(t, fp, pages_of(size));
		if (size % CFS_PAGE && (p = page_at(fp, size / CFS_PAGE)))
			memset(p + size % CFS_PAGE, 0, CFS_PAGE - size % CFS_PAGE);
		if (fp->pat_end > size) {
			fp->pat_end = size;
			fp->nextra = 0; /* every page left is below pages_of(size) */
		}
		if (!fp->npages && fp->pat == CFS_NONE) {
			content_release(t, n);
		} else if (!fp->npages && fp->pat_end == size) { /* a pattern file again */
			uint32_t pat = fp->pat;
			fp->pat = CFS_NONE;
			paged_release(t, n->data);
			n->content = CFS_PATTERN;
			n->data = pat;
		}
	}
	n->u.size = size;
}

/* Grow file N to SIZE: only a pattern file needs anything (a table saying where its pattern
 * ends); the others already read zeros past their size. */
static int content_grow(struct cfs_tree *t, struct cfs_node *n, uint64_t size)
{
	struct cfs_plan pl;

	if (n->content == CFS_PATTERN) {
		int err = plan_count(t, n, 0, 0, &pl);
		if (!err)
			err = plan_alloc(t, n, &pl);
		if (err)
			return err;
		plan_commit(t, n, &pl);
	}
	n->u.size = size;
	return 0;
}

static int check_file(const struct cfs_node *n)
{
	if (is_dir(n))
		return -EISDIR;
	return S_ISREG(n->mode) ? 0 : -EINVAL;
}

/* ---- small shared steps ---- */

/* The coarse clock, as tmpfs's current_time(): a tick's resolution, a fraction of the cost. */
static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * CFS_NS + ts.tv_nsec;
}

static void stamp(struct cfs_node *n, int64_t now)
{
	n->mtime = now;
	n->ctime = now;
}

static bool is_dot_or_dotdot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

static int check_name(const char *name, size_t len)
{
	if (!len)
		return -EINVAL;
	if (len > RS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len) || is_dot_or_dotdot(name, len))
		return -EINVAL;
	return 0;
}

/* Free node ID, which has no name left (an orphan's last one, in .e, goes with it). */
static void node_free(struct cfs_tree *t, uint32_t id)
{
	struct cfs_node *n = nd(t, id);

	assert(!n->nlink && id != CFS_ROOT);
	arena_drop(t, n->name_len);
	if (S_ISREG(n->mode)) {
		content_release(t, n);
		t->files--;
	} else if (S_ISLNK(n->mode)) {
		arena_drop(t, n->u.size);
		t->links--;
	} else if (is_dir(n)) {
		order_free(t, n);
		t->dirs--;
	} else {
		t->files--; /* a fifo, socket or device holds nothing */
	}
	t->nodes--;
	n->mode = 0;
	n->data = t->free_id;
	t->free_id = id;
}

static uint32_t dir_pins(const struct cfs_node *n)
{
	return is_dir(n) && n->u.dir ? n->u.dir->pins : 0;
}

/* Still needed by someone: the kernel, or an orphan whose last directory this is. */
static bool is_held(const struct cfs_node *n)
{
	return n->refs || dir_pins(n);
}

/* ID just lost its last name: freed at once, or an orphan pinning its last directory. */
static void node_orphan(struct cfs_tree *t, uint32_t id)
{
	struct cfs_node *n = nd(t, id);

	if (!is_held(n)) {
		node_free(t, id);
		return;
	}
	nd(t, n->e.dir)->u.dir->pins++; /* the directory held the name, so it has an order */
}

/* ID may have stopped being held: free it if it is an orphan, then release what it pinned,
 * up the chain of removed directories. */
static void node_release(struct cfs_tree *t, uint32_t id)
{
	for (;;) {
		struct cfs_node *n = nd(t, id);
		if (n->nlink || is_held(n))
			return;
		uint32_t up = n->e.dir;
		node_free(t, id);
		struct cfs_node *p = nd(t, up);
		p->u.dir->pins--;
		id = up;
	}
}

/* Give entry R the name (DIR, arena OFF, LEN); the caller reserved the order and hash slots. */
static void ent_attach(struct cfs_tree *t, uint32_t r, uint32_t dir, uint32_t off, size_t len)
{
	struct cfs_ent *e = ent(t, r);

	e->dir = dir;
	e->name_off = off;
	ent_set_len(t, r, len);
	order_append(t, nd(t, dir), r);
	hash_put(t, r);
}

/* The oldest extra name of ID becomes its first name: the entry changes refs, not place.
 * The old first name's bytes are the caller's business. */
static void xname_promote(struct cfs_tree *t, uint32_t id)
{
	struct cfs_node *n = nd(t, id);
	uint32_t i = xhead_find(t, id)->head, r = CFS_XREF | i;
	struct cfs_xname *x = &t->x[i];
	struct cfs_dir *d = nd(t, x->e.dir)->u.dir;

	d->slot[order_pos(t, d, x->e.seq)] = id;
	*hash_slot_of(t, r) = id;
	n->e = x->e;
	n->name_len = x->name_len;
	xname_unchain(t, i);
	xname_put(t, r);
}

/* Entry R of node ID leaves its directory. An extra name just goes; the first name gives
 * way to the oldest extra one, or, being the last, stays in .e as the orphan's last name. */
static void ent_detach(struct cfs_tree *t, uint32_t *slot, uint32_t r)
{
	struct cfs_ent *e = ent(t, r);
	uint32_t id = ent_child(t, r);

	hash_del(t, slot);
	order_remove(t, nd(t, e->dir), e->seq);
	if (r & CFS_XREF) {
		arena_drop(t, ent_len(t, r));
		xname_unchain(t, r & ~CFS_XREF);
		xname_put(t, r);
	} else if (has_xnames(t, id)) {
		arena_drop(t, ent_len(t, r));
		xname_promote(t, id);
	}
}

/* A name in DIR that must exist: its hash slot. */
static int find_entry(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		      uint32_t **slot)
{
	if (!is_dir(nd(t, dir)))
		return -ENOTDIR;
	int err = check_name(name, len);
	if (err)
		return err;
	*slot = hash_find(t, dir, name, len);
	return *slot ? 0 : -ENOENT;
}

/* A name in DIR that must be free, in the kernel's order of checks. */
static int check_new_entry(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	const struct cfs_node *d = nd(t, dir);

	if (!is_dir(d))
		return -ENOTDIR;
	int err = check_name(name, len);
	if (err)
		return err;
	if (hash_find(t, dir, name, len))
		return -EEXIST;
	return d->nlink ? 0 : -ENOENT; /* a removed directory takes no new names */
}

/* Everything a new entry in DIR needs: arena bytes (KEEP as for arena_reserve), a hash slot,
 * for an extra name of XCHILD an xname slot (and a ring head for its first), and an order
 * slot. Only the order array may be a new allocation (*FRESH), and it comes last: the rest
 * grows in place and needs no undoing. */
static int entry_reserve(struct cfs_tree *t, uint32_t dir, size_t bytes, const char **keep,
			 int nkeep, uint32_t xchild, bool *fresh)
{
	int err = arena_reserve(t, bytes, keep, nkeep);

	*fresh = false;
	if (!err)
		err = hash_reserve(t);
	if (!err && xchild)
		err = xname_reserve(t);
	if (!err && xchild && !has_xnames(t, xchild))
		err = xhead_reserve(t);
	if (!err)
		err = order_reserve(t, nd(t, dir), fresh);
	return err;
}

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
		pages_free_from(t, &t->paged[i], 0);
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
}

static int tree_alloc_tables(struct cfs_tree *t)
{
	t->chunks = mem_resize(t, NULL, 0, CFS_CHUNKS_MIN * sizeof(*t->chunks));
	t->x = mem_resize(t, NULL, 0, CFS_TABLE_MIN * sizeof(*t->x));
	t->xh = mem_resize(t, NULL, 0, CFS_TABLE_MIN * sizeof(*t->xh));
	t->bufs = mem_resize(t, NULL, 0, CFS_TABLE_MIN * sizeof(*t->bufs));
	t->hash = hash_alloc(t, CFS_HASH_MIN);
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
			       .data_limit = UINT64_MAX};
	if (tree_alloc_tables(t) || id_reserve(t)) {
		tree_release(t);
		t->free_fn(t);
		return NULL;
	}
	uint32_t root = id_take(t);
	assert(root == CFS_ROOT);
	node_init(nd(t, root), S_IFDIR | 0755, 0, 0, now_ns());
	t->nodes = t->dirs = 1;
	return t;
}

void cfs_tree_free(struct cfs_tree *t)
{
	if (!t)
		return;
	tree_release(t);
	t->free_fn(t);
}

/* ---- queries ---- */

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
	int err = find_entry(t, dir, name, len, &slot);
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
		st->st_blocks = (blkcnt_t)(content_pages(t, n) * (CFS_PAGE / 512));
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
	content_copy(t, n, buf, (uint64_t)off, size);
	return (ssize_t)size;
}

static bool cred_in_group(const struct rs_cred *cred, gid_t gid)
{
	if (cred->gid == gid)
		return true;
	for (int i = 0; i < cred->ngroups; i++)
		if (cred->groups[i] == gid)
			return true;
	return false;
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
				      .data_limit = t->data_limit};
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
	uint32_t pos = order_resume(t, d, *cookie);
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
	int err = check_new_entry(t, dir, name, len);

	if (!err)
		err = entry_reserve(t, dir, len + tlen, keep, 2, 0, &fresh);
	if (err)
		return err;
	err = id_reserve(t);
	if (err) {
		order_unreserve(t, nd(t, dir), fresh);
		return err;
	}
	int64_t now = now_ns();
	uint32_t id = id_take(t);
	struct cfs_node *n = nd(t, id), *p = nd(t, dir);
	node_init(n, mode, a->uid, a->gid, now);
	if (tlen) {
		n->data = arena_put(t, keep[1], tlen);
		n->u.size = tlen;
	}
	ent_attach(t, id, dir, arena_put(t, keep[0], len), len);
	if (S_ISDIR(mode))
		p->nlink++;
	stamp(p, now);
	count_kind(t, mode);
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

int cfs_tree_link(struct cfs_tree *t, uint32_t id, uint32_t dir, const char *name, size_t len)
{
	struct cfs_node *n = nd(t, id);
	const char *keep = name;
	bool fresh;
	int err = check_new_entry(t, dir, name, len);

	if (err)
		return err;
	if (is_dir(n))
		return -EPERM;
	if (!n->nlink)
		return -ENOENT; /* as vfs_link: an unlinked file cannot come back */
	if (n->nlink == UINT32_MAX)
		return -EMLINK;
	err = entry_reserve(t, dir, len, &keep, 1, id, &fresh);
	if (err)
		return err;
	int64_t now = now_ns();
	uint32_t r = xname_take(t, id);
	ent_attach(t, r, dir, arena_put(t, keep, len), len);
	xname_chain(t, r & ~CFS_XREF);
	n->nlink++;
	n->ctime = now;
	stamp(nd(t, dir), now);
	return 0;
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
		err = pat_acquire(t, pattern, plen, &off); /* before releasing: it may be shared */
		if (err)
			return err;
	}
	content_release(t, n);
	if (size) {
		n->content = CFS_PATTERN;
		n->data = off;
	}
	n->u.size = size;
	stamp(n, now_ns());
	arena_tidy(t);
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
	ssize_t w = len ? content_write(t, &fresh, data, len, 0) : 0;
	if (w < 0)
		return (int)w;
	if ((size_t)w < len) {
		content_release(t, &fresh);
		return -ENOSPC;
	}
	content_release(t, n);
	n->content = fresh.content;
	n->data = fresh.data;
	n->u.size = len;
	stamp(n, now_ns());
	arena_tidy(t);
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
	ssize_t w = content_write(t, n, buf, size, (uint64_t)off);
	if (w < 0)
		return w;
	stamp(n, now_ns());
	arena_tidy(t); /* a materialized pattern left a hole */
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
		content_release(t, n);
	if (size < n->u.size)
		content_shrink(t, n, size);
	else if ((err = content_grow(t, n, size)))
		return err;
	stamp(n, now_ns());
	arena_tidy(t);
	return 0;
}

void cfs_tree_set_data_limit(struct cfs_tree *t, uint64_t bytes)
{
	t->data_limit = bytes;
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

/* The first run of written pages of FP at or after page IDX: [*start, *end) in pages. */
static bool paged_next_run(const struct cfs_pages *fp, uint64_t idx, uint64_t *start,
			   uint64_t *end)
{
	bool found = false;

	for (uint32_t i = grp_search(fp, idx >> CFS_GROUP_BITS); i < fp->ngrp; i++) {
		for (uint64_t k = 0; k < CFS_GROUP; k++) {
			uint64_t at = fp->grp[i].key * CFS_GROUP + k;
			if (at < idx)
				continue;
			if (fp->grp[i].g->page[k] && !found) {
				found = true;
				*start = *end = at;
			}
			if (found && (at != *end || !fp->grp[i].g->page[k]))
				return true;
			if (found)
				*end = at + 1;
		}
	}
	return found;
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
		if (!paged_next_run(&t->paged[n->data], off / CFS_PAGE, &s, &e))
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

/* ---- attributes ---- */

int cfs_tree_chmod(struct cfs_tree *t, uint32_t id, mode_t mode)
{
	struct cfs_node *n = nd(t, id);

	if (S_ISLNK(n->mode))
		return -EOPNOTSUPP; /* as Linux: a link's mode is always 0777 */
	n->mode = (uint16_t)((n->mode & S_IFMT) | (mode & 07777));
	n->ctime = now_ns();
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

	if (uid != (uid_t)-1)
		n->uid = uid;
	if (gid != (gid_t)-1)
		n->gid = gid;
	n->ctime = now_ns();
	return 0;
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
	n->atime = a;
	n->mtime = m;
	n->ctime = c;
	return 0;
}

/* ---- namespace changes ---- */

int cfs_tree_unlink(struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	uint32_t *slot;
	int err = find_entry(t, dir, name, len, &slot);

	if (err)
		return err;
	uint32_t r = *slot, id = ent_child(t, r);
	struct cfs_node *n = nd(t, id);
	if (is_dir(n))
		return -EISDIR;
	int64_t now = now_ns();
	ent_detach(t, slot, r);
	n->nlink--;
	n->ctime = now;
	stamp(nd(t, dir), now);
	if (!n->nlink)
		node_orphan(t, id);
	arena_tidy(t);
	return 0;
}

/* Directory ID lost its only name: it is dead, and its parent has one subdirectory less. */
static void dir_bury(struct cfs_tree *t, uint32_t id, uint32_t parent, int64_t now)
{
	struct cfs_node *n = nd(t, id);

	n->nlink = 0;
	n->ctime = now;
	order_free(t, n);
	nd(t, parent)->nlink--;
}

int cfs_tree_rmdir(struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	uint32_t *slot;
	int err = find_entry(t, dir, name, len, &slot);

	if (err)
		return err;
	uint32_t id = ent_child(t, *slot);
	struct cfs_node *n = nd(t, id);
	if (!is_dir(n))
		return -ENOTDIR;
	if (dir_count(n))
		return -ENOTEMPTY;
	int64_t now = now_ns();
	ent_detach(t, slot, id);
	dir_bury(t, id, dir, now);
	stamp(nd(t, dir), now);
	node_orphan(t, id);
	arena_tidy(t);
	return 0;
}

/* What a rename is about: the old entry r1 (child a) and the new one r2 (child b, or none). */
struct cfs_rename {
	uint32_t olddir, newdir;
	uint32_t *s1, *s2; /* their hash slots; s2 NULL when the new name is free */
	uint32_t r1, r2;
	uint32_t a, b;
	const char *newname;
	size_t newlen;
	int64_t now;
};

/* DIR is D or lies below it. */
static bool is_within(const struct cfs_tree *t, uint32_t dir, uint32_t d)
{
	for (;;) {
		if (dir == d)
			return true;
		uint32_t up = cfs_tree_parent(t, dir);
		if (up == dir)
			return false;
		dir = up;
	}
}

enum { CFS_RENAME_GO = 0, CFS_RENAME_SAME = 1 };

/* do_renameat2's and vfs_rename's checks, in their order. */
static int check_rename(const struct cfs_tree *t, const struct cfs_rename *rn, unsigned flags)
{
	bool a_dir = is_dir(nd(t, rn->a)), b_dir = rn->b && is_dir(nd(t, rn->b));

	if (rn->b && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (!rn->b && (flags & RENAME_EXCHANGE))
		return -ENOENT;
	if (a_dir && is_within(t, rn->newdir, rn->a))
		return -EINVAL; /* a directory into itself */
	if (b_dir && is_within(t, rn->olddir, rn->b))
		return flags & RENAME_EXCHANGE ? -EINVAL : -ENOTEMPTY; /* onto an ancestor */
	if (rn->a == rn->b)
		return CFS_RENAME_SAME; /* one file under both names: nothing to do */
	if (flags & RENAME_EXCHANGE)
		return CFS_RENAME_GO;
	if (!rn->b)
		return nd(t, rn->newdir)->nlink ? CFS_RENAME_GO : -ENOENT;
	if (a_dir && !b_dir)
		return -ENOTDIR;
	if (!a_dir && b_dir)
		return -EISDIR;
	return b_dir && dir_count(nd(t, rn->b)) ? -ENOTEMPTY : CFS_RENAME_GO;
}

/* A directory that changes parents moves its ".." link along. */
static void move_subdir_link(struct cfs_tree *t, uint32_t id, uint32_t from, uint32_t to)
{
	if (!is_dir(nd(t, id)) || from == to)
		return;
	nd(t, from)->nlink--;
	nd(t, to)->nlink++;
}

static void stamp_rename(struct cfs_tree *t, const struct cfs_rename *rn)
{
	stamp(nd(t, rn->olddir), rn->now);
	stamp(nd(t, rn->newdir), rn->now);
	nd(t, rn->a)->ctime = rn->now;
}

/* The new name is free: r1 leaves olddir and is appended to newdir. */
static int rename_move(struct cfs_tree *t, struct cfs_rename *rn)
{
	struct cfs_ent *e = ent(t, rn->r1);
	size_t oldlen = ent_len(t, rn->r1);
	bool same_name =
	    oldlen == rn->newlen && !memcmp(t->arena + e->name_off, rn->newname, oldlen);
	bool fresh;
	int err = same_name ? 0 : arena_reserve(t, rn->newlen, &rn->newname, 1);

	if (!err)
		err = order_reserve(t, nd(t, rn->newdir), &fresh);
	if (err)
		return err;
	uint32_t off = same_name ? e->name_off : arena_put(t, rn->newname, rn->newlen);
	hash_del(t, rn->s1);
	order_remove(t, nd(t, rn->olddir), e->seq); /* keeps the slot reserved above */
	if (!same_name)
		arena_drop(t, oldlen);
	e->dir = rn->newdir;
	e->name_off = off;
	ent_set_len(t, rn->r1, rn->newlen);
	order_append(t, nd(t, rn->newdir), rn->r1);
	hash_put(t, rn->r1);
	move_subdir_link(t, rn->a, rn->olddir, rn->newdir);
	stamp_rename(t, rn);
	arena_tidy(t);
	return 0;
}

/* The new name exists: r1 takes over r2's name and readdir position, b loses that name.
 * r1 takes r2's name bytes too, unless b keeps them as an orphan's last name: only then is
 * memory needed, for r1's own copy. */
static int rename_replace(struct cfs_tree *t, struct cfs_rename *rn)
{
	struct cfs_ent *e1 = ent(t, rn->r1), *e2 = ent(t, rn->r2);
	struct cfs_node *b = nd(t, rn->b);
	size_t oldlen = ent_len(t, rn->r1), newlen = ent_len(t, rn->r2);
	bool b_last = !(rn->r2 & CFS_XREF) && !has_xnames(t, rn->b); /* r2 is b's last name */
	bool copy = b_last && is_held(b);

	if (copy) {
		int err = arena_reserve(t, rn->newlen, &rn->newname, 1);
		if (err)
			return err;
	}
	uint32_t off = copy ? arena_put(t, rn->newname, rn->newlen) : e2->name_off;
	order_remove(t, nd(t, rn->olddir), e1->seq);
	struct cfs_dir *d = nd(t, rn->newdir)->u.dir;
	d->slot[order_pos(t, d, e2->seq)] = rn->r1;
	hash_del(t, rn->s1);
	*hash_slot_of(t, rn->r2) = rn->r1; /* same key: the slot fits r1 once r1 has it */
	arena_drop(t, oldlen);
	*e1 = (struct cfs_ent){rn->newdir, off, e2->seq};
	ent_set_len(t, rn->r1, newlen);
	if (rn->r2 & CFS_XREF) {
		xname_unchain(t, rn->r2 & ~CFS_XREF);
		xname_put(t, rn->r2);
	} else if (!b_last) {
		xname_promote(t, rn->b);
	} else if (!copy) {
		b->name_len = 0; /* b goes now, and its name's bytes went to r1 */
	}
	if (is_dir(b))
		dir_bury(t, rn->b, rn->newdir, rn->now);
	else
		b->nlink--;
	b->ctime = rn->now;
	move_subdir_link(t, rn->a, rn->olddir, rn->newdir);
	stamp_rename(t, rn);
	if (!b->nlink)
		node_orphan(t, rn->b);
	arena_tidy(t);
	return 0;
}

/* Both names stay where they are in readdir order; their children trade places. */
static int rename_exchange(struct cfs_tree *t, struct cfs_rename *rn)
{
	struct cfs_ent *e1 = ent(t, rn->r1), *e2 = ent(t, rn->r2);
	struct cfs_ent tmp = *e1;
	struct cfs_dir *d1 = nd(t, rn->olddir)->u.dir, *d2 = nd(t, rn->newdir)->u.dir;
	uint32_t p1 = order_pos(t, d1, e1->seq), p2 = order_pos(t, d2, e2->seq);
	size_t len1 = ent_len(t, rn->r1), len2 = ent_len(t, rn->r2);

	*e1 = *e2;
	*e2 = tmp;
	ent_set_len(t, rn->r1, len2);
	ent_set_len(t, rn->r2, len1);
	d1->slot[p1] = rn->r2;
	d2->slot[p2] = rn->r1;
	*rn->s1 = rn->r2;
	*rn->s2 = rn->r1;
	move_subdir_link(t, rn->a, rn->olddir, rn->newdir);
	move_subdir_link(t, rn->b, rn->newdir, rn->olddir);
	stamp_rename(t, rn);
	nd(t, rn->b)->ctime = rn->now;
	return 0;
}

int cfs_tree_rename(struct cfs_tree *t, uint32_t olddir, const char *oldname, size_t oldlen,
		    uint32_t newdir, const char *newname, size_t newlen, unsigned flags)
{
	struct cfs_rename rn = {
	    .olddir = olddir, .newdir = newdir, .newname = newname, .newlen = newlen};
	int err;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE) ||
	    (flags & RENAME_NOREPLACE && flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (!is_dir(nd(t, olddir)) || !is_dir(nd(t, newdir)))
		return -ENOTDIR;
	if ((err = check_name(oldname, oldlen)) || (err = check_name(newname, newlen)))
		return err;
	rn.s1 = hash_find(t, olddir, oldname, oldlen);
	if (!rn.s1)
		return -ENOENT;
	rn.s2 = hash_find(t, newdir, newname, newlen);
	rn.r1 = *rn.s1;
	rn.a = ent_child(t, rn.r1);
	rn.r2 = rn.s2 ? *rn.s2 : 0;
	rn.b = rn.s2 ? ent_child(t, rn.r2) : 0;
	err = check_rename(t, &rn, flags);
	if (err)
		return err < 0 ? err : 0;
	rn.now = now_ns();
	if (flags & RENAME_EXCHANGE)
		return rename_exchange(t, &rn);
	return rn.s2 ? rename_replace(t, &rn) : rename_move(t, &rn);
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
	node_release(t, id);
	arena_tidy(t);
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

void cfs_changes_node(const struct cfs_tree *t, struct cfs_changes *ch, uint32_t node)
{
	if (node != CFS_ROOT && !cfs_tree_refs(t, node))
		return; /* the kernel holds nothing of it */
	for (unsigned i = 0; i < ch->count; i++)
		if (ch->nodes[i] == node)
			return;
	if (ch->count < CFS_CHANGES_MAX)
		ch->nodes[ch->count++] = node;
	else
		ch->overflow = true;
}
