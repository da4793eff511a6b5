/*
 * The FUSE session on pollcore: /dev/fuse is non-blocking and drained on every wake, so one
 * poll() serves a burst of requests; signals arrive through the loop, never by racing a flag
 * against poll().
 */
#include "session.h"

#include "control.h"
#include "links.h"
#include "ctlpath.h"
#include "fault.h"
#include "notify.h"
#include "ops.h"
#include "paths.h"
#include "pc.h"
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <glib.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Requests served per wake before the loop looks at its other fds again, so a flood on
 * /dev/fuse cannot starve the control socket. */
enum { CFS_BURST = 256 };

/* A request held back by a delay fault: processed when its timer fires. */
struct cfs_delayed {
	struct pc_timer timer;
	struct cfs_server *s;
	struct fuse_buf buf; /* our own copy of the request */
	struct cfs_delayed *prev, *next;
};

struct cfs_server {
	struct cfs_daemon *d;
	struct pc_loop loop;
	struct fuse_buf buf; /* one receive buffer for the life of the session */
	bool gone;	     /* the kernel ended the session (unmounted) */
	struct cfs_control *ctl;
	struct cfs_delayed *delayed; /* list of held requests */
};

/* The path a request names, for fault rules: its nodeid's, plus the entry name it carries. */
static void cfs_request_path(struct cfs_daemon *d, const struct fuse_in_header *in, size_t size,
			     char *path)
{
	cfs_nodeid_path(d, in->nodeid, cfs_request_name(in, size), path, RS_PATH_MAX);
}

/* An errno rule for this request? Then it is answered with that errno here, before any
 * handler: one place for every operation, so no rule is accepted that never fires. Init and
 * the forgets have no reply (fault.c refuses rules on them). */
static bool cfs_fault_answer(struct cfs_daemon *d, const struct fuse_in_header *in, enum cfs_op op,
			     size_t size)
{
	char path[RS_PATH_MAX];
	unsigned ms;
	int err = 0;

	if (!cfs_op_replies(op))
		return false;
	cfs_request_path(d, in, size, path);
	cfs_fault_match(d->faults, op, path, CFS_FAULT_ERRNO, &err, &ms);
	if (!err)
		return false;
	cfs_count(d, op);
	struct fuse_out_header out = {sizeof(out), -err, in->unique};
	struct iovec iov = {&out, sizeof(out)};
	if (cfs_transport_send(d, &iov, 1) != (ssize_t)sizeof(out))
		g_debug("fault reply to request %llu: %s", (unsigned long long)in->unique,
			strerror(errno));
	return true;
}

/* Serve one request, timing our part of it for `stats`. */
static void cfs_process(struct cfs_daemon *d, const struct fuse_buf *buf)
{
	const struct fuse_in_header *in = buf->mem;
	enum cfs_op op = buf->size >= sizeof(*in) ? cfs_op_of_opcode(in->opcode) : CFS_OP_MAX;
	uint64_t t0 = cfs_now_ns();

	if (op != CFS_OP_MAX && cfs_faults_active(d->faults) &&
	    cfs_fault_answer(d, in, op, buf->size)) {
		cfs_hist_add(&d->op_ns[op], cfs_now_ns() - t0);
		return;
	}
	fuse_session_process_buf(d->se, buf);
	/* a handler flushes before it replies; whatever it left recorded still goes now */
	cfs_coherence_flush(d);
	cfs_hist_add(&d->op_ns[op], cfs_now_ns() - t0);
}

static void cfs_on_delay_done(struct pc_loop *loop, struct pc_timer *t, void *data)
{
	struct cfs_delayed *dl = data;
	struct cfs_server *s = dl->s;

	if (dl->prev)
		dl->prev->next = dl->next;
	else
		s->delayed = dl->next;
	if (dl->next)
		dl->next->prev = dl->prev;
	/* if the caller was interrupted meanwhile, libfuse has the INTERRUPT queued and the
	 * reply to a request the kernel dropped is ignored */
	cfs_process(s->d, &dl->buf);
	free(dl->buf.mem);
	free(dl);
}

