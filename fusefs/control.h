/*
 * The control socket: one request per line, one JSON object per reply line, served by the
 * same pollcore loop as /dev/fuse. The protocol is documented in README.md and chainfsctl(1).
 */
#ifndef CHAINFS_CONTROL_H
#define CHAINFS_CONTROL_H

#include "daemon.h"
#include "pc.h"

enum {
	CFS_CTL_MAX_LINE = 65536,      /* a longer request is refused and the client closed */
	CFS_CTL_MAX_PENDING = 8 << 20, /* replies a client has not read: past this it is dropped */
	CFS_CTL_BACKLOG = 128,
	/* Out of fds, the listener is not polled until a client closes, or until this long has
	 * passed (the fds may be held by something else): one failed accept a second instead of
	 * a loop spinning on a socket that stays readable. */
	CFS_CTL_ACCEPT_RETRY_MS = 1000,
	/* spec text a streamed dump makes at a time, when the last piece is nearly sent: a
	 * few milliseconds of the loop, whatever the tree's size */
	CFS_CTL_DUMP_PIECE = 64 << 10,
	/* steps of a `resolve` trace kept in its reply (about 600 KiB of JSON): with the limits
	 * raised to 10^9 a walk round a loop takes 10^9 steps, which would not fit in memory */
	CFS_CTL_MAX_STEPS = 4096,
};

struct cfs_control;

/* Listen on PATH (a stale socket from a dead daemon is replaced; a live one is not): the
 * listening fd or -errno. The daemon listens before it mounts and daemonizes, so a socket it
 * cannot have is reported on the caller's terminal and nothing is mounted. */
int cfs_control_listen(const char *path);
/* Serve the socket FD listens on (from cfs_control_listen(); it is ours from now on, closed
 * and PATH removed by cfs_control_stop(), on error too). FD -1: no socket, requests come only
 * through cfs_control_handle() (the fuzz target drives it so, without a mount). */
int cfs_control_start(struct cfs_control **out, struct cfs_daemon *d, struct pc_loop *loop, int fd,
		      const char *path);
/* Close every client and the socket, and remove it. */
void cfs_control_stop(struct cfs_control *c);

/* Answer one request line with one JSON object (no newline); caller frees. */
char *cfs_control_handle(struct cfs_control *c, const char *line, size_t len);

#endif
