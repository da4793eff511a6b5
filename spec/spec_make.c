/*
 * Making nodes, and undoing a line (the transaction); then the node keywords (dir, file,
 * append, truncate, link, hardlink, fifo, socket, dev), which make nodes only through it.
 *
 * Every line runs as a small transaction. Nodes are made only through spec_make(), which
 * notes each entry made in a directory that existed before the line (an undo "root"); when
 * the line fails, those subtrees are removed newest first and the parents' times restored,
 * so the tree is exactly as before. Times given on lines are applied after the whole spec
 * (or line) is in, because adding an entry later would stamp a directory's mtime again.
 */
#include "spec_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* ---------------------------------------------------------------------------------------- */
/* Making nodes, and undoing a line */

/* Note that NAME is about to be made in DIR, which existed before this line. */
static int spec_note_entry(struct spec_ctx *c, uint32_t dir, const char *name, size_t len)
{
	if (spec_reserve((void **)&c->undo, &c->undo_cap, c->nundo, sizeof(*c->undo)))
		return -ENOMEM;
	while (c->names_len + len > c->names_cap) {
		size_t cap = c->names_cap ? c->names_cap * 2 : 1024;
		char *n = realloc(c->names, cap);
		if (!n)
			return -ENOMEM;
		c->names = n;
		c->names_cap = cap;
	}
	struct spec_undo *u = &c->undo[c->nundo++];

	*u =
	    (struct spec_undo){.id = dir, .entry = true, .name_off = c->names_len, .name_len = len};
	memcpy(c->names + c->names_len, name, len);
	c->names_len += len;
	cfs_tree_stat(c->t, dir, &u->st);
	return 0;
}

static void spec_drop_note(struct spec_ctx *c)
{
	c->nundo--;
	c->names_len = c->undo[c->nundo].name_off;
}

/* Note ID's attributes before this line changes them. */
static int spec_note_attrs(struct spec_ctx *c, uint32_t id)
{
	if (spec_reserve((void **)&c->undo, &c->undo_cap, c->nundo, sizeof(*c->undo)))
		return -ENOMEM;
	struct spec_undo *u = &c->undo[c->nundo++];

	*u = (struct spec_undo){.id = id};
	cfs_tree_stat(c->t, id, &u->st);
	return 0;
}

/* What a failed tree call means, as a message about DIR/NAME. */
static int spec_fail_make(struct spec_ctx *c, int err, uint32_t dir, const char *name, size_t len)
{
	char *p = spec_path_of(c->t, dir, name, len);

	switch (err) {
	case -EEXIST:
		spec_fail(c, "%s: name exists", spec_q(p));
		break;
	case -ENOTDIR:
		spec_fail(c, "%s: parent is not a directory", spec_q(p));
		break;
	case -ENAMETOOLONG:
		spec_fail(c, "%s: name too long", spec_q(p));
		break;
	default:
		spec_fail_errno(c, err, "%s: %s", spec_q(p), spec_strerror(err));
		break;
	}
	free(p);
	return err == -ENOMEM ? -ENOMEM : -EINVAL;
}

/* 0 if NODES more fit the tree's node budget, else -EINVAL with a message naming the option
 * that sets it: a generator asks for all of its nodes before making the first. */
int spec_room(struct spec_ctx *c, uint64_t nodes)
{
	struct cfs_tree_stats st;
	uint64_t limit;

	cfs_tree_stats(c->t, &st);
	limit = st.node_limit < CFS_SPEC_MAX_NODES ? st.node_limit : CFS_SPEC_MAX_NODES;
	if (st.nodes <= limit && nodes <= limit - st.nodes)
		return 0;
	return spec_fail(c,
			 "%" PRIu64 " more nodes would pass the node budget of %" PRIu64
			 " (the tree holds %" PRIu64 "; -o max_nodes=N sets it)",
			 nodes, limit, st.nodes);
}

/* Every node a line makes comes through here: counted, noted for undo, made. DIR_NEW says
 * DIR was made by this line (its entries go away with it). */