/* A delay rule for this request? Then keep a copy and come back to it later. */
static bool cfs_maybe_delay(struct cfs_server *s, const struct fuse_buf *buf, size_t size)
{
	const struct fuse_in_header *in = buf->mem;
	char path[RS_PATH_MAX];
	unsigned ms = 0;
	int err;

	enum cfs_op op = size >= sizeof(*in) ? cfs_op_of_opcode(in->opcode) : CFS_OP_MAX;

	/* init and the forgets name no node to match (a batch forget's nodeid is 0) and have
	 * nobody waiting for them */
	if (!cfs_op_replies(op) || in->nodeid == 0)
		return false;
	cfs_request_path(s->d, in, size, path);
	cfs_fault_match(s->d->faults, op, path, CFS_FAULT_DELAY, &err, &ms);
	if (!ms)
		return false;
	struct cfs_delayed *dl = calloc(1, sizeof(*dl));
	void *copy = malloc(size);
	if (!dl || !copy) { /* no memory to hold it back: serve it now */
		free(dl);
		free(copy);
		return false;
	}
	memcpy(copy, buf->mem, size);
	dl->buf = (struct fuse_buf){.size = size, .mem = copy};
	dl->s = s;
	dl->next = s->delayed;
	if (s->delayed)
		s->delayed->prev = dl;
	s->delayed = dl;
	pc_timer_init(&dl->timer, cfs_on_delay_done, dl);
	pc_timer_start(&s->loop, &dl->timer, ms, 0);
	return true;
}

static void cfs_drop_delayed(struct cfs_server *s)
{
	while (s->delayed) {
		struct cfs_delayed *dl = s->delayed;
		s->delayed = dl->next;
		pc_timer_stop(&s->loop, &dl->timer);
		free(dl->buf.mem);
		free(dl);
	}
}

static void cfs_session_gone(struct cfs_server *s)
{
	s->gone = true;
	pc_stop(&s->loop);
}

/* One request, from /dev/fuse or the ring: held back by a delay rule, or served now. */
static void cfs_serve_one(void *data, const struct fuse_buf *buf)
{
	struct cfs_server *s = data;

	if (cfs_faults_active(s->d->faults) && cfs_maybe_delay(s, buf, buf->size))
		return;
	cfs_process(s->d, buf);
}

static void cfs_on_fuse(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct cfs_server *s = data;
	struct fuse_session *se = s->d->se;

	if (revents & (POLLERR | POLLHUP | POLLNVAL)) {
		cfs_session_gone(s);
		return;
	}
	for (int i = 0; i < CFS_BURST; i++) {
		int n = fuse_session_receive_buf(se, &s->buf);
		if (n == -EAGAIN)
			return;
		if (n == -EINTR) /* ENOENT from the kernel: an interrupted request, retry */
			continue;
		if (n <= 0 || fuse_session_exited(se)) { /* 0: ENODEV, the mount is gone */
			cfs_session_gone(s);
			return;
		}
		struct fuse_buf req = s->buf;
		req.size = (size_t)n;
		cfs_serve_one(s, &req);
	}
}

static void cfs_on_signal(struct pc_loop *loop, struct pc_signal *sig, int signo, void *data)
{
	g_message("%s: unmounting", strsignal(signo));
	pc_stop(loop);
}

/* The control socket's path (d->ctl_path) is settled before daemonizing moves us to "/",
 * "" for none; its listening fd (d->ctl_fd) is opened before mounting and daemonizing (the
 * forked child inherits it), so that a path we cannot listen on is told on the caller's
 * terminal. */

static int cfs_pick_ctl_path(struct cfs_daemon *d)
{
	const char *want = d->opts.ctl_path;
	char *abs;

	if (want && strcmp(want, "none") == 0)
		return 0;
	if (!want)
		return cfs_ctl_default_path(d->opts.mountpoint, d->ctl_path, sizeof(d->ctl_path),
					    1);
	gchar *cwd = g_get_current_dir();
	abs = want[0] == '/' ? g_strdup(want) : g_build_filename(cwd, want, NULL);
	int n = snprintf(d->ctl_path, sizeof(d->ctl_path), "%s", abs);
	g_free(abs);
	g_free(cwd);
	return n >= (int)sizeof(d->ctl_path) ? -ENAMETOOLONG : 0;
}

