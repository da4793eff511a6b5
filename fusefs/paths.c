#include "paths.h"

#include "tree.h"

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

struct cfs_pent {
	uint64_t parent;
	char *name; /* NULL: free slot */
	size_t len;
	uint32_t target;
	uint32_t generation;
	uint64_t nlookup;
	bool hashed; /* still the answer for (parent, name) */
};

struct cfs_paths {
	GArray *ents;	     /* struct cfs_pent; nodeid = CFS_PATH_BASE + index */
	GArray *free;	     /* indexes of free slots */
	GHashTable *by_name; /* (parent, name) key -> index + 1 */
	uint64_t lookups;
};

/* The hash key: the parent nodeid's 8 bytes, then the name. */
static GBytes *cfs_key(uint64_t parent, const char *name, size_t len)
{
	char *k = g_malloc(sizeof(parent) + len);

	memcpy(k, &parent, sizeof(parent));
	memcpy(k + sizeof(parent), name, len);
	return g_bytes_new_take(k, sizeof(parent) + len);
}

struct cfs_paths *cfs_paths_new(void)
{
	struct cfs_paths *p = g_new0(struct cfs_paths, 1);

	p->ents = g_array_new(FALSE, TRUE, sizeof(struct cfs_pent));
	p->free = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	p->by_name =
	    g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref, NULL);
	return p;
}

void cfs_paths_free(struct cfs_paths *p)
{
	if (!p)
		return;
	for (guint i = 0; i < p->ents->len; i++)
		g_free(g_array_index(p->ents, struct cfs_pent, i).name);
	g_array_free(p->ents, TRUE);
	g_array_free(p->free, TRUE);
	g_hash_table_destroy(p->by_name);
	g_free(p);
}

static struct cfs_pent *cfs_pent_at(const struct cfs_paths *p, uint64_t nodeid)
{
	if (nodeid < CFS_PATH_BASE || nodeid - CFS_PATH_BASE >= p->ents->len)
		return NULL;
	struct cfs_pent *e = &g_array_index(p->ents, struct cfs_pent, nodeid - CFS_PATH_BASE);
	return e->name ? e : NULL;
}

static void cfs_unhash(struct cfs_paths *p, struct cfs_pent *e)
{
	if (!e->hashed)
		return;
	GBytes *k = cfs_key(e->parent, e->name, e->len);
	g_hash_table_remove(p->by_name, k);
	g_bytes_unref(k);
	e->hashed = false;
}

static uint32_t cfs_new_slot(struct cfs_paths *p)
{
	if (p->free->len) {
		uint32_t i = g_array_index(p->free, uint32_t, p->free->len - 1);
		g_array_set_size(p->free, p->free->len - 1);
		return i;
	}
	g_array_set_size(p->ents, p->ents->len + 1);
	return p->ents->len - 1;
}

int cfs_paths_get(struct cfs_paths *p, uint64_t parent, const char *name, size_t len,
		  uint32_t target, uint64_t *nodeid, uint32_t *generation, bool *created)
{
	GBytes *k = cfs_key(parent, name, len);
	uintptr_t found = (uintptr_t)g_hash_table_lookup(p->by_name, k);
	struct cfs_pent *e = NULL;
	uint32_t i;

	*created = false;
	if (found) {
		e = &g_array_index(p->ents, struct cfs_pent, found - 1);
		if (e->target == target)
			goto done;
		/* the name now leads elsewhere: a fresh nodeid, so the kernel never sees an inode
		 * change kind under it */
		cfs_unhash(p, e);
	}
	i = cfs_new_slot(p);
	e = &g_array_index(p->ents, struct cfs_pent, i);
	*e = (struct cfs_pent){parent, g_strndup(name, len), len, target, e->generation + 1, 0,
			       true};
	g_hash_table_insert(p->by_name, g_bytes_ref(k), (gpointer)(uintptr_t)(i + 1));
	*created = true;
done:
	g_bytes_unref(k);
	*nodeid = CFS_PATH_BASE + (uint64_t)(e - &g_array_index(p->ents, struct cfs_pent, 0));
	*generation = e->generation;
	return 0;
}

