/*
 * The kernel's caches kept true to the tree, in one place. Whoever changes the tree (a FUSE
 * request, a control command, a spec line) never decides what the kernel must forget: the
 * tree records what each change touched (struct cfs_changes, tree.h) as it makes it, and
 * cfs_coherence_flush() turns that record into invalidations queued to the notifier. This
 * file is the only one that queues them.
 */
#ifndef CHAINFS_COHERENCE_H
#define CHAINFS_COHERENCE_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>

struct cfs_daemon;

enum { CFS_COVERED_MAX = 4 };

struct cfs_coherence {
	/* nodeids a request's reply already told the kernel about (cfs_coherence_covered) */
	fuse_ino_t covered[CFS_COVERED_MAX];
	unsigned ncovered;
	GArray *resolved; /* fuse_ino_t of kept listings that show resolved links */
};

/*
 * A FUSE request's reply tells the kernel about NODEID (the node it changed, or a directory
 * whose caches the kernel drops by itself after a create, remove or rename in it): this
 * request's invalidations leave that nodeid out. Saying it saves an invalidation; not saying
 * it costs one, never a stale answer.
 */
void cfs_coherence_covered(struct cfs_daemon *d, fuse_ino_t nodeid);

/*
 * After every request and every control command: what the tree recorded becomes
 * invalidations. Each node it names is dropped under every nodeid the kernel knows it by
 * (its own and server mode's paths through links), but for the covered ones; a change of
 * names also drops the answers that depend on where things are (cfs_coherence_names).
 */
void cfs_coherence_flush(struct cfs_daemon *d);

/* INO's attributes, dropped now, before the reply that must find them gone (see
 * cfs_notify_attrs_now): for a change a request makes that its reply does not carry. */
void cfs_coherence_attrs_now(struct cfs_daemon *d, fuse_ino_t ino);

/* A rename moved (PARENT, NAME) as the kernel names it: in server mode what a relative link
 * there means may have moved with it, so the kernel's entry goes. */
void cfs_coherence_moved(struct cfs_daemon *d, fuse_ino_t parent, const char *name, size_t len);

/* The mode or the limits changed: the kernel forgets every name and link body it holds,
 * and every listing (a link's kind depends on the mode). */
void cfs_coherence_everything(struct cfs_daemon *d);
/* Cold, for experiments: the kernel forgets every name, attribute, link body, listing and
 * page it holds for this mount, and asks again. */
void cfs_coherence_drop(struct cfs_daemon *d);

/* A listing of INO was served; KEPT: the kernel keeps listings (opens=skip). One that shows
 * links followed (server mode) or was reached through a link is dropped at the next change
 * of names, since no request the kernel sees tells it when it goes stale. */
void cfs_coherence_listing(struct cfs_daemon *d, fuse_ino_t ino, bool kept);

/* While fault rules stand (fault.c): INO's pages (data, listing, link body) were just
 * served and go again, so that the next read, readdir or readlink reaches the rules even
 * where the kernel keeps what it read (opens=skip, cache_symlinks). Queued: a syscall racing
 * the notifier may still be answered from the cache. */
void cfs_coherence_uncache(struct cfs_daemon *d, fuse_ino_t ino);
/* Free what the module kept (the session ended). */
void cfs_coherence_end(struct cfs_daemon *d);

#endif
