/*
 * Change records into kernel invalidations (coherence.h). What the kernel may hold, and so
 * what a change can make stale:
 *  - a node's attributes and pages (a file's data, a directory's listing), under its own
 *    nodeid and, in server mode, under every path nodeid that leads to it;
 *  - answers that depend on where things are: listings that show links followed, link
 *    bodies rewritten to stay in the mount (kernel mode), whole chains (collapse), entries
 *    reached through links (server mode); any change of names may move them.
 * A request's reply updates what it names (covered); everything else is dropped here.
 */
#include "coherence.h"
#include "daemon.h"
#include "notify.h"
#include "paths.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* At most this many attribute invalidations are sent from the loop per flush (one write to
 * /dev/fuse each); past it they are only queued, as the rest. */
enum { CFS_ATTRS_NOW_MAX = 32 };

struct cfs_node_ctx {
	struct cfs_daemon *d;
	uint32_t node;
	unsigned *now; /* attribute invalidations sent from the loop in this flush */
};

static bool cfs_is_covered(const struct cfs_daemon *d, fuse_ino_t nodeid)
{
	for (unsigned i = 0; i < d->coh.ncovered; i++)
		if (d->coh.covered[i] == nodeid)
			return true;
	return false;
}

void cfs_coherence_covered(struct cfs_daemon *d, fuse_ino_t nodeid)
{
	if (d->coh.ncovered < CFS_COVERED_MAX && !cfs_is_covered(d, nodeid))
		d->coh.covered[d->coh.ncovered++] = nodeid;
}

/* Server mode's nodeids alias tree nodes: is there any (a path nodeid the kernel holds)? */
static bool cfs_has_aliases(const struct cfs_daemon *d)
{
	return d->paths && cfs_paths_count(d->paths) > 0;
}

static uint32_t cfs_tree_node_of(const struct cfs_daemon *d, fuse_ino_t nodeid)
{
	return cfs_is_path_id(nodeid) ? cfs_paths_target(d->paths, nodeid) : (uint32_t)nodeid;
}

void cfs_coherence_named(struct cfs_daemon *d, fuse_ino_t parent, const char *name)
{
	size_t len = strlen(name);
	uint32_t dir = cfs_tree_node_of(d, parent), child;
	uint64_t victim = 0;

	if (!cfs_has_aliases(d) || d->coh.nnamed == CFS_NAMED_MAX || len > CFS_NAME_MAX)
		return;
	struct cfs_named *n = &d->coh.named[d->coh.nnamed++];
	n->parent = parent;
	n->dir = dir;
	n->len = len;
	memcpy(n->name, name, len + 1);
	/* the node the kernel holds at (PARENT, NAME): it locks it during the request, and
	 * updates it itself (link count) */
	victim = cfs_paths_find(d->paths, parent, name, len);
	if (!victim && cfs_tree_lookup(d->tree, dir, name, len, &child) == 0)
		victim = child;
	if (victim)
		cfs_coherence_covered(d, victim);
}

/* NODEID's attributes and pages: the attributes from the loop at once (no lock, see
 * cfs_notify_attrs_now), so even a reply that is not held finds them gone; the rest queued. */
static void cfs_drop_inode(struct cfs_daemon *d, fuse_ino_t nodeid, unsigned *now)
{
	if (now && *now < CFS_ATTRS_NOW_MAX) {
		(*now)++;
		cfs_notify_attrs_now(d->se, nodeid);
	}
	cfs_notify_inode(d->notifier, nodeid);
}

static void cfs_path_to_node(void *data, uint64_t parent, const char *name, size_t len,
			     uint64_t nodeid, uint32_t target)
{
	struct cfs_node_ctx *c = data;

	if (target == c->node && !cfs_is_covered(c->d, nodeid))
		cfs_drop_inode(c->d, nodeid, c->now);
}

