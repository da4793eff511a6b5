/*
 * Where the tree's bytes live: the arena of names, link targets and patterns (growth and the
 * rebuild that drops its holes) and the slot tables with free lists (node handles, extra
 * names, small files' buffers). The layout is in tree_int.h.
 */
#include "tree_int.h"

#include <errno.h>

/* ---- arena ---- */

/* Room for N more bytes. The arena may move: pointers in KEEP that point into it are moved
 * along (a caller may pass a name it got from cfs_tree_dir_next or a target from readlink). */
int tree_arena_reserve(struct cfs_tree *t, size_t n, const char **keep, int nkeep)
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
void tree_arena_tidy(struct cfs_tree *t)
{
	uint32_t live = t->arena_len - t->arena_holes, len = 0;

	if (t->journal)
		return; /* its end tidies: names given to calls made meanwhile stay where they are
			 */
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

/* ---- handles, xnames, buffers: slots with free lists ---- */

int tree_id_reserve(struct cfs_tree *t)
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

uint32_t tree_id_take(struct cfs_tree *t)
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

int tree_xname_reserve(struct cfs_tree *t)
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

uint32_t tree_xname_take(struct cfs_tree *t, uint32_t child)
{
	uint32_t i = t->x_free ? t->x_free - 1 : t->x_len++;

	if (t->x_free)
		t->x_free = t->x[i].child;
	t->x[i].child = child;
	t->xnames++;
	return CFS_XREF | i;
}

void tree_xname_put(struct cfs_tree *t, uint32_t r)
{
	struct cfs_xname *x = xn(t, r);

	x->e.dir = 0;
	t->xnames--;
	x->child = t->x_free;
	t->x_free = (r & ~CFS_XREF) + 1;
}

int tree_buf_slot_reserve(struct cfs_tree *t)
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

uint32_t tree_buf_slot_take(struct cfs_tree *t, char *p, uint64_t cap)
{
	uint32_t i = t->buf_free ? t->buf_free - 1 : t->buf_len++;

	if (t->buf_free)
		t->buf_free = (uint32_t)t->bufs[i].cap;
	t->bufs[i] = (struct cfs_buf){p, cap};
	return i;
}

void tree_buf_release(struct cfs_tree *t, uint32_t i)
{
	mem_free(t, t->bufs[i].p, t->bufs[i].cap);
	t->bufs[i] = (struct cfs_buf){NULL, t->buf_free};
	t->buf_free = i + 1;
}