/* Only our own loop serves the socket: with libfuse's loops nobody would accept. */
static int cfs_open_control(struct cfs_daemon *d)
{
	if (!d->ctl_path[0] || d->opts.loop != CFS_LOOP_POLLCORE)
		return 0;
	d->ctl_fd = cfs_control_listen(d->ctl_path);
	if (d->ctl_fd < 0) {
		fprintf(stderr, "chainfs: control socket %s: %s\n", d->ctl_path,
			strerror(-d->ctl_fd));
		return d->ctl_fd;
	}
	return 0;
}

/* A failure before the loop took the socket: close it and remove it. */
static void cfs_close_control(struct cfs_daemon *d)
{
	if (d->ctl_fd < 0)
		return;
	close(d->ctl_fd);
	unlink(d->ctl_path);
	d->ctl_fd = -1;
}

static int cfs_start_control(struct cfs_daemon *d, struct pc_loop *loop, struct cfs_control **out)
{
	int fd = d->ctl_fd, err;

	if (fd < 0)
		return 0;
	d->ctl_fd = -1; /* the control's from here, on error too */
	err = cfs_control_start(out, d, loop, fd, d->ctl_path);
	if (err)
		g_warning("control socket %s: %s", d->ctl_path, strerror(-err));
	else
		g_debug("control socket at %s", d->ctl_path);
	return err;
}

static int cfs_run_pollcore(struct cfs_daemon *d)
{
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
	struct pc_signal sigs[3];
	struct cfs_server *s = calloc(1, sizeof(*s));
	int fd = fuse_session_fd(d->se);
	int err;

	if (!s)
		return -ENOMEM;
	s->d = d;
	err = pc_loop_init(&s->loop, NULL);
	if (err)
		goto out;
	pc_loop_set_spin(&s->loop, d->opts.spin_us, 0); /* bounded by the option's parser */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1) {
		err = -errno;
		goto out_loop;
	}
	err = pc_io_add(&s->loop, fd, POLLIN, cfs_on_fuse, s);
	for (size_t i = 0; !err && i < 3; i++) {
		pc_signal_init(&sigs[i], signals[i], cfs_on_signal, s);
		err = pc_signal_start(&s->loop, &sigs[i]);
	}
	if (!err)
		err = cfs_start_control(d, &s->loop, &s->ctl);
	if (!err)
		err = cfs_transport_start(d->transport, &s->loop, cfs_serve_one, s);
	if (!err)
		err = pc_run(&s->loop);
	if (!err)
		err = cfs_transport_error(d->transport);
	cfs_transport_stop(d->transport);
	cfs_control_stop(s->ctl);
	cfs_drop_delayed(s);
out_loop:
	pc_loop_destroy(&s->loop);
out:
	free(s->buf.mem);
	free(s);
	return err;
}

static int cfs_run_libfuse(struct cfs_daemon *d, bool mt)
{
	int err;

	if (fuse_set_signal_handlers(d->se))
		return -EIO;
	if (mt) {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		err = cfg ? fuse_session_loop_mt(d->se, cfg) : -ENOMEM;
		fuse_loop_cfg_destroy(cfg);
	} else {
		err = fuse_session_loop(d->se);
	}
	fuse_remove_signal_handlers(d->se);
	return err < 0 ? err : 0;
}

/* /proc/self/mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo. */
static void cfs_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

int cfs_is_mountpoint(const char *path)
{
	char *real = realpath(path, NULL), *line = NULL;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	if (!real)
		return -errno;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		free(real);
		return -errno;
	}
	while (!found && getline(&line, &cap, f) > 0) {
		char mnt[4096];
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		cfs_unescape(mnt);
		found = strcmp(mnt, real) == 0;
	}
	free(line);
	fclose(f);
	free(real);
	return found;
}

static void cfs_default_timeouts(struct cfs_opts *o)
{
	/* Kernel and collapse modes: names and attributes change only through requests the
	 * kernel sees itself or through control commands that invalidate what they touch. */
	double t = o->follow == CFS_FOLLOW_SERVER ? 1.0 : 3600.0;

	if (o->entry_timeout < 0)
		o->entry_timeout = t;
	if (o->attr_timeout < 0)
		o->attr_timeout = t;
}

/* The loop has ended, but the notifier may be inside the kernel: an invalidation waits for a
 * directory's lock, held by a caller whose request waits for an answer only this thread can
 * give (a mutation in that directory, a stat of the mountpoint by fusermount). Keep answering
 * requests, one at a time, until the notifier has left, or the session is gone. */
