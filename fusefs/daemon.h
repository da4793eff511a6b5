/*
 * The chainfs daemon: one loop thread owns the tree, the FUSE session and the control
 * socket. This header is shared by the daemon's own files only.
 */
#ifndef CHAINFS_DAEMON_H
#define CHAINFS_DAEMON_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "coherence.h"
#include "inroot.h"
#include "latency.h"
#include "rs.h"
#include "tree.h"

#include <linux/fuse.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct cfs_paths;
struct cfs_notifier;
struct cfs_faults;
struct cfs_linkset;

#define CFS_VERSION "0.1.0"

enum cfs_follow {
	CFS_FOLLOW_KERNEL,   /* links are links; the kernel follows them (40 at most) */
	CFS_FOLLOW_COLLAPSE, /* readlink answers the whole chain's end: one kernel hop */
	CFS_FOLLOW_SERVER,   /* the daemon follows every link; a link shows as its target */
};

enum cfs_loop_kind {
	CFS_LOOP_POLLCORE, /* our dispatcher (the default) */
	CFS_LOOP_LIBFUSE,  /* fuse_session_loop, kept for comparison */
	CFS_LOOP_LIBFUSE_MT,
};

/* -o spin: long enough to cover a walker's wake-up on a VM whose idle vCPUs halt (bench/README.md
 * has the measurements), short enough that an idle daemon costs nothing: it spins only after
 * work, at most this long. */
enum { CFS_SPIN_DEFAULT_US = 50 };

struct cfs_opts {
	enum cfs_follow follow;
	enum cfs_loop_kind loop;
	uint32_t spin_us;     /* pollcore's busy-poll window (pc_loop_set_spin) */
	struct rs_limits limits;
	double entry_timeout; /* < 0: chosen per mode */
	double attr_timeout;
	bool abslinks_raw;    /* kernel mode: readlink returns absolute targets as stored */
	uint64_t max_data;    /* file data the tree may hold (-o max_data) */
	const char *spec;     /* NULL: the embedded default tree */
	const char *mountpoint;
	const char *ctl_path; /* control socket; NULL: derived from the mountpoint */
};

/* The requests we count, for `stats`: X(name, the kernel's opcode). FUSE_RENAME is counted
 * as rename and FUSE_FSYNCDIR as fsync (cfs_op_of_opcode). */
#define CFS_OPS(X)                                                                          \
	X(init, FUSE_INIT) X(lookup, FUSE_LOOKUP) X(forget, FUSE_FORGET)                    \
	X(forget_multi, FUSE_BATCH_FORGET) X(getattr, FUSE_GETATTR) X(setattr, FUSE_SETATTR) \
	X(readlink, FUSE_READLINK) X(mknod, FUSE_MKNOD) X(mkdir, FUSE_MKDIR)                \
	X(unlink, FUSE_UNLINK) X(rmdir, FUSE_RMDIR) X(symlink, FUSE_SYMLINK)                \
	X(rename, FUSE_RENAME2) X(link, FUSE_LINK) X(open, FUSE_OPEN) X(read, FUSE_READ)    \
	X(write, FUSE_WRITE) X(flush, FUSE_FLUSH) X(release, FUSE_RELEASE)                  \
	X(fsync, FUSE_FSYNC) X(opendir, FUSE_OPENDIR) X(readdir, FUSE_READDIR)              \
	X(readdirplus, FUSE_READDIRPLUS) X(releasedir, FUSE_RELEASEDIR)                     \
	X(statfs, FUSE_STATFS) X(access, FUSE_ACCESS) X(create, FUSE_CREATE)                \
	X(getxattr, FUSE_GETXATTR) X(listxattr, FUSE_LISTXATTR)

#define CFS_OP_ENUM(n, opcode) CFS_OP_##n,
enum cfs_op { CFS_OPS(CFS_OP_ENUM) CFS_OP_MAX };
#undef CFS_OP_ENUM

/* The op of a kernel opcode; CFS_OP_MAX for one chainfs does not count by name. */
enum cfs_op cfs_op_of_opcode(uint32_t opcode);

extern const char *const cfs_op_names[CFS_OP_MAX];

struct cfs_walk_stats {
	uint64_t walks, links, eloop, errors, heap_frames, allocs;
	uint32_t max_depth;
};

struct cfs_daemon {
	struct cfs_opts opts;
	struct cfs_tree *tree;
	struct fuse_session *se;
	struct cfs_paths *paths;       /* server mode's nodeids for paths through links */
	struct cfs_notifier *notifier; /* kernel cache invalidations */
	struct cfs_faults *faults;     /* injected on purpose through the control socket */
	struct cfs_linkset *answered;  /* kernel mode: links whose answer depends on the tree */
	bool cache_symlinks;           /* the kernel keeps link bodies (negotiated at init) */
	bool unmount_requested;        /* by the control socket */
	struct cfs_changes changes;    /* what the tree changed since the last flush */
	struct cfs_coherence coh;      /* coherence.c's own state */
	uint64_t ops[CFS_OP_MAX];
	struct cfs_walk_stats walk;
	struct cfs_hist op_ns[CFS_OP_MAX + 1]; /* our time per request; [CFS_OP_MAX]: others */
	struct cfs_hist walk_ns;               /* the resolver's time per walk */
};

extern const struct fuse_lowlevel_ops cfs_ops;

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
