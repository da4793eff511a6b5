/* nosuid and nodev on every chainfs mount, however it is started, unless asked otherwise;
 * and whether a directory is a mount point already. */
#ifndef CHAINFS_MOUNTFLAGS_H
#define CHAINFS_MOUNTFLAGS_H

#include <fuse_opt.h>

/* Append "-onosuid" and "-onodev" to ARGS (libfuse's options: the last word of a pair wins)
 * unless ARGV, chainfs's own command line, asks for "suid" or "dev" itself. The "dev" and
 * "suid" that mount.fuse3 adds to every option list it passes on do not count: they are not
 * the user's. Returns 0 or -ENOMEM. */
int cfs_mount_flags(struct fuse_args *args, int argc, char *argv[]);

/* 1 if PATH is a mount point already (so mounting there would hide it), 0 if not, -errno. */
int cfs_is_mountpoint(const char *path);

#endif
