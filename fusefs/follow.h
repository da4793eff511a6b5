/*
 * The follow modes (-o follow=, the control command `mode`, chainfs-sweep --modes): who follows
 * symlinks, and what that lets the kernel keep. One row each in cfs_follow_modes (follow.c);
 * what a link answers in each mode is links.c's.
 */
#ifndef CHAINFS_FOLLOW_H
#define CHAINFS_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>

enum cfs_follow {
	CFS_FOLLOW_KERNEL,   /* links are links; the kernel follows them (40 at most) */
	CFS_FOLLOW_COLLAPSE, /* readlink answers the whole chain's end: one kernel hop */
	CFS_FOLLOW_SERVER,   /* the daemon follows every link; a link shows as its target */
	CFS_FOLLOW_MODES
};

struct cfs_follow_mode {
	const char *name;
	/* -o entry_timeout and attr_timeout when not given: how long the kernel may keep names
	 * and attributes */
	double timeout;
	/* the kernel may keep link bodies (negotiated at INIT): an answer depends on the link
	 * alone, but for those coherence notes; else every answer may change with any name */
	bool keeps_links;
	/* the kernel may keep listings: they show links as links, not what they lead to */
	bool keeps_listings;
	/* a lookup follows links: a link shows as its target, and a path through a link gets a
	 * nodeid of its own (paths.h) */
	bool lookups_follow;
	/* chainfs follows chains itself, as far as -o max_nest and max_total let it (else the
	 * kernel does, 40 links a walk at most, and the limits bound only the in-root rewriting
	 * of targets) */
	bool daemon_follows;
};

extern const struct cfs_follow_mode cfs_follow_modes[CFS_FOLLOW_MODES];

/* The mode called NAME, or -1. */
int cfs_follow_of_name(const char *name);
/* Every mode's name, in order, SEP between them ("kernel|collapse|server"), into OUT
 * (CFS_FOLLOW_NAMES_MAX bytes, always enough). */
enum { CFS_FOLLOW_NAMES_MAX = 64 };
const char *cfs_follow_names(char *out, char sep);

#endif
