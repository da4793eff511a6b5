/*
 * Extended attributes, in a side table keyed by node handle so that the 72-byte node does
 * not grow for them: most nodes have none. The table is open-addressed with linear probing
 * and backward-shift deletion (as the entry hash); each slot holds one node's set, its
 * attributes sorted as tmpfs lists them (list_rank). A node's set goes with the node
 * (tree_xattr_drop, from node_free), the whole table with the tree (tree_xattr_release).
 * Nothing here stamps times: tree.c does, around tree_xattr_set.
 */
#include "tree_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/xattr.h> /* XATTR_CREATE, XATTR_REPLACE */

enum { XS_MIN = 16 }; /* first table size, a power of two */

static const char acl_access[] = "system.posix_acl_access";
static const char acl_default[] = "system.posix_acl_default";

static size_t xa_bytes(const struct cfs_xattr *a)
{
	return (size_t)a->name_len + 1 + a->value_len;
}

static uint32_t xs_hash(uint32_t id, uint32_t cap)
{
	return (id * UINT32_C(2654435761)) & (cap - 1);
}

static struct cfs_xset *xs_find(const struct cfs_tree *t, uint32_t id)
{
	if (!t->xs_count)
		return NULL;
	for (uint32_t i = xs_hash(id, t->xs_cap);; i = (i + 1) & (t->xs_cap - 1)) {
		if (t->xs[i].id == id)
			return &t->xs[i];
		if (!t->xs[i].id)
			return NULL;
	}
}

/* Room for one more set (load at most 1/2), or -ENOMEM with nothing changed. */
static int xs_reserve(struct cfs_tree *t)
{
	uint32_t cap = t->xs_cap ? t->xs_cap * 2 : XS_MIN;
	struct cfs_xset *old = t->xs, *xs;

	if (t->xs_cap && (t->xs_count + 1) * 2 <= t->xs_cap)
		return 0;
	xs = mem_resize(t, NULL, 0, (size_t)cap * sizeof(*xs));
	if (!xs)
		return -ENOMEM;
	memset(xs, 0, (size_t)cap * sizeof(*xs));
	for (uint32_t i = 0; i < t->xs_cap; i++) {
		if (!old[i].id)
			continue;
		uint32_t j = xs_hash(old[i].id, cap);
		while (xs[j].id)
			j = (j + 1) & (cap - 1);
		xs[j] = old[i];
	}
	mem_free(t, old, (size_t)t->xs_cap * sizeof(*old));
	t->xs = xs;
	t->xs_cap = cap;
	return 0;
}

