/* Kernel cache invalidations, queued by the loop thread and sent by a notifier thread. */
#ifndef CHAINFS_NOTIFY_H
#define CHAINFS_NOTIFY_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <stdbool.h>
#include <stdint.h>

struct cfs_notifier;

struct cfs_notify_stats {
	uint64_t queued, sent, failed;
	uint64_t lost;	  /* never queued (out of memory) or refused by the kernel */
	uint64_t stale;	  /* dropped: the kernel forgot the nodeid after it was queued */
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

/* INO's attributes only, sent now from the calling thread, so that a reply sent after it
 * finds the kernel's copy gone. Safe in the middle of a request: for a negative offset the
 * kernel takes no inode or page lock (fuse_reverse_inval_inode drops the attributes and
 * stops), so none of the waits the queue exists for can happen. 0 or -errno (-ENOENT: the
 * kernel holds no such inode, nothing was cached). */
int cfs_notify_attrs_now(struct fuse_session *se, fuse_ino_t ino);

/* The kernel forgot INO (its lookup count is back to 0): what is queued for it is dropped. */
void cfs_notify_forgotten(struct cfs_notifier *n, fuse_ino_t ino);

/*
 * Waiting for delivery without blocking. cfs_notify_ticket(): the sequence number of the last
 * invalidation queued so far (0 with none). cfs_notify_delivered(): true once every
 * invalidation up to TICKET was delivered (sent, or dropped as above), or the notifier is
 * stopping (the session ends). Else, with WAKE, cfs_notify_wake_fd(N, W) (an eventfd the loop
 * polls; read it to rearm) becomes readable once they are. Each waiter (control replies,
 * FUSE replies) has an eventfd of its own, so neither consumes the other's wake-up. N NULL:
 * nothing ever waits.
 */
enum cfs_notify_waiter { CFS_WAIT_CONTROL, CFS_WAIT_REPLIES, CFS_WAITERS };
uint64_t cfs_notify_ticket(struct cfs_notifier *n);
bool cfs_notify_delivered(struct cfs_notifier *n, enum cfs_notify_waiter w, uint64_t ticket,
			  bool wake);
int cfs_notify_wake_fd(const struct cfs_notifier *n, enum cfs_notify_waiter w);

/* Is an invalidation of one of INOS (a directory's entry or an inode) queued up to UPTO, or
 * being sent, and not yet delivered? A reply must not wait for the notifier when it may be
 * blocked on a lock the waiting caller holds (coherence.c). */
bool cfs_notify_pending_on(struct cfs_notifier *n, const fuse_ino_t *inos, unsigned count,
			   uint64_t upto);

void cfs_notifier_stats(struct cfs_notifier *n, struct cfs_notify_stats *out);

#endif
