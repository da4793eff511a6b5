/*
 * Random trees: generated in three passes so that link bodies can name anything, including
 * links made later. (1) the shape: directories, files, chains, nestings, loops and links with
 * their names; (2) the link bodies; (3) the memtree nodes, in creation order.
 */
#include "rtree.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RT_NONE SIZE_MAX

struct rt_node {
	size_t parent;
	size_t depth; /* directories from the root */
	enum rs_kind kind;
	char *name;
	char *target; /* links: the body, filled by pass 2 */
	uint64_t h;   /* memtree handle, filled by pass 3 */
	bool moded;   /* opts.modes gave this directory the mode and owner below */
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

/* A serial chain or a nesting: links first..first+len-1 in directory dir. */
struct rt_chain {
	size_t dir, first, len;
	bool nest;
};

struct rt_ino {
	dev_t dev;
	ino_t ino;
	size_t node;
};

struct rt_handle {
	uint64_t h;
	size_t node;
};

struct rtree {
	struct rtree_opts o;
	uint64_t rng;
	struct rt_node *nodes;
	size_t n, cap;
	size_t *dirs;
	size_t ndirs;
	struct rt_chain *chains;
	size_t nchains;
	size_t *child_off; /* children of node i: children[child_off[i] .. child_off[i+1]) */
	size_t *children;
	struct mt_tree *mt;
	struct rt_handle *by_handle; /* handle -> node, sorted by handle */
	struct rt_ino *inos;	     /* (dev, ino) -> node after materializing, sorted */
};

/* A bounded string being built; output past the end is dropped (and detected by len). */
struct rt_buf {
	char *s;
	size_t len, size;
};

const struct rtree_opts rtree_defaults = {
    .dirs = 40,
    .files = 40,
    .links = 90,
    .chains = 6,
    .nests = 6,
    .chain_max = 60,
    .limit = 40,
    .long_names = true,
};

static void *rt_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		perror("rtree");
		abort();
	}
	return p;
}

static char *rt_xstrdup(const char *s)
{
	return strcpy(rt_xrealloc(NULL, strlen(s) + 1), s);
}

uint64_t rtree_rand(struct rtree *t)
{
	uint64_t z = (t->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t rt_below(struct rtree *t, size_t n)
{
	return n ? (size_t)(rtree_rand(t) % n) : 0;
}

static bool rt_chance(struct rtree *t, unsigned percent)
{
	return rtree_rand(t) % 100 < percent;
}

static void rt_put(struct rt_buf *b, const char *s, size_t n)
{
	if (b->len + n < b->size)
		memcpy(b->s + b->len, s, n);
	b->len += n;
	if (b->size)
		b->s[b->len < b->size ? b->len : b->size - 1] = '\0';
}

static void rt_puts(struct rt_buf *b, const char *s)
{
	rt_put(b, s, strlen(s));
}

/* ---- pass 1: the shape ---- */

static size_t rt_add(struct rtree *t, size_t parent, enum rs_kind kind, const char *name)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->nodes = rt_xrealloc(t->nodes, t->cap * sizeof(*t->nodes));
	}
	size_t i = t->n++;
	t->nodes[i] = (struct rt_node){
	    .parent = parent,
	    .depth = i ? t->nodes[parent].depth + 1 : 0,
	    .kind = kind,
	    .name = rt_xstrdup(name),
	};
	if (kind == RS_DIR) {
		t->dirs = rt_xrealloc(t->dirs, (t->ndirs + 1) * sizeof(*t->dirs));
		t->dirs[t->ndirs++] = i;
	}
	return i;
}

/* Names are unique in the whole tree (a kind letter and the node number). */
static size_t rt_add_named(struct rtree *t, size_t parent, enum rs_kind kind, const char *prefix)
{
	char name[32];

	snprintf(name, sizeof(name), "%s%zu", prefix, t->n);
	return rt_add(t, parent, kind, name);
}

