/* What readlink answers in each follow mode, and the paths those answers are made of
 * (links.c). */
#ifndef CHAINFS_LINKS_H
#define CHAINFS_LINKS_H

#include "daemon.h"

/* Kernel mode: what readlink answers for LINK, into OUT (RS_PATH_MAX bytes): the target as
 * stored when it is relative without "..", else (absolute, or with a "..") the path through
 * the mountpoint of where its in-root walk leads, which holds no ".." (cfs_mount_path).
 * abslinks=raw: the target as stored. *dependent: the answer depends on other links or on
 * where LINK is, so cfs_links_note() it when it goes to the kernel. Length or -errno. */
ssize_t cfs_kernel_target(const struct cfs_daemon *d, uint32_t link, char *out, bool *dependent);
/* Server mode: does a walk that failed with ERR show its link as a link (a dangling link, a
 * loop, one past the limits or one CRED may not follow), rather than fail the lookup? */
bool cfs_shows_as_link(int err);
/* Collapse mode: the end of LINK's whole chain, walked for CRED (NULL: no permission checks),
 * as cfs_answer_path spells it, into OUT; the length, or the walk's -errno. */
ssize_t cfs_link_end(const struct cfs_daemon *d, const struct rs_cred *cred, uint32_t link,
		     char *out);
/* Server mode: what readlink answers for LINK, into OUT (RS_PATH_MAX bytes): when it resolves
 * (for CRED; NULL: no permission checks), the path to its end (cfs_answer_path); when broken
 * (cfs_shows_as_link), something the kernel's walk fails on with the same errno: the target
 * made safe (cfs_kernel_target's in-root answer), or for ELOOP the link's own path through
 * the mountpoint. Never a "..". The length, or -errno. */
ssize_t cfs_server_answer(const struct cfs_daemon *d, const struct rs_cred *cred, uint32_t link,
			  char *out);
/* Remember a link whose answer the kernel got and may keep; cfs_links_changed() (on every
 * namespace change) drops those answers from the kernel's caches and forgets them. */
void cfs_links_note(const struct cfs_daemon *d, uint32_t link);
void cfs_links_changed(struct cfs_daemon *d);
struct cfs_linkset *cfs_linkset_new(void);
void cfs_linkset_free(struct cfs_linkset *s);
/* NODE's absolute path through the mountpoint ("/mnt/a/b"; the mountpoint itself for the
 * root), into OUT (RS_PATH_MAX bytes): an answer the kernel walks down from the mount's root
 * without a "..", so it is the same from every name and cannot leave the mount. Returns the
 * length, or -ENAMETOOLONG. */
ssize_t cfs_mount_path(const struct cfs_daemon *d, uint32_t node, char *out);
/* What the kernel is handed to reach NODE from LINK (collapse and server modes): the path
 * down from LINK's directory when NODE lies below it and LINK has one name, else
 * cfs_mount_path. Never a "..". Returns the length, or -ENAMETOOLONG. */
ssize_t cfs_answer_path(const struct cfs_daemon *d, uint32_t link, uint32_t node, char *out);

#endif
