/*
 * Namespace changes: link, unlink, rmdir, rename (move, replace, exchange), and the entry and
 * orphan steps they share with creation in tree.c. Each reserves what it needs, then changes
 * the tree with steps that cannot fail. The layout is in tree_int.h.
 */
#include "tree_int.h"

#include <errno.h>
#include <stdio.h> /* RENAME_NOREPLACE, RENAME_EXCHANGE (_GNU_SOURCE) */

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0) /* <linux/fs.h> */
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* ---- small shared steps ---- */

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

/* A name an entry may take: a valid one, and not the up name every directory answers. */
static int check_new_name(const char *name, size_t len)
{
	if (len == sizeof(CFS_UP_NAME) - 1 && memcmp(name, CFS_UP_NAME, len) == 0)
		return -EEXIST;
	return check_name(name, len);
}

/* Free node ID, which has no name left (an orphan's last one, in .e, goes with it). */
static void node_free(struct cfs_tree *t, uint32_t id)
{
	struct cfs_node *n = nd(t, id);

	assert(!n->nlink && id != CFS_ROOT);
	arena_drop(t, n->name_len);
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
static void xname_promote(struct cfs_tree *t, uint32_t id)
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
static void ent_detach(struct cfs_tree *t, uint32_t *slot, uint32_t r)
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
		xname_promote(t, id);
	}
}

