/*
 * Link targets with their in-root meaning spelled so that the kernel walks them the same way:
 * an absolute target starts at the tree's root, and a ".." at the root stays there. Shared
 * by kernel mode's readlink (the mount's root is the tree's) and by --materialize (the copy's
 * directory is). Needs only the tree and the resolver.
 */
#ifndef CHAINFS_INROOT_H
#define CHAINFS_INROOT_H

#include "rs.h"
#include "tree.h"

#include <stdbool.h>
#include <sys/types.h>

/* LINK's target as the kernel must be given it, into OUT (RS_PATH_MAX bytes): the target as
 * stored when it cannot climb above the root; otherwise everything up to its last climbing
 * ".." replaced by the path from the link's directory up to the root. Links the target walks
 * through are followed in-root with LIMITS (at least the kernel's own, so that where this
 * walk gives up the kernel's does too). Returns the length, or -ENAMETOOLONG, -ENOMEM,
 * -EINVAL (not a link). */
ssize_t cfs_inroot_target(const struct cfs_tree *t, struct rs_limits limits, uint32_t link,
			  char *out);
/* Whether LINK's answer may differ from its target: absolute, or holding a "..". */
bool cfs_target_may_climb(const char *target, size_t len);
/* The path from directory FROM to node TO ("." when the same), into OUT (RS_PATH_MAX bytes).
 * Returns the length, or -ENAMETOOLONG. */
ssize_t cfs_relative_path(const struct cfs_tree *t, uint32_t from, uint32_t to, char *out);

#endif