static size_t rt_random_dir(struct rtree *t)
{
	return t->dirs[rt_below(t, t->ndirs)];
}

/* Half of the lengths straddle the limit under test, half are spread over 1..chain_max. */
static size_t rt_chain_len(struct rtree *t)
{
	const struct rtree_opts *o = &t->o;

	if (o->limit >= 3 && rt_chance(t, 50))
		return o->limit - 2 + rt_below(t, 5);
	return 1 + rt_below(t, o->chain_max ? o->chain_max : 1);
}

static void rt_add_chain(struct rtree *t, bool nest)
{
	size_t dir = rt_add_named(t, rt_random_dir(t), RS_DIR, nest ? "nest" : "chain");
	struct rt_chain c = {dir, t->n, rt_chain_len(t), nest};
	char name[32];

	for (size_t i = 0; i < c.len; i++) {
		snprintf(name, sizeof(name), "%c%zu", nest ? 'n' : 'c', i);
		rt_add(t, dir, RS_LINK, name);
	}
	t->chains = rt_xrealloc(t->chains, (t->nchains + 1) * sizeof(*t->chains));
	t->chains[t->nchains++] = c;
}

static void rt_add_long_names(struct rtree *t)
{
	char name[RS_NAME_MAX + 1];

	memset(name, 'x', RS_NAME_MAX);
	name[RS_NAME_MAX] = '\0';
	name[0] = 'D';
	size_t d = rt_add(t, rt_random_dir(t), RS_DIR, name);
	name[0] = 'F';
	rt_add(t, d, RS_FILE, name);
	name[0] = 'G'; /* the random directory may be D itself */
	rt_add(t, rt_random_dir(t), RS_FILE, name);
}

static void rt_shape(struct rtree *t)
{
	const struct rtree_opts *o = &t->o;

	rt_add(t, 0, RS_DIR, "");
	for (unsigned i = 0; i < o->dirs; i++)
		rt_add_named(t, rt_random_dir(t), RS_DIR, "d");
	for (unsigned i = 0; i < o->files; i++)
		rt_add_named(t, rt_random_dir(t), RS_FILE, "f");
	if (o->long_names)
		rt_add_long_names(t);
	for (unsigned i = 0; i < o->chains; i++)
		rt_add_chain(t, false);
	for (unsigned i = 0; i < o->nests; i++)
		rt_add_chain(t, true);
	for (unsigned i = 0; i < o->links; i++)
		rt_add_named(t, rt_random_dir(t), RS_LINK, "l");
}

/* Children in one array indexed by parent (counting sort), for the path generator. */
static void rt_index_children(struct rtree *t)
{
	t->child_off = calloc(t->n + 1, sizeof(*t->child_off));
	t->children = rt_xrealloc(NULL, t->n * sizeof(*t->children));
	if (!t->child_off)
		abort();
	for (size_t i = 1; i < t->n; i++)
		t->child_off[t->nodes[i].parent + 1]++;
	for (size_t i = 0; i < t->n; i++)
		t->child_off[i + 1] += t->child_off[i];
	size_t *fill = rt_xrealloc(NULL, t->n * sizeof(*fill));
	memcpy(fill, t->child_off, t->n * sizeof(*fill));
	for (size_t i = 1; i < t->n; i++)
		t->children[fill[t->nodes[i].parent]++] = i;
	free(fill);
}

static size_t rt_random_child(struct rtree *t, size_t dir)
{
	size_t lo = t->child_off[dir], hi = t->child_off[dir + 1];

	return hi > lo ? t->children[lo + rt_below(t, hi - lo)] : RT_NONE;
}

/* ---- paths ---- */

static void rt_put_path_of(const struct rtree *t, struct rt_buf *b, size_t node)
{
	if (node == 0)
		return;
	if (t->nodes[node].parent != 0) {
		rt_put_path_of(t, b, t->nodes[node].parent);
		rt_puts(b, "/");
	}
	rt_puts(b, t->nodes[node].name);
}