static void cfs_drain_one(void *data, const struct fuse_buf *buf)
{
	struct cfs_daemon *d = data;

	fuse_session_process_buf(d->se, buf);
}

static void cfs_drain_notifier(struct cfs_daemon *d)
{
	struct fuse_buf buf = {0};
	/* the ring's requests too: that caller may be waiting in one of its queues */
	struct pollfd p[2] = {{fuse_session_fd(d->se), POLLIN, 0},
			      {cfs_transport_ring_fd(d->transport), POLLIN, 0}};

	if (!d->notifier)
		return;
	cfs_notifier_stopping(d->notifier);
	while (!cfs_notifier_done(d->notifier)) {
		if (poll(p, 2, 10) <= 0)
			continue;
		if (p[1].revents & POLLIN)
			cfs_transport_serve_ring(d->transport, cfs_drain_one, d);
		if (!(p[0].revents & POLLIN))
			continue;
		int n = fuse_session_receive_buf(d->se, &buf);
		if (n == -EINTR || n == -EAGAIN)
			continue;
		if (n <= 0)
			break; /* unmounted: the notifier's writes fail at once */
		fuse_session_process_buf(d->se, &buf);
	}
	free(buf.mem);
}

int cfs_serve(struct cfs_daemon *d, struct fuse_args *args, int foreground)
{
	const char *mnt = d->opts.mountpoint;
	const struct fuse_lowlevel_ops *ops =
	    d->opts.loop == CFS_LOOP_LIBFUSE_MT ? &cfs_mt_ops : &cfs_ops;
	int busy = cfs_is_mountpoint(mnt);
	int rc = 1, err;

	if (busy) {
		fprintf(stderr, "chainfs: %s: %s\n", mnt,
			busy > 0 ? "already a mount point; unmount it first" : strerror(-busy));
		return 1;
	}
	err = cfs_pick_ctl_path(d);
	if (err) {
		fprintf(stderr, "chainfs: control socket: %s\n", strerror(-err));
		return 1;
	}
	if (cfs_transport_new(d, &d->transport))
		return 1;
	if (cfs_open_control(d))
		goto out_transport;
	cfs_default_timeouts(&d->opts);
	d->se = fuse_session_new(args, ops, sizeof(*ops), d);
	if (!d->se) {
		cfs_close_control(d);
		rc = 2; /* libfuse said which option it refused */
		goto out_transport;
	}
	d->paths = cfs_paths_new();
	d->faults = cfs_faults_new();
	d->answered = cfs_linkset_new();
	if (fuse_session_mount(d->se, mnt) != 0)
		goto out;
	if (fuse_daemonize(foreground) != 0)
		goto out_unmount;
	/* after daemonizing: a fork keeps only the calling thread */
	err = cfs_notifier_start(&d->notifier, d->se);
	if (!err && d->opts.loop == CFS_LOOP_POLLCORE)
		err = cfs_run_pollcore(d);
	else if (!err)
		err = cfs_run_libfuse(d, d->opts.loop == CFS_LOOP_LIBFUSE_MT);
	if (err)
		g_warning("session ended: %s", strerror(-err));
	cfs_drain_notifier(d);
	cfs_notifier_stop(d->notifier);
	d->notifier = NULL;
	cfs_coherence_end(d);
	/* each path entry holds one tree reference of its own besides the kernel's counts */
	g_debug("%llu lookups outstanding at exit",
		(unsigned long long)(cfs_tree_total_refs(d->tree) - cfs_paths_count(d->paths) +
				     cfs_paths_total_lookups(d->paths)));
	rc = err ? 1 : 0;
out_unmount:
	fuse_session_unmount(d->se);
out:
	cfs_close_control(d);
	fuse_session_destroy(d->se);
	d->se = NULL;
	cfs_paths_free(d->paths);
	d->paths = NULL;
	cfs_faults_free(d->faults);
	d->faults = NULL;
	cfs_linkset_free(d->answered);
	d->answered = NULL;
out_transport:
	/* after the session: its replies go through the transport until it is destroyed */
	cfs_transport_free(d->transport);
	d->transport = NULL;
	return rc;
}
