/*
 * A file's bytes: zeros, a shared pattern, one small buffer or 4 KiB pages in groups; reading
 * them, and writing, growing and shrinking them with everything reserved first so that a
 * failed call changes nothing. The layout is in tree_int.h.
 */
#include "tree_int.h"

#include <errno.h>

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
int tree_pat_acquire(struct cfs_tree *t, const char *pattern, size_t plen, uint32_t *off)
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
	int err = tree_meta_reserve(t, CFS_PAT_HDR + plen);

	if (!err)
		err = tree_arena_reserve(t, CFS_PAT_HDR + plen, &pattern, 1);
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
void tree_content_copy(const struct cfs_tree *t, const struct cfs_node *n, char *dst, uint64_t off,
		       size_t len)
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
uint64_t tree_content_pages(const struct cfs_tree *t, const struct cfs_node *n)
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
	struct cfs_pages *f = mem_resize(t, t->paged, t->paged_cap * sizeof(*f), cap * sizeof(*f));
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

/* Free the page K of FP's group R (one past the pattern's pages if EXTRA); its group stays. */
static void page_drop(struct cfs_tree *t, struct cfs_pages *fp, struct cfs_gref *r, uint64_t k,
		      bool extra)
{
	mem_free(t, r->g->page[k], CFS_PAGE);
	r->g->page[k] = NULL;
	r->g->unwritten &= ~(1ULL << k);
	r->g->used--;
	fp->npages--;
	fp->nextra -= extra;
	t->data_bytes -= CFS_PAGE;
}

/* Free FP's pages from index FIRST on. Groups are in key order: they go from the end. */
void tree_pages_free_from(struct cfs_tree *t, struct cfs_pages *fp, uint64_t first)
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
			page_drop(t, fp, r, k, idx >= pat_pages);
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

	tree_pages_free_from(t, fp, 0);
	mem_free(t, fp->grp, fp->grp_cap * sizeof(*fp->grp));
	if (fp->pat != CFS_NONE)
		pat_release(t, fp->pat);
	paged_slot_put(t, i);
}

void tree_content_release(struct cfs_tree *t, struct cfs_node *n)
{
	if (n->content == CFS_PATTERN) {
		pat_release(t, n->data);
	} else if (n->content == CFS_BUFFER) {
		t->data_bytes -= t->bufs[n->data].cap;
		tree_buf_release(t, n->data);
	} else if (n->content == CFS_PAGED) {
		paged_release(t, n->data);
	}
	n->content = CFS_ZEROS;
	n->data = 0;
}

/* Whether page K of group G holds written bytes (not only fallocate's zeros). */
static bool grp_written(const struct cfs_group *g, uint64_t k)
{
	return g->page[k] && !(g->unwritten >> k & 1);
}

/* The first run of written pages of FP at or after page IDX: [*start, *end) in pages. Pages
 * fallocate holds but nothing wrote read as zeros: they are left out, as holes. */
bool tree_paged_next_run(const struct cfs_pages *fp, uint64_t idx, uint64_t *start, uint64_t *end)
{
	bool found = false;

	for (uint32_t i = grp_search(fp, idx >> CFS_GROUP_BITS); i < fp->ngrp; i++) {
		for (uint64_t k = 0; k < CFS_GROUP; k++) {
			uint64_t at = fp->grp[i].key * CFS_GROUP + k;
			if (at < idx)
				continue;
			if (grp_written(fp->grp[i].g, k) && !found) {
				found = true;
				*start = *end = at;
			}
			if (found && (at != *end || !grp_written(fp->grp[i].g, k)))
				return true;
			if (found)
				*end = at + 1;
		}
	}
	return found;
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
	int err = tree_buf_slot_reserve(t);

	if (err)
		return err;
	char *p = mem_resize(t, NULL, 0, cap);
	if (!p)
		return -ENOMEM;
	tree_content_copy(t, n, p, 0, cap);
	tree_content_release(t, n);
	n->content = CFS_BUFFER;
	n->data = tree_buf_slot_take(t, p, cap);
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
	bool unwritten; /* fallocate: new pages over holes are marked unwritten */
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

	tree_content_copy(t, n, p, idx * CFS_PAGE, CFS_PAGE);
	if (i == fp->ngrp || fp->grp[i].key != key) {
		struct cfs_group *g = pl->groups;
		pl->groups = (struct cfs_group *)g->page[0];
		memset(g, 0, sizeof(*g));
		memmove(&fp->grp[i + 1], &fp->grp[i], (fp->ngrp - i) * sizeof(*fp->grp));
		fp->grp[i] = (struct cfs_gref){key, g};
		fp->ngrp++;
	}
	uint64_t k = idx & (CFS_GROUP - 1);
	bool hole = n->content == CFS_BUFFER ? idx > 0 : idx >= pages_of(fp->pat_end);
	fp->grp[i].g->page[k] = p;
	fp->grp[i].g->unwritten &= ~(1ULL << k);
	fp->grp[i].g->unwritten |= (uint64_t)(pl->unwritten && hole) << k;
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
		tree_buf_release(t, n->data);
	}
	n->data = paged_slot_take(t, &local);
	n->content = CFS_PAGED;
}

