/*
 * The generators: chain, nest and loop build link walks (long, deep, endless) from one line;
 * wide, deep and tree fill a new directory. Every node goes through spec_make(), so a failed
 * generator line is undone like any other.
 */
#include "spec_int.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Link generators: chain, nest, loop */

/* Where a generator puts its links: PATH's directory and a hidden ".NAME.SUFFIX" in it. */
struct spec_gen_dir {
	struct spec_path p;
	uint32_t dir; /* PATH's directory */
	bool dir_new;
	char hidden[RS_NAME_MAX + 1];
	size_t hidden_len;
	uint32_t hid; /* the hidden directory, once made */
};

static int spec_gen_prepare(struct spec_ctx *c, const struct spec_word *w, const char *suffix,
			    uint64_t nodes, struct spec_gen_dir *g)
{
	int err = spec_check_path(c, w, &g->p);

	if (err)
		return err;
	err = spec_room(c, nodes);
	if (err)
		return err;
	if (g->p.name) {
		int n = snprintf(g->hidden, sizeof(g->hidden), ".%.*s.%s", (int)g->p.name_len,
				 g->p.name, suffix);
		if (n < 0 || (size_t)n > RS_NAME_MAX) {
			char *q = spec_quoted(w->s, w->len);
			spec_fail(c, "%s: name too long for the hidden .NAME.%s directory",
				  spec_q(q), suffix);
			free(q);
			return -EINVAL;
		}
		g->hidden_len = (size_t)n;
	}
	err = spec_make_parents(c, &g->p, &g->dir, &g->dir_new);
	if (!err)
		err = spec_check_free(c, &g->p, g->dir);
	return err;
}

static int spec_gen_link(struct spec_ctx *c, uint32_t dir, bool dir_new, const char *name,
			 size_t len, const char *target, size_t tlen)
{
	struct spec_node n = spec_link_node(c, target, tlen);
	uint32_t id;

	return spec_make(c, dir, dir_new, name, len, &n, &id);
}

static int spec_gen_hidden(struct spec_ctx *c, struct spec_gen_dir *g)
{
	struct spec_node n = spec_dir_node(c);

	return spec_make(c, g->dir, g->dir_new, g->hidden, g->hidden_len, &n, &g->hid);
}

/* Links NAME/k -> FMT(k-1) for k = FROM..TO, in the hidden directory. */
static int spec_gen_run(struct spec_ctx *c, struct spec_gen_dir *g, uint64_t from, uint64_t to,
			const char *fmt)
{
	char name[24], target[32];

	for (uint64_t k = from; k <= to; k++) {
		int nl = snprintf(name, sizeof(name), "%" PRIu64, k);
		int tl = snprintf(target, sizeof(target), fmt, k - 1);
		int err = spec_gen_link(c, g->hid, true, name, (size_t)nl, target, (size_t)tl);
		if (err)
			return err;
	}
	return 0;
}

/* TARGET seen from inside the hidden directory: one level further down. */
static int spec_down(struct spec_ctx *c, const char *s, size_t len, char *out, size_t *olen)
{
	if (s[0] == '/') {
		memcpy(out, s, len);
		*olen = len;
	} else if (len == 1 && s[0] == '.') {
		memcpy(out, "..", 2);
		*olen = 2;
	} else {
		if (len + 3 >= RS_PATH_MAX)
			return spec_fail(c,
					 "target too long (%zu bytes with the ../ the hidden "
					 "directory needs, limit %d)",
					 len + 3, RS_PATH_MAX - 1);
		memcpy(out, "../", 3);
		memcpy(out + 3, s, len);
		*olen = len + 3;
	}
	return 0;
}

/* The links of a chain or nest once G is prepared: PATH -> TARGET when COUNT is 1; else
 * .NAME.SUFFIX/1 -> FIRST, k -> FMT(k-1) for k = 2..COUNT-1, and PATH -> .NAME.SUFFIX/COUNT-1
 * followed by "/TAIL" when there is a TAIL. */
struct spec_gen_walk {
	uint64_t count;
	const struct spec_word *target;
	const char *first, *fmt, *tail;
	size_t first_len, tail_len;
};