int spec_make(struct spec_ctx *c, uint32_t dir, bool dir_new, const char *name, size_t len,
	      const struct spec_node *n, uint32_t *out)
{
	int err;

	err = spec_room(c, 1);
	if (err)
		return err;
	if (!dir_new && spec_note_entry(c, dir, name, len))
		return spec_fail_errno(c, -ENOMEM, "out of memory");
	switch (n->kind) {
	case RS_DIR:
		err = cfs_tree_mkdir(c->t, dir, name, len, &n->a, out);
		break;
	case RS_FILE:
		err = cfs_tree_mkfile(c->t, dir, name, len, &n->a, out);
		break;
	case RS_OTHER:
		err = cfs_tree_mknod(c->t, dir, name, len, n->type, n->rdev, &n->a, out);
		break;
	default:
		err = cfs_tree_symlink(c->t, dir, name, len, n->target, n->target_len, &n->a, out);
		break;
	}
	if (err) {
		if (!dir_new)
			spec_drop_note(c);
		return spec_fail_make(c, err, dir, name, len);
	}
	return 0;
}

struct spec_node spec_dir_node(const struct spec_ctx *c)
{
	return (struct spec_node){RS_DIR, {0755, c->uid, c->gid}, NULL, 0, 0, 0};
}

struct spec_node spec_file_node(const struct spec_ctx *c)
{
	return (struct spec_node){RS_FILE, {0644, c->uid, c->gid}, NULL, 0, 0, 0};
}

struct spec_node spec_link_node(const struct spec_ctx *c, const char *target, size_t len)
{
	return (struct spec_node){RS_LINK, {0777, c->uid, c->gid}, target, len, 0, 0};
}

/* The line's mode, uid and gid over the kind's defaults. */
static void spec_apply_owner(struct spec_node *n, const struct spec_attrs *a)
{
	if (a->set & SPEC_A_MODE)
		n->a.mode = a->mode;
	if (a->set & SPEC_A_UID)
		n->a.uid = a->uid;
	if (a->set & SPEC_A_GID)
		n->a.gid = a->gid;
}

/* Find the directory that will hold P's last name, making missing ones (0755). */
int spec_make_parents(struct spec_ctx *c, const struct spec_path *p, uint32_t *dir, bool *dir_new)
{
	const char *s = p->w->s, *end = p->w->s + p->dir_len, *name;
	size_t len;
	struct spec_node n = spec_dir_node(c);

	*dir = CFS_ROOT;
	*dir_new = false;
	while ((len = spec_next_name(&s, end, &name)) > 0) {
		uint32_t next;

		if (cfs_tree_lookup(c->t, *dir, name, len, &next) == 0) {
			if (cfs_tree_kind(c->t, next) != RS_DIR) {
				char *q = spec_quoted(p->w->s, (size_t)(s - p->w->s));
				char *pq = spec_quoted(p->w->s, p->w->len);
				spec_fail(c, "%s: parent %s is not a directory", spec_q(pq),
					  spec_q(q));
				free(q);
				free(pq);
				return -EINVAL;
			}
			*dir = next;
			continue;
		}
		int err = spec_make(c, *dir, *dir_new, name, len, &n, &next);
		if (err)
			return err;
		*dir = next;
		*dir_new = true;
	}
	return 0;
}

/* Fail with "PATH: name exists" unless P's last name is free in DIR. */
int spec_check_free(struct spec_ctx *c, const struct spec_path *p, uint32_t dir)
{
	uint32_t id;

	if (p->name && cfs_tree_lookup(c->t, dir, p->name, p->name_len, &id) != 0)
		return 0;
	char *q = spec_quoted(p->w->s, p->w->len);
	spec_fail(c, "%s: name exists", spec_q(q));
	free(q);
	return -EINVAL;
}

/* Remove NAME in DIR and everything below it, without recursion: always take the first
 * entry of the current directory; descend while it is a non-empty directory.
 * "First" is found from a running cookie, not from the start of the listing: removed entries
 * stay as tombstones until the directory compacts (up to half of it), so restarting at 0
 * after each removal rescanned them and made rolling back a big wide or tree line quadratic
 * (80k entries took 20 s; found by tests/fuzz). Only after climbing back up does the listing
 * restart at 0, which costs at most the entries that directory had. */
