/*
 * The chainfs daemon: one loop thread owns the tree, the FUSE session and the control
 * socket. This header is shared by the daemon's own files only.
 */
#ifndef CHAINFS_DAEMON_H
#define CHAINFS_DAEMON_H

#include <fuse_lowlevel.h>

#include "coherence.h"
#include "ctlpath.h"
#include "inroot.h"
#include "latency.h"
#include "record.h"
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
struct cfs_transport;

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

/*
 * -o opens=: what chainfs does with OPEN and OPENDIR, which carry nothing it needs.
 * SKIP (the default): the first one of each is answered ENOSYS when the kernel offers
 * NO_OPEN(DIR)_SUPPORT, and the kernel then opens by itself for the rest of the connection,
 * keeping pages and every listing; FLUSH is answered ENOSYS too. Requests that are never sent
 * cannot be faulted, so fault rules on open and opendir are refused then.
 * ANSWER: every OPEN, OPENDIR, FLUSH, RELEASE and RELEASEDIR reaches chainfs.
 */
enum cfs_opens { CFS_OPENS_SKIP, CFS_OPENS_ANSWER };

/*
 * -o transport=: how requests reach chainfs (transport.c). DEV: /dev/fuse, read and writev
 * (the default: the ring passes every mount suite but is no faster for a single walker here,
 * bench/results/transport.md, and a delay fault holds one of its entries). URING: FUSE over
 * io_uring, or no mount at all when the kernel cannot (the module parameter is checked before
 * mounting; a refusal after it ends the session). AUTO: the ring when it works, else /dev/fuse with
 * one log line saying why.
 */
enum cfs_transport_kind { CFS_TRANSPORT_DEV, CFS_TRANSPORT_URING, CFS_TRANSPORT_AUTO };

struct cfs_opts {
	enum cfs_follow follow;
	enum cfs_loop_kind loop;
	uint32_t spin_us; /* pollcore's busy-poll window (pc_loop_set_spin) */
	struct rs_limits limits;
	double entry_timeout; /* < 0: chosen per mode */
	double attr_timeout;
	bool abslinks_raw; /* kernel mode: readlink returns absolute targets as stored */
	uint64_t max_data; /* file data the tree may hold (-o max_data) */
	uint64_t max_meta; /* names, link targets and nodes it may hold (-o max_meta) */
	const char *spec;  /* NULL: the embedded default tree */
	const char *mountpoint;
	const char *ctl_path; /* control socket; NULL: derived from the mountpoint */
	const char *record;   /* -o record=FILE: record requests from the start (record.h) */
	bool record_replace;  /* -o record_replace: FILE may exist and is emptied */
	enum cfs_opens opens;
	enum cfs_transport_kind transport;
};

/*
 * Every FUSE operation chainfs serves, one row each, and everything that differs by operation:
 * X(name, opcode, nofault, name_at, keeps, params, args)
 *   name     libfuse's member of struct fuse_lowlevel_ops, the handler cfs_ll_NAME (ops.c,
 *            ops_write.c), and the name `stats`, latency and fault rules use
 *   opcode   the kernel's; FUSE_RENAME2 is served as rename too (cfs_op_of_opcode)
 *   nofault  why no fault rule may name it (a rule would be accepted and never seen), or NULL
 *   name_at  where the entry name starts in the request's arguments, past their fixed part;
 *            -1: it names none
 *   keeps    the kernel may keep what its answer carries (pages, a listing, a link body)
 *            and answer the next call from it: while fault rules stand, that goes after
 *            each answer, so the next call reaches the rules (session.c)
 *   params, args  the handler's parameter list and the call passing them on (mt.c's lock)
 * From it come the enum, the names, the opcode map (optable.c), the libfuse tables (ops.c,
 * mt.c) and the handlers' prototypes (ops.h), so none of them can miss an operation.
 */