static int spec_gen_walk(struct spec_ctx *c, struct spec_gen_dir *g, const struct spec_gen_walk *w)
{
	char body[RS_PATH_MAX];
	int len, err;

	if (w->count == 1)
		return spec_gen_link(c, g->dir, g->dir_new, g->p.name, g->p.name_len, w->target->s,
				     w->target->len);
	err = spec_gen_hidden(c, g);
	if (!err)
		err = spec_gen_link(c, g->hid, true, "1", 1, w->first, w->first_len);
	if (!err)
		err = spec_gen_run(c, g, 2, w->count - 1, w->fmt);
	if (err)
		return err;
	len = snprintf(body, sizeof(body), "%s/%" PRIu64 "%s%.*s", g->hidden, w->count - 1,
		       w->tail ? "/" : "", (int)w->tail_len, w->tail ? w->tail : "");
	return spec_gen_link(c, g->dir, g->dir_new, g->p.name, g->p.name_len, body, (size_t)len);
}

int spec_run_chain(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	const struct spec_word *t = &l->pos[3];
	struct spec_gen_dir g;
	char body[RS_PATH_MAX];
	size_t blen = 0;
	uint64_t len;
	int err = spec_count(c, &l->pos[2], "chain length", 1, CFS_SPEC_MAX_NODES - 1, &len);

	if (!err)
		err = spec_check_target(c, t->s, t->len);
	if (!err && len > 1)
		err = spec_down(c, t->s, t->len, body, &blen);
	if (!err)
		err = spec_gen_prepare(c, &l->pos[1], "chain", len + 1, &g);
	if (err)
		return err;
	/* PATH -> .NAME.chain/LEN-1 -> ... -> .NAME.chain/1 -> TARGET: every link is the last
	 * component of the previous body, so the walk stays at one nesting level */
	const struct spec_gen_walk w = {
	    .count = len, .target = t, .first = body, .first_len = blen, .fmt = "%" PRIu64};

	return spec_gen_walk(c, &g, &w);
}

/* Split a nest TARGET into the directory its first link names and what follows it: "a/b"
 * is "a" + "b", "b" is "." + "b", "/b" is "/" + "b", "a/b/" is "a" + "b/", "/" is "/" + ".". */
static void spec_split_target(const char *s, size_t len, size_t *dlen, const char **base,
			      size_t *blen)
{
	size_t e = len, slash;

	while (e > 0 && s[e - 1] == '/')
		e--;
	if (e == 0) {
		*dlen = 1;
		*base = ".";
		*blen = 1;
		return;
	}
	for (slash = e; slash > 0 && s[slash - 1] != '/'; slash--)
		;
	*base = s + slash;
	*blen = len - slash;
	if (slash == 0) {
		*dlen = 0; /* "." */
		return;
	}
	for (e = slash; e > 1 && s[e - 1] == '/'; e--)
		;
	*dlen = e; /* "/" stays "/" */
}

int spec_run_nest(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	const struct spec_word *t = &l->pos[3];
	struct spec_gen_dir g;
	char body[RS_PATH_MAX];
	const char *base;
	size_t dlen, blen, len = 0;
	uint64_t depth;
	int err = spec_count(c, &l->pos[2], "nest depth", 1, CFS_SPEC_MAX_NODES - 1, &depth);

	if (!err)
		err = spec_check_target(c, t->s, t->len);
	if (err)
		return err;
	spec_split_target(t->s, t->len, &dlen, &base, &blen);
	if (depth > 1)
		err =
		    dlen ? spec_down(c, t->s, dlen, body, &len) : spec_down(c, ".", 1, body, &len);
	if (!err)
		err = spec_gen_prepare(c, &l->pos[1], "nest", depth + 1, &g);
	if (!err && depth > 1 &&
	    g.hidden_len + (size_t)g_snprintf(NULL, 0, "/%" PRIu64 "/", depth - 1) + blen >=
		RS_PATH_MAX)
		err = spec_fail(c,
				"target too long (the last name of TARGET after "
				"%s/%" PRIu64 "/)",
				g.hidden, depth - 1);
	if (err)
		return err;
	/* .NAME.nest/1 -> TARGET's directory; k -> "k-1/.", so the walk must come back out of
	 * k-1 to finish k's body; PATH -> .NAME.nest/DEPTH-1/BASE. Each link is entered while
	 * the one before is still being walked: DEPTH links, DEPTH levels deep. */
	const struct spec_gen_walk w = {.count = depth,
					.target = t,
					.first = body,
					.first_len = len,
					.fmt = "%" PRIu64 "/.",
					.tail = base,
					.tail_len = blen};

	return spec_gen_walk(c, &g, &w);
}

