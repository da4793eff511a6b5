/*
 * The request gate: where each request is checked against the fault rules, held back by a
 * delay, timed and recorded (gate.h). Whatever a handler left recorded goes to the notifier
 * here too, and replies held for it go once it delivered.
 */
#include "gate.h"

#include "change.h"
#include "fault.h"
#include "notify.h"
#include "ops.h"
#include "paths.h"
#include "transport.h"

#include <errno.h>
#include <glib.h>
#include <limits.h>
#include <linux/fuse.h>
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

/* A request held back by a delay or hold fault: processed when its timer fires. A hold
 * without a timeout has no timer running until it is released (cfs_gate_release), which
 * starts it at 0 ms: the request is served in the loop's next pass, as a delay would be. */
struct cfs_delayed {
	struct pc_timer timer;
	struct cfs_gate *g;
	struct fuse_buf buf; /* our own copy of the request */
	uint64_t unique;     /* the kernel's, for an INTERRUPT naming it */
	unsigned rule;	     /* the rule that holds it (fault list counts it there) */
	bool hold;	     /* a hold: an INTERRUPT ends it */
	bool counted;	     /* still counted as held by its rule */
	struct cfs_delayed *prev, *next;
};

struct cfs_gate {
	struct cfs_daemon *d;
	struct pc_loop *loop;
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

/* A rename's new path into TO (its new directory's path plus the second name it carries), for
 * to= rules; "" when the request is cut short. */
static void cfs_rename_to(struct cfs_daemon *d, const struct fuse_in_header *in, size_t size,
			  char *to)
{
	const char *old = cfs_request_name(in, size), *end = (const char *)in + size;
	const char *name = old ? old + strlen(old) + 1 : NULL;

	to[0] = '\0';
	if (!name || name >= end || !memchr(name, '\0', (size_t)(end - name)))
		return;
	/* fuse_rename2_in starts as fuse_rename_in does: newdir first */
	cfs_nodeid_path(d->tree, d->paths, ((const struct fuse_rename_in *)(in + 1))->newdir, name,
			to, RS_PATH_MAX);
}

/* Who sent the request, for a read or a write the bytes of the file it spans, and for a
 * rename, link or symlink its new path: TO's (RS_PATH_MAX bytes) for a rename, PATH for the
 * others (their node is the new parent, their name the new entry's). */
static void cfs_request_who(struct cfs_daemon *d, const struct fuse_in_header *in, enum cfs_op op,
			    size_t size, const char *path, char *to, struct cfs_fault_who *who)
{
	*who = (struct cfs_fault_who){.pid = in->pid, .uid = in->uid};
	if (op == CFS_OP_read && size >= sizeof(*in) + sizeof(struct fuse_read_in)) {
		const struct fuse_read_in *r = (const void *)(in + 1);
		*who = (struct cfs_fault_who){in->pid, in->uid, true, r->offset, r->size, NULL};
	} else if (op == CFS_OP_write && size >= sizeof(*in) + sizeof(struct fuse_write_in)) {
		const struct fuse_write_in *w = (const void *)(in + 1);
		*who = (struct cfs_fault_who){in->pid, in->uid, true, w->offset, w->size, NULL};
	} else if (op == CFS_OP_rename && to &&
		   size >= sizeof(*in) + sizeof(struct fuse_rename_in)) {
		cfs_rename_to(d, in, size, to);
		who->to = to;
	} else if (op == CFS_OP_link || op == CFS_OP_symlink) {
		who->to = path;
	}
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
	struct cfs_fault_who who;

	cfs_request_who(d, in, CFS_OP_write, size, path, NULL, &who);
	if (size < sizeof(*in) + sizeof(struct fuse_write_in) ||
	    !cfs_fault_match_who(d->faults, CFS_OP_write, path, &who, CFS_FAULT_NOWRITE, &fx))
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
	struct cfs_fault_who who;
	uint32_t *len;

	cfs_request_who(d, in, op, size, path, NULL, &who);
	if (op == CFS_OP_read && size >= sizeof(*in) + sizeof(struct fuse_read_in))
		len = &((struct fuse_read_in *)(in + 1))->size;
	else if (op == CFS_OP_write && size >= sizeof(*in) + sizeof(struct fuse_write_in))
		len = &((struct fuse_write_in *)(in + 1))->size;
	else
		return;
	if (cfs_fault_match_who(d->faults, op, path, &who, CFS_FAULT_SHORT, &fx) &&
	    *len > fx.short_len)
		*len = fx.short_len;
}

/* A kill or corrupt rule's hit, in the recording: a line of its own before the request's. */
static void cfs_fault_effect_record(struct cfs_daemon *d, const struct fuse_in_header *in,
				    enum cfs_op op, const char *path,
				    const struct cfs_fault_effect *fx, const char *effect,
				    const char *error)
{
	const struct cfs_record_trigger t = {.t_ns = cfs_now_ns(),
					     .id = fx->id,
					     .pid = in->pid,
					     .on = cfs_op_names[op],
					     .path = path,
					     .effect = effect,
					     .error = error,
					     .check = fx->check,
					     .windowed = fx->window_us >= 0,
					     .window_us = fx->window_us};

	cfs_record_trigger(d, &t);
}

/* A kill rule for this request? Its signal goes to the sender (the pid the request carries)
 * before the request is answered: the caller's wait ends with the signal (a fatal one ends the
 * process, and the reply then goes nowhere) or with the reply, so nothing is left waiting.
 * Never to pid 0 (the kernel's own requests: kill(0) would signal our own group), to a pid
 * past INT_MAX (a negative pid_t names a group), nor to ourselves. */
static bool cfs_fault_kill(struct cfs_daemon *d, const struct fuse_in_header *in, enum cfs_op op,
			   const char *path, const struct cfs_fault_who *who,
			   struct cfs_fault_effect *fx)
{
	bool sent;

