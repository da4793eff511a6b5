/*
 * Server mode: one nodeid per path reached through a link.
 *
 * In server mode a link shows as its target, so one directory can be reached by many paths.
 * The kernel must never see one directory under two names (it would refuse the alias), so each
 * (parent nodeid, name) reached through a link, and everything below it, gets a nodeid of its
 * own here, with its own lookup count, while its attributes (st_ino included) are the
 * target's. Walkers then see loops by (st_dev, st_ino), as on any filesystem.
 *
 * Nodeids below CFS_PATH_BASE are tree handles; from CFS_PATH_BASE up they index this table,
 * so both kinds stay valid across a change of follow mode.
 */
#ifndef CHAINFS_PATHS_H
#define CHAINFS_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CFS_PATH_BASE (UINT64_C(1) << 32)

struct cfs_paths;

struct cfs_paths *cfs_paths_new(void);
void cfs_paths_free(struct cfs_paths *p);

static inline bool cfs_is_path_id(uint64_t nodeid)
{
	return nodeid >= CFS_PATH_BASE;
}

/*
 * The nodeid for NAME under PARENT, now resolving to TARGET: the existing one if it still
 * names TARGET, else a new one (*created set; the old one lives on until the kernel forgets
 * it). No lookup is counted here: cfs_paths_ref() does that once the reply went out, and
 * cfs_paths_forget(p, id, 0) drops an entry whose reply failed. 0 or -ENOMEM.
 */
int cfs_paths_get(struct cfs_paths *p, uint64_t parent, const char *name, size_t len,
		  uint32_t target, uint64_t *nodeid, uint32_t *generation, bool *created);
void cfs_paths_ref(struct cfs_paths *p, uint64_t nodeid);
/* The path nodeid NAME under PARENT answers now (0: none). */
uint64_t cfs_paths_find(const struct cfs_paths *p, uint64_t parent, const char *name, size_t len);
/* Where a path nodeid was reached: its parent nodeid and name. false if unknown. */
bool cfs_paths_name(const struct cfs_paths *p, uint64_t nodeid, uint64_t *parent, const char **name,
		    size_t *len);
/* The tree node a path nodeid stands for (0 if unknown). */
uint32_t cfs_paths_target(const struct cfs_paths *p, uint64_t nodeid);
/* Drop NLOOKUP counts; when none are left the entry goes and its target is returned (so the
 * caller can release the tree reference the entry held), else 0. */
uint32_t cfs_paths_forget(struct cfs_paths *p, uint64_t nodeid, uint64_t nlookup);

/* Every path nodeid the kernel may have cached, to invalidate after a change. */
typedef void cfs_paths_fn(void *data, uint64_t parent, const char *name, size_t len,
			  uint64_t nodeid, uint32_t target);
void cfs_paths_each(const struct cfs_paths *p, cfs_paths_fn *fn, void *data);

size_t cfs_paths_count(const struct cfs_paths *p);
uint64_t cfs_paths_total_lookups(const struct cfs_paths *p);

struct cfs_tree;

/* The path (from the mount's root) the kernel reached nodeid INO by, through tree T and
 * path nodeids P, plus "/NAME" when NAME is given, into OUT; what does not fit is cut. For
 * fault rules and records. */
void cfs_nodeid_path(const struct cfs_tree *t, const struct cfs_paths *p, uint64_t ino,
		     const char *name, char *out, size_t size);

#endif