int spec_run_loop(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_gen_dir g;
	char name[RS_NAME_MAX + 32], target[RS_NAME_MAX + 32];
	uint64_t k;
	int err = spec_count(c, &l->pos[2], "loop size", 1, CFS_SPEC_MAX_NODES, &k);

	if (!err)
		err = spec_check_path(c, &l->pos[1], &g.p);
	if (!err && g.p.name && g.p.name_len + 1 + g_snprintf(NULL, 0, "%" PRIu64, k) > RS_NAME_MAX)
		err = spec_fail(c, "loop: name too long for NAME.%" PRIu64, k - 1);
	if (!err)
		err = spec_gen_prepare(c, &l->pos[1], "loop", k, &g);
	if (err)
		return err;
	/* NAME -> NAME.1 -> ... -> NAME.K-1 -> NAME, all in PATH's directory */
	for (uint64_t i = 0; i < k && !err; i++) {
		uint64_t next = i + 1 == k ? 0 : i + 1;
		int nl = i ? snprintf(name, sizeof(name), "%.*s.%" PRIu64, (int)g.p.name_len,
				      g.p.name, i)
			   : snprintf(name, sizeof(name), "%.*s", (int)g.p.name_len, g.p.name);
		int tl =
		    next ? snprintf(target, sizeof(target), "%.*s.%" PRIu64, (int)g.p.name_len,
				    g.p.name, next)
			 : snprintf(target, sizeof(target), "%.*s", (int)g.p.name_len, g.p.name);
		err = spec_gen_link(c, g.dir, g.dir_new, name, (size_t)nl, target, (size_t)tl);
	}
	return err;
}

/* ---------------------------------------------------------------------------------------- */
/* Directory generators: wide, deep, tree */

/* Make PATH itself as a new directory, for the generators that fill one. */
static int spec_gen_top(struct spec_ctx *c, const struct spec_word *w, uint64_t nodes,
			uint32_t *top)
{
	struct spec_gen_dir g;
	struct spec_node n = spec_dir_node(c);
	int err = spec_check_path(c, w, &g.p);

	if (!err)
		err = spec_room(c, nodes);
	if (!err)
		err = spec_make_parents(c, &g.p, &g.dir, &g.dir_new);
	if (!err)
		err = spec_check_free(c, &g.p, g.dir);
	if (!err)
		err = spec_make(c, g.dir, g.dir_new, g.p.name, g.p.name_len, &n, top);
	return err;
}

static int spec_check_prefix(struct spec_ctx *c, const struct spec_attrs *a)
{
	/* PREFIX plus up to 8 digits of a count */
	if (a->prefix.len + 8 > RS_NAME_MAX)
		return spec_fail(c, "prefix too long (limit %d bytes)", RS_NAME_MAX - 8);
	return 0;
}

/* wide and deep: COUNT numbered entries PREFIX1 .. PREFIXCOUNT under PATH, side by side
 * (files) or each inside the one before (directories). */
static int spec_run_numbered(struct spec_ctx *c, const struct spec_line *l,
			     const struct spec_attrs *a, bool nested)
{
	struct spec_node n = nested ? spec_dir_node(c) : spec_file_node(c);
	char name[RS_NAME_MAX + 1];
	uint32_t top = 0, cur, id = 0;
	uint64_t count;
	int err = spec_count(c, &l->pos[2], nested ? "deep depth" : "wide count", 1,
			     CFS_SPEC_MAX_NODES - 1, &count);

	if (!err)
		err = spec_check_prefix(c, a);
	if (!err)
		err = spec_gen_top(c, &l->pos[1], count + 1, &top);
	cur = top;
	for (uint64_t i = 1; i <= count && !err; i++) {
		int nl = snprintf(name, sizeof(name), "%.*s%" PRIu64, (int)a->prefix.len,
				  a->prefix.s ? a->prefix.s : "", i);
		err = spec_make(c, cur, true, name, (size_t)nl, &n, &id);
		if (nested)
			cur = id;
	}
	return err;
}