	if (!cfs_fault_match_who(d->faults, op, path, who, CFS_FAULT_KILL, fx))
		return false;
	sent = in->pid != 0 && in->pid <= INT_MAX && (pid_t)in->pid != getpid() &&
	       kill((pid_t)in->pid, fx->kill_sig) == 0;
	if (!sent)
		g_debug("kill rule %u: no signal to pid %u", fx->id, in->pid);
	cfs_fault_killed(d->faults, sent);
	char sig[24], effect[32];
	snprintf(effect, sizeof(effect), "kill=%s",
		 cfs_signal_name(fx->kill_sig, sig, sizeof(sig)));
	cfs_fault_effect_record(d, in, op, path, fx, effect,
				sent ? NULL : "no signal: the request has no pid of a process");
	return true;
}

static void cfs_fault_errno(struct cfs_daemon *d, const struct fuse_in_header *in, enum cfs_op op,
			    int err)
{
	struct fuse_out_header out = {0, -err, in->unique};

	cfs_count(d, op);
	d->reply_errno = err;
	cfs_fault_reply(d, &out, NULL, 0);
}

/* A corrupt rule on a read, an attr rule on a getattr or lookup: the effect into *FX for the
 * handler (d->fault_fx), and a line in the recording. */
static void cfs_fault_for_handler(struct cfs_daemon *d, const struct fuse_in_header *in,
				  enum cfs_op op, const char *path, const struct cfs_fault_who *who,
				  struct cfs_fault_effect *fx)
{
	enum cfs_fault_kind kind = op == CFS_OP_read ? CFS_FAULT_CORRUPT : CFS_FAULT_ATTR;
	gchar *effect;

