/* Where a mount's control socket lives, so that chainfsctl finds it from the mountpoint. */
#ifndef CHAINFS_CTLPATH_H
#define CHAINFS_CTLPATH_H

#include <stddef.h>

enum { CFS_SUN_PATH_MAX = 108 }; /* sizeof(sockaddr_un.sun_path) */

/*
 * The default socket for MOUNTPOINT: $XDG_RUNTIME_DIR/chainfs/, or /run/chainfs/ for root,
 * or /tmp/chainfs-UID/, then the mountpoint's base name (cut to 32 bytes) and a hash of its
 * canonical path, so long paths still fit in a socket address. With MAKE_DIR, makes the
 * directory (0700), and -EPERM (OUT set) if it is not a directory of ours closed to others.
 * 0, or -errno (-ENAMETOOLONG if it would not fit).
 */
int cfs_ctl_default_path(const char *mountpoint, char *out, size_t size, int make_dir);

#endif