void cfs_paths_ref(struct cfs_paths *p, uint64_t nodeid)
{
	struct cfs_pent *e = cfs_pent_at(p, nodeid);

	if (e) {
		e->nlookup++;
		p->lookups++;
	}
}

uint64_t cfs_paths_find(const struct cfs_paths *p, uint64_t parent, const char *name, size_t len)
{
	GBytes *k = cfs_key(parent, name, len);
	uintptr_t found = (uintptr_t)g_hash_table_lookup(p->by_name, k);

	g_bytes_unref(k);
	return found ? CFS_PATH_BASE + (found - 1) : 0;
}

bool cfs_paths_name(const struct cfs_paths *p, uint64_t nodeid, uint64_t *parent, const char **name,
		    size_t *len)
{
	const struct cfs_pent *e = cfs_pent_at(p, nodeid);

	if (!e)
		return false;
	*parent = e->parent;
	*name = e->name;
	*len = e->len;
	return true;
}

uint32_t cfs_paths_target(const struct cfs_paths *p, uint64_t nodeid)
{
	const struct cfs_pent *e = cfs_pent_at(p, nodeid);

	return e ? e->target : 0;
}

uint32_t cfs_paths_forget(struct cfs_paths *p, uint64_t nodeid, uint64_t nlookup)
{
	struct cfs_pent *e = cfs_pent_at(p, nodeid);
	uint32_t i = (uint32_t)(nodeid - CFS_PATH_BASE);

	if (!e)
		return 0;
	nlookup = nlookup < e->nlookup ? nlookup : e->nlookup;
	e->nlookup -= nlookup;
	p->lookups -= nlookup;
	if (e->nlookup)
		return 0;
	cfs_unhash(p, e);
	g_free(e->name);
	e->name = NULL;
	g_array_append_val(p->free, i);
	return e->target;
}

void cfs_paths_each(const struct cfs_paths *p, cfs_paths_fn *fn, void *data)
{
	for (guint i = 0; i < p->ents->len; i++) {
		const struct cfs_pent *e = &g_array_index(p->ents, struct cfs_pent, i);
		if (e->name)
			fn(data, e->parent, e->name, e->len, CFS_PATH_BASE + i, e->target);
	}
}

size_t cfs_paths_count(const struct cfs_paths *p)
{
	return p->ents->len - p->free->len;
}

uint64_t cfs_paths_total_lookups(const struct cfs_paths *p)
{
	return p->lookups;
}

/* Prepend "/NAME" to the path being built right to left in OUT[0..*at). */
static bool cfs_prepend(char *out, size_t *at, const char *name, size_t len)
{
	if (len + 1 > *at)
		return false;
	*at -= len;
	memcpy(out + *at, name, len);
	out[--*at] = '/';
	return true;
}

void cfs_nodeid_path(const struct cfs_tree *t, const struct cfs_paths *p, uint64_t ino,
		     const char *name, char *out, size_t size)
{
	size_t at = size - 1;
	const char *nm;
	size_t len;
	uint64_t parent;

	out[at] = '\0';
	if (name && !cfs_prepend(out, &at, name, strlen(name)))
		goto cut;
	while (ino != CFS_ROOT) {
		if (cfs_is_path_id(ino)) {
			if (!cfs_paths_name(p, ino, &parent, &nm, &len))
				break;
			ino = parent;
		} else {
			cfs_tree_name(t, (uint32_t)ino, &nm, &len);
			ino = cfs_tree_parent(t, (uint32_t)ino);
		}
		if (!cfs_prepend(out, &at, nm, len))
			goto cut;
	}
	if (at == size - 1)
		out[--at] = '/';
cut:
	memmove(out, out + at, size - at);
}
