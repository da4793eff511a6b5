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
#include "links.h"
#include "notify.h"
#include "paths.h"

struct cfs_node_ctx {
	struct cfs_daemon *d;
	uint32_t node;
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

static void cfs_path_to_node(void *data, uint64_t parent, const char *name, size_t len,
			     uint64_t nodeid, uint32_t target)
{
	struct cfs_node_ctx *c = data;

	if (target == c->node && !cfs_is_covered(c->d, nodeid))
		cfs_notify_inode(c->d->notifier, nodeid);
}

/* NODE's attributes and pages, under every nodeid the kernel knows it by. */
static void cfs_node_everywhere(struct cfs_daemon *d, uint32_t node)
{
	if (!cfs_is_covered(d, node) && (node == CFS_ROOT || cfs_tree_refs(d->tree, node)))
		cfs_notify_inode(d->notifier, node);
	if (!d->paths || cfs_paths_count(d->paths) == 0)
		return;
	struct cfs_node_ctx c = {d, node};
	cfs_paths_each(d->paths, cfs_path_to_node, &c);
}

static void cfs_held_node(void *data, uint32_t id)
{
	cfs_node_everywhere(data, id);
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
	cfs_links_changed(d);
	if (d->opts.follow != CFS_FOLLOW_KERNEL && d->cache_symlinks)
		cfs_tree_each_referenced(d->tree, cfs_link_body, d);
	if (d->paths)
		cfs_paths_each(d->paths, cfs_path_entry, d);
}

void cfs_coherence_flush(struct cfs_daemon *d)
{
	struct cfs_changes *ch = &d->changes;

	if (ch->count || ch->overflow || ch->names) { /* most requests change nothing */
		if (ch->overflow)
			cfs_tree_each_referenced(d->tree, cfs_held_node, d);
		else
			for (unsigned i = 0; i < ch->count; i++)
				cfs_node_everywhere(d, ch->nodes[i]);
		if (ch->overflow)
			cfs_node_everywhere(d, CFS_ROOT); /* never counted, always held */
		if (ch->names)
			cfs_coherence_names(d);
		*ch = (struct cfs_changes){0};
	}
	d->coh.ncovered = 0;
}

void cfs_coherence_attrs_now(struct cfs_daemon *d, fuse_ino_t ino)
{
	cfs_notify_attrs_now(d->se, ino);
}

void cfs_coherence_moved(struct cfs_daemon *d, fuse_ino_t parent, const char *name, size_t len)
{
	if (d->opts.follow == CFS_FOLLOW_SERVER)
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

	if (!kept || (d->opts.follow != CFS_FOLLOW_SERVER && !cfs_is_path_id(ino)))
		return;
	if (!a)
		a = d->coh.resolved = g_array_new(FALSE, FALSE, sizeof(fuse_ino_t));
	/* a big directory comes in several READDIRs in a row */
	if (a->len && g_array_index(a, fuse_ino_t, a->len - 1) == ino)
		return;
	g_array_append_val(a, ino);
}

void cfs_coherence_end(struct cfs_daemon *d)
{
	if (d->coh.resolved)
		g_array_free(d->coh.resolved, TRUE);
	d->coh.resolved = NULL;
}