/* NODE's attributes and pages, under every nodeid the kernel knows it by. */
static void cfs_node_everywhere(struct cfs_daemon *d, uint32_t node, unsigned *now)
{
	if (!cfs_is_covered(d, node) && (node == CFS_ROOT || cfs_tree_refs(d->tree, node)))
		cfs_drop_inode(d, node, now);
	if (!cfs_has_aliases(d))
		return;
	struct cfs_node_ctx c = {d, node, now};
	cfs_paths_each(d->paths, cfs_path_to_node, &c);
}

/* The entries a request changed, under every other nodeid of their directory: LOCKED says
 * which pass, those under a nodeid the caller holds locked (covered: the kernel locks the
 * request's directories and nodes) or the others. */
struct cfs_named_ctx {
	struct cfs_daemon *d;
	const struct cfs_named *n;
	bool locked;
};

static void cfs_named_alias(struct cfs_named_ctx *c, fuse_ino_t alias)
{
	if (alias == c->n->parent || cfs_is_covered(c->d, alias) != c->locked)
		return;
	cfs_notify_entry(c->d->notifier, alias, c->n->name, c->n->len);
}

static void cfs_path_to_dir(void *data, uint64_t parent, const char *name, size_t len,
			    uint64_t nodeid, uint32_t target)
{
	struct cfs_named_ctx *c = data;

	if (target == c->n->dir)
		cfs_named_alias(c, nodeid);
}

static void cfs_named_everywhere(struct cfs_daemon *d, bool locked)
{
	for (unsigned i = 0; i < d->coh.nnamed; i++) {
		struct cfs_named_ctx c = {d, &d->coh.named[i], locked};
		uint32_t dir = c.n->dir;
		if (dir == CFS_ROOT || cfs_tree_refs(d->tree, dir))
			cfs_named_alias(&c, dir);
		cfs_paths_each(d->paths, cfs_path_to_dir, &c);
	}
}

static void cfs_held_node(void *data, uint32_t id)
{
	cfs_node_everywhere(data, id, NULL);
}

/* Kept listings that show resolved links, or were reached through one: each listing served
 * costs at most one invalidation, as they are forgotten once sent. */
static void cfs_drop_resolved_listings(struct cfs_daemon *d)
{
	GArray *a = d->coh.resolved;

	for (guint i = 0; a && i < a->len; i++)
		cfs_notify_inode(d->notifier, g_array_index(a, fuse_ino_t, i));
	if (a)
		g_array_set_size(a, 0);
}

static void cfs_link_body(void *data, uint32_t id)
{
	struct cfs_daemon *d = data;

	if (cfs_tree_kind(d->tree, id) == RS_LINK)
		cfs_notify_inode(d->notifier, id);
}

static void cfs_path_entry(void *data, uint64_t parent, const char *name, size_t len,
			   uint64_t nodeid, uint32_t target)
{
	struct cfs_daemon *d = data;

	cfs_notify_entry(d->notifier, parent, name, len);
}

/* Kernel mode's answers noted as dependent (cfs_coherence_answered): dropped, and forgotten
 * until the kernel asks again. */
static void cfs_drop_answered_links(struct cfs_daemon *d)
{
	GHashTableIter it;
	gpointer id;

	if (!d->coh.answered || g_hash_table_size(d->coh.answered) == 0)
		return;
	g_hash_table_iter_init(&it, d->coh.answered);
	while (g_hash_table_iter_next(&it, &id, NULL))
		cfs_notify_inode(d->notifier, GPOINTER_TO_UINT(id));
	g_hash_table_remove_all(d->coh.answered);
}

/* A name was added, removed, replaced or moved: what may now resolve differently. */
static void cfs_coherence_names(struct cfs_daemon *d)
{
	/* Any mode: a kept listing that shows links followed, or was reached through one, may
	 * now be wrong, and the kernel saw no request in that directory. */
	cfs_drop_resolved_listings(d);
	/* Kernel mode: the kernel sees links as links and follows them itself, so the request
	 * it sent is all it needs to know, but for answers that depend on where a link is or
	 * on other links (targets rewritten to stay in the mount): those are dropped. Collapse
	 * and server modes: readlink's answer depends on every link of the chain (the chain's
	 * end; a broken link's safe target or own path), so bodies the kernel keeps (when the
	 * mount began in kernel mode and negotiated cached links) are dropped. Server mode: any
	 * path through a link may now end elsewhere; any mode: any path through an up name. */
	cfs_drop_answered_links(d);
	if (!cfs_follow_modes[d->opts.follow].keeps_links && d->cache_symlinks)
		cfs_tree_each_referenced(d->tree, cfs_link_body, d);
	if (d->paths)
		cfs_paths_each(d->paths, cfs_path_entry, d);
}