int rtree_path_of(const struct rtree *t, size_t node, char *buf, size_t size)
{
	struct rt_buf b = {buf, 0, size};

	if (size)
		buf[0] = '\0';
	if (node == 0)
		rt_puts(&b, ".");
	rt_put_path_of(t, &b, node);
	return b.len < size ? 0 : -ENAMETOOLONG;
}

/* A relative path from directory FROM to NODE: "../.." up to their common ancestor, then down. */
static void rt_put_relative(const struct rtree *t, struct rt_buf *b, size_t from, size_t node)
{
	size_t a = from, z = node;
	size_t up = 0;

	while (t->nodes[a].depth > t->nodes[z].depth) {
		a = t->nodes[a].parent;
		up++;
	}
	while (t->nodes[z].depth > t->nodes[a].depth)
		z = t->nodes[z].parent;
	while (a != z) {
		a = t->nodes[a].parent;
		z = t->nodes[z].parent;
		up++;
	}
	/* a is the common ancestor: climb to it, then name the way down */
	for (size_t i = 0; i < up; i++)
		rt_puts(b, i ? "/.." : "..");
	size_t depth = t->nodes[node].depth - t->nodes[a].depth;
	if (depth == 0 && up == 0)
		rt_puts(b, ".");
	for (size_t k = depth; k > 0; k--) {
		size_t n = node;
		for (size_t i = 1; i < k; i++)
			n = t->nodes[n].parent;
		if (up || k != depth)
			rt_puts(b, "/");
		rt_puts(b, t->nodes[n].name);
	}
}

static void rt_put_absolute(const struct rtree *t, struct rt_buf *b, size_t node)
{
	rt_puts(b, "/");
	rt_put_path_of(t, b, node);
}

static void rt_put_separator(struct rtree *t, struct rt_buf *b)
{
	unsigned r = rtree_rand(t) % 100;

	rt_puts(b, r < 85 ? "/" : r < 95 ? "//" : "///");
}

/* A name of 255 or 256 bytes that does not exist: found as ENOENT, or too long. */
static void rt_put_long_name(struct rtree *t, struct rt_buf *b)
{
	char name[RS_NAME_MAX + 2];
	size_t len = RS_NAME_MAX + rt_below(t, 2);

	memset(name, 'N', len);
	rt_put(b, name, len);
}

static const char *const rt_missing[] = {"missing", "nope", "f", "d", ".x", "...", "l"};

/* Where a guided walk is, after the components written so far (RT_NONE: unknown). */
struct rt_gen {
	struct rtree *t;
	struct rt_buf *b;
	size_t root, from, cur;
	bool guided; /* the memtree exists: resolve prefixes to know where links lead */
};

long rtree_node_of_handle(const struct rtree *t, uint64_t h)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->by_handle[mid].h < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->by_handle[lo].h == h ? (long)t->by_handle[lo].node : -1;
}

/* After a link (or something unknown) mid-path, ask the resolver where the prefix leads, so
 * the next names are ones that exist there. Only steers the generator; judges nothing. */
static void rt_gen_relocate(struct rt_gen *g)
{
	struct rtree *t = g->t;
	struct rs_result res;

	g->cur = RT_NONE;
	if (g->guided && g->b->len < g->b->size) {
		struct rs_ctx ctx = mt_ctx(t->mt);
		ctx.root = t->nodes[g->root].h;
		if (rs_resolve(&ctx, t->nodes[g->from].h, g->b->s, RS_FOLLOW, &res) == 0 &&
		    mt_kind(t->mt, res.node) == RS_DIR)
			g->cur = (size_t)rtree_node_of_handle(t, res.node);
	}
}

/* A child of DIR; mid-path, mostly one that can be walked through (a directory or a link). */
static size_t rt_pick_child(struct rtree *t, size_t dir, bool last)
{
	size_t c = rt_random_child(t, dir);

	for (int i = 0; i < 4 && !last && c != RT_NONE && t->nodes[c].kind == RS_FILE; i++)
		c = rt_random_child(t, dir);
	return c;
}