int spec_run_wide(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	return spec_run_numbered(c, l, a, false);
}

int spec_run_deep(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	return spec_run_numbered(c, l, a, true);
}

/* splitmix64: small, fast, and the same sequence everywhere for a seed. */
static uint64_t spec_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t spec_below(uint64_t *s, uint64_t n)
{
	return spec_rand(s) % n;
}

/* A file or a link that resolves to no directory, by its path below the tree's top. */
struct spec_sample {
	char *path;
	size_t len;
};

/* A reservoir sample of the nodes made so far (Algorithm R): uniform, bounded memory. */
struct spec_pool {
	struct spec_sample s[SPEC_POOL];
	size_t n;
	uint64_t seen;
};

/* A directory being filled; frames[0] is the top, frames[k] its level-k descendant. */
struct spec_tree_frame {
	uint32_t dir;
	uint32_t next;	       /* index of the next entry to make */
	uint32_t files, links; /* still to make among the remaining entries */
	uint32_t dirlink;      /* 1 + index of the newest link here to a directory, or 0 */
	uint32_t dirlink_to;   /* the level of that link's target */
	size_t plen;	       /* length of this directory's path */
};

struct spec_tree_gen {
	struct spec_ctx *c;
	uint64_t rng;
	uint64_t fanout;
	const char *top; /* the tree's absolute path, for absolute targets */
	size_t top_len;
	struct spec_pool nodes;
	struct spec_tree_frame frames[SPEC_TREE_MAX_DEPTH + 1];
	char path[SPEC_TREE_MAX_DEPTH * 12 + 16]; /* the entry being made, below the top */
};

static int spec_pool_add(struct spec_tree_gen *g, const char *path, size_t len)
{
	struct spec_pool *p = &g->nodes;
	uint64_t slot = p->seen++ < SPEC_POOL ? p->n : spec_below(&g->rng, p->seen);

	if (slot >= SPEC_POOL)
		return 0;
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, path, len);
	copy[len] = '\0';
	if (slot == p->n)
		p->n++;
	else
		free(p->s[slot].path);
	p->s[slot] = (struct spec_sample){copy, len};
	return 0;
}

static void spec_pool_free(struct spec_pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->s[i].path);
}

/* The relative path from directory FROM to TO (both below the top); 0 if it does not fit. */
static size_t spec_relpath(const char *from, size_t flen, const char *to, size_t tlen, char *out,
			   size_t cap)
{
	size_t common = 0, i = 0, o = 0;

	/* the longest shared run of whole names */
	for (;; i++) {
		bool fend = i == flen || from[i] == '/', tend = i == tlen || to[i] == '/';
		if (fend && tend)
			common = i;
		if (i == flen || i == tlen || from[i] != to[i])
			break;
	}
	for (size_t j = common; j < flen; j++)
		if (j == common || from[j] == '/') {
			if (o + 3 > cap)
				return 0;
			memcpy(out + o, "../", 3);
			o += 3;
		}
	const char *rest = to + common + (common < tlen && to[common] == '/');
	size_t rlen = tlen - (size_t)(rest - to);

	if (flen == 0 && common == 0)
		rest = to, rlen = tlen;
	if (o + rlen + 1 > cap)
		return 0;
	memcpy(out + o, rest, rlen);
	o += rlen;
	if (o > 0 && out[o - 1] == '/')
		o--;
	if (o == 0)
		out[o++] = '.';
	return o;
}

/* TO (LEN bytes below the top) as an absolute path; 0 if it does not fit. */
static size_t spec_abspath(const struct spec_tree_gen *g, const char *to, size_t len, char *out)
{
	int n = g_snprintf(out, RS_PATH_MAX, "%.*s%s%.*s", (int)g->top_len, g->top, len ? "/" : "",
			   (int)len, to);
	return n > 0 && n < RS_PATH_MAX ? (size_t)n : 0;
}

/* Pick a target for a link in the directory of level LEVEL: a file or a link to one, by a
 * relative or an absolute path; a dangling name; or a directory, which is always an
 * ancestor-or-self of the link (directly, or through an earlier such link as lN/. or lN/..).
 * Walkers that follow links then stop at every directory link, as at any loop, so following
 * adds nothing to the tree's size: find -L over it ends, and so does find in server mode.
 * *to_level is the target's level when it is a directory, else -1. */
