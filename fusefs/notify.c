/*
 * Cache invalidations, sent from a thread of their own.
 *
 * fuse_lowlevel_notify_inval_entry() makes the kernel take the directory's lock. If a LOOKUP
 * in that directory is waiting for our loop thread's reply while the same thread sits in the
 * notify call, neither can move: the kernel waits for the loop, the loop for the kernel. So the
 * loop only queues (never blocks, never waits for the thread) and this thread sends.
 *
 * Every queued invalidation gets a sequence number (1, 2, ...). The loop may ask to be woken
 * (an eventfd it polls) once all up to some number were delivered: control replies wait so.
 * A queue can hold hundreds of thousands of entries (a mode change invalidates every path
 * nodeid). Meanwhile the kernel forgets nodeids and the loop hands them out again, maybe as
 * another kind: an entry queued before the kernel forgot its nodeid is dropped, not sent to
 * whatever the nodeid names now (the kernel would refuse an entry under a file, ENOTDIR).
 */
#include "notify.h"

#include <errno.h>
#include <glib.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct cfs_inval {
	fuse_ino_t ino; /* the directory for an entry, else the inode */
	char *name;	/* NULL: invalidate the inode */
	size_t len;
	uint64_t seq;
};

struct cfs_notifier {
	struct fuse_session *se;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct cfs_inval *q; /* ring of cap entries */
	size_t head, count, cap;
	bool stopping;
	bool done; /* the thread has left its loop */
	struct cfs_notify_stats stats;
	uint64_t seq;	    /* the last sequence number given */
	uint64_t delivered; /* every entry up to this one was sent or dropped */
	/* per waiter: write wake_fd once delivered reaches wake_at (0: nobody waits) */
	uint64_t wake_at[CFS_WAITERS];
	int wake_fd[CFS_WAITERS];
	fuse_ino_t sending; /* the nodeid of the invalidation being sent (0: none) */
	GHashTable *gone;   /* nodeid -> the first seq queued after the kernel forgot it */
};

static int cfs_inval_send(struct fuse_session *se, const struct cfs_inval *iv)
{
	if (iv->name)
		return fuse_lowlevel_notify_inval_entry(se, iv->ino, iv->name, iv->len);
	return fuse_lowlevel_notify_inval_inode(se, iv->ino, 0, 0);
}

int cfs_notify_attrs_now(struct fuse_session *se, fuse_ino_t ino)
{
	return se ? fuse_lowlevel_notify_inval_inode(se, ino, -1, 0) : 0;
}

/* Queued before the kernel forgot the nodeid it names? Called with the lock held. */
static bool cfs_inval_stale(struct cfs_notifier *n, const struct cfs_inval *iv)
{
	gpointer since;

	return g_hash_table_lookup_extended(n->gone, &iv->ino, NULL, &since) &&
	       iv->seq < *(const uint64_t *)since;
}

/* Called with the lock held, after the entry SEQ was handled. */
static void cfs_delivered(struct cfs_notifier *n, uint64_t seq)
{
	n->delivered = seq;
	if (!n->count)
		g_hash_table_remove_all(n->gone); /* nothing older is left to drop */
	for (int w = 0; w < CFS_WAITERS; w++) {
		uint64_t one = 1;
		if (!n->wake_at[w] || n->delivered < n->wake_at[w])
			continue;
		n->wake_at[w] = 0;
		if (write(n->wake_fd[w], &one, sizeof(one)) < 0)
			n->stats.failed++; /* cannot happen with an eventfd below 2^64 - 1 */
	}
}