/* A path through a link, looked up again: LOCKED says which pass (cfs_named_ctx). */
struct cfs_path_ctx {
	struct cfs_daemon *d;
	bool locked;
};

static void cfs_path_entry_pass(void *data, uint64_t parent, const char *name, size_t len,
				uint64_t nodeid, uint32_t target)
{
	struct cfs_path_ctx *c = data;

	if (cfs_is_covered(c->d, parent) == c->locked)
		cfs_notify_entry(c->d->notifier, parent, name, len);
}

/* Server mode: a directory's mode or owner changed (no name did): who may walk through it
 * changed, so every path through a link is looked up again, as after a rename. */
static bool cfs_coherence_searchable(struct cfs_daemon *d, bool locked)
{
	const struct cfs_changes *ch = &d->changes;
	struct cfs_path_ctx c = {d, locked};

	if (!cfs_follow_modes[d->opts.follow].lookups_follow || !cfs_has_aliases(d) || ch->names)
		return false;
	for (unsigned i = 0; i < ch->count; i++)
		if (cfs_tree_kind(d->tree, ch->nodes[i]) == RS_DIR) {
			cfs_paths_each(d->paths, cfs_path_entry_pass, &c);
			return true;
		}
	return false;
}

/* A directory's mode or owner may have changed (a change of its own, no name's): what links
 * answer is computed with anyone's search rights (links.h), so every answer the kernel keeps
 * for a link may now differ, its size with it. Symlink inodes: no lock the caller holds. */
static void cfs_coherence_rights(struct cfs_daemon *d)
{
	const struct cfs_changes *ch = &d->changes;

	if (ch->names)
		return; /* cfs_coherence_names drops them */
	for (unsigned i = 0; i < ch->count || (ch->overflow && i == 0); i++)
		if (ch->overflow || cfs_tree_kind(d->tree, ch->nodes[i]) == RS_DIR) {
			cfs_drop_answered_links(d); /* kernel mode: those noted as dependent */
			if (!cfs_follow_modes[d->opts.follow].keeps_links)
				cfs_tree_each_referenced(d->tree, cfs_link_body, d);
			return;
		}
}

/*
 * Two passes. First what the reply waits for (cfs_coherence_wait): each changed node under
 * every nodeid, and each changed name under every other nodeid of its directory, but for
 * the nodeids the caller holds locked. Then what may go after the reply: the same name under
 * those locked nodeids (the notifier would wait for the caller's lock, the caller for the
 * reply), and the answers that depend on where things are.
 */
void cfs_coherence_flush(struct cfs_daemon *d)
{
	struct cfs_changes *ch = &d->changes;
	uint64_t before, ticket;
	unsigned now = 0;

	d->coh.wait = 0;
	if (ch->count || ch->overflow || ch->names) { /* most requests change nothing */
		before = cfs_notify_ticket(d->notifier);
		cfs_notify_lane(d->notifier, CFS_LANE_URGENT);
		if (ch->overflow)
			cfs_tree_each_referenced(d->tree, cfs_held_node, d);
		else
			for (unsigned i = 0; i < ch->count; i++)
				cfs_node_everywhere(d, ch->nodes[i], &now);
		if (ch->overflow)
			cfs_node_everywhere(d, CFS_ROOT, NULL); /* never counted, always held */
		if (ch->names)
			cfs_named_everywhere(d, false);
		cfs_coherence_searchable(d, false);
		cfs_coherence_rights(d);
		cfs_notify_lane(d->notifier, CFS_LANE_LAZY);
		ticket = cfs_notify_ticket(d->notifier);
		if (ch->names) {
			cfs_named_everywhere(d, true);
			cfs_coherence_names(d);
		}
		cfs_coherence_searchable(d, true);
		/* nothing queued before may wait for a lock the caller holds: a request that
		 * changed names holds directories' and nodes' locks, one that changed a node
		 * (write, truncate) also its pages */
		if (ticket != before && !cfs_notify_pending_on(d->notifier, d->coh.covered,
							       d->coh.ncovered, before, ch->names))
			d->coh.wait = ticket;
		*ch = (struct cfs_changes){0};
	}
	d->coh.ncovered = 0;
	d->coh.nnamed = 0;
}

