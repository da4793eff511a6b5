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
	int err = check_name(name, len);
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
	err = tree_entry_reserve(t, dir, len, &keep, 1, id, &fresh);
	if (err)
		return err;
	int64_t now = now_ns();
	uint32_t r = tree_xname_take(t, id);
	tree_ent_attach(t, r, dir, arena_put(t, keep, len), len);
	tree_xname_chain(t, r & ~CFS_XREF);
	n->nlink++;
	n->ctime = now;
	stamp(nd(t, dir), now);
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
	n->ctime = now;
	stamp(nd(t, dir), now);
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
	n->ctime = now;
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
	stamp(nd(t, dir), now);
	node_orphan(t, id);
	tree_arena_tidy(t);
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
	int err = same_name ? 0 : tree_arena_reserve(t, rn->newlen, &rn->newname, 1);

	if (!err)
		err = tree_order_reserve(t, nd(t, rn->newdir), &fresh);
	if (err)
		return err;
	uint32_t off = same_name ? e->name_off : arena_put(t, rn->newname, rn->newlen);
	tree_hash_del(t, rn->s1);
	tree_order_remove(t, nd(t, rn->olddir), e->seq); /* keeps the slot reserved above */
	if (!same_name)
		arena_drop(t, oldlen);
	e->dir = rn->newdir;
	e->name_off = off;
	ent_set_len(t, rn->r1, rn->newlen);
	tree_order_append(t, nd(t, rn->newdir), rn->r1);
	tree_hash_put(t, rn->r1);
	move_subdir_link(t, rn->a, rn->olddir, rn->newdir);
	stamp_rename(t, rn);
	tree_arena_tidy(t);
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
	bool b_last = !(rn->r2 & CFS_XREF) && !tree_has_xnames(t, rn->b); /* r2 is b's last name */
	bool copy = b_last && is_held(b);

	if (copy) {
		int err = tree_arena_reserve(t, rn->newlen, &rn->newname, 1);
		if (err)
			return err;
	}
	uint32_t off = copy ? arena_put(t, rn->newname, rn->newlen) : e2->name_off;
	tree_order_remove(t, nd(t, rn->olddir), e1->seq);
	struct cfs_dir *d = nd(t, rn->newdir)->u.dir;
	d->slot[tree_order_pos(t, d, e2->seq)] = rn->r1;
	tree_hash_del(t, rn->s1);
	*tree_hash_slot_of(t, rn->r2) = rn->r1; /* same key: the slot fits r1 once r1 has it */
	arena_drop(t, oldlen);
	*e1 = (struct cfs_ent){rn->newdir, off, e2->seq};
	ent_set_len(t, rn->r1, newlen);
	if (rn->r2 & CFS_XREF) {
		tree_xname_unchain(t, rn->r2 & ~CFS_XREF);
		tree_xname_put(t, rn->r2);
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
	tree_arena_tidy(t);
	return 0;
}

/* Both names stay where they are in readdir order; their children trade places. */
static int rename_exchange(struct cfs_tree *t, struct cfs_rename *rn)
{
	struct cfs_ent *e1 = ent(t, rn->r1), *e2 = ent(t, rn->r2);
	struct cfs_ent tmp = *e1;
	struct cfs_dir *d1 = nd(t, rn->olddir)->u.dir, *d2 = nd(t, rn->newdir)->u.dir;
	uint32_t p1 = tree_order_pos(t, d1, e1->seq), p2 = tree_order_pos(t, d2, e2->seq);
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
	rn.s1 = tree_hash_find(t, olddir, oldname, oldlen);
	if (!rn.s1)
		return -ENOENT;
	rn.s2 = tree_hash_find(t, newdir, newname, newlen);
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