static int spec_remove_tree(struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	uint32_t top, cur, child;
	char buf[RS_NAME_MAX + 1];
	const char *n;
	size_t nl;
	uint64_t cookie = 0, at;
	int err = cfs_tree_lookup(t, dir, name, len, &top);

	if (err)
		return err;
	if (cfs_tree_kind(t, top) != RS_DIR)
		return cfs_tree_unlink(t, dir, name, len);
	for (cur = top;;) {
		at = cookie;
		if (cfs_tree_dir_next(t, cur, &at, &n, &nl, &child) == 0) {
			bool is_dir = cfs_tree_kind(t, child) == RS_DIR;

			if (is_dir && cfs_tree_dir_count(t, child) > 0) {
				cur = child;
				cookie = 0;
				continue;
			}
			memcpy(buf, n, nl); /* the name lives in the tree: copy it before removal */
			err = is_dir ? cfs_tree_rmdir(t, cur, buf, nl)
				     : cfs_tree_unlink(t, cur, buf, nl);
			cookie = at; /* a removed entry's cookie still resumes after it */
		} else if (cur == top) {
			return cfs_tree_rmdir(t, dir, name, len);
		} else {
			/* CUR is empty; it is its parent's first entry, since we only ever descend
			 * into the first one */
			uint32_t up = cfs_tree_parent(t, cur);
			cookie = 0;
			err = cfs_tree_dir_next(t, up, &cookie, &n, &nl, &child);
			if (err == 0) {
				memcpy(buf, n, nl);
				err = cfs_tree_rmdir(t, up, buf, nl);
			}
			cur = up;
		}
		if (err)
			return err;
	}
}

static void spec_restore_attrs(struct cfs_tree *t, uint32_t id, const struct stat *st)
{
	if (!S_ISLNK(st->st_mode)) /* a link's mode is always 0777 */
		cfs_tree_chmod(t, id, st->st_mode & 07777);
	cfs_tree_chown(t, id, st->st_uid, st->st_gid);
	cfs_tree_set_times(t, id, &st->st_atim, &st->st_mtim, &st->st_ctim);
}

/* Undo the current line, newest change first. Removal does not allocate, so it succeeds. */
void spec_rollback(struct spec_ctx *c)
{
	while (c->nundo > 0) {
		struct spec_undo *u = &c->undo[--c->nundo];

		if (u->entry) {
			spec_remove_tree(c->t, u->id, c->names + u->name_off, u->name_len);
			cfs_tree_set_times(c->t, u->id, &u->st.st_atim, &u->st.st_mtim,
					   &u->st.st_ctim);
		} else {
			spec_restore_attrs(c->t, u->id, &u->st);
		}
	}
	c->names_len = 0;
}

void spec_commit(struct spec_ctx *c)
{
	c->nundo = 0;
	c->names_len = 0;
}

/* Keep the line's times for ID, to be set when the spec is in. */
static int spec_defer_times(struct spec_ctx *c, uint32_t id, const struct spec_attrs *a)
{
	if (!(a->set & SPEC_A_TIMES))
		return 0;
	if (spec_reserve((void **)&c->times, &c->times_cap, c->ntimes, sizeof(*c->times)))
		return spec_fail_errno(c, -ENOMEM, "out of memory");
	c->times[c->ntimes++] = (struct spec_times){
	    .id = id,
	    .set = a->set & SPEC_A_TIMES,
	    .line = c->line,
	    .atime = a->atime,
	    .mtime = a->mtime,
	    .ctime = a->ctime,
	};
	return 0;
}

