/*
 * Namespace changes: link, unlink, rmdir, rename (move, replace, exchange), O_TMPFILE's unnamed
 * files, on the entry and orphan steps they share with creation (tree_entry.c). Each reserves what
 * it needs, then changes the tree with steps that cannot fail. The layout is in tree_int.h.
 */
#include "tree_int.h"

#include <errno.h>
#include <stdio.h> /* snprintf */

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
	tree_touch(t, id, now);
	tree_stamp(t, dir, now);
	tree_note_new(t, dir, keep, len);
	return 0;
}

int cfs_tree_mkfile_unnamed(struct cfs_tree *t, uint32_t dir, const struct cfs_new *a,
			    uint32_t *out)
{
	char name[32];
	int err = -EEXIST;
	struct cfs_node *d = nd(t, dir);
	int64_t mtime = is_dir(d) ? d->mtime : 0, ctime = is_dir(d) ? d->ctime : 0;

	/* made under a name no other entry has, then unlinked while held: an orphan */
	for (unsigned i = 0; err == -EEXIST && i < 1000; i++) {
		int len = snprintf(name, sizeof(name), ".cfs-tmpfile.%u", i);
		err = cfs_tree_mkfile(t, dir, name, (size_t)len, a, out);
		if (!err) {
			cfs_tree_ref(t, *out, 1);
			err = cfs_tree_unlink(t, dir, name, (size_t)len);
			assert(!err);
		}
	}
	if (!err) { /* as tmpfs: the directory did not change (its listing is as it was) */
		d = nd(t, dir);
		d->mtime = mtime;
		d->ctime = ctime;
	}
	return err;
}

int cfs_tree_link_unnamed(struct cfs_tree *t, uint32_t id, uint32_t dir, const char *name,
			  size_t len)
{
	struct cfs_node *n = nd(t, id);
	const char *keep = name;
	uint32_t was = n->e.dir;
	bool fresh;
	int err = tree_check_new_entry(t, dir, name, len);

	if (err)
		return err;
	if (!S_ISREG(n->mode) || n->nlink || !n->refs)
		return -EINVAL;
	err = tree_meta_reserve(t, len);
	if (!err)
		err = tree_entry_reserve(t, dir, len, &keep, 1, 0, &fresh);
	if (err)
		return err;
	/* the orphan's last name goes, and the pin it kept on that directory */
	int64_t now = now_ns();
	arena_drop(t, n->name_len);
	tree_ent_attach(t, id, dir, arena_put(t, keep, len), len);
	n->nlink = 1;
	nd(t, was)->u.dir->pins--;
	tree_node_release(t, was);
	tree_touch(t, id, now);
	tree_stamp(t, dir, now);
	tree_arena_tidy(t);
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
	uint32_t seq = ent(t, r)->seq, rank = tree_note_rank(t, r);
	tree_ent_detach(t, slot, r);
	n->nlink--;
	tree_touch(t, id, now);
	tree_stamp(t, dir, now);
	tree_note_gone(t, dir, name, len, id, seq, rank);
	if (!n->nlink)
		tree_node_orphan(t, id);
	tree_arena_tidy(t);
	return 0;
}

/* Directory ID lost its only name: it is dead, and its parent has one subdirectory less. */
static void dir_bury(struct cfs_tree *t, uint32_t id, uint32_t parent, int64_t now)
{
	struct cfs_node *n = nd(t, id);

	n->nlink = 0;
	tree_touch(t, id, now);
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
	uint32_t seq = n->e.seq;
	tree_ent_detach(t, slot, id);
	dir_bury(t, id, dir, now);
	tree_stamp(t, dir, now);
	tree_note_gone(t, dir, name, len, id, seq, TJ_FIRST);
	tree_node_orphan(t, id);
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
	tree_stamp(t, rn->olddir, rn->now);
	tree_stamp(t, rn->newdir, rn->now);
	tree_touch(t, rn->old_child, rn->now);
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
		tree_xname_promote(t, rn->new_child);
	} else if (!copy_name) {
		replaced->name_len = 0; /* it goes now; its name's bytes went to the old entry */
	}
	if (is_dir(replaced))
		dir_bury(t, rn->new_child, rn->newdir, rn->now);
	else
		replaced->nlink--;
	tree_touch(t, rn->new_child, rn->now);
	move_subdir_link(t, rn->old_child, rn->olddir, rn->newdir);
	stamp_rename(t, rn);
	if (!replaced->nlink)
		tree_node_orphan(t, rn->new_child);
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
	tree_touch(t, rn->new_child, rn->now);
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
	if ((err = tree_check_name(oldname, oldlen)) ||
	    (err = tree_check_new_name(newname, newlen)))
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
	if (flags & RENAME_EXCHANGE) {
		rename_exchange(t, &rn);
		tree_note_move(t, TJ_SWAP, olddir, oldname, oldlen, 0, newdir, newname, newlen);
		return 0;
	}
	uint32_t oldseq = ent(t, rn.old_ref)->seq,
		 newseq = rn.new_ref ? ent(t, rn.new_ref)->seq : 0;
	uint32_t rank = rn.new_ref ? tree_note_rank(t, rn.new_ref) : 0;
	err = rn.new_slot ? rename_replace(t, &rn) : rename_move(t, &rn);
	if (err)
		return err;
	if (rn.new_ref) /* the replaced name goes back after the mover left it */
		tree_note_gone(t, newdir, newname, newlen, rn.new_child, newseq, rank);
	tree_note_move(t, TJ_MOVE, olddir, oldname, oldlen, oldseq, newdir, newname, newlen);
	return 0;
}