static void rt_gen_component(struct rt_gen *g, bool last)
{
	struct rtree *t = g->t;
	unsigned r = rtree_rand(t) % 100;
	size_t dir = g->cur != RT_NONE ? g->cur : rt_random_dir(t);

	if (r < 6) {
		rt_puts(g->b, ".");
	} else if (r < 14) {
		rt_puts(g->b, "..");
		if (g->cur != RT_NONE && g->cur != g->root)
			g->cur = t->nodes[g->cur].parent;
	} else if (r < 17) {
		rt_puts(g->b, rt_missing[rt_below(t, sizeof(rt_missing) / sizeof(rt_missing[0]))]);
		g->cur = RT_NONE;
	} else if (r < 18) {
		rt_put_long_name(t, g->b);
		g->cur = RT_NONE;
	} else {
		size_t c = rt_pick_child(t, dir, last);
		if (c == RT_NONE) {
			rt_puts(g->b, ".");
			return;
		}
		rt_puts(g->b, t->nodes[c].name);
		if (t->nodes[c].kind == RS_DIR)
			g->cur = c;
		else if (t->nodes[c].kind == RS_LINK)
			rt_gen_relocate(g);
		else
			g->cur = RT_NONE;
	}
}

/* The start of a path: often a chain or nesting head, sometimes absolute. */
static void rt_gen_start(struct rt_gen *g, bool heads)
{
	struct rtree *t = g->t;
	unsigned r = rtree_rand(t) % 100;

	if (heads && t->nchains && r < 20) {
		const struct rt_chain *c = &t->chains[rt_below(t, t->nchains)];
		if (rt_chance(t, 50))
			rt_put_absolute(t, g->b, c->first);
		else
			rt_put_relative(t, g->b, g->from, c->first);
		rt_gen_relocate(g);
	} else if (r < 35) {
		rt_puts(g->b, r < 30 ? "/" : r < 33 ? "//" : "/../");
		g->cur = g->root;
	}
}

/* Pad to 4094..4097 bytes with leading slashes or "./", which change nothing else. */
static void rt_pad(struct rtree *t, char *buf, size_t size)
{
	size_t len = strlen(buf);
	size_t want = RS_PATH_MAX - 2 + rt_below(t, 4);
	size_t pad = want - len, i = 0;

	if (len >= want || want + 1 > size)
		return;
	if (buf[0] != '/' && pad == 1) /* "./" comes in twos and ".//" in threes */
		return;
	memmove(buf + pad, buf, len + 1);
	if (buf[pad] == '/') {
		memset(buf, '/', pad);
		return;
	}
	if (pad % 2) {
		memcpy(buf, ".//", 3);
		i = 3;
	}
	for (; i < pad; i += 2)
		memcpy(buf + i, "./", 2);
}

static size_t rt_generate(struct rt_gen *g, unsigned max_components, bool heads)
{
	struct rtree *t = g->t;
	unsigned n = 1 + (unsigned)rt_below(t, max_components);
	unsigned r;

	g->cur = g->from;
	rt_gen_start(g, heads);
	for (unsigned i = 0; i < n; i++) {
		if (g->b->len && g->b->s[g->b->len - 1] != '/')
			rt_put_separator(t, g->b);
		rt_gen_component(g, i + 1 == n);
	}
	r = rtree_rand(t) % 100;
	if (r < 12)
		rt_puts(g->b, "/");
	else if (r < 15)
		rt_puts(g->b, "//");
	else if (r < 18)
		rt_puts(g->b, "/.");
	else if (r < 20)
		rt_puts(g->b, "/..");
	return g->b->len;
}

