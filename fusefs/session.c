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
#include <sys/uio.h>
#include <unistd.h>

/* The most of a request kept for after its reply: the header, the largest fixed arguments,
 * two names and a link target (symlink, rename). */
enum { CFS_REQUEST_KEPT = sizeof(struct fuse_in_header) + 64 + 2 * 256 + 4096 };

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
	int replies_fd;		     /* the notifier's eventfd for held replies, -1: none */
	struct pc_timer hold_timer;  /* held replies go after CFS_HOLD_MS at the latest */
};

/* The path a request names, for fault rules: its nodeid's, plus the entry name it carries. */
static void cfs_request_path(struct cfs_daemon *d, const struct fuse_in_header *in, size_t size,
			     char *path)
{
	cfs_nodeid_path(d->tree, d->paths, in->nodeid, cfs_request_name(in, size), path,
			RS_PATH_MAX);
}

/* Reply HDR (and BODY) to the request here, for a fault rule. */
static void cfs_fault_reply(struct cfs_daemon *d, struct fuse_out_header *hdr, const void *body,
			    size_t len)
{
	struct iovec iov[2] = {{hdr, sizeof(*hdr)}, {(void *)body, len}};

	hdr->len = (uint32_t)(sizeof(*hdr) + len);
	if (cfs_transport_send(d, iov, body ? 2 : 1) != (ssize_t)hdr->len)
		g_debug("fault reply to request %llu: %s", (unsigned long long)hdr->unique,
			strerror(errno));
}

/* A write a nowrite rule drops: reported whole, stored nowhere. */
static bool cfs_fault_nowrite(struct cfs_daemon *d, const struct fuse_in_header *in,
			      const char *path, size_t size)
{
	struct cfs_fault_effect fx;

	if (size < sizeof(*in) + sizeof(struct fuse_write_in) ||
	    !cfs_fault_match(d->faults, CFS_OP_write, path, CFS_FAULT_NOWRITE, &fx))
		return false;
	struct fuse_out_header out = {0, 0, in->unique};
	struct fuse_write_out w = {.size = ((const struct fuse_write_in *)(in + 1))->size};
	cfs_fault_reply(d, &out, &w, sizeof(w));
	return true;
}

/* A short rule cuts the read or write in place (its size field), and the handler serves the
 * rest as usual: a write stores only what it reports. */
static void cfs_fault_cut(struct cfs_daemon *d, struct fuse_in_header *in, enum cfs_op op,
			  const char *path, size_t size)
{
	struct cfs_fault_effect fx;
	uint32_t *len;

	if (op == CFS_OP_read && size >= sizeof(*in) + sizeof(struct fuse_read_in))
		len = &((struct fuse_read_in *)(in + 1))->size;
	else if (op == CFS_OP_write && size >= sizeof(*in) + sizeof(struct fuse_write_in))
		len = &((struct fuse_write_in *)(in + 1))->size;
	else
		return;
	if (cfs_fault_match(d->faults, op, path, CFS_FAULT_SHORT, &fx) && *len > fx.short_len)
		*len = fx.short_len;
}

/* An errno or nowrite rule for this request? Then it is answered here, before any handler:
 * one place for every operation, so no rule is accepted that never fires. Short rules cut
 * it and let it pass. Init and the forgets have no reply (fault.c refuses rules on them). */
static bool cfs_fault_answer(struct cfs_daemon *d, struct fuse_in_header *in, enum cfs_op op,
			     size_t size)
{
	char path[RS_PATH_MAX];
	struct cfs_fault_effect fx;

	if (cfs_op_nofault(op)) /* `op=any` rules pass these by */
		return false;
	cfs_request_path(d, in, size, path);
	if (cfs_fault_match(d->faults, op, path, CFS_FAULT_ERRNO, &fx)) {
		cfs_count(d, op);
		d->reply_errno = fx.err;
		struct fuse_out_header out = {0, -fx.err, in->unique};
		cfs_fault_reply(d, &out, NULL, 0);
		return true;
	}
	if (op == CFS_OP_write && cfs_fault_nowrite(d, in, path, size)) {
		cfs_count(d, op);
		return true;
	}
	cfs_fault_cut(d, in, op, path, size);
	return false;
}

