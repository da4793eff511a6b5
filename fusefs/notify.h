/* Kernel cache invalidations, queued by the loop thread and sent by a notifier thread. */
#ifndef CHAINFS_NOTIFY_H
#define CHAINFS_NOTIFY_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <stdint.h>

struct cfs_notifier;

struct cfs_notify_stats {
	uint64_t queued, sent, failed, lost;
	uint64_t deepest; /* longest the queue has been */
};

/* Start the thread (all signals blocked in it). 0 or -errno. */
int cfs_notifier_start(struct cfs_notifier **out, struct fuse_session *se);
/* Send what is queued, then stop and free. Call before the session is destroyed. */
void cfs_notifier_stop(struct cfs_notifier *n);

/* Queue an invalidation; never blocks on the kernel. N may be NULL (nothing to do). */
void cfs_notify_entry(struct cfs_notifier *n, fuse_ino_t parent, const char *name, size_t len);
void cfs_notify_inode(struct cfs_notifier *n, fuse_ino_t ino);

void cfs_notifier_stats(struct cfs_notifier *n, struct cfs_notify_stats *out);

#endif
