/*
 * The request gate: every request, from /dev/fuse or the ring, passes here on its way to
 * libfuse and our handlers. Fault rules act here (delay, errno, nowrite, short), each request
 * is timed for `stats` and handed to the recorder, and held replies (coherence.c) are looked
 * at again. No mount is needed: the gate replies through the session's I/O (libfuse's, or the
 * transport's), so a session with a custom I/O of its own serves canned requests (the fuzz
 * target "gate").
 */
#ifndef CHAINFS_GATE_H
#define CHAINFS_GATE_H

#include "daemon.h"
#include "pc.h"

struct cfs_gate;

/* Open the gate for D's session on LOOP, which runs the timers of delayed requests and of
 * held replies; replies are held only when D has a notifier to wait for. 0 or -errno. */
int cfs_gate_open(struct cfs_gate **out, struct cfs_daemon *d, struct pc_loop *loop);
/* After the loop ended: the replies still held go now, and requests still delayed or held
 * are served (their callers are let go; a reply to a session the kernel ended goes nowhere).
 * G may be NULL. */
void cfs_gate_close(struct cfs_gate *g);

/* One request (a cfs_request_fn, GATE the cfs_gate): held back by a delay rule, or served
 * now. BUF is the caller's, valid until this returns. */
void cfs_serve_one(void *gate, const struct fuse_buf *buf);

/* Let go of the requests rule RULE holds (0: every rule's), delays and holds alike: each is
 * served in the loop's next pass, as its timer would have it. How many were held. G may be
 * NULL (no loop runs: nothing is held). */
int cfs_gate_release(struct cfs_gate *g, unsigned rule);

/* After the loop: answer requests straight to libfuse, one at a time, until the notifier
 * has left (or the session is gone). Nothing if D has no notifier. */
void cfs_drain_notifier(struct cfs_daemon *d);

#endif
