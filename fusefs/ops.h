/* Helpers shared by the FUSE operation files (ops.c reads, ops_write.c changes). */
#ifndef CHAINFS_OPS_H
#define CHAINFS_OPS_H

#include "daemon.h"

struct cfs_daemon *cfs_of(fuse_req_t req);
void cfs_count(struct cfs_daemon *d, enum cfs_op op);
/* What an opens=skip mount never sends (OPEN and FLUSH; OPENDIR), for fault rules to refuse:
 * assumed from the options before the mount, known from the kernel's answer at INIT. */
void cfs_faults_unsent_opens(struct cfs_daemon *d, bool open, bool opendir);
void cfs_reply_err(fuse_req_t req, int neg_errno);
/* A change's answer: ERR, or the change is done: the kernel drops its own caches of INO (the
 * unlinked name's parent, the node whose attributes changed), and the reply waits for the
 * invalidations of the other nodeids (cfs_coherence_reply_err). */
void cfs_reply_changed(fuse_req_t req, struct cfs_daemon *d, fuse_ino_t ino, int err);

/* How long the kernel may keep an answer (-o attr_timeout, entry_timeout): not at all while
 * any fault rule stands, for every node (not only matching ones: a rule's glob may match a
 * path through any name), so every syscall reaches the rules. */
double cfs_attr_timeout(const struct cfs_daemon *d);
double cfs_entry_timeout(const struct cfs_daemon *d);
/* An open's caching: KEEP (pages, and a directory's listing) as the caller decides, except
 * while fault rules stand: then direct I/O, nothing kept, so each read and listing reaches
 * them. An open made before the first rule keeps what it was given (coherence.c then drops
 * its pages after each read). */
void cfs_open_caching(const struct cfs_daemon *d, struct fuse_file_info *fi, bool dir, bool keep);

/* The tree node a nodeid stands for (0 if the nodeid is unknown). */
uint32_t cfs_node(const struct cfs_daemon *d, fuse_ino_t ino);

/* Attributes as the kernel must see them: tmpfs's directory sizes, a link's size equal to
 * what readlink answers when the kernel caches links. */
void cfs_stat(struct cfs_daemon *d, uint32_t node, struct stat *st);

/* Credentials of the caller, for the resolver's search-permission checks and set-id
 * rules; NULL for root, who may search everything and keeps set-id bits. */
struct cfs_cred {
	struct rs_cred cred;
	gid_t groups[64];
};
const struct rs_cred *cfs_req_cred(fuse_req_t req, const struct cfs_daemon *d, struct cfs_cred *c);

/*
 * The entry for NAME under PARENT whose tree entry is CHILD: with FOLLOW in server mode a
 * link is followed; paths through links get nodeids of their own. Fills E (nothing counted).
 */
int cfs_make_entry(fuse_req_t req, struct cfs_daemon *d, fuse_ino_t parent, const char *name,
		   size_t len, uint32_t child, bool follow, struct fuse_entry_param *e);
/* Send E and count the lookup only if the reply went out. */
void cfs_reply_entry(fuse_req_t req, struct cfs_daemon *d, const struct fuse_entry_param *e);
/* Count one lookup of E's nodeid (the reply carrying it was sent). */
void cfs_ref_entry(struct cfs_daemon *d, const struct fuse_entry_param *e);
/* Drop an uncounted path entry made for a reply that could not be sent. */
void cfs_drop_entry(struct cfs_daemon *d, const struct fuse_entry_param *e);

/* The handlers, one per row of CFS_OPS, each called once its request is counted (cfs_ops):
 * ops.c reads, ops_write.c changes (and opens, for O_TRUNC). */
#define CFS_LL_DECL(n, opcode, nofault, at, keeps, params, args) void cfs_ll_##n params;
CFS_OPS(CFS_LL_DECL)
#undef CFS_LL_DECL

#endif