enum cfs_held_kind { CFS_HELD_ERR, CFS_HELD_WRITE, CFS_HELD_ATTR };

struct cfs_held {
	fuse_req_t req;
	uint64_t ticket, since_ns;
	enum cfs_held_kind kind;
	size_t count;	/* CFS_HELD_WRITE */
	struct stat st; /* CFS_HELD_ATTR */
	double timeout;
	struct cfs_held *next;
};

static uint64_t cfs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cfs_held_send(const struct cfs_held *h)
{
	switch (h->kind) {
	case CFS_HELD_ERR:
		fuse_reply_err(h->req, 0);
		break;
	case CFS_HELD_WRITE:
		fuse_reply_write(h->req, h->count);
		break;
	case CFS_HELD_ATTR:
		fuse_reply_attr(h->req, &h->st, h->timeout);
		break;
	}
}

/* The ticket this request's reply waits for, 0 to send it now. */
static uint64_t cfs_coherence_wait(struct cfs_daemon *d)
{
	uint64_t t = d->coh.wait;

	d->coh.wait = 0;
	if (!t || !d->coh.can_hold || d->coh.nheld >= CFS_HELD_MAX ||
	    cfs_notify_delivered(d->notifier, CFS_WAIT_REPLIES, t, true))
		return 0;
	return t;
}

static void cfs_reply(struct cfs_daemon *d, struct cfs_held *h)
{
	h->ticket = cfs_coherence_wait(d);
	struct cfs_held *keep = h->ticket ? g_try_new(struct cfs_held, 1) : NULL;

	if (!keep) { /* nothing to wait for, or no memory to wait with */
		cfs_held_send(h);
		return;
	}
	*keep = *h;
	keep->since_ns = cfs_mono_ns();
	keep->next = NULL;
	if (!d->coh.held)
		d->coh.tail = &d->coh.held;
	*d->coh.tail = keep;
	d->coh.tail = &keep->next;
	d->coh.nheld++;
}

void cfs_coherence_reply_err(struct cfs_daemon *d, fuse_req_t req)
{
	cfs_reply(d, &(struct cfs_held){.req = req, .kind = CFS_HELD_ERR});
}

void cfs_coherence_reply_write(struct cfs_daemon *d, fuse_req_t req, size_t count)
{
	cfs_reply(d, &(struct cfs_held){.req = req, .kind = CFS_HELD_WRITE, .count = count});
}

void cfs_coherence_reply_attr(struct cfs_daemon *d, fuse_req_t req, const struct stat *st,
			      double timeout)
{
	cfs_reply(d, &(struct cfs_held){
			 .req = req, .kind = CFS_HELD_ATTR, .st = *st, .timeout = timeout});
}

unsigned cfs_coherence_send_held(struct cfs_daemon *d, bool all)
{
	uint64_t now = cfs_mono_ns();
	struct cfs_held **at = &d->coh.held;

	d->coh.tail = &d->coh.held;
	while (*at) {
		struct cfs_held *h = *at;
		/* those still waiting ask to be woken again */
		if (all || now - h->since_ns >= CFS_HOLD_MS * 1000000ull ||
		    cfs_notify_delivered(d->notifier, CFS_WAIT_REPLIES, h->ticket, true)) {
			*at = h->next;
			d->coh.nheld--;
			cfs_held_send(h);
			g_free(h);
		} else {
			at = &h->next;
			d->coh.tail = at;
		}
	}
	return d->coh.nheld;
}