static size_t spec_tree_target(struct spec_tree_gen *g, unsigned level, char *out, int *to_level)
{
	const struct spec_tree_frame *f = g->frames;
	uint64_t roll = spec_below(&g->rng, 100);
	unsigned k = (unsigned)spec_below(&g->rng, level + 1), j = level;
	size_t dlen = f[level].plen, n;

	*to_level = -1;
	if (roll < 50 && g->nodes.n > 0) {
		const struct spec_sample *s = &g->nodes.s[spec_below(&g->rng, g->nodes.n)];
		return roll < 30
			   ? spec_relpath(g->path, dlen, s->path, s->len, out, RS_PATH_MAX - 1)
			   : spec_abspath(g, s->path, s->len, out);
	}
	if (roll < 62) { /* below an ancestor (ENOENT) or below a file (ENOTDIR) */
		const struct spec_sample *s = g->nodes.n ? &g->nodes.s[k % g->nodes.n] : NULL;
		n = roll & 1 && s
			? spec_relpath(g->path, dlen, s->path, s->len, out, RS_PATH_MAX - 10)
			: spec_relpath(g->path, dlen, g->path, f[k].plen, out, RS_PATH_MAX - 10);
		if (n)
			n += (size_t)sprintf(out + n, "/nowhere");
		return n;
	}
	while (roll >= 85 && j > 0 && !f[j].dirlink)
		j = (unsigned)spec_below(&g->rng, j);
	if (roll < 85 || !f[j].dirlink) {
		*to_level = (int)k;
		return roll & 1
			   ? spec_abspath(g, g->path, f[k].plen, out)
			   : spec_relpath(g->path, dlen, g->path, f[k].plen, out, RS_PATH_MAX - 1);
	}
	/* through the link as a directory component */
	bool up = (roll & 1) && f[j].dirlink_to > 0;
	n = spec_relpath(g->path, dlen, g->path, f[j].plen, out, RS_PATH_MAX - 20);
	if (!n)
		return 0;
	n += (size_t)sprintf(out + n, "/l%" PRIu32 "%s", f[j].dirlink - 1, up ? "/.." : "/.");
	*to_level = (int)f[j].dirlink_to - up;
	return n;
}

/* Make entry F->next of the directory at LEVEL: its kind drawn so each directory gets exactly
 * its quota of files and links in a random order. A new directory to fill goes in *child. */
static int spec_tree_entry(struct spec_tree_gen *g, unsigned level, unsigned depth,
			   struct spec_tree_frame *child)
{
	struct spec_ctx *c = g->c;
	struct spec_tree_frame *f = &g->frames[level];
	uint32_t i = f->next++, left = (uint32_t)g->fanout - i, id;
	uint64_t r = spec_below(&g->rng, left);
	char kind = r < f->files ? 'f' : r < (uint64_t)f->files + f->links ? 'l' : 'd';
	char *name = g->path + f->plen + (f->plen > 0);
	size_t nlen = (size_t)sprintf(name, "%c%" PRIu32, kind, i);
	size_t plen = (size_t)(name - g->path) + nlen;
	int err;

	child->dir = 0;
	if (f->plen > 0)
		g->path[f->plen] = '/';
	if (kind == 'f') {
		struct spec_node n = spec_file_node(c);
		uint64_t size = spec_below(&g->rng, SPEC_GEN_FILE_MAX);
		f->files--;
		err = spec_make(c, f->dir, true, name, nlen, &n, &id);
		if (!err && size)
			err = cfs_tree_set_pattern(c->t, id, spec_default_pattern,
						   sizeof(spec_default_pattern) - 1, size);
		if (err == -ENOMEM)
			return spec_fail_errno(c, err, "out of memory");
		return err ? err : spec_pool_add(g, g->path, plen);
	}
	if (kind == 'l') {
		char target[RS_PATH_MAX];
		int to_level;
		size_t tlen = spec_tree_target(g, level, target, &to_level);

		f->links--;
		if (tlen == 0) { /* too long for a target: let it dangle instead */
			tlen = (size_t)sprintf(target, "nowhere");
			to_level = -1;
		}
		err = spec_gen_link(c, f->dir, true, name, nlen, target, tlen);
		if (err || to_level < 0)
			return err ? err : spec_pool_add(g, g->path, plen);
		f->dirlink = i + 1;
		f->dirlink_to = (uint32_t)to_level;
		return 0;
	}
	struct spec_node n = spec_dir_node(c);
	err = spec_make(c, f->dir, true, name, nlen, &n, &id);
	if (!err && level + 1 < depth)
		*child = (struct spec_tree_frame){.dir = id, .plen = plen};
	return err;
}

