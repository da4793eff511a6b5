/*
 * How requests reach the daemon: /dev/fuse (read and writev), or FUSE over io_uring (ring
 * entries per CPU queue, a reply committed together with the fetch of the next request).
 * Either way each request ends in the same function the session gives (the request gate's
 * cfs_serve_one, gate.c), so nothing past it knows which transport brought it.
 */
#ifndef CHAINFS_TRANSPORT_H
#define CHAINFS_TRANSPORT_H

#include "daemon.h"
#include "pc.h"

#include <sys/uio.h>

struct cfs_transport;

/* Serve one request; BUF is the transport's, valid until the function returns. */
typedef void cfs_request_fn(void *arg, const struct fuse_buf *buf);

struct cfs_transport_stats {
	const char *live;	  /* "dev" or "uring" */
	const char *fallback;	  /* why auto serves /dev/fuse, or NULL */
	unsigned queues, entries; /* ring queues and entries per queue (0 over /dev/fuse) */
	unsigned hold_max;	  /* entries per queue a delay may hold (0 over /dev/fuse) */
	unsigned held;		  /* ring requests held back by delays now */
	uint64_t ring_requests;	  /* requests that came through the ring */
	uint64_t unheld;	  /* delays not applied: their queue held hold_max already */
	uint64_t replies_fixed;	  /* replies the kernel would refuse, answered EIO instead */
};

/* Before mounting: may D->opts.transport work here at all? For transport=uring on a kernel
 * without it, or with the module parameter off, -EOPNOTSUPP after a message on stderr. */
int cfs_transport_new(struct cfs_daemon *d, struct cfs_transport **out);
void cfs_transport_free(struct cfs_transport *t);

/* After mounting, on the loop thread, before the first request: take over libfuse's I/O on
 * the session's fd, create the ring and watch it on LOOP; requests from the ring go to FN.
 * The ring's entries are registered once INIT has been answered with FUSE_OVER_IO_URING. */
int cfs_transport_start(struct cfs_transport *t, struct pc_loop *loop, cfs_request_fn *fn,
			void *arg);
void cfs_transport_stop(struct cfs_transport *t);
/* transport=uring could not be set up after mounting: -EOPNOTSUPP, else 0 */
int cfs_transport_error(const struct cfs_transport *t);

/* Outside the loop (serving while the notifier leaves): the ring's fd to poll, -1 for none,
 * and serving whatever it completed. */
int cfs_transport_ring_fd(const struct cfs_transport *t);
void cfs_transport_serve_ring(struct cfs_transport *t, cfs_request_fn *fn, void *arg);

/* Send a reply written by hand (a fault's errno) the way its request came. Like every reply
 * sent through the transport (libfuse's too, once started), one the kernel would refuse is
 * answered with EIO instead, so that no caller waits for good. */
ssize_t cfs_transport_send(struct cfs_daemon *d, struct iovec *iov, int count);

/* From within the request function: may the request being served be answered later (a delay
 * fault)? A ring request keeps its entry until then, and a queue's other requests can only use
 * the entries left: at most hold_max (stats) of a queue's entries are held, so the others keep
 * flowing. True: hold it (over /dev/fuse, always); false: serve it now (counted as unheld). */
bool cfs_transport_hold(struct cfs_transport *t);

void cfs_transport_stats(const struct cfs_transport *t, struct cfs_transport_stats *out);

#endif
