/*
 * Random trees for resolver and daemon tests: built from a seed on memtree, optionally
 * materialized as real directories, files and symlinks, with a generator of random paths
 * that mostly name things that exist (and often links, "..", "//", long names...).
 *
 * Nodes are numbered 0..rtree_count()-1 in creation order (0 is the root, a parent comes
 * before its children); rtree_handle() gives the memtree handle of a node.
 */
#ifndef CHAINFS_RTREE_H
#define CHAINFS_RTREE_H

#include "memtree.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rtree_opts {
	unsigned dirs; /* directories besides the root */
	unsigned files;
	unsigned links;	    /* links with random targets of every kind */
	unsigned chains;    /* serial chains c0 -> c1 -> ... in their own directory */
	unsigned nests;	    /* nested chains n0 -> "n1/." -> ... in their own directory */
	unsigned chain_max; /* longest chain or nesting */
	unsigned limit;	    /* half of the chains and nestings are limit-2 .. limit+2 long */
	bool long_names;    /* add entries named with 255 bytes */
	bool empty_targets; /* now and then an empty link body (memtree only: no kernel has one) */
	bool modes; /* random modes and owners (uid/gid 0, 1000, 1001) on some directories */
};

/* Kernel-compatible defaults: about 250 nodes, chains up to 60 around Linux's 40. */
extern const struct rtree_opts rtree_defaults;

struct rtree;

struct rtree *rtree_new(uint64_t seed, const struct rtree_opts *opts);
void rtree_free(struct rtree *t);

struct mt_tree *rtree_mt(const struct rtree *t);
size_t rtree_count(const struct rtree *t);
uint64_t rtree_handle(const struct rtree *t, size_t node);
long rtree_node_of_handle(const struct rtree *t, uint64_t handle); /* -1: not ours */
size_t rtree_ndirs(const struct rtree *t);
size_t rtree_dir(const struct rtree *t, size_t i); /* the i-th directory (0: the root) */

/* The tree's PRNG (splitmix64): seeded by rtree_new, advanced by every random choice. */
uint64_t rtree_rand(struct rtree *t);

/* Path of NODE from the root, without a leading '/' ("." for the root). 0 or -ENAMETOOLONG. */
int rtree_path_of(const struct rtree *t, size_t node, char *buf, size_t size);

/*
 * A random path to resolve from directory FROM, absolute ones meaning directory ROOT
 * (usually node 0): components that exist under where the
 * walk probably is, ".", "..", missing and 255/256-byte names, heads of chains and nestings,
 * links mid-path, absolute paths, runs of slashes, trailing slashes, now and then a path
 * padded to 4094..4097 bytes. SIZE must be at least RS_PATH_MAX + 2. Returns the length.
 */
size_t rtree_random_path(struct rtree *t, size_t root, size_t from, char *buf, size_t size);

/*
 * Create the tree under DIR (an existing, empty directory): real directories, empty files,
 * symlinks with the same bodies; DIR gets mode 0755 and, with opts.modes, directories get
 * their modes and owners (needs root). Then record each node's (st_dev, st_ino) for
 * rtree_node_by_ino. 0 or a negative errno.
 */
int rtree_materialize(struct rtree *t, const char *dir);
/* The node materialized as (DEV, INO), or -1. */
long rtree_node_by_ino(const struct rtree *t, dev_t dev, ino_t ino);

/* A fresh directory under $TMPDIR (or /tmp) in BUF (at least 64 bytes); 0 or -errno. */
int rtree_mkdtemp(char *buf, size_t size);
/* Remove DIR and everything under it, never following links. 0 or -errno. */
int rtree_rmtree(const char *dir);

#endif