/* How many nodes a tree line makes (its top included), or UINT64_MAX past the limit. */
static uint64_t spec_tree_count(uint64_t depth, uint64_t fanout, uint64_t dirs)
{
	uint64_t total = 1, level = fanout;

	for (uint64_t i = 0; i < depth; i++) {
		total += level;
		if (total > CFS_SPEC_MAX_NODES)
			return UINT64_MAX;
		if (dirs == 0)
			break;
		if (i + 1 < depth && level > CFS_SPEC_MAX_NODES / dirs)
			return UINT64_MAX;
		level *= dirs;
	}
	return total;
}

int spec_run_tree(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_tree_gen *g;
	uint64_t files = a->set & SPEC_A_FILES ? a->files : 40;
	uint64_t links = a->set & SPEC_A_LINKS ? a->links : 10;
	uint64_t nf, nl, count;
	uint32_t top;
	unsigned n = 1;
	int err = 0;

	if ((a->set & (SPEC_A_DEPTH | SPEC_A_FANOUT)) != (SPEC_A_DEPTH | SPEC_A_FANOUT))
		return spec_fail(c, "tree: depth= and fanout= are required");
	if (a->depth < 1 || a->depth > SPEC_TREE_MAX_DEPTH)
		return spec_fail(c, "tree depth %" PRIu64 " out of range 1..%d", a->depth,
				 SPEC_TREE_MAX_DEPTH);
	if (a->fanout < 1 || a->fanout >= CFS_SPEC_MAX_NODES)
		return spec_fail(c, "tree fanout %" PRIu64 " out of range 1..%d", a->fanout,
				 CFS_SPEC_MAX_NODES - 1);
	if (files + links > 100)
		return spec_fail(c, "tree: files + links exceed 100%%");
	nf = (a->fanout * files + 50) / 100;
	nl = (a->fanout * links + 50) / 100;
	if (nf + nl > a->fanout)
		nl = a->fanout - nf;
	count = spec_tree_count(a->depth, a->fanout, a->fanout - nf - nl);
	if (count > CFS_SPEC_MAX_NODES)
		return spec_fail(c, "tree too big: more than %d nodes", CFS_SPEC_MAX_NODES);
	err = spec_gen_top(c, &l->pos[1], count, &top);
	if (err)
		return err;
	g = calloc(1, sizeof(*g));
	if (!g)
		return spec_fail_errno(c, -ENOMEM, "out of memory");
	*g = (struct spec_tree_gen){
	    .c = c,
	    .rng = a->set & SPEC_A_SEED ? a->seed : 1,
	    .fanout = a->fanout,
	    .top = l->pos[1].s,
	    .top_len = l->pos[1].len,
	};
	while (g->top_len > 1 && g->top[g->top_len - 1] == '/')
		g->top_len--;
	g->frames[0] =
	    (struct spec_tree_frame){.dir = top, .files = (uint32_t)nf, .links = (uint32_t)nl};
	/* depth-first with an explicit stack: entries of a directory are made in order, each
	 * new directory filled before its next sibling */
	while (!err && n > 0) {
		struct spec_tree_frame child;

		if (g->frames[n - 1].next == a->fanout) {
			n--;
			continue;
		}
		err = spec_tree_entry(g, n - 1, (unsigned)a->depth, &child);
		if (!err && child.dir) {
			child.files = (uint32_t)nf;
			child.links = (uint32_t)nl;
			g->frames[n++] = child;
		}
	}
	if (err == -ENOMEM && !c->err)
		spec_fail_errno(c, err, "out of memory");
	spec_pool_free(&g->nodes);
	free(g);
	return err;
}
