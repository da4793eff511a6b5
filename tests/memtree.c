#include "memtree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mt_node {
	enum rs_kind kind;
	uint64_t parent;
	char *name;
	char *target;
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

/* Nodes live in one array (handle = index); names are found through one open-addressed
 * hash of (directory, name), so a directory of a million links costs O(1) per lookup. */
struct mt_tree {
	struct mt_node *nodes;
	size_t n, cap;
	uint64_t *slots; /* handle + 1, 0 = empty */
	size_t nslots;
};

static void *mt_xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		perror("memtree");
		abort();
	}
	return p;
}

static uint64_t mt_hash(uint64_t dir, const char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ (dir * 0x9e3779b97f4a7c15ull);
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
	return h;
}

static void mt_slot_insert(struct mt_tree *t, uint64_t node)
{
	struct mt_node *nd = &t->nodes[node];
	size_t i = mt_hash(nd->parent, nd->name, strlen(nd->name)) & (t->nslots - 1);

	while (t->slots[i])
		i = (i + 1) & (t->nslots - 1);
	t->slots[i] = node + 1;
}

static void mt_rehash(struct mt_tree *t)
{
	free(t->slots);
	t->nslots = t->nslots ? t->nslots * 2 : 64;
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	if (!t->slots)
		abort();
	for (uint64_t i = 1; i < t->n; i++)
		mt_slot_insert(t, i);
}

static uint64_t mt_add(struct mt_tree *t, uint64_t dir, const char *name, enum rs_kind kind,
		       const char *target)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->nodes = mt_xrealloc(t->nodes, t->cap * sizeof(*t->nodes));
	}
	uint64_t id = t->n++;
	t->nodes[id] = (struct mt_node){
	    kind, dir, name ? strdup(name) : NULL, target ? strdup(target) : NULL, 0755, 0, 0};
	if (id == 0)
		return id;
	if ((t->n - 1) * 2 >= t->nslots)
		mt_rehash(t);
	else
		mt_slot_insert(t, id);
	return id;
}

struct mt_tree *mt_new(void)
{
	struct mt_tree *t = calloc(1, sizeof(*t));
	if (!t)
		abort();
	mt_add(t, 0, "", RS_DIR, NULL);
	return t;
}

void mt_free(struct mt_tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->nodes[i].name);
		free(t->nodes[i].target);
	}
	free(t->nodes);
	free(t->slots);
	free(t);
}

uint64_t mt_root(const struct mt_tree *t)
{
	return 0;
}

size_t mt_count(const struct mt_tree *t)
{
	return t->n;
}

uint64_t mt_dir(struct mt_tree *t, uint64_t dir, const char *name)
{
	return mt_add(t, dir, name, RS_DIR, NULL);
}

uint64_t mt_file(struct mt_tree *t, uint64_t dir, const char *name)
{
	return mt_add(t, dir, name, RS_FILE, NULL);
}

uint64_t mt_link(struct mt_tree *t, uint64_t dir, const char *name, const char *target)
{
	return mt_add(t, dir, name, RS_LINK, target);
}

void mt_chmod(struct mt_tree *t, uint64_t node, mode_t mode, uid_t uid, gid_t gid)
{
	t->nodes[node].mode = mode;
	t->nodes[node].uid = uid;
	t->nodes[node].gid = gid;
}

enum rs_kind mt_kind(const struct mt_tree *t, uint64_t node)
{
	return t->nodes[node].kind;
}

const char *mt_name(const struct mt_tree *t, uint64_t node)
{
	return t->nodes[node].name;
}

const char *mt_target(const struct mt_tree *t, uint64_t node)
{
	return t->nodes[node].target;
}

uint64_t mt_parent(const struct mt_tree *t, uint64_t node)
{
	return t->nodes[node].parent;
}

static int mt_op_lookup(void *tree, uint64_t dir, const char *name, size_t len, uint64_t *out)
{
	struct mt_tree *t = tree;

	if (!t->nslots) /* only the root: no hash yet, and nslots - 1 would wrap */
		return -ENOENT;
	size_t i = mt_hash(dir, name, len) & (t->nslots - 1);

	for (; t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
		const struct mt_node *nd = &t->nodes[t->slots[i] - 1];
		if (nd->parent == dir && strncmp(nd->name, name, len) == 0 && !nd->name[len]) {
			*out = t->slots[i] - 1;
			return 0;
		}
	}
	return -ENOENT;
}

static enum rs_kind mt_op_kind(void *tree, uint64_t node)
{
	return mt_kind(tree, node);
}

static int mt_op_readlink(void *tree, uint64_t link, const char **target, size_t *len)
{
	const struct mt_node *nd = &((struct mt_tree *)tree)->nodes[link];

	if (nd->kind != RS_LINK)
		return -EINVAL;
	*target = nd->target;
	*len = strlen(nd->target);
	return 0;
}

static uint64_t mt_op_parent(void *tree, uint64_t dir)
{
	return mt_parent(tree, dir);
}

static int mt_op_may_search(void *tree, uint64_t dir, const struct rs_cred *cred)
{
	const struct mt_node *nd = &((struct mt_tree *)tree)->nodes[dir];

	if (!cred || cred->uid == 0)
		return 0;
	mode_t bit = cred->uid == nd->uid ? 0100 : cred->gid == nd->gid ? 0010 : 0001;
	return (nd->mode & bit) ? 0 : -EACCES;
}

const struct rs_tree_ops mt_ops = {
    .lookup = mt_op_lookup,
    .kind = mt_op_kind,
    .readlink = mt_op_readlink,
    .parent = mt_op_parent,
    .may_search = mt_op_may_search,
};

struct rs_ctx mt_ctx(struct mt_tree *t)
{
	return (struct rs_ctx){.ops = &mt_ops, .tree = t, .root = 0, .limits = rs_limits_linux};
}