/* A name in DIR that must exist: its hash slot. */
int tree_find_entry(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		    uint32_t **slot)
{
	if (!is_dir(nd(t, dir)))
		return -ENOTDIR;
	int err = check_name(name, len);
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
	int err = check_new_name(name, len);
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

/* ---- namespace changes ---- */

int cfs_tree_link(struct cfs_tree *t, uint32_t id, uint32_t dir, const char *name, size_t len)
{
	struct cfs_node *n = nd(t, id);
	const char *keep = name;
	bool fresh;
	int err = tree_check_new_entry(t, dir, name, len);

	if (err)
		return err;
	if (is_dir(n))
		return -EPERM;
	if (!n->nlink)
		return -ENOENT; /* as vfs_link: an unlinked file cannot come back */
	if (n->nlink == UINT32_MAX)
		return -EMLINK;
	err = tree_meta_reserve(t, CFS_XNAME_COST + len);
	if (!err)
		err = tree_entry_reserve(t, dir, len, &keep, 1, id, &fresh);
	if (err)
		return err;
	int64_t now = now_ns();
	uint32_t r = tree_xname_take(t, id);
	tree_ent_attach(t, r, dir, arena_put(t, keep, len), len);
	tree_xname_chain(t, r & ~CFS_XREF);
	n->nlink++;
	touch(t, id, now);
	stamp(t, dir, now);
	return 0;
}

int cfs_tree_unlink(struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	uint32_t *slot;
	int err = tree_find_entry(t, dir, name, len, &slot);

	if (err)
		return err;
	uint32_t r = *slot, id = ent_child(t, r);
	struct cfs_node *n = nd(t, id);
	if (is_dir(n))
		return -EISDIR;
	int64_t now = now_ns();
	ent_detach(t, slot, r);
	n->nlink--;
	touch(t, id, now);
	stamp(t, dir, now);
	if (!n->nlink)
		node_orphan(t, id);
	tree_arena_tidy(t);
	return 0;
}

/* Directory ID lost its only name: it is dead, and its parent has one subdirectory less. */
static void dir_bury(struct cfs_tree *t, uint32_t id, uint32_t parent, int64_t now)
{
	struct cfs_node *n = nd(t, id);

	n->nlink = 0;
	touch(t, id, now);
	tree_order_free(t, n);
	nd(t, parent)->nlink--;
}

int cfs_tree_rmdir(struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	uint32_t *slot;
	int err = tree_find_entry(t, dir, name, len, &slot);

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
	stamp(t, dir, now);
	node_orphan(t, id);
	tree_arena_tidy(t);
	return 0;
}

/* What a rename is about, found before anything changes: for the old name and the new one,
 * the hash slot, the entry ref (CFS_XREF set for an extra name) and the node it names. */
struct cfs_rename {
	uint32_t olddir, newdir;
	uint32_t *old_slot, *new_slot; /* new_slot NULL when the new name is free */
	uint32_t old_ref, new_ref;     /* new_ref 0 when the new name is free */
	uint32_t old_child;	       /* the node that moves */
	uint32_t new_child;	       /* the new name's node now: replaced, swapped, or 0 */
	const char *newname;
	size_t newlen;
	int64_t now;
};

/* DIR is TOP or lies below it. */
static bool is_within(const struct cfs_tree *t, uint32_t dir, uint32_t top)
{
	for (;;) {
		if (dir == top)
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
	bool old_is_dir = is_dir(nd(t, rn->old_child));
	bool new_is_dir = rn->new_child && is_dir(nd(t, rn->new_child));

	if (rn->new_child && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (!rn->new_child && (flags & RENAME_EXCHANGE))
		return -ENOENT;
	if (old_is_dir && is_within(t, rn->newdir, rn->old_child))
		return -EINVAL; /* a directory into itself */
	if (new_is_dir && is_within(t, rn->olddir, rn->new_child))
		return flags & RENAME_EXCHANGE ? -EINVAL : -ENOTEMPTY; /* onto an ancestor */
	if (rn->old_child == rn->new_child)
		return CFS_RENAME_SAME; /* one file under both names: nothing to do */
	if (flags & RENAME_EXCHANGE)
		return CFS_RENAME_GO;
	if (!rn->new_child)
		return nd(t, rn->newdir)->nlink ? CFS_RENAME_GO : -ENOENT;
	if (old_is_dir && !new_is_dir)
		return -ENOTDIR;
	if (!old_is_dir && new_is_dir)
		return -EISDIR;
	return new_is_dir && dir_count(nd(t, rn->new_child)) ? -ENOTEMPTY : CFS_RENAME_GO;
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
	stamp(t, rn->olddir, rn->now);
	stamp(t, rn->newdir, rn->now);
	touch(t, rn->old_child, rn->now);
}

/* The new name is free: the old entry leaves olddir and is appended to newdir. */
static int rename_move(struct cfs_tree *t, struct cfs_rename *rn)
{
	struct cfs_ent *entry = ent(t, rn->old_ref);
	size_t old_len = ent_len(t, rn->old_ref);
	bool same_name =
	    old_len == rn->newlen && !memcmp(t->arena + entry->name_off, rn->newname, old_len);
	bool fresh;
	int err =
	    same_name || rn->newlen <= old_len ? 0 : tree_meta_reserve(t, rn->newlen - old_len);

	if (!err && !same_name)
		err = tree_arena_reserve(t, rn->newlen, &rn->newname, 1);
	if (!err)
		err = tree_order_reserve(t, nd(t, rn->newdir), &fresh);
	if (err)
		return err;
	uint32_t name_off = same_name ? entry->name_off : arena_put(t, rn->newname, rn->newlen);
	tree_hash_del(t, rn->old_slot);
	tree_order_remove(t, nd(t, rn->olddir), entry->seq); /* keeps the slot reserved above */
	if (!same_name)
		arena_drop(t, old_len);
	entry->dir = rn->newdir;
	entry->name_off = name_off;
	ent_set_len(t, rn->old_ref, rn->newlen);
	tree_order_append(t, nd(t, rn->newdir), rn->old_ref);
	tree_hash_put(t, rn->old_ref);
	move_subdir_link(t, rn->old_child, rn->olddir, rn->newdir);
	stamp_rename(t, rn);
	tree_arena_tidy(t);
	return 0;
}

/* The new name exists: the old entry takes over the new entry's name and readdir position,
 * and new_child loses that name. The old entry takes the name's bytes too, unless new_child
 * keeps them as an orphan's last name: only then is memory needed, for a copy of its own. */
static int rename_replace(struct cfs_tree *t, struct cfs_rename *rn)
{
	struct cfs_ent *old_ent = ent(t, rn->old_ref), *new_ent = ent(t, rn->new_ref);
	struct cfs_node *replaced = nd(t, rn->new_child);
	size_t old_len = ent_len(t, rn->old_ref), new_len = ent_len(t, rn->new_ref);
	bool last_name = !(rn->new_ref & CFS_XREF) && !tree_has_xnames(t, rn->new_child);
	bool copy_name = last_name && is_held(replaced);

	if (copy_name) {
		/* the victim keeps its name as an orphan: the old entry's bytes go, a copy comes */
		int err = rn->newlen <= old_len ? 0 : tree_meta_reserve(t, rn->newlen - old_len);
		if (!err)
			err = tree_arena_reserve(t, rn->newlen, &rn->newname, 1);
		if (err)
			return err;
	}
	uint32_t name_off = copy_name ? arena_put(t, rn->newname, rn->newlen) : new_ent->name_off;
	tree_order_remove(t, nd(t, rn->olddir), old_ent->seq);
	struct cfs_dir *newdir_order = nd(t, rn->newdir)->u.dir;
	newdir_order->slot[tree_order_pos(t, newdir_order, new_ent->seq)] = rn->old_ref;
	tree_hash_del(t, rn->old_slot);
	/* same key: the slot fits the old entry once it has the name */
	*tree_hash_slot_of(t, rn->new_ref) = rn->old_ref;
	arena_drop(t, old_len);
	*old_ent = (struct cfs_ent){rn->newdir, name_off, new_ent->seq};
	ent_set_len(t, rn->old_ref, new_len);
	if (rn->new_ref & CFS_XREF) {
		tree_xname_unchain(t, rn->new_ref & ~CFS_XREF);
		tree_xname_put(t, rn->new_ref);
	} else if (!last_name) {
		xname_promote(t, rn->new_child);
	} else if (!copy_name) {
		replaced->name_len = 0; /* it goes now; its name's bytes went to the old entry */
	}
	if (is_dir(replaced))
		dir_bury(t, rn->new_child, rn->newdir, rn->now);
	else
		replaced->nlink--;
	touch(t, rn->new_child, rn->now);
	move_subdir_link(t, rn->old_child, rn->olddir, rn->newdir);
	stamp_rename(t, rn);
	if (!replaced->nlink)
		node_orphan(t, rn->new_child);
	tree_arena_tidy(t);
	return 0;
}

/* Both names stay where they are in readdir order; their children trade places. The two
 * entries swap their names, so each order slot and hash slot just takes the other ref. */
static int rename_exchange(struct cfs_tree *t, struct cfs_rename *rn)
{
	struct cfs_ent *old_ent = ent(t, rn->old_ref), *new_ent = ent(t, rn->new_ref);
	struct cfs_ent saved = *old_ent;
	struct cfs_dir *old_order = nd(t, rn->olddir)->u.dir, *new_order = nd(t, rn->newdir)->u.dir;
	uint32_t old_pos = tree_order_pos(t, old_order, old_ent->seq);
	uint32_t new_pos = tree_order_pos(t, new_order, new_ent->seq);
	size_t old_len = ent_len(t, rn->old_ref), new_len = ent_len(t, rn->new_ref);

	*old_ent = *new_ent;
	*new_ent = saved;
	ent_set_len(t, rn->old_ref, new_len);
	ent_set_len(t, rn->new_ref, old_len);
	old_order->slot[old_pos] = rn->new_ref;
	new_order->slot[new_pos] = rn->old_ref;
	*rn->old_slot = rn->new_ref;
	*rn->new_slot = rn->old_ref;
	move_subdir_link(t, rn->old_child, rn->olddir, rn->newdir);
	move_subdir_link(t, rn->new_child, rn->newdir, rn->olddir);
	stamp_rename(t, rn);
	touch(t, rn->new_child, rn->now);
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
	if ((err = check_name(oldname, oldlen)) || (err = check_new_name(newname, newlen)))
		return err;
	rn.old_slot = tree_hash_find(t, olddir, oldname, oldlen);
	if (!rn.old_slot)
		return -ENOENT;
	rn.new_slot = tree_hash_find(t, newdir, newname, newlen);
	rn.old_ref = *rn.old_slot;
	rn.old_child = ent_child(t, rn.old_ref);
	rn.new_ref = rn.new_slot ? *rn.new_slot : 0;
	rn.new_child = rn.new_slot ? ent_child(t, rn.new_ref) : 0;
	err = check_rename(t, &rn, flags);
	if (err)
		return err < 0 ? err : 0;
	rn.now = now_ns();
	if (flags & RENAME_EXCHANGE)
		return rename_exchange(t, &rn);
	return rn.new_slot ? rename_replace(t, &rn) : rename_move(t, &rn);
}
