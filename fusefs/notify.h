/* Kernel cache invalidations, queued by the loop thread and sent by a notifier thread. */
#ifndef CHAINFS_NOTIFY_H
#define CHAINFS_NOTIFY_H

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

/* Start the threads (all signals blocked in them). 0 or -errno. */
int cfs_notifier_start(struct cfs_notifier **out, struct fuse_session *se);
/* Ask the threads to stop after the invalidation each is sending (the rest of the queue is
 * dropped: the session is ending); cfs_notifier_done() says when they have. An invalidation can
 * wait in the kernel for a directory lock held by a caller whose request waits for us, so
 * the loop thread keeps answering requests until then (gate.c, cfs_drain_notifier). */
void cfs_notifier_stopping(struct cfs_notifier *n);
bool cfs_notifier_done(struct cfs_notifier *n);
/* Stop (see above), join and free. Call before the session is destroyed. */
void cfs_notifier_stop(struct cfs_notifier *n);

/*
 * Two queues, each sent by a thread of its own. URGENT: what replies held for the notifier
 * wait for (coherence.c puts there only what needs no lock their callers hold). LAZY: the
 * rest, which may wait in the kernel for such a lock until the reply goes; a thread blocked
 * there must not keep the urgent queue from moving. The loop picks the queue for what it
 * queues next (LAZY unless told).
 */
enum cfs_notify_lane { CFS_LANE_URGENT, CFS_LANE_LAZY, CFS_LANES };
void cfs_notify_lane(struct cfs_notifier *n, enum cfs_notify_lane lane);

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
 * invalidation queued so far, in either queue (0 with none). cfs_notify_delivered(): true
 * once every invalidation up to TICKET was delivered (sent, or dropped as above), of both
 * queues for control replies, of the urgent one for FUSE replies, or the notifier is
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

/* Is an urgent invalidation of one of INOS queued up to UPTO, or being sent? A reply must
 * not wait for the urgent queue when its thread may be blocked on a lock the waiting caller
 * holds (coherence.c). An entry's invalidation takes the directory's lock; an inode's, only
 * the locks of its pages, which none but a write holds during its request: ENTRIES_ONLY
 * leaves inodes out. */
bool cfs_notify_pending_on(struct cfs_notifier *n, const fuse_ino_t *inos, unsigned count,
			   uint64_t upto, bool entries_only);

void cfs_notifier_stats(struct cfs_notifier *n, struct cfs_notify_stats *out);

#endif
