/*
 * How the tree finds and lists names: the one hash of (directory, name) -> entry, each
 * directory's entries in creation order (readdir cookies), and the ring of extra names that
 * hard links give a child. The layout is in tree_int.h.
 */
#include "tree_int.h"

#include <errno.h>

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

static bool ent_is(const struct cfs_tree *t, uint32_t r, uint32_t dir, const char *name, size_t len)
{
	const struct cfs_ent *e = ent(t, r);

	return e->dir == dir && ent_len(t, r) == len && !memcmp(t->arena + e->name_off, name, len);
}

uint32_t *tree_hash_find(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
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
uint32_t *tree_hash_slot_of(const struct cfs_tree *t, uint32_t r)
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

void tree_hash_put(struct cfs_tree *t, uint32_t r)
{
	hash_insert(t->hash, t->hash_cap, hash_of(t, r), r);
	t->hash_count++;
}

/* Backward-shift deletion: pull later entries of the cluster into the gap when their home
 * allows it, so lookups never meet tombstones. */
void tree_hash_del(struct cfs_tree *t, uint32_t *slot)
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
uint32_t *tree_hash_alloc(struct cfs_tree *t, uint32_t cap)
{
	uint32_t *slots = mem_resize(t, NULL, 0, hash_bytes(cap));

	if (slots)
		memset(slots, 0, (size_t)cap * sizeof(*slots));
	return slots;
}

/* Room for one more entry at a load of at most 3/4. */
int tree_hash_reserve(struct cfs_tree *t)
{
	uint32_t cap = t->hash_cap;

	if (((uint64_t)t->hash_count + 1) * 4 <= (uint64_t)cap * 3)
		return 0;
	if (cap >= UINT32_C(1) << 31)
		return -ENOSPC;
	struct cfs_rehash rh = {.slots = tree_hash_alloc(t, cap * 2), .cap = cap * 2};
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

uint32_t tree_order_pos(const struct cfs_tree *t, const struct cfs_dir *d, uint32_t seq)
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
int tree_order_reserve(struct cfs_tree *t, struct cfs_node *dn, bool *fresh)
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

void tree_order_unreserve(struct cfs_tree *t, struct cfs_node *dn, bool fresh)
{
	if (!fresh)
		return;
	mem_free(t, dn->u.dir, dir_bytes(dn->u.dir->cap));
	dn->u.dir = NULL;
}

void tree_order_append(const struct cfs_tree *t, struct cfs_node *dn, uint32_t r)
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

void tree_order_remove(struct cfs_tree *t, struct cfs_node *dn, uint32_t seq)
{
	struct cfs_dir *d = dn->u.dir;

	d->slot[tree_order_pos(t, d, seq)] = CFS_TOMB | seq;
	d->dead++;
	while (d->len && d->slot[d->len - 1] & CFS_TOMB) { /* removing the newest is free */
		d->len--;
		d->dead--;
	}
	if (d->dead > CFS_DIR_TIDY && d->dead * 2 > d->len)
		order_compact(d);
	order_shrink(t, dn);
}

/* Entry R back at SEQ, where it was before (the journal's undo): into its tombstone if that is
 * still there, else shifted in at its place (the caller reserved a slot). Cookies handed out
 * meanwhile still resume by seq. */
void tree_order_insert(const struct cfs_tree *t, struct cfs_node *dn, uint32_t r, uint32_t seq)
{
	struct cfs_dir *d = dn->u.dir;
	uint32_t pos = order_lower_bound(t, d, seq);

	ent(t, r)->seq = seq;
	if (seq > d->last_seq)
		d->last_seq = seq;
	if (pos < d->len && d->slot[pos] == (CFS_TOMB | seq)) {
		d->slot[pos] = r;
		d->dead--;
		return;
	}
	assert(d->len < d->cap);
	memmove(&d->slot[pos + 1], &d->slot[pos], (d->len - pos) * sizeof(*d->slot));
	d->slot[pos] = r;
	d->len++;
}

/* Entry R, just appended (the newest), moves back to SEQ: its slot is the one it takes. */
void tree_order_place(const struct cfs_tree *t, struct cfs_node *dn, uint32_t r, uint32_t seq)
{
	struct cfs_dir *d = dn->u.dir;

	assert(d->len && d->slot[d->len - 1] == r);
	d->len--;
	tree_order_insert(t, dn, r, seq);
}

/* A removed directory's order goes, unless orphans pin it: their count lives there. */
void tree_order_free(struct cfs_tree *t, struct cfs_node *dn)
{
	if (!dn->u.dir || dn->u.dir->pins)
		return;
	mem_free(t, dn->u.dir, dir_bytes(dn->u.dir->cap));
	dn->u.dir = NULL;
}

/* Where a listing continues: just after the cookie's entry, found by its position hint, or
 * by its seq when the entries moved (compaction) or it is gone. */
uint32_t tree_order_resume(const struct cfs_tree *t, const struct cfs_dir *d, uint64_t cookie)
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

/* ---- extra names of one child: a ring in creation order, its oldest found by child ---- */

struct cfs_xhead *tree_xhead_find(const struct cfs_tree *t, uint32_t child)
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
int tree_xhead_reserve(struct cfs_tree *t)
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

/* Backward-shift deletion, as tree_hash_del. */
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

/* Append xname I to its child's ring (tree_xhead_reserve done when it is the first). */
void tree_xname_chain(struct cfs_tree *t, uint32_t i)
{
	struct cfs_xname *x = &t->x[i];
	struct cfs_xhead *h = tree_xhead_find(t, x->child);

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

void tree_xname_unchain(struct cfs_tree *t, uint32_t i)
{
	struct cfs_xname *x = &t->x[i];
	struct cfs_xhead *h = tree_xhead_find(t, x->child);

	if (x->next == i) {
		xhead_del(t, h);
		return;
	}
	t->x[x->prev].next = x->next;
	t->x[x->next].prev = x->prev;
	if (h->head == i)
		h->head = x->next;
}

/* How many of its child's extra names are older than xname I: its place in the ring. */
uint32_t tree_xname_rank(const struct cfs_tree *t, uint32_t i)
{
	uint32_t k = 0;

	for (uint32_t j = tree_xhead_find(t, t->x[i].child)->head; j != i; j = t->x[j].next)
		k++;
	return k;
}

/* Chain xname I back into its child's ring with RANK older ones before it (the journal's
 * undo: the ring is as it was when I left it). */
void tree_xname_chain_at(struct cfs_tree *t, uint32_t i, uint32_t rank)
{
	struct cfs_xname *x = &t->x[i];
	struct cfs_xhead *h;
	uint32_t p, q;

	tree_xname_chain(t, i); /* the newest: just before the head */
	h = tree_xhead_find(t, x->child);
	if (rank == 0) {
		h->head = i;
		return;
	}
	for (p = h->head; --rank;)
		p = t->x[p].next;
	if (p == x->prev)
		return; /* it was the newest */
	t->x[x->prev].next = x->next;
	t->x[x->next].prev = x->prev;
	q = t->x[p].next;
	x->prev = p;
	x->next = q;
	t->x[p].next = i;
	t->x[q].prev = i;
}

bool tree_has_xnames(const struct cfs_tree *t, uint32_t id)
{
	return t->xh_count && tree_xhead_find(t, id);
}

static uint32_t tree_depth(const struct cfs_tree *t, uint32_t dir)
{
	uint32_t n = 0;

	for (; dir != CFS_ROOT; dir = nd(t, dir)->e.dir)
		n++;
	return n;
}

uint32_t cfs_tree_name_depth(const struct cfs_tree *t, uint32_t id)
{
	const struct cfs_node *n = nd(t, id);
	uint32_t deepest = n->e.dir ? tree_depth(t, n->e.dir) : 0;
	const struct cfs_xhead *h = tree_has_xnames(t, id) ? tree_xhead_find(t, id) : NULL;

	if (!h)
		return deepest;
	uint32_t i = h->head;
	do {
		uint32_t depth = tree_depth(t, t->x[i].e.dir);
		deepest = depth > deepest ? depth : deepest;
		i = t->x[i].next;
	} while (i != h->head);
	return deepest;
}