static void paged_copy_in(struct cfs_pages *fp, const char *buf, size_t size, uint64_t off)
{
	while (size) {
		size_t in = off % CFS_PAGE, c = CFS_PAGE - in < size ? CFS_PAGE - in : size;
		uint64_t k = off / CFS_PAGE & (CFS_GROUP - 1);
		struct cfs_group *g = grp_find(fp, off / CFS_PAGE >> CFS_GROUP_BITS);

		assert(g && g->page[k]);
		g->unwritten &= ~(1ULL << k); /* written now: data for SEEK_DATA */
		memcpy(g->page[k] + in, buf, c);
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

ssize_t tree_content_write(struct cfs_tree *t, struct cfs_node *n, const char *buf, size_t size,
			   uint64_t off)
{
	if (fits_buffer(n, off + size))
		return buf_write(t, n, buf, size, off);
	return paged_write(t, n, buf, size, off);
}

/* Shrink file N to SIZE (> 0). Never needs memory. */
void tree_content_shrink(struct cfs_tree *t, struct cfs_node *n, uint64_t size)
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
		tree_pages_free_from(t, fp, pages_of(size));
		if (size % CFS_PAGE && (p = page_at(fp, size / CFS_PAGE)))
			memset(p + size % CFS_PAGE, 0, CFS_PAGE - size % CFS_PAGE);
		if (fp->pat_end > size) {
			fp->pat_end = size;
			fp->nextra = 0; /* every page left is below pages_of(size) */
		}
		if (!fp->npages && fp->pat == CFS_NONE) {
			tree_content_release(t, n);
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
int tree_content_grow(struct cfs_tree *t, struct cfs_node *n, uint64_t size)
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

/* ---- fallocate and SEEK_DATA/SEEK_HOLE: pages held, freed and found, as tmpfs ---- */

/* Hold pages for [OFF, END) of file N, all or nothing (-ENOSPC past the data limit). What
 * they read does not change; the new ones over holes stay holes to SEEK_DATA until written
 * (tmpfs's fallocated pages are not uptodate). Sizes are the caller's. */
int tree_content_allocate(struct cfs_tree *t, struct cfs_node *n, uint64_t off, uint64_t end)
{
	struct cfs_plan pl;
	uint64_t last = pages_of(end);
	int err = plan_count(t, n, off / CFS_PAGE, last, &pl);

	if (err)
		return err;
	if (pl.end < last)
		return -ENOSPC;
	pl.unwritten = true;
	err = plan_alloc(t, n, &pl);
	if (err)
		return err;
	plan_commit(t, n, &pl);
	return 0;
}

/* Free the pages [FIRST, LAST) of FP that are there, and their groups once empty. */
static void pages_drop(struct cfs_tree *t, struct cfs_pages *fp, uint64_t first, uint64_t last)
{
	uint64_t pat_pages = pages_of(fp->pat_end);
	uint32_t i = grp_search(fp, first >> CFS_GROUP_BITS);

	while (i < fp->ngrp && fp->grp[i].key * CFS_GROUP < last) {
		struct cfs_gref *r = &fp->grp[i];
		for (uint64_t k = 0; k < CFS_GROUP; k++) {
			uint64_t idx = r->key * CFS_GROUP + k;
			if (idx < first || idx >= last || !r->g->page[k])
				continue;
			page_drop(t, fp, r, k, idx >= pat_pages);
		}
		if (r->g->used) {
			i++;
			continue;
		}
		mem_free(t, r->g, sizeof(*r->g));
		memmove(r, r + 1, (fp->ngrp - i - 1) * sizeof(*r));
		fp->ngrp--;
	}
}

/* Zeros over [OFF, END) (within one page) where FP holds that page. */
static void page_zero(struct cfs_pages *fp, uint64_t off, uint64_t end)
{
	char *p = page_at(fp, off / CFS_PAGE);

	if (p && off < end)
		memset(p + off % CFS_PAGE, 0, end - off);
}

/* Zeros over [OFF, END) in the pages FP holds there. */
static void pages_zero(struct cfs_pages *fp, uint64_t off, uint64_t end)
{
	while (off < end) {
		uint64_t next = (off / CFS_PAGE + 1) * CFS_PAGE;
		page_zero(fp, off, next < end ? next : end);
		off = next;
	}
}

/* The base pattern of FP now ends at OFF: the pages past it that were its own are extra. */
static void pattern_cut(struct cfs_tree *t, struct cfs_pages *fp, uint64_t off)
{
	uint64_t pat_pages = pages_of(off);

	fp->pat_end = off;
	if (!off) {
		pat_release(t, fp->pat);
		fp->pat = CFS_NONE;
	}
	fp->nextra = 0;
	for (uint32_t i = 0; i < fp->ngrp; i++)
		for (uint64_t k = 0; k < CFS_GROUP; k++)
			fp->nextra +=
			    fp->grp[i].g->page[k] && fp->grp[i].key * CFS_GROUP + k >= pat_pages;
}

/* Punch [OFF, END) out of paged file N: whole pages freed, partial ones zeroed; the base
 * pattern, if the hole starts in it, now ends at OFF (the caller saw that the hole reaches its
 * end). Cannot fail. */
static void paged_punch(struct cfs_tree *t, struct cfs_node *n, uint64_t off, uint64_t end)
{
	struct cfs_pages *fp = &t->paged[n->data];
	uint64_t head_end = (off / CFS_PAGE + 1) * CFS_PAGE, tail = end / CFS_PAGE * CFS_PAGE;

	if (fp->pat != CFS_NONE && off < fp->pat_end)
		pattern_cut(t, fp, off);
	pages_zero(fp, off, head_end < end ? head_end : end); /* partial pages at both ends */
	pages_zero(fp, tail > head_end ? tail : head_end, end);
	if (pages_of(off) < end / CFS_PAGE)
		pages_drop(t, fp, pages_of(off), end / CFS_PAGE);
	if (!fp->npages && !fp->pat_end)
		tree_content_release(t, n);
}

/* Punch [OFF, END) out of file N (fallocate's PUNCH_HOLE): it reads zeros there, and the whole
 * pages in it hold nothing. The size stays. A hole inside the base pattern (not reaching its
 * end) is held as zero pages, as the base has no holes of its own: that needs memory and
 * room. All or nothing. */
int tree_content_punch(struct cfs_tree *t, struct cfs_node *n, uint64_t off, uint64_t end)
{
	uint64_t pat_end = n->content == CFS_PATTERN ? n->u.size
			   : n->content == CFS_PAGED ? t->paged[n->data].pat_end
						     : 0;
	struct cfs_buf *b;
	struct cfs_plan pl;
	int err = 0;

	if (n->content == CFS_BUFFER) {
		b = &t->bufs[n->data];
		if (!off && end >= CFS_PAGE)
			tree_content_release(t, n);
		else if (off < b->cap)
			memset(b->p + off, 0, (end < b->cap ? end : b->cap) - off);
		return 0;
	}
	if (off < pat_end && end < pat_end) {
		err = tree_content_allocate(t, n, off, end);
		if (!err)
			pages_zero(&t->paged[n->data], off, end);
		return err;
	}
	if (off < pat_end && n->content == CFS_PATTERN) { /* paged first, to cut its pattern */
		err = plan_count(t, n, 0, 0, &pl);
		if (!err)
			err = plan_alloc(t, n, &pl);
		if (err)
			return err;
		plan_commit(t, n, &pl);
	}
	if (n->content == CFS_PAGED)
		paged_punch(t, n, off, end);
	return 0;
}

/* The first page of paged FP at or after IDX that holds written data (UINT64_MAX: none). */
static uint64_t paged_next_data(const struct cfs_pages *fp, uint64_t idx)
{
	if (idx < pages_of(fp->pat_end))
		return idx;
	for (uint32_t i = grp_search(fp, idx >> CFS_GROUP_BITS); i < fp->ngrp; i++)
		for (uint64_t k = 0; k < CFS_GROUP; k++)
			if (fp->grp[i].key * CFS_GROUP + k >= idx && grp_written(fp->grp[i].g, k))
				return fp->grp[i].key * CFS_GROUP + k;
	return UINT64_MAX;
}

/* The first page of paged FP at or after IDX that holds no written data. */
static uint64_t paged_next_hole(const struct cfs_pages *fp, uint64_t idx)
{
	const struct cfs_group *g;

	if (idx < pages_of(fp->pat_end))
		idx = pages_of(fp->pat_end);
	while ((g = grp_find(fp, idx >> CFS_GROUP_BITS)) && grp_written(g, idx & (CFS_GROUP - 1)))
		idx++;
	return idx;
}

/* The first page of file N at or after IDX that holds data (DATA; UINT64_MAX: none), or none
 * (a hole: there is always one past the data). */
uint64_t tree_content_seek(const struct cfs_tree *t, const struct cfs_node *n, uint64_t idx,
			   bool data)
{
	uint64_t past; /* the first page past a buffer's or a pattern's data */

	switch (n->content) {
	case CFS_PAGED:
		return data ? paged_next_data(&t->paged[n->data], idx)
			    : paged_next_hole(&t->paged[n->data], idx);
	case CFS_BUFFER:
		past = 1;
		break;
	case CFS_PATTERN:
		past = pages_of(n->u.size);
		break;
	default:
		past = 0;
	}
	if (data)
		return idx < past ? idx : UINT64_MAX;
	return idx < past ? past : idx;
}
