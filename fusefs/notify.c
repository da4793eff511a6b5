/*
 * Cache invalidations, sent from a thread of their own.
 *
 * fuse_lowlevel_notify_inval_entry() makes the kernel take the directory's lock. If a LOOKUP
 * in that directory is waiting for our loop thread's reply while the same thread sits in the
 * notify call, neither can move: the kernel waits for the loop, the loop for the kernel. So the
 * loop only queues (never blocks, never waits for the thread) and this thread sends.
 */
#include "notify.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct cfs_inval {
	fuse_ino_t ino;   /* the directory for an entry, else the inode */
	char *name;       /* NULL: invalidate the inode */
	size_t len;
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
};

static int cfs_inval_send(struct fuse_session *se, const struct cfs_inval *iv)
{
	if (iv->name)
		return fuse_lowlevel_notify_inval_entry(se, iv->ino, iv->name, iv->len);
	return fuse_lowlevel_notify_inval_inode(se, iv->ino, 0, 0);
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
		pthread_mutex_unlock(&n->lock);
		/* -ENOENT: the kernel had nothing cached there; that is not a failure */
		int err = cfs_inval_send(n->se, &iv);
		free(iv.name);
		pthread_mutex_lock(&n->lock);
		n->stats.sent++;
		if (err && err != -ENOENT)
			n->stats.failed++;
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
	n->q[(n->head + n->count++) % n->cap] = (struct cfs_inval){ino, copy, len};
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

void cfs_notifier_stats(struct cfs_notifier *n, struct cfs_notify_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	*out = n->stats;
	pthread_mutex_unlock(&n->lock);
}
