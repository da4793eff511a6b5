/*
 * The steps tree.c (creation, attributes, references) and tree_rename.c (namespace changes)
 * both stand on: a name checked; an entry found, reserved, attached or detached; a node
 * orphaned or released once nothing holds it; every change stamped and recorded for the
 * kernel's caches. They call down into tree_store.c, tree_index.c and tree_data.c,
 * never up. The layout
 * is in tree_int.h.
 */
#include "tree_int.h"

#include <errno.h>

/* ---- names ---- */

int tree_check_name(const char *name, size_t len)
{
	if (!len)
		return -EINVAL;
	if (len > RS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len) || is_dot_or_dotdot(name, len))
		return -EINVAL;
	return 0;
}

/* A name an entry may take: a valid one, and not the up name every directory answers. */
int tree_check_new_name(const char *name, size_t len)
{
	if (len == sizeof(CFS_UP_NAME) - 1 && memcmp(name, CFS_UP_NAME, len) == 0)
		return -EEXIST;
	return tree_check_name(name, len);
}

/* ---- nodes without a name ---- */

/* Free node ID, which has no name left (an orphan's last one, in .e, goes with it). */
static void node_free(struct cfs_tree *t, uint32_t id)
{
	struct cfs_node *n = nd(t, id);

	assert(!n->nlink && id != CFS_ROOT);
	arena_drop(t, n->name_len);
	tree_xattr_drop(t, id);
	if (S_ISREG(n->mode)) {
		tree_content_release(t, n);
		t->files--;
	} else if (S_ISLNK(n->mode)) {
		arena_drop(t, n->u.size);
		t->links--;
	} else if (is_dir(n)) {
		tree_order_free(t, n);
		t->dirs--;
	} else {
		t->files--; /* a fifo, socket or device holds nothing */
	}
	t->nodes--;
	n->mode = 0;
	n->data = t->free_id;
	t->free_id = id;
}

/* ID just lost its last name: freed at once, or an orphan pinning its last directory. */
void tree_node_orphan(struct cfs_tree *t, uint32_t id)
{
	struct cfs_node *n = nd(t, id);

	if (!is_held(n) && !tree_note_kept(t, id)) {
		node_free(t, id);
		return;
	}
	/* held, or kept for the journal's undo (its end releases it): the directory held the
	 * name, so it has an order */
	nd(t, n->e.dir)->u.dir->pins++;
}

/* ID may have stopped being held: free it if it is an orphan, then release what it pinned,
 * up the chain of removed directories. */
void tree_node_release(struct cfs_tree *t, uint32_t id)
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

/* ---- entries ---- */

/* Give entry R the name (DIR, arena OFF, LEN); the caller reserved the order and hash slots. */
void tree_ent_attach(struct cfs_tree *t, uint32_t r, uint32_t dir, uint32_t off, size_t len)
{
	struct cfs_ent *e = ent(t, r);

	e->dir = dir;
	e->name_off = off;
	ent_set_len(t, r, len);
	tree_order_append(t, nd(t, dir), r);
	tree_hash_put(t, r);
}

/* The oldest extra name of ID becomes its first name: the entry changes refs, not place.
 * The old first name's bytes are the caller's business. */
void tree_xname_promote(struct cfs_tree *t, uint32_t id)
{
	struct cfs_node *n = nd(t, id);
	uint32_t i = tree_xhead_find(t, id)->head, r = CFS_XREF | i;
	struct cfs_xname *x = &t->x[i];
	struct cfs_dir *d = nd(t, x->e.dir)->u.dir;

	d->slot[tree_order_pos(t, d, x->e.seq)] = id;
	*tree_hash_slot_of(t, r) = id;
	n->e = x->e;
	n->name_len = x->name_len;
	tree_xname_unchain(t, i);
	tree_xname_put(t, r);
}

/* Entry R of node ID leaves its directory. An extra name just goes; the first name gives
 * way to the oldest extra one, or, being the last, stays in .e as the orphan's last name. */
