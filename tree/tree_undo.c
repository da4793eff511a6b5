/*
 * The journal's two ends (tree.h, cfs_tree_journal_begin): commit keeps the changes and frees
 * the nodes they removed; undo walks the notes tree_entry.c took, newest first, and puts each
 * change back. Names removed come back at their old place in readdir order, on the very node
 * they named (kept meanwhile as an orphan), and a first name comes back first; names made go
 * again; names moved go back where they were; times and attributes are set back last for each
 * change, so the stamps the putting back makes do not stay. The layout is in tree_int.h.
 */
#include "tree_int.h"

#include <errno.h>

int cfs_tree_journal_begin(struct cfs_tree *t)
{
	if (t->journal)
		return -EBUSY;
	struct tree_journal *j = mem_resize(t, NULL, 0, sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct tree_journal){0};
	t->journal = j;
	return 0;
}

/* The node a note names, if it is still that node (not freed, its handle not reused). */
static bool undo_alive(const struct cfs_tree *t, uint32_t id, uint32_t gen)
{
	return id && id < t->next_id && nd(t, id)->mode && nd(t, id)->gen == gen;
}

/* Free the nodes the journal kept that have no name again (all of them, after a commit). */
static void journal_release(struct cfs_tree *t, const struct tree_journal *j)
{
	for (uint32_t i = 0; i < j->n; i++) {
		const struct tree_jrec *r = &j->rec[i];
		if (r->kind == TJ_KEPT && undo_alive(t, r->id, r->gen) && !nd(t, r->id)->nlink)
			tree_node_release(t, r->id);
	}
}

void cfs_tree_journal_commit(struct cfs_tree *t)
{
	struct tree_journal *j = t->journal;

	if (!j)
		return;
	t->journal = NULL;
	journal_release(t, j);
	t->journal = j;
	tree_journal_free(t);
	tree_arena_tidy(t);
}

static void undo_attr(struct cfs_tree *t, const struct tree_jrec *r)
{
	if (!undo_alive(t, r->id, r->gen))
		return; /* made by the journal's changes, and gone again */
	struct cfs_node *n = nd(t, r->id);
	n->mode = r->mode;
	n->uid = r->uid;
	n->gid = r->gid;
	n->atime = r->atime;
	n->mtime = r->mtime;
	n->ctime = r->ctime;
	if (t->changes)
		cfs_changes_node(t, t->changes, r->id);
}

/* A name made goes again (with its node, unless that has other names). */
static int undo_new(struct cfs_tree *t, const struct tree_jrec *r, const char *name)
{
	uint32_t *slot = tree_hash_find(t, r->dir, name, r->len);

	if (!slot)
		return -ENOENT; /* cannot be: later changes were put back first */
	if (is_dir(nd(t, ent_child(t, *slot))))
		return cfs_tree_rmdir(t, r->dir, name, r->len);
	return cfs_tree_unlink(t, r->dir, name, r->len);
}

/* A name moved goes back, to its old place in its old directory's order. */
static int undo_move(struct cfs_tree *t, const struct tree_jrec *r, const char *name,
		     const char *name2)
{
	int err =
	    cfs_tree_rename(t, r->dir2, name2, r->len2, r->dir, name, r->len, RENAME_NOREPLACE);

	if (err)
		return err;
	tree_order_place(t, nd(t, r->dir), *tree_hash_find(t, r->dir, name, r->len), r->seq);
	return 0;
}

/* The first name ID has now (the extra one that took over when the first went) becomes its
 * oldest extra name again; tree_entry_reserve gave the slots. */
static void demote_first(struct cfs_tree *t, uint32_t id)
{
	struct cfs_node *n = nd(t, id);
	uint32_t xr = tree_xname_take(t, id), i = xr & ~CFS_XREF;
	struct cfs_dir *d = nd(t, n->e.dir)->u.dir;

	*tree_hash_slot_of(t, id) = xr; /* same name, so the same hash slot */
	d->slot[tree_order_pos(t, d, n->e.seq)] = xr;
	t->x[i].e = n->e;
	t->x[i].name_len = n->name_len;
	tree_xname_chain(t, i);
	tree_xhead_find(t, id)->head = i; /* the ring's oldest */
}

/* A name removed comes back on the node it named, at its old place. */
static int undo_gone(struct cfs_tree *t, const struct tree_jrec *r, const char *name)
{
	if (!undo_alive(t, r->id, r->gen))
		return -ENOENT; /* cannot be: the journal kept it */
	struct cfs_node *n = nd(t, r->id);
	bool orphan = !n->nlink, fresh;
	int err = tree_entry_reserve(t, r->dir, r->len, &name, 1, orphan ? 0 : r->id, &fresh);
	uint32_t ref = r->id;

	if (err)
		return err;
	if (orphan) {
		nd(t, n->e.dir)->u.dir->pins--; /* the pin it took as an orphan */
		arena_drop(t, n->name_len);
	} else if (r->first) {
		demote_first(t, r->id);
	} else {
		ref = tree_xname_take(t, r->id);
	}
	struct cfs_ent *e = ent(t, ref);
	e->dir = r->dir;
	e->name_off = arena_put(t, name, r->len);
	ent_set_len(t, ref, r->len);
	tree_order_insert(t, nd(t, r->dir), ref, r->seq);
	tree_hash_put(t, ref);
	if (ref & CFS_XREF)
		tree_xname_chain_at(t, ref & ~CFS_XREF, r->rank);
	n->nlink = is_dir(n) ? 2 : n->nlink + 1; /* a directory was empty when it went */
	if (is_dir(n))
		nd(t, r->dir)->nlink++;
	if (t->changes) {
		t->changes->names = true;
		cfs_changes_node(t, t->changes, r->id);
	}
	return 0;
}

static int undo_step(struct cfs_tree *t, const struct tree_journal *j, const struct tree_jrec *r)
{
	const char *name = j->names + r->name, *name2 = j->names + r->name2;

	switch ((enum tree_jkind)r->kind) {
	case TJ_ATTR:
		undo_attr(t, r);
		return 0;
	case TJ_NEW:
		return undo_new(t, r, name);
	case TJ_MOVE:
		return undo_move(t, r, name, name2);
	case TJ_SWAP:
		return cfs_tree_rename(t, r->dir, name, r->len, r->dir2, name2, r->len2,
				       RENAME_EXCHANGE);
	case TJ_GONE:
		return undo_gone(t, r, name);
	case TJ_KEPT:
		return 0; /* released at the end if its name did not come back */
	}
	return -EINVAL;
}

int cfs_tree_journal_undo(struct cfs_tree *t)
{
	struct tree_journal *j = t->journal;
	uint64_t meta_limit = t->meta_limit;
	int err = j && j->lost ? -ENOMEM : 0;

	if (!j)
		return 0;
	/* the steps back are not noted, free what they remove, and never pass the limit: the
	 * tree held all of it before */
	t->journal = NULL;
	t->meta_limit = UINT64_MAX;
	/* with a note missing, the steps before it would start from the wrong tree: none runs */
	for (uint32_t i = j->lost ? 0 : j->n; i-- > 0;) {
		int e = undo_step(t, j, &j->rec[i]);
		if (e && !err)
			err = e;
	}
	t->meta_limit = meta_limit;
	journal_release(t, j); /* only what a failed step could not give its name back */
	t->journal = j;
	tree_journal_free(t);
	tree_arena_tidy(t);
	return err;
}
