/*
 * Which mount a host path is on, as findmnt -T finds it, so that chainfsctl takes any path on
 * a chainfs mount for its MOUNTPOINT, and a host path on the mount for a path in its tree.
 */
#ifndef CHAINFS_CHAINFSCTL_MOUNT_H
#define CHAINFS_CHAINFSCTL_MOUNT_H

#include <stddef.h>

enum { CFS_FSTYPE_MAX = 64 }; /* a filesystem type's name, as mountinfo spells it */

/*
 * The mount PATH is on: the canonical path of PATH goes up to the longest mount point in
 * /proc/self/mountinfo that holds it (the topmost mount when several share it). *MNT gets
 * that mount point (g_free()) and TYPE its filesystem type ("fuse.chainfs"). 0, or -errno
 * (PATH's own, as realpath gives it).
 */
int cfs_mount_of(const char *path, char **mnt, char *type, size_t size);

/*
 * HOST, an absolute path, as a path in the tree of the mount at ROOT (a canonical mount
 * point): the first of HOST's leading parts (/, /a, /a/b, ...) that the host resolves to ROOT
 * or to a place on it is replaced by that place's path from ROOT, and the rest is kept as
 * it is, for the tree's walk to show. 1 with *TREE set (g_free()), or 0 when no leading part of
 * HOST leads onto the mount (*TREE is NULL). *HOST_PART, when not NULL, gets the
 * longest leading part that exists on the host (g_free()), for saying where HOST is instead.
 */
int cfs_tree_path_of(const char *root, const char *host, char **tree, char **host_part);

#endif
