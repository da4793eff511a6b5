/*
 * The chainfs daemon: one loop thread owns the tree, the FUSE session and the control
 * socket. This header is shared by the daemon's own files only.
 */
#ifndef CHAINFS_DAEMON_H
#define CHAINFS_DAEMON_H

#include <fuse_lowlevel.h>

#include "coherence.h"
#include "ctlpath.h"
#include "follow.h"
#include "inroot.h"
#include "latency.h"
#include "optable.h"
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
struct cfs_fault_effect;
struct cfs_gate;
struct cfs_transport;
struct cfs_record_seen;

#define CFS_VERSION "0.1.0"

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
	bool abslinks_raw;  /* kernel mode: readlink returns absolute targets as stored */
	uint64_t max_data;  /* file data the tree may hold (-o max_data) */
	uint64_t max_meta;  /* names, link targets and nodes it may hold (-o max_meta) */
	uint32_t max_nodes; /* nodes it may hold (-o max_nodes) */
	const char *spec;   /* NULL: the embedded default tree */
	const char *mountpoint;
	const char *ctl_path; /* control socket; NULL: derived from the mountpoint */
	const char *record;   /* -o record=FILE: record requests from the start (record.h) */
	const char *faults;   /* -o faults=FILE: fault rules from the first request (fault.h) */
	bool record_replace;  /* -o record_replace: FILE may exist and is emptied */
	bool read_only;	      /* -o ro: no request and no control line changes the tree */
	enum cfs_opens opens;
	enum cfs_transport_kind transport;
	/* xattrs off: the four xattr requests answered ENOSYS, after which the kernel sends
	 * none for the rest of the connection (it then answers EOPNOTSUPP itself), and no
	 * POSIX ACLs: a walk's ls -l asks two fewer requests a name. -o xattrs=auto (the
	 * default) is off unless the tree holds an xattr when it is mounted (main.c); a spec's
	 * xattr lines under -o xattrs=off are kept in the tree and in dump, never shown. */
	bool xattrs_off;
	bool xattrs_auto; /* -o xattrs=auto: xattrs_off is decided once the tree is built */
};

/* The walks along chains (links.c counts each once): loops are res.cycle; private_checks the
 * second walks, with no rights, that tell whether a server-mode lookup's answer is the
 * caller's alone (in none of the other counters). */
struct cfs_walk_stats {
	uint64_t walks, links, eloop, loops, errors, heap_frames, allocs, private_checks;
	uint32_t max_depth;
};

struct cfs_daemon {
	struct cfs_opts opts;
	struct cfs_tree *tree;
	struct fuse_session *se;
	struct cfs_paths *paths;	 /* server mode's nodeids for paths through links */
	struct cfs_notifier *notifier;	 /* kernel cache invalidations */
	struct cfs_faults *faults;	 /* injected on purpose through the control socket */
	struct cfs_gate *gate;		 /* where requests are held (gate.h), while the loop runs */
	struct cfs_transport *transport; /* /dev/fuse or the ring (transport.h) */
	bool cache_symlinks;		 /* the kernel keeps link bodies (negotiated at init) */
	/* the kernel maps direct-I/O files shared (FUSE_DIRECT_IO_ALLOW_MMAP, added to the INIT
	 * reply by transport.c when offered): rules need not break a program's MAP_SHARED */
	bool direct_io_mmap;
	bool unmount_requested; /* by the control socket */
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
	struct cfs_record_seen *record_seen; /* what the reply being sent shows, while recording */
	int reply_errno; /* the errno the request being served was answered with, 0: none */
	/* a fault rule's effect on the answer the handler of the request being served builds
	 * (gate.c): corrupt= on a read's bytes, attr= on a getattr's or lookup's attributes;
	 * or NULL */
	const struct cfs_fault_effect *fault_fx;
	/* The resolver's budget for the request being served (rs_ctx.budget): every walk it
	 * makes (a listing makes one per link) draws on it, so no request holds the loop for
	 * more than RS_WALK_BUDGET components. walk_budget points at walk_left, or is NULL
	 * (each walk its own budget) where no request is served. */
	uint32_t walk_left;
	uint32_t *walk_budget;
	/* The mount point's path (libfuse made it canonical), which link bodies may name the
	 * tree's root by: a link made through the mount, `ln -s "$PWD/data"`, names the tree's
	 * /data in every walk (rs_ctx.root_alias). NULL (and 0) where there is none: "/" and
	 * the unit tests. */
	const char *root_alias;
	size_t root_alias_len;
};

/* libfuse's operation tables: our loop and libfuse's; its multi-threaded loop's (mt.c),
 * every operation under one lock. */
extern const struct fuse_lowlevel_ops cfs_ops, cfs_mt_ops;

#endif