void cfs_coherence_attrs_now(struct cfs_daemon *d, fuse_ino_t ino)
{
	cfs_notify_attrs_now(d->se, ino);
}

void cfs_coherence_moved(struct cfs_daemon *d, fuse_ino_t parent, const char *name, size_t len)
{
	if (cfs_follow_modes[d->opts.follow].lookups_follow)
		cfs_notify_entry(d->notifier, parent, name, len);
}

static void cfs_referenced_answer(void *data, uint32_t id)
{
	struct cfs_daemon *d = data;
	enum rs_kind kind = cfs_tree_kind(d->tree, id);
	const char *name;
	size_t len;

	if (kind == RS_DIR) {
		cfs_notify_inode(d->notifier, id); /* its cached listing */
	} else if (kind == RS_LINK) {
		cfs_tree_name(d->tree, id, &name, &len);
		cfs_notify_inode(d->notifier, id); /* its cached body */
		cfs_notify_entry(d->notifier, cfs_tree_parent(d->tree, id), name, len);
	}
}

static void cfs_path_everything(void *data, uint64_t parent, const char *name, size_t len,
				uint64_t nodeid, uint32_t target)
{
	struct cfs_daemon *d = data;

	cfs_notify_entry(d->notifier, parent, name, len);
	cfs_notify_inode(d->notifier, nodeid);
}

void cfs_coherence_everything(struct cfs_daemon *d)
{
	/* every listing is dropped below; this also forgets those noted as resolved */
	cfs_drop_resolved_listings(d);
	cfs_notify_inode(d->notifier, CFS_ROOT); /* never counted, always cached */
	cfs_tree_each_referenced(d->tree, cfs_referenced_answer, d);
	cfs_paths_each(d->paths, cfs_path_everything, d);
}

static void cfs_drop_node(void *data, uint32_t id)
{
	struct cfs_daemon *d = data;
	const char *name;
	size_t len;

	if (id != CFS_ROOT) { /* the name first: the kernel forgets the dentry and below */
		cfs_tree_name(d->tree, id, &name, &len);
		cfs_notify_entry(d->notifier, cfs_tree_parent(d->tree, id), name, len);
	}
	cfs_notify_inode(d->notifier, id);
}

void cfs_coherence_drop(struct cfs_daemon *d)
{
	cfs_paths_each(d->paths, cfs_path_everything, d);
	cfs_tree_each_referenced(d->tree, cfs_drop_node, d);
	cfs_notify_inode(d->notifier, CFS_ROOT); /* never counted, always cached */
}

void cfs_coherence_uncache(struct cfs_daemon *d, fuse_ino_t ino)
{
	cfs_notify_inode(d->notifier, ino);
}

void cfs_coherence_listing(struct cfs_daemon *d, fuse_ino_t ino, bool kept)
{
	GArray *a = d->coh.resolved;

	if (!kept || (cfs_follow_modes[d->opts.follow].keeps_listings && !cfs_is_path_id(ino)))
		return;
	if (!a)
		a = d->coh.resolved = g_array_new(FALSE, FALSE, sizeof(fuse_ino_t));
	/* a big directory comes in several READDIRs in a row */
	if (a->len && g_array_index(a, fuse_ino_t, a->len - 1) == ino)
		return;
	g_array_append_val(a, ino);
}

void cfs_coherence_answered(const struct cfs_daemon *d, uint32_t link)
{
	if (d->coh.answered)
		g_hash_table_add(d->coh.answered, GUINT_TO_POINTER(link));
}

void cfs_coherence_begin(struct cfs_daemon *d)
{
	d->coh.answered = g_hash_table_new(NULL, NULL); /* like GLib, aborts on OOM */
}

void cfs_coherence_end(struct cfs_daemon *d)
{
	if (d->coh.resolved)
		g_array_free(d->coh.resolved, TRUE);
	d->coh.resolved = NULL;
	if (d->coh.answered)
		g_hash_table_destroy(d->coh.answered);
	d->coh.answered = NULL;
}
