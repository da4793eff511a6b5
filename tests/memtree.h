/* A small in-memory tree implementing the resolver's callbacks, for tests and benches. */
#ifndef CHAINFS_MEMTREE_H
#define CHAINFS_MEMTREE_H

#include "rs.h"

#include <sys/types.h>

struct mt_tree;

extern const struct rs_tree_ops mt_ops;

struct mt_tree *mt_new(void); /* a tree holding only the root directory (mode 0755) */
void mt_free(struct mt_tree *t);
uint64_t mt_root(const struct mt_tree *t);
size_t mt_count(const struct mt_tree *t); /* nodes, root included */

/* Add an entry under DIR; return its handle (aborts on allocation failure: test code). */
uint64_t mt_dir(struct mt_tree *t, uint64_t dir, const char *name);
uint64_t mt_file(struct mt_tree *t, uint64_t dir, const char *name);
uint64_t mt_link(struct mt_tree *t, uint64_t dir, const char *name, const char *target);

/* Permission bits and owner of a node, for the may_search hook (uid 0 may always search). */
void mt_chmod(struct mt_tree *t, uint64_t node, mode_t mode, uid_t uid, gid_t gid);

enum rs_kind mt_kind(const struct mt_tree *t, uint64_t node);
const char *mt_name(const struct mt_tree *t, uint64_t node);
const char *mt_target(const struct mt_tree *t, uint64_t node);
uint64_t mt_parent(const struct mt_tree *t, uint64_t node);

/* A context over T with Linux's limits and no trace. */
struct rs_ctx mt_ctx(struct mt_tree *t);

#endif
