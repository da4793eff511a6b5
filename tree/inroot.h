/*
 * Link targets with their in-root meaning spelled so that the kernel walks them the same way:
 * an absolute target starts at the tree's root, and a ".." at the root stays there. Shared
 * by kernel mode's readlink (links.c: through the mountpoint) and by --materialize (the
 * copy: relative paths). Needs only the tree and the resolver.
 */
#ifndef CHAINFS_INROOT_H
#define CHAINFS_INROOT_H

#include "rs.h"
#include "tree.h"

#include <stdbool.h>
#include <sys/types.h>

/* Whether a target needs the in-root walk: absolute, or holding a "..". */
bool cfs_target_may_climb(const char *target, size_t len);
/* Walk LINK's target in-root, from the root when absolute, else from the link's directory
 * (its first name's), up to the end of its last ".." (links on the way followed with LIMITS:
 * at least the kernel's own, so that where this walk gives up the kernel's does too). With a
 * CRED, every directory the walk searches must be searchable by CRED and links on the way are
 * followed with CRED's rights; where it is not, the walk stops as at a failing name, so that
 * what it answers shows nothing CRED could not see. *at is where it got to; [*rest, *end) is
 * what is left of the target: nothing but names and "." after a walk that went through, or
 * the failing name and what follows. *as_stored: the target is relative, the walk went
 * through and no ".." was taken at the root, so the kernel's walk of the stored target means
 * the same (as long as the tree stays as it is). BUDGET (rs_ctx.budget, NULL: one walk's)
 * bounds all the walks the climb makes together. ALIAS (NUL-terminated, or NULL: none): another
 * spelling of the root in absolute targets, the target's and those of links on the way
 * (rs_ctx.root_alias): a target that begins with it is walked from the root past it, and
 * [*rest, *end) never holds it. 0, -ENOMEM, -EINVAL (not a link). */
int cfs_inroot_walk(const struct cfs_tree *t, struct rs_limits limits, const struct rs_cred *cred,
		    uint32_t *budget, const char *alias, uint32_t link, uint32_t *at,
		    const char **rest, const char **end, bool *as_stored);
/* Append the components of [P, END) to the path OUT[0..N) (RS_PATH_MAX bytes), each ".."
 * written as UP and a trailing slash after them kept. UP: "." for a copy (past a failed walk
 * a ".." would climb from wherever the tree has changed; "." still fails under a file), the
 * mount's up name for a mount (it climbs in the tree, never past its root). The new length
 * or -ENAMETOOLONG. */
ssize_t cfs_inroot_append(char *out, size_t n, const char *p, const char *end, const char *up);
/* LINK's target for a copy on disk, into OUT (RS_PATH_MAX bytes), for its name in directory
 * DIR (a hard-linked link has a name in each of several, and the same target may mean a
 * different place from each): as stored when it means the same there (see cfs_inroot_walk);
 * else the relative path from DIR to where its in-root walk from DIR leads, plus the rest.
 * The length, or -ENAMETOOLONG, -ENOMEM, -EINVAL (not a link). */
ssize_t cfs_inroot_target(const struct cfs_tree *t, struct rs_limits limits, uint32_t link,
			  uint32_t dir, char *out);
/* The path from directory FROM to node TO ("." when the same), into OUT (RS_PATH_MAX bytes).
 * Returns the length, or -ENAMETOOLONG. */
ssize_t cfs_relative_path(const struct cfs_tree *t, uint32_t from, uint32_t to, char *out);

#endif
