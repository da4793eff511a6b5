/* Mounting and serving: the FUSE session on our pollcore loop (or libfuse's, to compare). */
#ifndef CHAINFS_SESSION_H
#define CHAINFS_SESSION_H

#include "daemon.h"

/* Mount D->opts.mountpoint and serve until unmounted or signalled. ARGS holds libfuse's
 * options. Returns the process exit status: 0 after a clean unmount, 1 when mounting failed,
 * 2 for options libfuse refused. */
int cfs_serve(struct cfs_daemon *d, struct fuse_args *args, int foreground);

#endif
