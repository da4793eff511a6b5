/*
 * Cache invalidations, sent from a thread of their own.
 *
 * fuse_lowlevel_notify_inval_entry() makes the kernel take the directory's lock. If a LOOKUP
 * in that directory is waiting for our loop thread's reply while the same thread sits in the
 * notify call, neither can move: the kernel waits for the loop, the loop for the kernel. So the
 * loop only queues (never blocks, never waits for the threads) and the threads send.
 *
 * Two queues, each with its thread (notify.h): a reply held for the urgent queue is never
 * kept waiting behind an invalidation that waits for its caller's lock in the lazy one.
 * Every queued invalidation gets a sequence number (1, 2, ...), one count for both queues.
 * The loop may ask to be woken (an eventfd per waiter that it polls) once all up to some
 * number were delivered: control replies and held FUSE replies wait so.
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

/* One queue and the thread that sends it (see the top of the file). */
struct cfs_lane {
	struct cfs_notifier *n;
	pthread_t thread;
	pthread_cond_t wake;
	struct cfs_inval *q; /* ring of cap entries, in sequence order */
	size_t head, count, cap;
	struct cfs_inval sending; /* ino 0: none */
	bool started, done;	  /* done: the thread has left its loop */
};

struct cfs_notifier {
	struct fuse_session *se;
	pthread_mutex_t lock;
	struct cfs_lane lanes[CFS_LANES];
	enum cfs_notify_lane lane; /* where the loop queues now (only the loop reads it) */
	bool stopping;
	struct cfs_notify_stats stats;
	uint64_t seq; /* the last sequence number given */
	/* per waiter: write wake_fd once what it waits for up to wake_at was delivered */
	uint64_t wake_at[CFS_WAITERS];
	int wake_fd[CFS_WAITERS];
	GHashTable *gone; /* nodeid -> the first seq queued after the kernel forgot it */
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

/* Every invalidation of LANE up to TICKET sent or dropped? Called with the lock held. */
static bool cfs_lane_caught_up(const struct cfs_lane *l, uint64_t ticket)
{
	if (l->sending.ino && l->sending.seq <= ticket)
		return false;
	return !l->count || l->q[l->head].seq > ticket; /* the head is the lane's oldest */
}

/* What waiter W waits for: control replies everything queued, FUSE replies the urgent lane
 * (the lazy one may wait for a lock their callers hold). Called with the lock held. */
static bool cfs_caught_up(const struct cfs_notifier *n, enum cfs_notify_waiter w, uint64_t ticket)
{
	if (n->stopping) /* the rest of the queue goes with the session: nobody waits */
		return true;
	if (!cfs_lane_caught_up(&n->lanes[CFS_LANE_URGENT], ticket))
		return false;
	return w == CFS_WAIT_REPLIES || cfs_lane_caught_up(&n->lanes[CFS_LANE_LAZY], ticket);
}

/* Called with the lock held, after an entry was handled. */
static void cfs_delivered(struct cfs_notifier *n)
{
	bool idle = true;

	for (int i = 0; i < CFS_LANES; i++)
		idle = idle && !n->lanes[i].count && !n->lanes[i].sending.ino;
	if (idle)
		g_hash_table_remove_all(n->gone); /* nothing older is left to drop */
	for (int w = 0; w < CFS_WAITERS; w++) {
		uint64_t one = 1;
		if (!n->wake_at[w] || !cfs_caught_up(n, w, n->wake_at[w]))
			continue;
		n->wake_at[w] = 0;
		if (write(n->wake_fd[w], &one, sizeof(one)) < 0)
			n->stats.failed++; /* cannot happen with an eventfd below 2^64 - 1 */
	}
}

static void *cfs_lane_main(void *arg)
{
	struct cfs_lane *l = arg;
	struct cfs_notifier *n = l->n;

	pthread_mutex_lock(&n->lock);
	for (;;) {
		while (!l->count && !n->stopping)
			pthread_cond_wait(&l->wake, &n->lock);
		/* at the end of the session what is still queued goes with the kernel's caches */
		if (n->stopping)
			break;
		struct cfs_inval iv = l->q[l->head];
		l->head = (l->head + 1) % l->cap;
		l->count--;
		int err = 0;
		bool stale = cfs_inval_stale(n, &iv);
		if (!stale) {
			l->sending = iv;
			pthread_mutex_unlock(&n->lock);
			err = cfs_inval_send(n->se, &iv);
			pthread_mutex_lock(&n->lock);
			l->sending.ino = 0;
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
		cfs_delivered(n);
	}
	l->done = true;
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

/* Free what start made; the threads, if any, have been joined. */
static void cfs_notifier_free(struct cfs_notifier *n)
{
	for (int i = 0; i < CFS_LANES; i++) {
		struct cfs_lane *l = &n->lanes[i];
		for (; l->count; l->count--, l->head = (l->head + 1) % l->cap)
			free(l->q[l->head].name);
		free(l->q);
		pthread_cond_destroy(&l->wake);
	}
	pthread_mutex_destroy(&n->lock);
	g_hash_table_destroy(n->gone);
	for (int w = 0; w < CFS_WAITERS; w++)
		if (n->wake_fd[w] >= 0)
			close(n->wake_fd[w]);
	free(n);
}

static void cfs_notifier_join(struct cfs_notifier *n)
{
	for (int i = 0; i < CFS_LANES; i++)
		if (n->lanes[i].started)
			pthread_join(n->lanes[i].thread, NULL);
}

int cfs_notifier_start(struct cfs_notifier **out, struct fuse_session *se)
{
	struct cfs_notifier *n = calloc(1, sizeof(*n));
	sigset_t all, old;
	int err = 0;

	if (!n)
		return -ENOMEM;
	n->se = se;
	n->lane = CFS_LANE_LAZY;
	n->gone = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	pthread_mutex_init(&n->lock, NULL);
	for (int i = 0; i < CFS_LANES; i++) {
		n->lanes[i].n = n;
		pthread_cond_init(&n->lanes[i].wake, NULL);
	}
	for (int w = 0; w < CFS_WAITERS; w++)
		n->wake_fd[w] = -1;
	for (int w = 0; !err && w < CFS_WAITERS; w++) {
		n->wake_fd[w] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (n->wake_fd[w] < 0)
			err = -errno;
	}
	/* Signals belong to the loop's signalfd: the threads must never take one. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; !err && i < CFS_LANES; i++) {
		err = -pthread_create(&n->lanes[i].thread, NULL, cfs_lane_main, &n->lanes[i]);
		n->lanes[i].started = !err;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		cfs_notifier_stopping(n);
		cfs_notifier_join(n);
		cfs_notifier_free(n);
		return err;
	}
	*out = n;
	return 0;
}

void cfs_notifier_stopping(struct cfs_notifier *n)
{
	pthread_mutex_lock(&n->lock);
	n->stopping = true;
	for (int i = 0; i < CFS_LANES; i++)
		pthread_cond_signal(&n->lanes[i].wake);
	pthread_mutex_unlock(&n->lock);
}

bool cfs_notifier_done(struct cfs_notifier *n)
{
	bool done = true;

	pthread_mutex_lock(&n->lock);
	for (int i = 0; i < CFS_LANES; i++)
		done = done && (n->lanes[i].done || !n->lanes[i].started);
	pthread_mutex_unlock(&n->lock);
	return done;
}

void cfs_notifier_stop(struct cfs_notifier *n)
{
	if (!n)
		return;
	cfs_notifier_stopping(n);
	cfs_notifier_join(n);
	cfs_notifier_free(n);
}

void cfs_notify_lane(struct cfs_notifier *n, enum cfs_notify_lane lane)
{
	if (n)
		n->lane = lane;
}

/* Called with the lock held. */
static int cfs_queue_grow(struct cfs_lane *l)
{
	size_t cap = l->cap ? l->cap * 2 : 64;
	struct cfs_inval *q = malloc(cap * sizeof(*q));

	if (!q)
		return -ENOMEM;
	for (size_t i = 0; i < l->count; i++)
		q[i] = l->q[(l->head + i) % l->cap];
	free(l->q);
	l->q = q;
	l->head = 0;
	l->cap = cap;
	return 0;
}

static void cfs_enqueue(struct cfs_notifier *n, fuse_ino_t ino, const char *name, size_t len)
{
	struct cfs_lane *l = &n->lanes[n->lane];
	char *copy = NULL;

	if (name && !(copy = strndup(name, len)))
		goto lost;
	pthread_mutex_lock(&n->lock);
	if (l->count == l->cap && cfs_queue_grow(l)) {
		pthread_mutex_unlock(&n->lock);
		free(copy);
		goto lost;
	}
	l->q[(l->head + l->count++) % l->cap] = (struct cfs_inval){ino, copy, len, ++n->seq};
	n->stats.queued++;
	if (l->count > n->stats.deepest)
		n->stats.deepest = l->count;
	pthread_cond_signal(&l->wake);
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
	if (n->lanes[CFS_LANE_URGENT].count || n->lanes[CFS_LANE_LAZY].count) {
		/* else nothing queued names it */
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
	bool done = cfs_caught_up(n, w, ticket);
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

/* Does IV need a lock one of INOS stands for? */
static bool cfs_inval_on(const struct cfs_inval *iv, const fuse_ino_t *inos, unsigned count,
			 bool entries_only)
{
	return iv->ino && (iv->name || !entries_only) && cfs_ino_in(iv->ino, inos, count);
}

bool cfs_notify_pending_on(struct cfs_notifier *n, const fuse_ino_t *inos, unsigned count,
			   uint64_t upto, bool entries_only)
{
	const struct cfs_lane *l = n ? &n->lanes[CFS_LANE_URGENT] : NULL;
	bool found = false;

	if (!n || !count)
		return false;
	pthread_mutex_lock(&n->lock);
	found = cfs_inval_on(&l->sending, inos, count, entries_only);
	for (size_t i = 0; !found && i < l->count; i++) {
		const struct cfs_inval *iv = &l->q[(l->head + i) % l->cap];
		if (iv->seq > upto)
			break; /* in sequence order */
		found = cfs_inval_on(iv, inos, count, entries_only);
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