int spec_apply_times(struct spec_ctx *c, size_t from)
{
	for (size_t i = from; i < c->ntimes; i++) {
		const struct spec_times *m = &c->times[i];
		int err = cfs_tree_set_times(c->t, m->id, m->set & SPEC_A_ATIME ? &m->atime : NULL,
					     m->set & SPEC_A_MTIME ? &m->mtime : NULL,
					     m->set & SPEC_A_CTIME ? &m->ctime : NULL);
		if (err) {
			c->line = m->line;
			return spec_fail_errno(c, err, "setting times: %s", spec_strerror(err));
		}
	}
	c->ntimes = from;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Node keywords: dir, file, append, link, hardlink */

/* "dir /": the root always exists, the line sets its attributes. */
static int spec_set_root(struct spec_ctx *c, const struct spec_attrs *a)
{
	int err = 0;

	if ((a->set & (SPEC_A_MODE | SPEC_A_UID | SPEC_A_GID)) && spec_note_attrs(c, CFS_ROOT))
		return spec_fail_errno(c, -ENOMEM, "out of memory");
	if (a->set & SPEC_A_MODE)
		err = cfs_tree_chmod(c->t, CFS_ROOT, a->mode);
	if (!err && (a->set & (SPEC_A_UID | SPEC_A_GID)))
		err = cfs_tree_chown(c->t, CFS_ROOT, a->set & SPEC_A_UID ? a->uid : (uid_t)-1,
				     a->set & SPEC_A_GID ? a->gid : (gid_t)-1);
	if (err)
		return spec_fail_errno(c, err, "/: %s", spec_strerror(err));
	return spec_defer_times(c, CFS_ROOT, a);
}

/* Make the node N at P (its missing parents too) with A's owner and mode: *DIR holds it as
 * *ID. Its times are the caller's to defer, once the node is whole. */
static int spec_make_node(struct spec_ctx *c, const struct spec_path *p, struct spec_node *n,
			  const struct spec_attrs *a, uint32_t *dir, uint32_t *id)
{
	bool dir_new;
	int err;

	spec_apply_owner(n, a);
	err = spec_make_parents(c, p, dir, &dir_new);
	if (!err && !p->name)
		err = spec_check_free(c, p, *dir);
	if (!err)
		err = spec_make(c, *dir, dir_new, p->name, p->name_len, n, id);
	return err;
}

/* The same, times and all. */
static int spec_make_at(struct spec_ctx *c, const struct spec_path *p, struct spec_node *n,
			const struct spec_attrs *a)
{
	uint32_t dir, id;
	int err = spec_make_node(c, p, n, a, &dir, &id);

	return err ? err : spec_defer_times(c, id, a);
}

int spec_run_dir(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_path p;
	struct spec_node n = spec_dir_node(c);
	int err = spec_check_path(c, &l->pos[1], &p);

	if (err)
		return err;
	return p.name ? spec_make_at(c, &p, &n, a) : spec_set_root(c, a);
}

int spec_run_file(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_path p;
	struct spec_node n = spec_file_node(c);
	uint32_t dir, id;
	int err = spec_check_path(c, &l->pos[1], &p);

	if (!err && l->npos > 2 && (a->set & SPEC_A_SIZE))
		err = spec_fail(c, "file: content and size= exclude each other");
	else if (!err && (a->set & SPEC_A_PATTERN) && !(a->set & SPEC_A_SIZE))
		err = spec_fail(c, "file: pattern= needs size=");
	if (!err)
		err = spec_make_node(c, &p, &n, a, &dir, &id);
	if (err)
		return err;
	if (l->npos > 2)
		err = cfs_tree_set_content(c->t, id, l->pos[2].s, l->pos[2].len);
	else if (a->set & SPEC_A_SIZE)
		err = a->pattern.s
			  ? cfs_tree_set_pattern(c->t, id, a->pattern.s, a->pattern.len, a->size)
			  : cfs_tree_set_pattern(c->t, id, spec_default_pattern,
						 sizeof(spec_default_pattern) - 1, a->size);
	if (err)
		return spec_fail_make(c, err, dir, p.name, p.name_len);
	return spec_defer_times(c, id, a);
}

/* The named existing node, not following links. */
static int spec_find(struct spec_ctx *c, const struct spec_word *w, uint32_t *id)
{
	struct spec_path p;
	int err = spec_check_path(c, w, &p);

	if (err)
		return err;
	err = spec_lookup_path(c->t, w->s, w->len, id);
	if (err) {
		char *q = spec_quoted(w->s, w->len);
		spec_fail(c, "%s: no such node", spec_q(q));
		free(q);
		return -EINVAL;
	}
	return 0;
}

/* The existing regular file named by W. */
static int spec_find_file(struct spec_ctx *c, const struct spec_word *w, uint32_t *id)
{
	int err = spec_find(c, w, id);

	if (err)
		return err;
	if (cfs_tree_kind(c->t, *id) != RS_FILE) {
		char *q = spec_quoted(w->s, w->len);
		spec_fail(c, "%s: not a regular file", spec_q(q));
		free(q);
		return -EINVAL;
	}
	return 0;
}

static int spec_fail_file(struct spec_ctx *c, const struct spec_word *w, int err)
{
	char *q = spec_quoted(w->s, w->len);

	spec_fail_errno(c, err, "%s: %s", spec_q(q), spec_strerror(err));
	free(q);
	return err == -ENOMEM ? -ENOMEM : -EINVAL;
}

/* Bytes at the end of a file, or at= (a hole between the old end and OFFSET reads zeros). */
int spec_run_append(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	const struct spec_word *data = &l->pos[2];
	struct cfs_tree_stats ts;
	uint32_t id;
	struct stat st;
	int err = spec_find_file(c, &l->pos[1], &id);

	if (err)
		return err;
	cfs_tree_stat(c->t, id, &st);
	uint64_t off = a->set & SPEC_A_AT ? a->at : (uint64_t)st.st_size;
	if (off + data->len > (uint64_t)INT64_MAX)
		return spec_fail(c, "append: file would exceed %lld bytes", (long long)INT64_MAX);
	/* one tree call, which must fit whole: a write cut short at the data limit could not be
	 * undone, so ask for room for every page it may touch, plus the one a small file's bytes
	 * move to */
	cfs_tree_stats(c->t, &ts);
	if (ts.data_bytes > ts.data_limit ||
	    ts.data_limit - ts.data_bytes < (data->len / 4096 + 3) * 4096)
		return spec_fail_file(c, &l->pos[1], -ENOSPC);
	ssize_t n = cfs_tree_write(c->t, id, data->s, data->len, (off_t)off);
	if (n < 0)
		return spec_fail_file(c, &l->pos[1], (int)n);
	return 0;
}

/* A new size: a longer file reads zeros past its old end and holds nothing for them. */
int spec_run_truncate(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	uint64_t size;
	uint32_t id;
	int err = spec_find_file(c, &l->pos[1], &id);

	if (!err)
		err = spec_count(c, &l->pos[2], "size", 0, (uint64_t)INT64_MAX, &size);
	if (err)
		return err;
	err = cfs_tree_truncate(c->t, id, size);
	return err ? spec_fail_file(c, &l->pos[1], err) : 0;
}

/* A link target as the kernel would take it: 1..4095 bytes, no NUL. */
int spec_check_target(struct spec_ctx *c, const char *s, size_t len)
{
	if (len == 0)
		return spec_fail(c, "empty target");
	if (len >= RS_PATH_MAX)
		return spec_fail(c, "target too long (%zu bytes, limit %d)", len, RS_PATH_MAX - 1);
	if (memchr(s, '\0', len))
		return spec_fail(c, "NUL byte in target");
	return 0;
}

int spec_run_link(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	const struct spec_word *target = &l->pos[2];
	struct spec_path p;
	struct spec_node n = spec_link_node(c, target->s, target->len);
	int err = spec_check_path(c, &l->pos[1], &p);

	if (!err)
		err = spec_check_target(c, target->s, target->len);
	if (err)
		return err;
	return spec_make_at(c, &p, &n, a);
}

/* fifo PATH, socket PATH, dev PATH c|b MAJOR MINOR: nodes the kernel does the I/O of. */
int spec_run_special(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_node n = spec_file_node(c);
	struct spec_path p;
	uint64_t maj = 0, min = 0;
	int err = spec_check_path(c, &l->pos[1], &p);

	n.kind = RS_OTHER;
	n.type = l->pos[0].s[0] == 'f' ? S_IFIFO : l->pos[0].s[0] == 's' ? S_IFSOCK : 0;
	if (!err && !n.type) {
		const struct spec_word *cb = &l->pos[2];
		if (cb->len != 1 || (cb->s[0] != 'c' && cb->s[0] != 'b'))
			return spec_fail(c,
					 "dev: the kind is c or b (a character or block device)");
		n.type = cb->s[0] == 'c' ? S_IFCHR : S_IFBLK;
		err = spec_count(c, &l->pos[3], "major", 0, 0xfff, &maj);
		if (!err)
			err = spec_count(c, &l->pos[4], "minor", 0, 0xfffff, &min);
		n.rdev = makedev((unsigned)maj, (unsigned)min);
	}
	if (err)
		return err;
	return spec_make_at(c, &p, &n, a);
}

int spec_run_hardlink(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_path p;
	uint32_t dir, id;
	bool dir_new;
	int err = spec_check_path(c, &l->pos[1], &p);

	if (!err)
		err = spec_find(c, &l->pos[2], &id);
	if (err)
		return err;
	if (cfs_tree_kind(c->t, id) == RS_DIR) {
		char *q = spec_quoted(l->pos[2].s, l->pos[2].len);
		spec_fail(c, "%s: is a directory (no hard links to directories)", spec_q(q));
		free(q);
		return -EINVAL;
	}
	err = spec_make_parents(c, &p, &dir, &dir_new);
	if (!err && !p.name)
		err = spec_check_free(c, &p, dir);
	if (err)
		return err;
	/* the node's link count and ctime change: note them first, then the new entry */
	if (spec_note_attrs(c, id) || (!dir_new && spec_note_entry(c, dir, p.name, p.name_len)))
		return spec_fail_errno(c, -ENOMEM, "out of memory");
	err = cfs_tree_link(c->t, id, dir, p.name, p.name_len);
	if (err) {
		if (!dir_new)
			spec_drop_note(c);
		return spec_fail_make(c, err, dir, p.name, p.name_len);
	}
	return 0;
}

/* The value of NAME on ID with CHUNK put at AT, which must be its length (a value too long for
 * one line comes in pieces): the whole value, malloc'ed, in *OUT and *LEN. */
static int spec_xattr_extend(struct spec_ctx *c, uint32_t id, const char *name,
			     const struct spec_word *chunk, uint64_t at, char **out, size_t *len)
{
	ssize_t n = cfs_tree_getxattr(c->t, id, name, NULL, 0);

	if (n < 0 || (uint64_t)n != at)
		return spec_fail(c,
				 "xattr %s: at=%" PRIu64 " is not the end of its value (%zd bytes)",
				 name, at, n < 0 ? 0 : n);
	if (at + chunk->len > CFS_XATTR_SIZE_MAX)
		return spec_fail_errno(c, -E2BIG, "xattr %s: %s", name, spec_strerror(-E2BIG));
	*len = (size_t)at + chunk->len;
	*out = malloc(*len ? *len : 1);
	if (!*out)
		return spec_fail_errno(c, -ENOMEM, "xattr: %s", spec_strerror(-ENOMEM));
	cfs_tree_getxattr(c->t, id, name, *out, (size_t)at);
	memcpy(*out + at, chunk->s, chunk->len);
	return 0;
}

/* xattr PATH NAME VALUE [at=OFFSET]: an extended attribute of the node PATH names (a link's
 * own), in a namespace tmpfs keeps (tree.h); at= puts VALUE at the end of the value it has. */
int spec_run_xattr(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	const struct spec_word *nw = &l->pos[2], *vw = &l->pos[3];
	char name[CFS_XATTR_NAME_MAX + 1], *joined = NULL;
	const char *value = vw->s;
	size_t len = vw->len;
	uint32_t id;
	int err = spec_find(c, &l->pos[1], &id);

	if (err)
		return err;
	if (!nw->len || nw->len > CFS_XATTR_NAME_MAX || memchr(nw->s, '\0', nw->len))
		return spec_fail(c, "xattr: a name is 1 to %d bytes, without NUL",
				 CFS_XATTR_NAME_MAX);
	memcpy(name, nw->s, nw->len);
	name[nw->len] = 0;
	if ((a->set & SPEC_A_AT) && a->at) {
		err = spec_xattr_extend(c, id, name, vw, a->at, &joined, &len);
		if (err)
			return err;
		value = joined;
	}
	err = cfs_tree_setxattr(c->t, id, name, value, len, 0);
	free(joined);
	if (err) {
		char *q = spec_quoted(nw->s, nw->len);
		spec_fail_errno(c, err, "xattr %s: %s", spec_q(q), spec_strerror(err));
		free(q);
		return err == -ENOMEM ? -ENOMEM : -EINVAL;
	}
	return 0;
}