/* Remove the (empty) set at S: later slots of its run shift back into the hole. */
static void xs_remove(struct cfs_tree *t, struct cfs_xset *s)
{
	uint32_t mask = t->xs_cap - 1, i = (uint32_t)(s - t->xs), j = i;

	mem_free(t, s->a, (size_t)s->cap * sizeof(*s->a));
	t->xs[i] = (struct cfs_xset){0};
	t->xs_count--;
	for (;;) {
		j = (j + 1) & mask;
		if (!t->xs[j].id)
			return;
		uint32_t home = xs_hash(t->xs[j].id, t->xs_cap);
		/* J may move back to I only if its home is not cyclically in (I, J] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->xs[i] = t->xs[j];
			t->xs[j] = (struct cfs_xset){0};
			i = j;
		}
	}
}

/* tmpfs lists the ACLs first (posix_acl_listxattr), then the names of its rbtree in the
 * order its walk gives: by strcmp, the greatest first (Linux 6.18, seen on its tmpfs). */
static int list_rank(const char *name)
{
	if (!strcmp(name, acl_access))
		return 0;
	return strcmp(name, acl_default) ? 2 : 1;
}

static int xa_cmp(const char *a, const char *b)
{
	int ra = list_rank(a), rb = list_rank(b);

	return ra != rb ? ra - rb : strcmp(b, a);
}

int tree_xattr_namespace(const char *name)
{
	static const char *const prefixes[] = {"security.", "trusted.", "user."};
	size_t len = strnlen(name, CFS_XATTR_NAME_MAX + 1);

	if (!len || len > CFS_XATTR_NAME_MAX)
		return -ERANGE;
	if (!strcmp(name, acl_access) || !strcmp(name, acl_default))
		return 0;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t plen = strlen(prefixes[i]);
		if (!strncmp(name, prefixes[i], plen))
			return len == plen ? -EINVAL : 0;
	}
	return -EOPNOTSUPP;
}

/* The index of NAME in S, or where it would go (*found false). */
static uint32_t xa_pos(const struct cfs_xset *s, const char *name, bool *found)
{
	uint32_t lo = 0, hi = s ? s->n : 0;

	*found = false;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = xa_cmp(name, s->a[mid].bytes);
		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

uint64_t tree_xattr_cost(size_t name_len, size_t value_len)
{
	return CFS_XATTR_COST + name_len + 1 + value_len;
}

/* Room for one more attribute in ID's set, creating the set; -ENOMEM: nothing changed. */
static int xa_reserve(struct cfs_tree *t, uint32_t id, struct cfs_xset **out)
{
	struct cfs_xset *s = xs_find(t, id);

	if (!s) {
		if (xs_reserve(t))
			return -ENOMEM;
		uint32_t i = xs_hash(id, t->xs_cap);
		while (t->xs[i].id)
			i = (i + 1) & (t->xs_cap - 1);
		s = &t->xs[i];
		*s = (struct cfs_xset){.id = id};
		t->xs_count++;
	}
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 2;
		void *a = mem_resize(t, s->a, (size_t)s->cap * sizeof(*s->a), cap * sizeof(*s->a));
		if (!a) {
			if (!s->n)
				xs_remove(t, s);
			return -ENOMEM;
		}
		s->a = a;
		s->cap = cap;
	}
	*out = s;
	return 0;
}

static void xa_free(struct cfs_tree *t, struct cfs_xattr *a)
{
	t->xattr_bytes -= tree_xattr_cost(a->name_len, a->value_len);
	mem_free(t, a->bytes, xa_bytes(a));
}

/* Remove NAME from ID's set: -ENODATA when it has none. */
static int xa_remove(struct cfs_tree *t, uint32_t id, const char *name)
{
	struct cfs_xset *s = xs_find(t, id);
	bool found;
	uint32_t i = xa_pos(s, name, &found);

	if (!found)
		return -ENODATA;
	xa_free(t, &s->a[i]);
	memmove(&s->a[i], &s->a[i + 1], (s->n - i - 1) * sizeof(*s->a));
	if (!--s->n)
		xs_remove(t, s);
	return 0;
}

int tree_xattr_set(struct cfs_tree *t, uint32_t id, const char *name, const void *value,
		   size_t size, int flags)
{
	size_t len = strlen(name);
	struct cfs_xset *s = xs_find(t, id);
	bool found;
	uint32_t i = xa_pos(s, name, &found);
	struct cfs_xattr a = {.name_len = (uint32_t)len, .value_len = (uint32_t)size};

	if (!value)
		return xa_remove(t, id, name);
	if ((flags & XATTR_CREATE) && found)
		return -EEXIST;
	if ((flags & XATTR_REPLACE) && !found)
		return -ENODATA;
	/* as tmpfs: the new value is charged before the old one is given back */
	if (tree_meta_reserve(t, tree_xattr_cost(len, size)))
		return -ENOSPC;
	a.bytes = mem_resize(t, NULL, 0, xa_bytes(&a));
	if (!a.bytes)
		return -ENOMEM;
	memcpy(a.bytes, name, len + 1);
	memcpy(a.bytes + len + 1, value, size);
	if (!found && xa_reserve(t, id, &s)) {
		mem_free(t, a.bytes, xa_bytes(&a));
		return -ENOMEM;
	}
	if (found) {
		xa_free(t, &s->a[i]);
	} else {
		memmove(&s->a[i + 1], &s->a[i], (s->n - i) * sizeof(*s->a));
		s->n++;
	}
	s->a[i] = a;
	t->xattr_bytes += tree_xattr_cost(len, size);
	return 0;
}

void tree_xattr_drop(struct cfs_tree *t, uint32_t id)
{
	struct cfs_xset *s = xs_find(t, id);

	if (!s)
		return;
	for (uint32_t i = 0; i < s->n; i++)
		xa_free(t, &s->a[i]);
	s->n = 0;
	xs_remove(t, s);
}

bool cfs_tree_has_xattrs(const struct cfs_tree *t)
{
	return t->xs_count > 0;
}

void tree_xattr_release(struct cfs_tree *t)
{
	for (uint32_t i = 0; i < t->xs_cap; i++) {
		struct cfs_xset *s = &t->xs[i];
		for (uint32_t j = 0; s->id && j < s->n; j++)
			mem_free(t, s->a[j].bytes, xa_bytes(&s->a[j]));
		if (s->id)
			mem_free(t, s->a, (size_t)s->cap * sizeof(*s->a));
	}
	mem_free(t, t->xs, (size_t)t->xs_cap * sizeof(*t->xs));
}

char *tree_xattr_value(const struct cfs_tree *t, uint32_t id, const char *name, size_t *len)
{
	const struct cfs_xset *s = xs_find(t, id);
	bool found;
	uint32_t i = xa_pos(s, name, &found);

	if (!found)
		return NULL;
	*len = s->a[i].value_len;
	return s->a[i].bytes + s->a[i].name_len + 1;
}

ssize_t cfs_tree_getxattr(const struct cfs_tree *t, uint32_t id, const char *name, void *buf,
			  size_t size)
{
	const struct cfs_xset *s = xs_find(t, id);
	bool found;
	uint32_t i = xa_pos(s, name, &found);
	int r = tree_xattr_namespace(name);

	if (r)
		return r;
	if (!found)
		return -ENODATA;
	if (size && size < s->a[i].value_len)
		return -ERANGE;
	if (size)
		memcpy(buf, s->a[i].bytes + s->a[i].name_len + 1, s->a[i].value_len);
	return s->a[i].value_len;
}

ssize_t cfs_tree_listxattr(const struct cfs_tree *t, uint32_t id, char *buf, size_t size,
			   bool trusted)
{
	const struct cfs_xset *s = xs_find(t, id);
	size_t total = 0;

	for (uint32_t i = 0; s && i < s->n; i++) {
		const struct cfs_xattr *a = &s->a[i];
		if (!trusted && !strncmp(a->bytes, "trusted.", 8))
			continue; /* as tmpfs: only CAP_SYS_ADMIN sees them */
		if (size && total + a->name_len + 1 > size)
			return -ERANGE;
		if (size)
			memcpy(buf + total, a->bytes, a->name_len + 1);
		total += a->name_len + 1;
	}
	return (ssize_t)total;
}

int cfs_tree_xattr_at(const struct cfs_tree *t, uint32_t id, uint32_t i, const char **name,
		      const char **value, size_t *len)
{
	const struct cfs_xset *s = xs_find(t, id);

	if (!s || i >= s->n)
		return 1;
	*name = s->a[i].bytes;
	*value = s->a[i].bytes + s->a[i].name_len + 1;
	*len = s->a[i].value_len;
	return 0;
}