void tree_ent_detach(struct cfs_tree *t, uint32_t *slot, uint32_t r)
{
	struct cfs_ent *e = ent(t, r);
	uint32_t id = ent_child(t, r);

	tree_hash_del(t, slot);
	tree_order_remove(t, nd(t, e->dir), e->seq);
	if (r & CFS_XREF) {
		arena_drop(t, ent_len(t, r));
		tree_xname_unchain(t, r & ~CFS_XREF);
		tree_xname_put(t, r);
	} else if (tree_has_xnames(t, id)) {
		arena_drop(t, ent_len(t, r));
		tree_xname_promote(t, id);
	}
}

/* A name in DIR that must exist: its hash slot. */
int tree_find_entry(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		    uint32_t **slot)
{
	if (!is_dir(nd(t, dir)))
		return -ENOTDIR;
	int err = tree_check_name(name, len);
	if (err)
		return err;
	*slot = tree_hash_find(t, dir, name, len);
	return *slot ? 0 : -ENOENT;
}

/* A name in DIR that must be free, in the kernel's order of checks. */
int tree_check_new_entry(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	const struct cfs_node *d = nd(t, dir);

	if (!is_dir(d))
		return -ENOTDIR;
	int err = tree_check_new_name(name, len);
	if (err)
		return err;
	if (tree_hash_find(t, dir, name, len))
		return -EEXIST;
	return d->nlink ? 0 : -ENOENT; /* a removed directory takes no new names */
}

/* Everything a new entry in DIR needs: arena bytes (KEEP as for tree_arena_reserve), a hash slot,
 * for an extra name of XCHILD an xname slot (and a ring head for its first), and an order
 * slot. Only the order array may be a new allocation (*FRESH), and it comes last: the rest
 * grows in place and needs no undoing. */
int tree_entry_reserve(struct cfs_tree *t, uint32_t dir, size_t bytes, const char **keep, int nkeep,
		       uint32_t xchild, bool *fresh)
{
	int err = tree_arena_reserve(t, bytes, keep, nkeep);

	*fresh = false;
	if (!err)
		err = tree_hash_reserve(t);
	if (!err && xchild)
		err = tree_xname_reserve(t);
	if (!err && xchild && !tree_has_xnames(t, xchild))
		err = tree_xhead_reserve(t);
	if (!err)
		err = tree_order_reserve(t, nd(t, dir), fresh);
	return err;
}

/* ---- changes: stamped and recorded ---- */

/* The one way a change to an existing node is made known (tree_int.h says when to use
 * which): out of line, so that the header's inline functions call nothing of the files. */
void tree_touch(struct cfs_tree *t, uint32_t id, int64_t now)
{
	tree_note_attr(t, id);
	nd(t, id)->ctime = now;
	if (t->changes)
		cfs_changes_node(t, t->changes, id);
}

void tree_stamp(struct cfs_tree *t, uint32_t id, int64_t now)
{
	struct cfs_node *n = nd(t, id);

	tree_note_attr(t, id);
	n->mtime = now;
	if (t->changes && is_dir(n))
		t->changes->names = true; /* an entry came, went or moved */
	tree_touch(t, id, now);
}

void cfs_tree_record(struct cfs_tree *t, struct cfs_changes *into)
{
	t->changes = into;
}

void cfs_changes_node(const struct cfs_tree *t, struct cfs_changes *ch, uint32_t node)
{
	if (node != CFS_ROOT && !nd(t, node)->refs)
		return; /* the kernel holds nothing of it */
	for (unsigned i = 0; i < ch->count; i++)
		if (ch->nodes[i] == node)
			return;
	if (ch->count < CFS_CHANGES_MAX)
		ch->nodes[ch->count++] = node;
	else
		ch->overflow = true;
}

/* ---- the journal's notes ---- */

/* Room for one more note and NAMES bytes of names: the note, or NULL (the journal is then
 * marked lost: an undo would be incomplete, and says so). */
static struct tree_jrec *note_take(struct cfs_tree *t, size_t names)
{
	struct tree_journal *j = t->journal;