size_t rtree_random_path(struct rtree *t, size_t root, size_t from, char *buf, size_t size)
{
	struct rt_buf b = {buf, 0, size};
	struct rt_gen g = {t, &b, root, from, from, t->mt != NULL};

	buf[0] = '\0';
	rt_generate(&g, 7, true);
	if (b.len >= size) /* cannot happen with a sane SIZE; keep the path well formed */
		buf[size - 1] = '\0';
	if (rt_chance(t, 1))
		rt_pad(t, buf, size);
	return strlen(buf);
}

/* ---- pass 2: link bodies ---- */

static void rt_set_target(struct rtree *t, size_t link, const char *body)
{
	free(t->nodes[link].target);
	t->nodes[link].target = rt_xstrdup(body);
}

/* A destination for the end of a chain: some node, a missing name, or a random path. */
static void rt_put_destination(struct rtree *t, struct rt_buf *b, size_t from)
{
	size_t node = rt_below(t, t->n);
	unsigned r = rtree_rand(t) % 100;

	if (r < 45)
		rt_put_relative(t, b, from, node);
	else if (r < 75)
		rt_put_absolute(t, b, node);
	else if (r < 85)
		rt_puts(b, "missing");
	else {
		struct rt_gen g = {t, b, 0, from, from, false};
		rt_generate(&g, 4, false);
	}
}

static void rt_target_chain(struct rtree *t, const struct rt_chain *c)
{
	char body[RS_PATH_MAX + 2];

	for (size_t i = 0; i < c->len; i++) {
		struct rt_buf b = {body, 0, sizeof(body)};
		size_t link = c->first + i;
		char next[32];
		unsigned r = rtree_rand(t) % 100;

		snprintf(next, sizeof(next), "%c%zu", c->nest ? 'n' : 'c', i + 1);
		if (i + 1 == c->len) {
			rt_put_destination(t, &b, c->dir);
		} else if (r < 60) {
			rt_puts(&b, next);
		} else if (r < 70) {
			rt_puts(&b, "./");
			rt_puts(&b, next);
		} else if (r < 80) {
			rt_puts(&b, "../");
			rt_puts(&b, t->nodes[c->dir].name);
			rt_puts(&b, "/");
			rt_puts(&b, next);
		} else {
			rt_put_absolute(t, &b, c->dir);
			rt_puts(&b, "/");
			rt_puts(&b, next);
		}
		/* a nesting goes on after the next link, so that link cannot replace its frame */
		if (c->nest && i + 1 < c->len)
			rt_puts(&b, rt_chance(t, 80) ? "/." : "//./");
		if (b.len == 0)
			rt_puts(&b, ".");
		rt_set_target(t, link, body);
	}
}

/* Bodies for the free links: every kind of target, chosen at random. */
static void rt_target_link(struct rtree *t, size_t link)
{
	char body[RS_PATH_MAX + 2];
	struct rt_buf b = {body, 0, sizeof(body)};
	size_t dir = t->nodes[link].parent;
	size_t node = rt_below(t, t->n);
	unsigned r = rtree_rand(t) % 100;
	static const char *const odd[] = {".", "..", "/", "./", "../..", "//", "/.."};

	body[0] = '\0';
	if (t->o.empty_targets && r < 2) {
		/* empty body, memtree only */
	} else if (r < 30) {
		rt_put_relative(t, &b, dir, node);
	} else if (r < 45) {
		rt_put_absolute(t, &b, node);
	} else if (r < 70) {
		struct rt_gen g = {t, &b, 0, dir, dir, false};
		rt_generate(&g, 5, true);
	} else if (r < 78) {
		rt_puts(&b, rt_chance(t, 50) ? "missing" : "d/missing/x");
	} else if (r < 83) {
		rt_put_relative(t, &b, dir, link); /* a self loop, spelled as a path */
	} else if (r < 88) {
		rt_puts(&b, odd[rt_below(t, sizeof(odd) / sizeof(odd[0]))]);
	} else {
		/* another link: random links become chains and loops */
		size_t other = rt_below(t, t->n);
		while (t->nodes[other].kind != RS_LINK)
			other = (other + 1) % t->n;
		rt_put_relative(t, &b, dir, other);
	}
	if (r >= 2 && r < 45 && rt_chance(t, 20))
		rt_puts(&b, rt_chance(t, 50) ? "/" : "/.");
	if (b.len >= RS_PATH_MAX) /* only a freak path; keep bodies creatable */
		strcpy(body, "missing");
	if (!t->o.empty_targets && body[0] == '\0')
		strcpy(body, ".");
	rt_set_target(t, link, body);
}