	if ((op != CFS_OP_read && op != CFS_OP_getattr && op != CFS_OP_lookup) ||
	    !cfs_fault_match_who(d->faults, op, path, who, kind, fx))
		return;
	if (fx->corrupt)
		effect = g_strdup_printf("corrupt=%s bytes=%u", cfs_corrupt_name(fx->corrupt),
					 fx->corrupt_bytes);
	else
		effect = g_strdup_printf("attr=%s", cfs_fault_attrs_text(fx->attrs));
	cfs_fault_effect_record(d, in, op, path, fx, effect, NULL);
	g_free(effect);
}

/* An errno or nowrite rule for this request? Then it is answered here, before any handler:
 * one place for every operation, so no rule is accepted that never fires. A kill rule
 * signals the sender first. Short rules cut it and let it pass; a corrupt or attr rule's
 * effect goes to *HANDLER for the handler. Init and the forgets have no reply (fault.c
 * refuses rules on them). */
static bool cfs_fault_answer(struct cfs_daemon *d, struct fuse_in_header *in, enum cfs_op op,
			     const char *path, size_t size, struct cfs_fault_effect *handler)
{
	struct cfs_fault_effect fx;
	struct cfs_fault_who who;
	char to[RS_PATH_MAX];

	if (cfs_op_nofault(op)) /* `op=any` rules pass these by */
		return false;
	cfs_request_who(d, in, op, size, path, to, &who);
	if (cfs_fault_kill(d, in, op, path, &who, &fx) && fx.err) {
		cfs_fault_errno(d, in, op, fx.err);
		return true;
	}
	if (cfs_fault_match_who(d->faults, op, path, &who, CFS_FAULT_ERRNO, &fx)) {
		cfs_fault_errno(d, in, op, fx.err);
		return true;
	}
	if (op == CFS_OP_write && cfs_fault_nowrite(d, in, path, size)) {
		cfs_count(d, op);
		return true;
	}
	cfs_fault_cut(d, in, op, path, size);
	cfs_fault_for_handler(d, in, op, path, &who, handler);
	return false;
}

/* Does a change rule fire for this request? Its effect into *FX. */
static bool cfs_fault_change_due(struct cfs_daemon *d, const struct fuse_in_header *in, size_t size,
				 enum cfs_op op, const char *path, struct cfs_fault_effect *fx)
{
	struct cfs_fault_who who;
	char to[RS_PATH_MAX];