	if (j->n == j->cap) {
		uint32_t cap = j->cap ? j->cap * 2 : 64;
		void *p = j->cap < UINT32_MAX / 2 ? mem_resize(t, j->rec, j->cap * sizeof(*j->rec),
							       cap * sizeof(*j->rec))
						  : NULL;
		if (!p)
			goto lost;
		j->rec = p;
		j->cap = cap;
	}
	if (names > UINT32_MAX / 2 - j->names_len)
		goto lost;
	if (j->names_len + names > j->names_cap) {
		uint32_t cap = (j->names_len + (uint32_t)names) * 2;
		char *p = mem_resize(t, j->names, j->names_cap, cap);
		if (!p)
			goto lost;
		j->names = p;
		j->names_cap = cap;
	}
	j->rec[j->n] = (struct tree_jrec){0};
	return &j->rec[j->n++];
lost:
	j->lost = true;
	return NULL;
}

/* Copy a name into the journal (note_take made room): its offset there. */
static uint32_t note_name(struct tree_journal *j, const char *name, size_t len)
{
	uint32_t off = j->names_len;

	memcpy(j->names + off, name, len);
	j->names_len += (uint32_t)len;
	return off;
}

void tree_note_attr(struct cfs_tree *t, uint32_t id)
{
	if (!t->journal)
		return;
	struct cfs_node *n = nd(t, id);
	struct tree_jrec *r = note_take(t, 0);
	if (r)
		*r = (struct tree_jrec){.kind = TJ_ATTR,
					.mode = n->mode,
					.id = id,
					.gen = n->gen,
					.uid = n->uid,
					.gid = n->gid,
					.atime = n->atime,
					.mtime = n->mtime,
					.ctime = n->ctime};
}

void tree_note_new(struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	struct tree_jrec *r = t->journal ? note_take(t, len) : NULL;

	if (r)
		*r = (struct tree_jrec){.kind = TJ_NEW,
					.dir = dir,
					.len = (uint32_t)len,
					.name = note_name(t->journal, name, len)};
}

void tree_note_move(struct cfs_tree *t, enum tree_jkind kind, uint32_t olddir, const char *oldname,
		    size_t oldlen, uint32_t oldseq, uint32_t newdir, const char *newname,
		    size_t newlen)
{
	struct tree_jrec *r = t->journal ? note_take(t, oldlen + newlen) : NULL;

	if (!r)
		return;
	*r = (struct tree_jrec){.kind = (uint8_t)kind,
				.dir = olddir,
				.seq = oldseq,
				.dir2 = newdir,
				.len = (uint32_t)oldlen,
				.len2 = (uint32_t)newlen};
	r->name = note_name(t->journal, oldname, oldlen);
	r->name2 = note_name(t->journal, newname, newlen);
}

uint32_t tree_note_rank(const struct cfs_tree *t, uint32_t ref)
{
	return !t->journal ? 0 : ref & CFS_XREF ? tree_xname_rank(t, ref & ~CFS_XREF) : TJ_FIRST;
}

void tree_note_gone(struct cfs_tree *t, uint32_t dir, const char *name, size_t len, uint32_t id,
		    uint32_t seq, uint32_t rank)
{
	struct tree_jrec *r = t->journal ? note_take(t, len) : NULL;

	if (r)
		*r = (struct tree_jrec){.kind = TJ_GONE,
					.first = rank == TJ_FIRST,
					.rank = rank == TJ_FIRST ? 0 : rank,
					.id = id,
					.gen = nd(t, id)->gen,
					.dir = dir,
					.seq = seq,
					.len = (uint32_t)len,
					.name = note_name(t->journal, name, len)};
}

/* Keep ID, which lost its last name, for the journal's undo: true if noted (its end frees
 * it); false without a journal, or when one that lost a note could not undo anyway. */
bool tree_note_kept(struct cfs_tree *t, uint32_t id)
{
	struct tree_jrec *r = t->journal && !t->journal->lost ? note_take(t, 0) : NULL;

	if (r)
		*r = (struct tree_jrec){.kind = TJ_KEPT, .id = id, .gen = nd(t, id)->gen};
	return r;
}

void tree_journal_free(struct cfs_tree *t)
{
	struct tree_journal *j = t->journal;

	if (!j)
		return;
	mem_free(t, j->rec, j->cap * sizeof(*j->rec));
	mem_free(t, j->names, j->names_cap);
	mem_free(t, j, sizeof(*j));
	t->journal = NULL;
}
