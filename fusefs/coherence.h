/*
 * The kernel's caches kept true to the tree, in one place. Whoever changes the tree (a FUSE
 * request, a control command, a spec line) never decides what the kernel must forget: the
 * tree records what each change touched (struct cfs_changes, tree.h) as it makes it, and
 * cfs_coherence_flush() turns that record into invalidations queued to the notifier. This
 * file is the only one that queues them.
 */
#ifndef CHAINFS_COHERENCE_H
#define CHAINFS_COHERENCE_H

#include <fuse_lowlevel.h>

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>

struct cfs_daemon;
struct cfs_held;

/* A rename covers both parents and both names' nodes; a request names at most two entries. */
enum { CFS_COVERED_MAX = 6, CFS_NAMED_MAX = 2, CFS_NAME_MAX = 255 };

struct cfs_named {
	fuse_ino_t parent; /* the nodeid the request came through */
	uint32_t dir;	   /* the tree directory it stands for */
	size_t len;
	char name[CFS_NAME_MAX + 1];
};

struct cfs_coherence {
	/* nodeids a request's reply already told the kernel about (cfs_coherence_covered) */
	fuse_ino_t covered[CFS_COVERED_MAX];
	unsigned ncovered;
	struct cfs_named named[CFS_NAMED_MAX]; /* the entries a request changes */
	unsigned nnamed;
	uint64_t wait;		/* the ticket this request's reply waits for (0: none) */
	bool can_hold;		/* the loop sends held replies (session.c) */
	struct cfs_held *held;	/* replies held for the notifier, oldest first */
	struct cfs_held **tail; /* where the next one goes */
	unsigned nheld;
	GArray *resolved; /* fuse_ino_t of kept listings that show resolved links */
	/* kernel mode: links whose answer the kernel got depends on where they are or on other
	 * links (cfs_coherence_answered); NULL outside a session */
	GHashTable *answered;
};

/*
 * A FUSE request's reply tells the kernel about NODEID (the node it changed, or a directory
 * whose caches the kernel drops by itself after a create, remove or rename in it): this
 * request's invalidations leave that nodeid out. Saying it saves an invalidation; not saying
 * it costs one, never a stale answer.
 */
void cfs_coherence_covered(struct cfs_daemon *d, fuse_ino_t nodeid);

/*
 * A FUSE request is about to add, remove or replace NAME under PARENT (before the change: the
 * node the kernel holds there is looked up now). The kernel updates its own entry at
 * (PARENT, NAME) and that node's attributes; the same name under every other nodeid of the
 * directory (its own, server mode's paths through links) is dropped at the flush.
 */
void cfs_coherence_named(struct cfs_daemon *d, fuse_ino_t parent, const char *name);

/*
 * After every request and every control command: what the tree recorded becomes
 * invalidations. Each node it names is dropped under every nodeid the kernel knows it by
 * (its own and server mode's paths through links), but for the covered ones; a change of
 * names also drops the answers that depend on where things are (cfs_coherence_names).
 */
void cfs_coherence_flush(struct cfs_daemon *d);

/*
 * A request's reply, after its flush: sent now, or held until the notifier has delivered the
 * invalidations the flush queued for other names of what the request changed, so that none
 * answers the old way once the caller has its answer. Held only where that cannot deadlock:
 * the invalidations it waits for never need a lock the caller holds (those go after the
 * reply), none queued before them does, fewer than CFS_HELD_MAX replies are held (a ring
 * queue has 8 entries: a held reply keeps one), and the loop can hold (can_hold). A held reply
 * also goes after CFS_HOLD_MS, for lock chains the daemon cannot see (README, Coherence).
 */
enum { CFS_HELD_MAX = 4, CFS_HOLD_MS = 100 };
void cfs_coherence_reply_err(struct cfs_daemon *d, fuse_req_t req);
void cfs_coherence_reply_write(struct cfs_daemon *d, fuse_req_t req, size_t count);
void cfs_coherence_reply_attr(struct cfs_daemon *d, fuse_req_t req, const struct stat *st,
			      double timeout);
/* The loop: send the held replies whose invalidations were delivered or that waited
 * CFS_HOLD_MS; ALL: every one (the session ends). How many are still held. */
unsigned cfs_coherence_send_held(struct cfs_daemon *d, bool all);

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
/* LINK's answer, handed to the kernel, depends on where LINK is or on other links (links.c):
 * it is dropped at the next change of names or of a directory's rights, and forgotten. */
void cfs_coherence_answered(const struct cfs_daemon *d, uint32_t link);

/* The session begins: what the module keeps across requests is made. */
void cfs_coherence_begin(struct cfs_daemon *d);
/* Free what the module kept (the session ended); again, it does nothing. */
void cfs_coherence_end(struct cfs_daemon *d);

#endif