static void rt_targets(struct rtree *t)
{
	for (size_t i = 0; i < t->nchains; i++)
		rt_target_chain(t, &t->chains[i]);
	for (size_t i = 1; i < t->n; i++)
		if (t->nodes[i].kind == RS_LINK && !t->nodes[i].target)
			rt_target_link(t, i);
}

/* ---- pass 3: the memtree ---- */

static int rt_cmp_ino(const void *a, const void *b)
{
	const struct rt_ino *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int rt_cmp_handle(const void *a, const void *b)
{
	const struct rt_handle *x = a, *y = b;

	return x->h < y->h ? -1 : x->h > y->h;
}

static void rt_random_mode(struct rtree *t, size_t dir)
{
	static const mode_t modes[] = {0700, 0710, 0701, 0000, 0111, 0755};
	static const uid_t ids[] = {0, 1000, 1001};

	struct rt_node *nd = &t->nodes[dir];

	if (!rt_chance(t, 15))
		return;
	nd->moded = true;
	nd->mode = modes[rt_below(t, 6)];
	nd->uid = ids[rt_below(t, 3)];
	nd->gid = ids[rt_below(t, 3)];
	mt_chmod(t->mt, nd->h, nd->mode, nd->uid, nd->gid);
}

static void rt_build_memtree(struct rtree *t)
{
	t->mt = mt_new();
	t->nodes[0].h = mt_root(t->mt);
	for (size_t i = 1; i < t->n; i++) {
		struct rt_node *nd = &t->nodes[i];
		uint64_t dir = t->nodes[nd->parent].h;
		nd->h = nd->kind == RS_DIR    ? mt_dir(t->mt, dir, nd->name)
			: nd->kind == RS_FILE ? mt_file(t->mt, dir, nd->name)
					      : mt_link(t->mt, dir, nd->name, nd->target);
		if (nd->kind == RS_DIR && t->o.modes)
			rt_random_mode(t, i);
	}
	t->by_handle = rt_xrealloc(NULL, t->n * sizeof(*t->by_handle));
	for (size_t i = 0; i < t->n; i++)
		t->by_handle[i] = (struct rt_handle){t->nodes[i].h, i};
	qsort(t->by_handle, t->n, sizeof(*t->by_handle), rt_cmp_handle);
}

struct rtree *rtree_new(uint64_t seed, const struct rtree_opts *opts)
{
	struct rtree *t = calloc(1, sizeof(*t));

	if (!t)
		abort();
	t->o = *opts;
	t->rng = seed;
	rt_shape(t);
	rt_index_children(t);
	rt_targets(t);
	rt_build_memtree(t);
	return t;
}

void rtree_free(struct rtree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->nodes[i].name);
		free(t->nodes[i].target);
	}
	if (t->mt)
		mt_free(t->mt);
	free(t->nodes);
	free(t->dirs);
	free(t->chains);
	free(t->child_off);
	free(t->children);
	free(t->by_handle);
	free(t->inos);
	free(t);
}

struct mt_tree *rtree_mt(const struct rtree *t)
{
	return t->mt;
}

size_t rtree_count(const struct rtree *t)
{
	return t->n;
}

uint64_t rtree_handle(const struct rtree *t, size_t node)
{
	return t->nodes[node].h;
}

size_t rtree_ndirs(const struct rtree *t)
{
	return t->ndirs;
}