static void *cfs_notifier_main(void *arg)
{
	struct cfs_notifier *n = arg;

	pthread_mutex_lock(&n->lock);
	for (;;) {
		while (!n->count && !n->stopping)
			pthread_cond_wait(&n->wake, &n->lock);
		/* at the end of the session what is still queued goes with the kernel's caches */
		if (n->stopping)
			break;
		struct cfs_inval iv = n->q[n->head];
		n->head = (n->head + 1) % n->cap;
		n->count--;
		int err = 0;
		bool stale = cfs_inval_stale(n, &iv);
		if (!stale) {
			n->sending = iv.ino;
			pthread_mutex_unlock(&n->lock);
			err = cfs_inval_send(n->se, &iv);
			pthread_mutex_lock(&n->lock);
			n->sending = 0;
		}
		free(iv.name);
		if (stale)
			n->stats.stale++;
		else
			n->stats.sent++;
		/* -ENOENT: the kernel had nothing cached there; that is not a failure. Any other
		 * error leaves something cached that should not be: lost. */
		if (err && err != -ENOENT) {
			n->stats.failed++;
			n->stats.lost++;
		}
		cfs_delivered(n, iv.seq);
	}
	n->done = true;
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

int cfs_notifier_start(struct cfs_notifier **out, struct fuse_session *se)
{
	struct cfs_notifier *n = calloc(1, sizeof(*n));
	sigset_t all, old;
	int err;

	if (!n)
		return -ENOMEM;
	n->se = se;
	for (int w = 0; w < CFS_WAITERS; w++) {
		n->wake_fd[w] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (n->wake_fd[w] < 0) {
			err = -errno;
			while (w--)
				close(n->wake_fd[w]);
			free(n);
			return err;
		}
	}
	n->gone = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->wake, NULL);
	/* Signals belong to the loop's signalfd: the thread must never take one. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = -pthread_create(&n->thread, NULL, cfs_notifier_main, n);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_cond_destroy(&n->wake);
		pthread_mutex_destroy(&n->lock);
		g_hash_table_destroy(n->gone);
		for (int w = 0; w < CFS_WAITERS; w++)
			close(n->wake_fd[w]);
		free(n);
		return err;
	}
	*out = n;
	return 0;
}

void cfs_notifier_stopping(struct cfs_notifier *n)
{
	pthread_mutex_lock(&n->lock);
	n->stopping = true;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
}

bool cfs_notifier_done(struct cfs_notifier *n)
{
	pthread_mutex_lock(&n->lock);
	bool done = n->done;
	pthread_mutex_unlock(&n->lock);
	return done;
}

void cfs_notifier_stop(struct cfs_notifier *n)
{
	if (!n)
		return;
	cfs_notifier_stopping(n);
	pthread_join(n->thread, NULL);
	for (; n->count; n->count--, n->head = (n->head + 1) % n->cap)
		free(n->q[n->head].name);
	free(n->q);
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	g_hash_table_destroy(n->gone);
	for (int w = 0; w < CFS_WAITERS; w++)
		close(n->wake_fd[w]);
	free(n);
}

/* Called with the lock held. */
static int cfs_queue_grow(struct cfs_notifier *n)
{
	size_t cap = n->cap ? n->cap * 2 : 64;
	struct cfs_inval *q = malloc(cap * sizeof(*q));

	if (!q)
		return -ENOMEM;
	for (size_t i = 0; i < n->count; i++)
		q[i] = n->q[(n->head + i) % n->cap];
	free(n->q);
	n->q = q;
	n->head = 0;
	n->cap = cap;
	return 0;
}

static void cfs_enqueue(struct cfs_notifier *n, fuse_ino_t ino, const char *name, size_t len)
{
	char *copy = NULL;

	if (name && !(copy = strndup(name, len)))
		goto lost;
	pthread_mutex_lock(&n->lock);
	if (n->count == n->cap && cfs_queue_grow(n)) {
		pthread_mutex_unlock(&n->lock);
		free(copy);
		goto lost;
	}
	n->q[(n->head + n->count++) % n->cap] = (struct cfs_inval){ino, copy, len, ++n->seq};
	n->stats.queued++;
	if (n->count > n->stats.deepest)
		n->stats.deepest = n->count;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
	return;
lost:
	/* out of memory: the kernel keeps that entry until its timeout */
	__atomic_fetch_add(&n->stats.lost, 1, __ATOMIC_RELAXED);
}

void cfs_notify_entry(struct cfs_notifier *n, fuse_ino_t parent, const char *name, size_t len)
{
	if (n)
		cfs_enqueue(n, parent, name, len);
}

void cfs_notify_inode(struct cfs_notifier *n, fuse_ino_t ino)
{
	if (n)
		cfs_enqueue(n, ino, NULL, 0);
}

void cfs_notify_forgotten(struct cfs_notifier *n, fuse_ino_t ino)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	if (n->count) { /* else nothing queued names it */
		uint64_t *key = g_new(uint64_t, 1), *since = g_new(uint64_t, 1);
		*key = ino;
		*since = n->seq + 1;
		g_hash_table_replace(n->gone, key, since);
	}
	pthread_mutex_unlock(&n->lock);
}

uint64_t cfs_notify_ticket(struct cfs_notifier *n)
{
	if (!n)
		return 0;
	pthread_mutex_lock(&n->lock);
	uint64_t seq = n->seq;
	pthread_mutex_unlock(&n->lock);
	return seq;
}

bool cfs_notify_delivered(struct cfs_notifier *n, enum cfs_notify_waiter w, uint64_t ticket,
			  bool wake)
{
	if (!n)
		return true;
	pthread_mutex_lock(&n->lock);
	/* stopping: the rest of the queue goes with the session, nobody is left to wait for */
	bool done = n->delivered >= ticket || n->stopping;
	if (!done && wake && (!n->wake_at[w] || ticket < n->wake_at[w]))
		n->wake_at[w] = ticket;
	pthread_mutex_unlock(&n->lock);
	return done;
}

int cfs_notify_wake_fd(const struct cfs_notifier *n, enum cfs_notify_waiter w)
{
	return n ? n->wake_fd[w] : -1;
}

static bool cfs_ino_in(fuse_ino_t ino, const fuse_ino_t *inos, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		if (inos[i] == ino)
			return true;
	return false;
}

bool cfs_notify_pending_on(struct cfs_notifier *n, const fuse_ino_t *inos, unsigned count,
			   uint64_t upto)
{
	bool found = false;

	if (!n || !count)
		return false;
	pthread_mutex_lock(&n->lock);
	found = n->sending && cfs_ino_in(n->sending, inos, count);
	for (size_t i = 0; !found && i < n->count; i++) {
		const struct cfs_inval *iv = &n->q[(n->head + i) % n->cap];
		if (iv->seq > upto)
			break; /* in sequence order */
		found = cfs_ino_in(iv->ino, inos, count);
	}
	pthread_mutex_unlock(&n->lock);
	return found;
}

void cfs_notifier_stats(struct cfs_notifier *n, struct cfs_notify_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	*out = n->stats;
	pthread_mutex_unlock(&n->lock);
}