/* Serve one request, timing our part of it for `stats`. */
static void cfs_process(struct cfs_daemon *d, const struct fuse_buf *buf)
{
	struct fuse_in_header *in = buf->mem;
	enum cfs_op op = buf->size >= sizeof(*in) ? cfs_op_of_opcode(in->opcode) : CFS_OP_MAX;
	bool faults = op != CFS_OP_MAX && cfs_faults_active(d->faults);
	uint64_t t0 = cfs_now_ns(), nodeid = buf->size >= sizeof(*in) ? in->nodeid : 0;
	/* What runs after the reply reads the request from a copy: a transport may give its
	 * buffer to the next request once the reply is sent (io_uring's commit-and-fetch). The
	 * recording needs the header, the fixed arguments and the names, not the data. */
	char copy[CFS_REQUEST_KEPT];
	size_t kept = d->recorder ? MIN(buf->size, sizeof(copy)) : 0;

	memcpy(copy, buf->mem, kept);
	if (!faults || !cfs_fault_answer(d, in, op, buf->size)) {
		fuse_session_process_buf(d->se, buf);
		/* while rules stand, what the kernel keeps of an answer goes, so the next
		 * call reaches the rules (CFS_OPS' keeps) */
		if (faults && cfs_op_keeps(op))
			cfs_coherence_uncache(d, nodeid);
		/* a handler flushes before it replies; whatever it left recorded still goes now */
		cfs_coherence_flush(d);
	}
	cfs_hist_add(&d->op_ns[op], cfs_now_ns() - t0);
	cfs_record_request(d, copy, kept, t0);
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
	struct cfs_fault_effect fx;

	enum cfs_op op = size >= sizeof(*in) ? cfs_op_of_opcode(in->opcode) : CFS_OP_MAX;

	/* ops no rule may name (init and the forgets: nobody waits for them; CFS_OPS says why
	 * for each), and requests that name no node (a batch forget's nodeid is 0) */
	if (cfs_op_nofault(op) || in->nodeid == 0)
		return false;
	cfs_request_path(s->d, in, size, path);
	/* over the ring the request keeps its entry while held: the transport bounds that */
	if (!cfs_fault_match(s->d->faults, op, path, CFS_FAULT_DELAY, &fx) ||
	    !cfs_transport_hold(s->d->transport))
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
	pc_timer_start(&s->loop, &dl->timer, fx.delay_ms, 0);
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

/* While replies are held, look at them at least every CFS_HOLD_MS. */
static void cfs_arm_hold_timer(struct cfs_server *s)
{
	if (s->d->coh.nheld && !pc_timer_active(&s->hold_timer))
		pc_timer_start(&s->loop, &s->hold_timer, CFS_HOLD_MS, 0);
}

static void cfs_on_hold_timer(struct pc_loop *loop, struct pc_timer *t, void *data)
{
	struct cfs_server *s = data;

	cfs_coherence_send_held(s->d, false);
	cfs_arm_hold_timer(s);
}

/* The notifier delivered what some held replies wait for: send those. */
static void cfs_on_replies_delivered(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct cfs_server *s = data;
	uint64_t count;

	if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		g_message("reading the notifier's eventfd: %s", strerror(errno));
	cfs_coherence_send_held(s->d, false);
}

/* Held replies need the notifier's eventfd on the loop; without it every reply goes now. */
static int cfs_start_holding(struct cfs_server *s)
{
	int fd = cfs_notify_wake_fd(s->d->notifier, CFS_WAIT_REPLIES);
	int err;

	if (fd < 0)
		return 0;
	err = pc_io_add(&s->loop, fd, POLLIN, cfs_on_replies_delivered, s);
	if (err)
		return err;
	s->replies_fd = fd;
	s->d->coh.can_hold = true;
	return 0;
}

/* The loop has ended: what is still held goes now (the session ends). */
static void cfs_stop_holding(struct cfs_server *s)
{
	s->d->coh.can_hold = false;
	cfs_coherence_send_held(s->d, true);
	pc_timer_stop(&s->loop, &s->hold_timer);
	if (s->replies_fd >= 0)
		pc_io_del(&s->loop, s->replies_fd);
	s->replies_fd = -1;
}

/* One request, from /dev/fuse or the ring: held back by a delay rule, or served now. */
static void cfs_serve_one(void *data, const struct fuse_buf *buf)
{
	struct cfs_server *s = data;

	if (cfs_faults_active(s->d->faults) && cfs_maybe_delay(s, buf, buf->size))
		return;
	cfs_process(s->d, buf);
	cfs_arm_hold_timer(s);
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
	s->replies_fd = -1;
	pc_timer_init(&s->hold_timer, cfs_on_hold_timer, s);
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
		err = cfs_start_holding(s);
	if (!err)
		err = cfs_transport_start(d->transport, &s->loop, cfs_serve_one, s);
	if (!err)
		err = pc_run(&s->loop);
	if (!err)
		err = cfs_transport_error(d->transport);
	cfs_stop_holding(s);
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

/* -o record=FILE: the file is opened here, before daemonizing moves us to "/" (so a relative
 * FILE means the caller's), and a path that cannot be written stops the mount with a
 * message; the writer starts after daemonizing. Only our loop times requests one by one. */
static int cfs_open_record(struct cfs_daemon *d)
{
	int err;

	if (!d->opts.record)
		return 0;
	if (d->opts.loop != CFS_LOOP_POLLCORE) {
		fprintf(stderr, "chainfs: -o record needs -o loop=pollcore\n");
		return -EINVAL;
	}
	gchar *abs = g_canonicalize_filename(d->opts.record, NULL);
	err = cfs_record_prepare(d, abs, d->opts.record_replace);
	if (err)
		fprintf(stderr, "chainfs: record=%s: %s\n", abs,
			cfs_record_error(-err, d->opts.record_replace));
	g_free(abs);
	return err;
}

static void cfs_default_timeouts(struct cfs_opts *o)
{
	double t = cfs_follow_modes[o->follow].timeout;

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
	if (err == -EPERM) {
		gchar *dir = g_path_get_dirname(d->ctl_path);
		fprintf(stderr,
			"chainfs: control socket: %s is not a directory of uid %u closed to others "
			"(anyone could replace the socket); remove it, or give -o ctl=PATH\n",
			dir, (unsigned)getuid());
		g_free(dir);
		return 1;
	}
	if (err) {
		fprintf(stderr, "chainfs: control socket: %s\n", strerror(-err));
		return 1;
	}
	if (cfs_transport_new(d, &d->transport))
		return 1;
	if (cfs_open_control(d))
		goto out_transport;
	if (cfs_open_record(d)) {
		cfs_close_control(d);
		goto out_transport;
	}
	cfs_default_timeouts(&d->opts);
	d->se = fuse_session_new(args, ops, sizeof(*ops), d);
	if (!d->se) {
		cfs_close_control(d);
		rc = 2; /* libfuse said which option it refused */
		goto out_transport;
	}
	d->paths = cfs_paths_new();
	d->faults = cfs_faults_new();
	cfs_coherence_begin(d);
	if (fuse_session_mount(d->se, mnt) != 0)
		goto out;
	if (fuse_daemonize(foreground) != 0)
		goto out_unmount;
	/* after daemonizing: a fork keeps only the calling thread */
	err = cfs_notifier_start(&d->notifier, d->se);
	if (!err)
		err = cfs_record_begin(d);
	if (!err && d->opts.loop == CFS_LOOP_POLLCORE)
		err = cfs_run_pollcore(d);
	else if (!err)
		err = cfs_run_libfuse(d, d->opts.loop == CFS_LOOP_LIBFUSE_MT);
	if (err)
		g_warning("session ended: %s", strerror(-err));
	cfs_record_end(d); /* the writer joined, the file complete, before the unmount */
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
	cfs_coherence_end(d); /* when the session never ran */
out_transport:
	cfs_record_end(d); /* idempotent: ended above unless the session never ran */
	/* after the session: its replies go through the transport until it is destroyed */
	cfs_transport_free(d->transport);
	d->transport = NULL;
	return rc;
}