	cfs_request_who(d, in, op, size, path, to, &who);
	return !cfs_op_nofault(op) &&
	       cfs_fault_match_who(d->faults, op, path, &who, CFS_FAULT_CHANGE, fx);
}

/* A change rule fired: its lines change the tree as control spec lines do (the tree records
 * what they touch), all or none (a failed line undoes the others: change.c), and the flush
 * queues what the kernel must forget, before any other request is served. The log says how
 * it went. */
static void cfs_fault_change(struct cfs_daemon *d, uint32_t pid, enum cfs_op op, const char *path,
			     const struct cfs_fault_effect *fx)
{
	char *err = NULL;
	int rc = cfs_change_apply(d->tree, fx->change, getuid(), getgid(), &err);
	const struct cfs_record_trigger t = {.t_ns = cfs_now_ns(),
					     .id = fx->id,
					     .pid = pid,
					     .on = cfs_op_names[op],
					     .path = path,
					     .after = fx->after,
					     .change = cfs_change_text(fx->change),
					     .error = rc ? err : NULL,
					     .check = fx->check,
					     .windowed = fx->window_us >= 0,
					     .window_us = fx->window_us};

	if (rc) /* fault log says it too */
		g_debug("fault change: %s", err);
	cfs_fault_changed(d->faults, rc ? err : NULL);
	cfs_record_trigger(d, &t);
	g_free(err);
	cfs_coherence_flush(d);
}

/* Serve one request, timing our part of it for `stats`. */
static void cfs_process(struct cfs_daemon *d, const struct fuse_buf *buf)
{
	struct fuse_in_header *in = buf->mem;
	enum cfs_op op = buf->size >= sizeof(*in) ? cfs_op_of_opcode(in->opcode) : CFS_OP_MAX;
	bool faults = op != CFS_OP_MAX && cfs_faults_active(d->faults);
	uint64_t t0 = cfs_now_ns(), nodeid = buf->size >= sizeof(*in) ? in->nodeid : 0;
	char path[RS_PATH_MAX] = "";
	struct cfs_fault_effect change = {0}, handler = {0};
	uint32_t change_pid = 0; /* who sent the request a change rule fired on */
	/* What runs after the reply reads the request from a copy: a transport may give its
	 * buffer to the next request once the reply is sent (io_uring's commit-and-fetch). The
	 * recording needs the header, the fixed arguments and the names, not the data. */
	char copy[CFS_REQUEST_KEPT];
	size_t kept = d->recorder ? MIN(buf->size, sizeof(copy)) : 0;

	memcpy(copy, buf->mem, kept);
	if (d->recorder && buf->size >= sizeof(*in))
		cfs_record_expect(d, in);
	if (faults && !cfs_op_nofault(op)) {
		cfs_request_path(d, in, buf->size, path);
		cfs_fault_change_due(d, in, buf->size, op, path, &change);
		change_pid = in->pid;
	}
	/* before: the request is served from the changed tree */
	if (change.change && !change.after)
		cfs_fault_change(d, change_pid, op, path, &change);
	if (!faults || !cfs_fault_answer(d, in, op, path, buf->size, &handler)) {
		d->fault_fx = handler.id ? &handler : NULL;
		fuse_session_process_buf(d->se, buf);
		d->fault_fx = NULL;
		/* while rules stand, what the kernel keeps of an answer goes, so the next
		 * call reaches the rules (CFS_OPS' keeps) */
		if (faults && cfs_op_keeps(op))
			cfs_coherence_uncache(d, nodeid);
		/* a handler flushes before it replies; whatever it left recorded still goes now */
		cfs_coherence_flush(d);
	}
	/* after: its reply went from the old tree; the next request, whoever sent it, meets the
	 * new one (while a rule stands the kernel keeps no answer, so the next syscall asks) */
	cfs_record_request(d, copy, kept, t0); /* named in the tree its reply came from */
	if (change.change && change.after)
		cfs_fault_change(d, change_pid, op, path, &change);
	cfs_hist_add(&d->op_ns[op], cfs_now_ns() - t0);
}

/* DL is no longer held: off the list and its rule's count, its timer stopped. */
static void cfs_unhold(struct cfs_gate *g, struct cfs_delayed *dl)
{
	if (dl->prev)
		dl->prev->next = dl->next;
	else
		g->delayed = dl->next;
	if (dl->next)
		dl->next->prev = dl->prev;
	dl->prev = dl->next = NULL;
	pc_timer_stop(g->loop, &dl->timer);
	if (dl->counted)
		cfs_fault_holding(g->d->faults, dl->rule, -1);
	dl->counted = false;
}

static void cfs_delayed_free(struct cfs_delayed *dl)
{
	free(dl->buf.mem);
	free(dl);
}

static void cfs_on_delay_done(struct pc_loop *loop, struct pc_timer *t, void *data)
{
	struct cfs_delayed *dl = data;
	struct cfs_gate *g = dl->g;

	cfs_unhold(g, dl);
	/* a delay whose caller was interrupted meanwhile: libfuse has the INTERRUPT queued, and
	 * the reply to a request the kernel dropped is ignored */
	cfs_process(g->d, &dl->buf);
	cfs_delayed_free(dl);
}

int cfs_gate_release(struct cfs_gate *g, unsigned rule)
{
	int n = 0;

	for (struct cfs_delayed *dl = g ? g->delayed : NULL; dl; dl = dl->next) {
		if ((rule && dl->rule != rule) || !dl->counted)
			continue; /* another rule's, or released already */
		cfs_fault_holding(g->d->faults, dl->rule, -1);
		dl->counted = false;
		/* served in the loop's next pass, not inside the control command that released
		 * it: the command's reply goes first, and the request meets the rules then */
		pc_timer_stop(g->loop, &dl->timer);
		pc_timer_start(g->loop, &dl->timer, 0, 0);
		n++;
	}
	return n;
}

/* An INTERRUPT for a held request (the caller got a signal: SIGKILL, or one it handles) ends
 * the hold: the request is answered EINTR, as libfuse's handlers would answer an interrupted
 * one, and nothing of it runs. Without this a killed caller would wait in the kernel, unkillable,
 * until the release (a request the daemon has read is waited for to the end). Delays run
 * their course: libfuse queues the INTERRUPT, and the late reply is ignored. */
static bool cfs_interrupt_held(struct cfs_gate *g, const struct fuse_buf *buf)
{
	const struct fuse_in_header *in = buf->mem;
	struct fuse_interrupt_in arg;

	if (!g->delayed || buf->size < sizeof(*in) + sizeof(arg) || in->opcode != FUSE_INTERRUPT)
		return false;
	memcpy(&arg, in + 1, sizeof(arg));
	for (struct cfs_delayed *dl = g->delayed; dl; dl = dl->next) {
		if (dl->unique != arg.unique || !dl->hold || !dl->counted)
			continue;
		struct fuse_out_header out = {0, -EINTR, dl->unique};
		cfs_unhold(g, dl);
		cfs_fault_reply(g->d, &out, NULL, 0);
		cfs_delayed_free(dl);
		return true;
	}
	return false;
}

/* A delay rule for this request? Then keep a copy and come back to it later. */
static bool cfs_maybe_delay(struct cfs_gate *g, const struct fuse_buf *buf, size_t size)
{
	const struct fuse_in_header *in = buf->mem;
	char path[RS_PATH_MAX];
	struct cfs_fault_effect fx;

	enum cfs_op op = size >= sizeof(*in) ? cfs_op_of_opcode(in->opcode) : CFS_OP_MAX;

	/* ops no rule may name (init and the forgets: nobody waits for them; CFS_OPS says why
	 * for each), and requests that name no node (a batch forget's nodeid is 0) */
	if (cfs_op_nofault(op) || in->nodeid == 0)
		return false;
	cfs_request_path(g->d, in, size, path);
	/* over the ring the request keeps its entry while held: the transport bounds that */
	struct cfs_fault_who who;
	char to[RS_PATH_MAX];
	cfs_request_who(g->d, in, op, size, path, to, &who);
	if (!cfs_fault_match_who(g->d->faults, op, path, &who, CFS_FAULT_DELAY, &fx) ||
	    !cfs_transport_hold(g->d->transport))
		return false; /* a hold the ring has no entry for is served now, as a delay */
	struct cfs_delayed *dl = calloc(1, sizeof(*dl));
	void *copy = malloc(size);
	if (!dl || !copy) { /* no memory to hold it back: serve it now */
		free(dl);
		free(copy);
		return false;
	}
	memcpy(copy, buf->mem, size);
	dl->buf = (struct fuse_buf){.size = size, .mem = copy};
	dl->g = g;
	dl->unique = in->unique;
	dl->rule = fx.id;
	dl->hold = fx.hold;
	dl->counted = true;
	cfs_fault_holding(g->d->faults, fx.id, 1);
	dl->next = g->delayed;
	if (g->delayed)
		g->delayed->prev = dl;
	g->delayed = dl;
	pc_timer_init(&dl->timer, cfs_on_delay_done, dl);
	if (!fx.hold || fx.delay_ms) /* a hold without a timeout waits for its release */
		pc_timer_start(g->loop, &dl->timer, fx.delay_ms, 0);
	return true;
}

/* The loop has ended (unmounted, or told to stop): every request still held or delayed is
 * served now, so that no caller is left waiting on a mount nobody serves (when the kernel
 * has ended the session, the replies go nowhere, harmlessly). */
static void cfs_release_all(struct cfs_gate *g)
{
	while (g->delayed) {
		struct cfs_delayed *dl = g->delayed;
		cfs_unhold(g, dl);
		cfs_process(g->d, &dl->buf);
		cfs_delayed_free(dl);
	}
}

/* While replies are held, look at them at least every CFS_HOLD_MS. */
static void cfs_arm_hold_timer(struct cfs_gate *g)
{
	if (g->d->coh.nheld && !pc_timer_active(&g->hold_timer))
		pc_timer_start(g->loop, &g->hold_timer, CFS_HOLD_MS, 0);
}

static void cfs_on_hold_timer(struct pc_loop *loop, struct pc_timer *t, void *data)
{
	struct cfs_gate *g = data;

	cfs_coherence_send_held(g->d, false);
	cfs_arm_hold_timer(g);
}

/* The notifier delivered what some held replies wait for: send those. */
static void cfs_on_replies_delivered(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct cfs_gate *g = data;
	uint64_t count;

	if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		g_message("reading the notifier's eventfd: %s", strerror(errno));
	cfs_coherence_send_held(g->d, false);
}

/* Held replies need the notifier's eventfd on the loop; without it every reply goes now. */
static int cfs_start_holding(struct cfs_gate *g)
{
	int fd = cfs_notify_wake_fd(g->d->notifier, CFS_WAIT_REPLIES);
	int err;

	if (fd < 0)
		return 0;
	err = pc_io_add(g->loop, fd, POLLIN, cfs_on_replies_delivered, g);
	if (err)
		return err;
	g->replies_fd = fd;
	g->d->coh.can_hold = true;
	return 0;
}

/* The loop has ended: what is still held goes now (the session ends). */
static void cfs_stop_holding(struct cfs_gate *g)
{
	g->d->coh.can_hold = false;
	cfs_coherence_send_held(g->d, true);
	pc_timer_stop(g->loop, &g->hold_timer);
	if (g->replies_fd >= 0)
		pc_io_del(g->loop, g->replies_fd);
	g->replies_fd = -1;
}

/* O_TMPFILE: libfuse 3.14 has no handler for FUSE_TMPFILE (it would answer ENOSYS, which the
 * kernel turns into EOPNOTSUPP for good). Its arguments and reply are CREATE's, and the kernel
 * names the new dentry "/", which no CREATE can carry: handed over as a CREATE, cfs_ll_create
 * knows it by that name. Faults, stats and the recording count it as a create. */
static void cfs_tmpfile_as_create(const struct fuse_buf *buf)
{
	struct fuse_in_header *in = buf->mem;

	if (buf->size >= sizeof(*in) && in->opcode == FUSE_TMPFILE)
		in->opcode = FUSE_CREATE;
}

void cfs_serve_one(void *gate, const struct fuse_buf *buf)
{
	struct cfs_gate *g = gate;

	cfs_tmpfile_as_create(buf);

	if (cfs_interrupt_held(g, buf))
		return;
	if (cfs_faults_active(g->d->faults) && cfs_maybe_delay(g, buf, buf->size))
		return;
	cfs_process(g->d, buf);
	cfs_arm_hold_timer(g);
}

int cfs_gate_open(struct cfs_gate **out, struct cfs_daemon *d, struct pc_loop *loop)
{
	struct cfs_gate *g = calloc(1, sizeof(*g));
	int err;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->d = d;
	g->loop = loop;
	g->replies_fd = -1;
	pc_timer_init(&g->hold_timer, cfs_on_hold_timer, g);
	err = cfs_start_holding(g);
	if (err) {
		free(g);
		return err;
	}
	*out = g;
	return 0;
}

void cfs_gate_close(struct cfs_gate *g)
{
	if (!g)
		return;
	cfs_release_all(g);
	cfs_stop_holding(g);
	free(g);
}

/* The loop has ended, but the notifier may be inside the kernel: an invalidation waits for a
 * directory's lock, held by a caller whose request waits for an answer only this thread can
 * give (a mutation in that directory, a stat of the mountpoint by fusermount). Keep answering
 * requests, one at a time, until the notifier has left, or the session is gone. */
static void cfs_drain_one(void *data, const struct fuse_buf *buf)
{
	struct cfs_daemon *d = data;

	cfs_tmpfile_as_create(buf);
	fuse_session_process_buf(d->se, buf);
}

void cfs_drain_notifier(struct cfs_daemon *d)
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
		cfs_drain_one(d, &buf);
	}
	free(buf.mem);
}