/* clang-format off */
#define CFS_OP_FI struct fuse_file_info *
#define CFS_OPS(X) \
	X(init, FUSE_INIT, CFS_NOFAULT_NOREPLY, -1, false, (void *u, struct fuse_conn_info *c), (u, c)) \
	X(lookup, FUSE_LOOKUP, NULL, 0, false, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n)) \
	X(forget, FUSE_FORGET, CFS_NOFAULT_NOREPLY, -1, false, (fuse_req_t r, fuse_ino_t i, uint64_t n), (r, i, n)) \
	X(forget_multi, FUSE_BATCH_FORGET, CFS_NOFAULT_NOREPLY, -1, false, \
	  (fuse_req_t r, size_t c, struct fuse_forget_data *f), (r, c, f)) \
	X(getattr, FUSE_GETATTR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(setattr, FUSE_SETATTR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, struct stat *a, int s, CFS_OP_FI f), \
	  (r, i, a, s, f)) \
	X(readlink, FUSE_READLINK, NULL, -1, true, (fuse_req_t r, fuse_ino_t i), (r, i)) \
	X(mknod, FUSE_MKNOD, NULL, (long)sizeof(struct fuse_mknod_in), false, \
	  (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, dev_t d), (r, p, n, m, d)) \
	X(mkdir, FUSE_MKDIR, NULL, (long)sizeof(struct fuse_mkdir_in), false, \
	  (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m), (r, p, n, m)) \
	X(unlink, FUSE_UNLINK, NULL, 0, false, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n)) \
	X(rmdir, FUSE_RMDIR, NULL, 0, false, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n)) \
	/* the new entry's name comes first, then the target */ \
	X(symlink, FUSE_SYMLINK, NULL, 0, false, (fuse_req_t r, const char *t, fuse_ino_t p, const char *n), \
	  (r, t, p, n)) \
	X(rename, FUSE_RENAME, NULL, (long)sizeof(struct fuse_rename_in), false, \
	  (fuse_req_t r, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn, unsigned f), \
	  (r, p, n, np, nn, f)) \
	X(link, FUSE_LINK, NULL, (long)sizeof(struct fuse_link_in), false, \
	  (fuse_req_t r, fuse_ino_t i, fuse_ino_t np, const char *nn), (r, i, np, nn)) \
	X(open, FUSE_OPEN, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(read, FUSE_READ, NULL, -1, true, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, CFS_OP_FI f), \
	  (r, i, s, o, f)) \
	X(write, FUSE_WRITE, NULL, -1, true, \
	  (fuse_req_t r, fuse_ino_t i, const char *b, size_t s, off_t o, CFS_OP_FI f), \
	  (r, i, b, s, o, f)) \
	X(flush, FUSE_FLUSH, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(release, FUSE_RELEASE, CFS_NOFAULT_UNWAITED, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(fsync, FUSE_FSYNC, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, int d, CFS_OP_FI f), (r, i, d, f)) \
	X(fsyncdir, FUSE_FSYNCDIR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, int d, CFS_OP_FI f), \
	  (r, i, d, f)) \
	X(opendir, FUSE_OPENDIR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(readdir, FUSE_READDIR, NULL, -1, true, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, CFS_OP_FI f), \
	  (r, i, s, o, f)) \
	X(readdirplus, FUSE_READDIRPLUS, NULL, -1, true, \
	  (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, CFS_OP_FI f), (r, i, s, o, f)) \
	X(releasedir, FUSE_RELEASEDIR, CFS_NOFAULT_UNWAITED, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(statfs, FUSE_STATFS, NULL, -1, false, (fuse_req_t r, fuse_ino_t i), (r, i)) \
	X(access, FUSE_ACCESS, CFS_NOFAULT_ACCESS, -1, false, (fuse_req_t r, fuse_ino_t i, int m), (r, i, m)) \
	X(create, FUSE_CREATE, NULL, (long)sizeof(struct fuse_create_in), false, \
	  (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, CFS_OP_FI f), (r, p, n, m, f)) \
	X(getxattr, FUSE_GETXATTR, CFS_NOFAULT_XATTR, -1, false, (fuse_req_t r, fuse_ino_t i, const char *n, size_t s), \
	  (r, i, n, s)) \
	X(listxattr, FUSE_LISTXATTR, CFS_NOFAULT_XATTR, -1, false, (fuse_req_t r, fuse_ino_t i, size_t s), (r, i, s))
/* clang-format on */

/* Why some operations take no fault rule: each would be accepted and never seen. */
#define CFS_NOFAULT_NOREPLY  "nothing waits for its reply, so it can neither fail nor wait"
#define CFS_NOFAULT_UNWAITED "the kernel sends it after close(2) returned and waits for no answer"
#define CFS_NOFAULT_ACCESS                                                                         \
	"the kernel checks permissions itself (default_permissions is always on) and never sends " \
	"it"
#define CFS_NOFAULT_XATTR                                                                          \
	"chainfs keeps no extended attributes: after its first ENOSYS the kernel stops asking"

#define CFS_OP_ENUM(n, ...) CFS_OP_##n,
enum cfs_op { CFS_OPS(CFS_OP_ENUM) CFS_OP_MAX };
#undef CFS_OP_ENUM

/* The op of a kernel opcode; CFS_OP_MAX for one chainfs does not count by name. */
enum cfs_op cfs_op_of_opcode(uint32_t opcode);
/* The entry name a request of SIZE bytes (header included) carries (lookup, mknod, mkdir,
 * create, symlink, link, unlink, rmdir, rename: the old one), or NULL: none, or malformed. */
const char *cfs_request_name(const struct fuse_in_header *in, size_t size);

extern const char *const cfs_op_names[CFS_OP_MAX];
/* Why no fault rule may name OP (see CFS_OPS), or NULL: rules may. */
const char *cfs_op_nofault(enum cfs_op op);
/* Whether the kernel may keep what OP's answer carries (see CFS_OPS). */
bool cfs_op_keeps(enum cfs_op op);

struct cfs_walk_stats {
	uint64_t walks, links, eloop, loops, errors, heap_frames, allocs; /* loops: res.cycle */
	uint32_t max_depth;
};

struct cfs_daemon {
	struct cfs_opts opts;
	struct cfs_tree *tree;
	struct fuse_session *se;
	struct cfs_paths *paths;	 /* server mode's nodeids for paths through links */
	struct cfs_notifier *notifier;	 /* kernel cache invalidations */
	struct cfs_faults *faults;	 /* injected on purpose through the control socket */
	struct cfs_linkset *answered;	 /* kernel mode: links whose answer depends on the tree */
	struct cfs_transport *transport; /* /dev/fuse or the ring (transport.h) */
	bool cache_symlinks;		 /* the kernel keeps link bodies (negotiated at init) */
	bool unmount_requested;		 /* by the control socket */
	/* what -o opens=skip took hold of, decided at INIT (ops.c): see enum cfs_opens */
	struct {
		bool skip_open, skip_opendir; /* the kernel offered NO_OPEN(DIR)_SUPPORT */
		bool listings_kept;	      /* an OPENDIR was answered ENOSYS */
	} opening;
	char ctl_path[CFS_SUN_PATH_MAX]; /* the control socket's, settled before daemonizing */
	int ctl_fd;			 /* its listening fd until the control takes it, or -1 */
	struct cfs_changes changes;	 /* what the tree changed since the last flush */
	struct cfs_coherence coh;	 /* coherence.c's own state */
	uint64_t ops[CFS_OP_MAX];
	struct cfs_walk_stats walk;
	struct cfs_hist op_ns[CFS_OP_MAX + 1]; /* our time per request; [CFS_OP_MAX]: others */
	struct cfs_hist walk_ns;	       /* the resolver's time per walk */
	/* record.c: the recording running (or NULL), the last one's final counters and file */
	struct cfs_recorder *recorder;
	struct cfs_record_stats record_last;
	char *record_last_file;
	int reply_errno; /* the errno the request being served was answered with, 0: none */
	/* The resolver's budget for the request being served (rs_ctx.budget): every walk it
	 * makes (a listing makes one per link) draws on it, so no request holds the loop for
	 * more than RS_WALK_BUDGET components. walk_budget points at walk_left, or is NULL
	 * (each walk its own budget) where no request is served. */
	uint32_t walk_left;
	uint32_t *walk_budget;
};

/* libfuse's operation tables: our loop and libfuse's; its multi-threaded loop's (mt.c),
 * every operation under one lock. */
extern const struct fuse_lowlevel_ops cfs_ops, cfs_mt_ops;

#endif