size_t rtree_dir(const struct rtree *t, size_t i)
{
	return t->dirs[i];
}

/* ---- materializing ---- */

static int rt_create(const struct rtree *t, int rootfd, size_t i, const char *path)
{
	const struct rt_node *nd = &t->nodes[i];
	int fd;

	switch (nd->kind) {
	case RS_DIR:
		return mkdirat(rootfd, path, 0755) ? -errno : 0;
	case RS_LINK:
		return symlinkat(nd->target, rootfd, path) ? -errno : 0;
	default:
		fd = openat(rootfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		close(fd);
		return 0;
	}
}

/* Record every node's identity; materialized nodes must all be distinct inodes. */
static int rt_index_inodes(struct rtree *t, int rootfd)
{
	char path[RS_PATH_MAX];
	struct stat st;

	t->inos = rt_xrealloc(t->inos, t->n * sizeof(*t->inos));
	for (size_t i = 0; i < t->n; i++) {
		if (rtree_path_of(t, i, path, sizeof(path)))
			return -ENAMETOOLONG;
		if (fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW))
			return -errno;
		t->inos[i] = (struct rt_ino){st.st_dev, st.st_ino, i};
	}
	qsort(t->inos, t->n, sizeof(*t->inos), rt_cmp_ino);
	for (size_t i = 1; i < t->n; i++)
		if (rt_cmp_ino(&t->inos[i - 1], &t->inos[i]) == 0)
			return -EEXIST;
	return 0;
}

/* Modes and owners last, so that creating the tree never needed them. Deepest first (a node
 * comes after its parent): a directory is handed to its owner only when no path resolved
 * later goes through it, so that owner cannot redirect a chmod by swapping a name. */
static int rt_apply_modes(const struct rtree *t, int rootfd, const char *dir)
{
	char path[RS_PATH_MAX];

	if (chmod(dir, 0755)) /* as memtree's root (mkdtemp made it 0700) */
		return -errno;
	for (size_t i = t->n - 1; i >= 1; i--) {
		const struct rt_node *nd = &t->nodes[i];
		if (!nd->moded)
			continue;
		if (rtree_path_of(t, i, path, sizeof(path)))
			return -ENAMETOOLONG;
		if (fchownat(rootfd, path, nd->uid, nd->gid, AT_SYMLINK_NOFOLLOW) ||
		    fchmodat(rootfd, path, nd->mode, 0))
			return -errno;
	}
	return 0;
}

int rtree_materialize(struct rtree *t, const char *dir)
{
	char path[RS_PATH_MAX];
	int err = 0;
	int rootfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (rootfd < 0)
		return -errno;
	for (size_t i = 1; i < t->n && !err; i++) {
		err = rtree_path_of(t, i, path, sizeof(path));
		if (!err)
			err = rt_create(t, rootfd, i, path);
	}
	if (!err)
		err = rt_apply_modes(t, rootfd, dir);
	if (!err)
		err = rt_index_inodes(t, rootfd);
	close(rootfd);
	return err;
}

long rtree_node_by_ino(const struct rtree *t, dev_t dev, ino_t ino)
{
	struct rt_ino key = {dev, ino, 0};
	const struct rt_ino *hit;

	if (!t->inos)
		return -1;
	hit = bsearch(&key, t->inos, t->n, sizeof(*t->inos), rt_cmp_ino);
	return hit ? (long)hit->node : -1;
}

int rtree_mkdtemp(char *buf, size_t size)
{
	const char *tmp = getenv("TMPDIR");

	if (snprintf(buf, size, "%s/chainfs-rtree-XXXXXX", tmp && *tmp ? tmp : "/tmp") >= (int)size)
		return -ENAMETOOLONG;
	return mkdtemp(buf) ? 0 : -errno;
}

static int rt_remove(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) ? -errno : 0;
}

int rtree_rmtree(const char *dir)
{
	return nftw(dir, rt_remove, 64, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}
