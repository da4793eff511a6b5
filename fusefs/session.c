/*
 * The mount's life: open (the control socket, the recording, the FUSE session and its mount),
 * run (daemonize, the notifier, our pollcore loop or libfuse's) and close, with one cleanup
 * path. On pollcore /dev/fuse is non-blocking and drained on every wake, so one poll() serves
 * a burst of requests, each through the request gate (gate.c); signals arrive through the
 * loop, never by racing a flag against poll().
 */
#include "session.h"

#include "control.h"
#include "links.h"
#include "ctlpath.h"
#include "fault.h"
#include "gate.h"
#include "mountflags.h"
#include "notify.h"
#include "ops.h"
#include "paths.h"
#include "pc.h"
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
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

struct cfs_server {
	struct cfs_daemon *d;
	struct pc_loop loop;
	struct fuse_buf buf; /* one receive buffer for the life of the session */
	bool gone;	     /* the kernel ended the session (unmounted) */
	struct cfs_control *ctl;
	struct cfs_gate *gate; /* fault rules, delays, held replies */
};

static void cfs_session_gone(struct cfs_server *s)
{
	s->gone = true;
	pc_stop(&s->loop);
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
		cfs_serve_one(s->gate, &req);
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
		err = cfs_gate_open(&s->gate, d, &s->loop);
	if (!err)
		err = cfs_transport_start(d->transport, &s->loop, cfs_serve_one, s->gate);
	if (!err) {
		d->gate = s->gate; /* the control's `fault release` reaches it */
		err = pc_run(&s->loop);
		d->gate = NULL;
	}
	if (!err)
		err = cfs_transport_error(d->transport);
	cfs_gate_close(s->gate);
	cfs_transport_stop(d->transport);
	cfs_control_stop(s->ctl);
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

/* Before anything is opened: the mount point is free and the control socket's path is
 * settled. 0, or 1 after a message. */
static int cfs_check_mount(struct cfs_daemon *d)
{
	const char *mnt = d->opts.mountpoint;
	int busy = cfs_is_mountpoint(mnt);
	int err;

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
	return 0;
}

/* Everything the session holds, up to the mount; cfs_session_close() releases what was
 * opened, whatever failed. 0, 1, or 2 when libfuse refused an option (it said which). */
/* -o faults=FILE: the rules stand from the first request on. An opens=skip mount is taken to
 * send no OPEN, FLUSH or OPENDIR until INIT says. 0, or -EINVAL said on stderr. */
static int cfs_session_faults(struct cfs_daemon *d)
{
	char *err = NULL;
	int rc;

	if (d->opts.opens == CFS_OPENS_SKIP)
		cfs_faults_unsent_opens(d, true, true);
	rc = cfs_faults_load(d->faults, d->opts.faults, &err);
	if (rc)
		fprintf(stderr, "chainfs: -o faults: %s\n", err);
	g_free(err);
	return rc;
}

static int cfs_session_open(struct cfs_daemon *d, struct fuse_args *args)
{
	const struct fuse_lowlevel_ops *ops =
	    d->opts.loop == CFS_LOOP_LIBFUSE_MT ? &cfs_mt_ops : &cfs_ops;

	d->faults = cfs_faults_new(); /* first: a bad rules file leaves nothing made */
	if (d->opts.read_only)
		cfs_faults_no_change(d->faults, "the mount is read-only (-o ro): no rule may "
						"change the tree");
	if (d->opts.faults && cfs_session_faults(d))
		return 2;
	if (cfs_transport_new(d, &d->transport) || cfs_open_control(d) || cfs_open_record(d))
		return 1;
	cfs_default_timeouts(&d->opts);
	d->se = fuse_session_new(args, ops, sizeof(*ops), d);
	if (!d->se)
		return 2;
	d->paths = cfs_paths_new();
	cfs_coherence_begin(d);
	return fuse_session_mount(d->se, d->opts.mountpoint) != 0 ? 1 : 0;
}

/* Serve the mounted session until it ends, and end what serving started: the notifier,
 * the recording (complete before the unmount), coherence. 0, or 1 when it failed. */
static int cfs_session_run(struct cfs_daemon *d, int foreground)
{
	int err;

	if (fuse_daemonize(foreground) != 0)
		return 1;
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
	return err ? 1 : 0;
}

/* The one cleanup path: each step undoes what cfs_session_open() did, if it did. */
static void cfs_session_close(struct cfs_daemon *d)
{
	if (d->se) /* unmounts only what was mounted */
		fuse_session_unmount(d->se);
	cfs_close_control(d);
	if (d->se)
		fuse_session_destroy(d->se);
	d->se = NULL;
	cfs_paths_free(d->paths);
	d->paths = NULL;
	cfs_faults_free(d->faults);
	d->faults = NULL;
	cfs_coherence_end(d); /* idempotent: ended already unless the session never ran */
	cfs_record_end(d);    /* idempotent: ended already unless the session never ran */
	/* after the session: its replies go through the transport until it is destroyed */
	cfs_transport_free(d->transport);
	d->transport = NULL;
}

int cfs_serve(struct cfs_daemon *d, struct fuse_args *args, int foreground)
{
	int rc = cfs_check_mount(d);

	if (rc)
		return rc;
	rc = cfs_session_open(d, args);
	if (!rc)
		rc = cfs_session_run(d, foreground);
	cfs_session_close(d);
	return rc;
}
