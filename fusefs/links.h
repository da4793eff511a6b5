/* What a link answers in each follow mode (readlink's answer; server mode's lookup), and the
 * paths those answers are made of (links.c). Every walk along a chain a request makes is made
 * here and counted once in `stats` (walks, links_followed, the walk latency), with the links it
 * followed; kernel mode's in-root rewriting of targets is not such a walk. */
#ifndef CHAINFS_LINKS_H
#define CHAINFS_LINKS_H

#include "daemon.h"

#include <string.h>

/* Kernel mode: what readlink answers for LINK, into OUT (RS_PATH_MAX bytes): the target as
 * stored when it is relative without "..", else (absolute, or with a "..") the way to where its
 * in-root walk leads (cfs_answer_path) plus the rest, which holds no "..".
 * abslinks=raw: the target as stored. *dependent: the answer depends on other links or on
 * where LINK is, so coherence must hear of it when it goes to the kernel. Length or -errno. */
ssize_t cfs_kernel_target(const struct cfs_daemon *d, uint32_t link, char *out, bool *dependent);
/* No user and no group: the rights of whoever asks, at the least (the "other" bits only). An
 * answer the kernel may keep and hand to every caller is computed with these. */
extern const struct rs_cred cfs_anyone;
/* Server mode: does a walk that failed with ERR show its link as a link (a dangling link, a
 * loop, one past the limits or one CRED may not follow), rather than fail the lookup? */
bool cfs_shows_as_link(int err);
/* The one home of what a link answers: readlink's answer for LINK in the mount's follow mode,
 * into OUT (RS_PATH_MAX bytes); its length is the link's st_size. Kernel mode: the target made
 * safe (cfs_kernel_target; no walk of the chain). Collapse: the chain's end as anyone reaches it
 * (walked with cfs_anyone: the kernel may keep the answer for every caller). Server: for CRED, who
 * asks only when the link shows to it as a link: the end, or when broken something the kernel's
 * walk fails on with the same errno (the safe target; for ELOOP the link's own name). Never a ".."
 * nor a host path. An answer that depends on where LINK is goes to cfs_coherence_answered(). Length
 * or -errno. */
ssize_t cfs_link_answer(struct cfs_daemon *d, const struct rs_cred *cred, uint32_t link, char *out);
/* Server mode's lookup of the link NAME (LEN bytes, at most RS_NAME_MAX) in DIR: the node its
 * chain ends at, walked for CRED, into *NODE. *PRIVATE: a caller with no rights at all would
 * be refused on the way (a directory it may not search), so the answer is this caller's
 * alone and the kernel, which shares its cache among callers, must not keep it; that second
 * walk is counted as private_checks, not as a walk. 0 or the walk's -errno. */
int cfs_link_lookup(struct cfs_daemon *d, const struct rs_cred *cred, uint32_t dir,
		    const char *name, size_t len, uint32_t *node, bool *private);
/* What the kernel is handed to reach NODE from where it finds LINK (every mode): down from
 * LINK's directory, climbing first with the up name where NODE is not below it; for a
 * hard-linked link, up to the root from the deepest of its names and down from there. Never
 * a ".." nor anything outside the mount. Returns the length, or -ENAMETOOLONG. */
ssize_t cfs_answer_path(const struct cfs_daemon *d, uint32_t link, uint32_t node, char *out);

/* The up name: every directory answers CFS_UP_NAME, which it never lists, with its parent (the
 * root with itself) under a nodeid of its own (paths.h), as server mode answers a path through
 * a link: a directory the kernel walks without spending a link of its 40, and whose ".."
 * leads back down, never out of the mount. */
static inline bool cfs_is_up_name(const char *name, size_t len)
{
	return len == sizeof(CFS_UP_NAME) - 1 && memcmp(name, CFS_UP_NAME, len) == 0;
}

#endif
