/* Kernel cache invalidations, queued by the loop thread and sent by a notifier thread. */
#ifndef CHAINFS_NOTIFY_H
#define CHAINFS_NOTIFY_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <stdbool.h>
#include <stdint.h>

struct cfs_notifier;

struct cfs_notify_stats {
	uint64_t queued, sent, failed, lost;
	uint64_t deepest; /* longest the queue has been */
};

/* Start the thread (all signals blocked in it). 0 or -errno. */
int cfs_notifier_start(struct cfs_notifier **out, struct fuse_session *se);
/* Ask the thread to stop after the invalidation it is sending (the rest of the queue is
 * dropped: the session is ending); cfs_notifier_done() says when it has. An invalidation can
 * wait in the kernel for a directory lock held by a caller whose request waits for us, so
 * the loop thread keeps answering requests until then (session.c). */
void cfs_notifier_stopping(struct cfs_notifier *n);
bool cfs_notifier_done(struct cfs_notifier *n);
/* Stop (see above), join and free. Call before the session is destroyed. */
void cfs_notifier_stop(struct cfs_notifier *n);

/* Queue an invalidation; never blocks on the kernel. N may be NULL (nothing to do). */
void cfs_notify_entry(struct cfs_notifier *n, fuse_ino_t parent, const char *name, size_t len);
void cfs_notify_inode(struct cfs_notifier *n, fuse_ino_t ino);

void cfs_notifier_stats(struct cfs_notifier *n, struct cfs_notify_stats *out);

#endif
