/*
 * FUSE over io_uring beside /dev/fuse, under libfuse 3.14, which knows nothing of it.
 *
 * libfuse lets a session do its I/O through our read and writev (fuse_session_custom_io), so
 * every request read from /dev/fuse and every reply and notification it writes pass here.
 * That is enough: we see the kernel's INIT offer FUSE_OVER_IO_URING, add the flag to
 * libfuse's INIT reply, register ring entries once it is answered, and route each reply by
 * its unique: to the ring entry its request came in (commit and fetch), else to /dev/fuse.
 * Notifications (unique 0, from the notifier thread too) and interrupts stay on /dev/fuse,
 * as the kernel requires. Over /dev/fuse alone the I/O passes here too, so that every reply,
 * whichever way it goes, is one the kernel takes (cfs_io_writev).
 *
 * One loop serves every queue: the kernel puts a request on the queue of the CPU that made
 * it, and a queue is only a list of entries, so a single thread can hold entries of all of
 * them. The tree has no concurrent read path, and with 2 vCPUs a thread per queue would
 * mostly add wake-ups; the ring's fd is one more pollable fd in pollcore's table, beside
 * /dev/fuse, the control socket and the signals.
 */
#include "transport.h"
#include "uring_abi.h"

#include <errno.h>
#include <glib.h>
#include <liburing.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CFS_URING_PARAM "/sys/module/fuse/parameters/enable_uring"

/* INIT flag (flags2 bit 4, kernel 6.6, protocol 7.39 as FUSE_DIRECT_IO_RELAX): a file opened
 * with direct I/O may still be mapped shared. Debian 12's <linux/fuse.h> (7.38) lacks it. */
#ifndef FUSE_DIRECT_IO_ALLOW_MMAP
#define FUSE_DIRECT_IO_ALLOW_MMAP (1ULL << 36)
#endif

enum {
	/* entries per queue that requests always find: those one CPU's callers can have with
	 * us at once */
	CFS_URING_DEPTH = 8,
	/* entries per queue beyond those, for requests a delay fault holds back. A ring request
	 * is answered only through its entry (the kernel files it in the queue's own list, so a
	 * reply on /dev/fuse would not find it: fs/fuse/dev_uring.c), and the kernel cannot be
	 * given an entry for requests already waiting (a REGISTER fetches nothing). So the held
	 * entries are bounded: a queue holds at most this many, and a further delayed request on
	 * it is served at once (stats: unheld), keeping CFS_URING_DEPTH entries for the rest. */
	CFS_URING_HOLD = 8,
	CFS_URING_ENTRIES = CFS_URING_DEPTH + CFS_URING_HOLD,
	/* room before an entry's payload for the in-header and the op's fixed argument, so a
	 * request is made contiguous (as /dev/fuse gives it) without copying its payload */
	CFS_URING_LEAD = sizeof(struct fuse_in_header) + FUSE_URING_OP_IN_OUT_SZ,
	/* completions served per wake, as the /dev/fuse side's burst */
	CFS_URING_BURST = 256,
	/* the kernel's FUSE_DEFAULT_MAX_PAGES_PER_REQ, when INIT does not set max_pages */
	CFS_URING_DEFAULT_PAGES = 32,
	CFS_URING_MIN_PAYLOAD = 8192, /* the kernel's FUSE_MIN_READ_BUFFER */
};

enum cfs_ring_state { CFS_RING_NONE, CFS_RING_READY, CFS_RING_REGISTERED, CFS_RING_FAILED };

struct cfs_ring_ent {
	struct fuse_uring_req_header hdr; /* iov[0]: the kernel writes and reads it */
	struct iovec iov[2];
	char *mem;	 /* CFS_URING_LEAD bytes, then the payload (iov[1]) */
	uint64_t unique; /* the request we are serving in it; 0: the kernel has the entry */
	uint16_t qid;
	bool held; /* its request is held back by a delay fault until its reply */
	bool dead; /* the kernel ended it (teardown) */
};

struct cfs_transport {
	struct cfs_daemon *d;
	enum cfs_transport_kind want;
	bool custom_io; /* libfuse's I/O goes through us */
	bool uring_live;
	int error;
	char why[160]; /* why auto serves /dev/fuse */
	/* INIT, seen on its way in and on its reply's way out */
	uint64_t init_unique;
	bool init_pending, offered, mmap_offered;
	/* the ring */
	enum cfs_ring_state state;
	struct io_uring ring;
	struct pc_loop *loop;
	cfs_request_fn *fn;
	void *arg;
	unsigned queues;
	size_t payload_sz;
	struct cfs_ring_ent *ents;    /* queues * CFS_URING_ENTRIES */
	struct cfs_ring_ent *serving; /* whose request the request function has, or NULL */
	uint64_t ring_requests, unheld, replies_fixed;
};

/* The kernel makes one queue per possible CPU (num_possible_cpus) and picks the issuing
 * CPU's: /sys says which are possible, "0-1" or "0-3,6". */
static unsigned cfs_possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	unsigned n = 0, a, b;
	char sep;

	if (!f)
		return (unsigned)sysconf(_SC_NPROCESSORS_CONF);
	while (fscanf(f, "%u", &a) == 1) {
		b = a;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-' && fscanf(f, "%u%c", &b, &sep) < 1)
			break;
		n += b - a + 1;
		if (sep != ',' && sep != '-')
			break;
	}
	fclose(f);
	return n ? n : 1;
}

/* Auto goes on over /dev/fuse: said once, kept for `stats`. */
static void cfs_fall_back(struct cfs_transport *t, const char *why)
{
	snprintf(t->why, sizeof(t->why), "%s", why);
	if (t->want == CFS_TRANSPORT_URING) {
		g_warning("transport=uring: %s; ending the session", why);
		t->error = -EOPNOTSUPP;
		if (t->loop)
			pc_stop(t->loop);
		return;
	}
	g_message("transport auto: serving over /dev/fuse: %s", why);
}

/* 'Y', 'N', or 0 when the kernel has no FUSE over io_uring at all */
static char cfs_uring_param(void)
{
	FILE *f = fopen(CFS_URING_PARAM, "re");
	int c;

	if (!f)
		return 0;
	c = fgetc(f);
	fclose(f);
	return c == 'Y' || c == '1' ? 'Y' : 'N';
}

int cfs_transport_new(struct cfs_daemon *d, struct cfs_transport **out)
{
	struct cfs_transport *t = calloc(1, sizeof(*t));
	char param = cfs_uring_param();

	if (!t)
		return -ENOMEM;
	t->d = d;
	t->want = d->opts.transport;
	t->ring.ring_fd = -1;
	if (t->want != CFS_TRANSPORT_DEV && d->opts.loop != CFS_LOOP_POLLCORE)
		snprintf(t->why, sizeof(t->why), "only -o loop=pollcore serves a ring");
	else if (t->want != CFS_TRANSPORT_DEV && param != 'Y')
		snprintf(t->why, sizeof(t->why), "%s",
			 param ? CFS_URING_PARAM " is N"
			       : "this kernel has no FUSE over io_uring (no " CFS_URING_PARAM ")");
	if (t->want == CFS_TRANSPORT_URING && t->why[0]) {
		fprintf(stderr, "chainfs: transport=uring: %s\n", t->why);
		free(t);
		return -EOPNOTSUPP;
	}
	/* libfuse's loops never start a transport: say it here, once */
	if (t->want == CFS_TRANSPORT_AUTO && d->opts.loop != CFS_LOOP_POLLCORE)
		g_message("transport auto: serving over /dev/fuse: %s", t->why);
	*out = t;
	return 0;
}

/* ---- the ring ---- */

static void cfs_ring_prep(struct cfs_transport *t, struct cfs_ring_ent *e, uint32_t cmd,
			  uint64_t commit_id, struct io_uring_sqe *sqe)
{
	struct fuse_uring_cmd_req *req = (struct fuse_uring_cmd_req *)sqe->cmd;

	memset(sqe, 0, 2 * sizeof(*sqe)); /* an SQE128: the command area is the second half */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fuse_session_fd(t->d->se);
	sqe->cmd_op = cmd;
	sqe->user_data = (uint64_t)(e - t->ents);
	req->qid = e->qid;
	req->commit_id = commit_id;
	if (cmd == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)e->iov;
		sqe->len = 2;
	}
}

/* The entries' buffers: the payload must hold the largest request or reply INIT allowed. */
static int cfs_ring_alloc(struct cfs_transport *t, const struct fuse_init_out *out)
{
	size_t pages = out->flags & FUSE_MAX_PAGES ? out->max_pages : CFS_URING_DEFAULT_PAGES;
	size_t n = (size_t)t->queues * CFS_URING_ENTRIES;

	t->payload_sz = pages * (size_t)sysconf(_SC_PAGESIZE);
	if (t->payload_sz < out->max_write)
		t->payload_sz = out->max_write;
	if (t->payload_sz < CFS_URING_MIN_PAYLOAD)
		t->payload_sz = CFS_URING_MIN_PAYLOAD;
	t->ents = calloc(n, sizeof(*t->ents));
	if (!t->ents)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct cfs_ring_ent *e = &t->ents[i];
		/* zeroed: the kernel fills the payload behind any checker's back (valgrind sees no
		 * write to it and calls a request's name uninitialised); calloc's pages of this
		 * size come from mmap, untouched until used */
		e->mem = calloc(1, CFS_URING_LEAD + t->payload_sz);
		if (!e->mem)
			return -ENOMEM; /* cfs_transport_free frees what was made */
		e->qid = (uint16_t)(i / CFS_URING_ENTRIES);
		e->iov[0] = (struct iovec){&e->hdr, sizeof(e->hdr)};
		e->iov[1] = (struct iovec){e->mem + CFS_URING_LEAD, t->payload_sz};
	}
	return 0;
}

/* Every queue needs entries before the kernel switches to the ring; until then requests wait
 * (the kernel blocks new ones once INIT said FUSE_OVER_IO_URING), so this runs at once. A
 * refusal comes back as a completion with an errno (cfs_ring_complete). */
static int cfs_ring_register(struct cfs_transport *t)
{
	size_t n = (size_t)t->queues * CFS_URING_ENTRIES;
	int err = 0;

	for (size_t i = 0; !err && i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
		if (!sqe)
			err = -EBUSY; /* the ring was sized for all of them: cannot happen */
		else
			cfs_ring_prep(t, &t->ents[i], FUSE_IO_URING_CMD_REGISTER, 0, sqe);
	}
	if (!err) {
		int rc = io_uring_submit(&t->ring);
		err = rc < 0 ? rc : rc != (int)n ? -EIO : 0;
	}
	if (err)
		return err;
	t->state = CFS_RING_REGISTERED;
	t->uring_live = true;
	g_message("transport: io_uring, %u queues of %d entries (%d for delays), %zu-byte payloads",
		  t->queues, CFS_URING_ENTRIES, CFS_URING_HOLD, t->payload_sz);
	return 0;
}

static struct cfs_ring_ent *cfs_ring_find(struct cfs_transport *t, uint64_t unique)
{
	size_t n = t->ents ? (size_t)t->queues * CFS_URING_ENTRIES : 0;

	for (size_t i = 0; i < n; i++)
		if (t->ents[i].unique == unique)
			return &t->ents[i];
	return NULL;
}

/* A reply to a request that came in E: into E's buffers, committed with the next fetch. */
static ssize_t cfs_ring_commit(struct cfs_transport *t, struct cfs_ring_ent *e,
			       const struct iovec *iov, int count)
{
	const size_t oh = sizeof(struct fuse_out_header);
	char *payload = e->mem + CFS_URING_LEAD;
	size_t total = 0, skip = oh, room = t->payload_sz;
	struct io_uring_sqe *sqe;
	uint64_t unique = e->unique;
	int rc;

	memcpy(e->hdr.in_out, iov[0].iov_base, oh); /* libfuse's iov[0] is the out header */
	for (int i = 0; i < count; i++) {
		size_t len = iov[i].iov_len - (skip < iov[i].iov_len ? skip : iov[i].iov_len);
		const char *from = (const char *)iov[i].iov_base + (iov[i].iov_len - len);
		skip -= iov[i].iov_len - len;
		if (len > room - total) /* larger than the request allowed: the kernel says so */
			len = room - total;
		memmove(payload + total, from, len);
		total += len;
	}
	e->hdr.ring_ent_in_out = (struct fuse_uring_ent_in_out){.payload_sz = (uint32_t)total};
	e->unique = 0;
	e->held = false;
	sqe = io_uring_get_sqe(&t->ring);
	if (!sqe) {
		errno = EBUSY;
		return -1;
	}
	cfs_ring_prep(t, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, unique, sqe);
	rc = io_uring_submit(&t->ring);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return (ssize_t)(oh + total);
}

/* The entry's request, contiguous as /dev/fuse gives it: in-header, the op's fixed argument
 * (the kernel puts it apart), payload. The kernel says only the payload's length; the fixed
 * argument is what the header's length leaves. */
static void cfs_ring_request(struct cfs_transport *t, struct cfs_ring_ent *e)
{
	struct fuse_in_header in;
	uint32_t payload = e->hdr.ring_ent_in_out.payload_sz;
	size_t op_sz;

	memcpy(&in, e->hdr.in_out, sizeof(in));
	op_sz = in.len - sizeof(in) - payload;
	if (in.len < sizeof(in) + payload || op_sz > FUSE_URING_OP_IN_OUT_SZ ||
	    payload > t->payload_sz || in.unique == 0) {
		struct fuse_out_header out = {sizeof(out), -EIO, in.unique};
		struct iovec iov = {&out, sizeof(out)};
		g_warning("ring request %llu: malformed (len %u, payload %u)",
			  (unsigned long long)in.unique, in.len, payload);
		e->unique = in.unique;
		cfs_ring_commit(t, e, &iov, 1);
		return;
	}
	char *start = e->mem + CFS_URING_LEAD - op_sz - sizeof(in);
	memcpy(start, &in, sizeof(in));
	memcpy(start + sizeof(in), e->hdr.op_in, op_sz);
	e->unique = in.unique;
	t->ring_requests++;
	t->serving = e;
	t->fn(t->arg, &(struct fuse_buf){.size = in.len, .mem = start});
	t->serving = NULL;
}

static unsigned cfs_ring_held(const struct cfs_transport *t, uint16_t qid)
{
	const struct cfs_ring_ent *q = &t->ents[(size_t)qid * CFS_URING_ENTRIES];
	unsigned n = 0;

	for (size_t i = 0; i < CFS_URING_ENTRIES; i++)
		n += q[i].held;
	return n;
}

bool cfs_transport_hold(struct cfs_transport *t)
{
	struct cfs_ring_ent *e = t ? t->serving : NULL;

	if (!e) /* from /dev/fuse: the kernel keeps it whatever we hold */
		return true;
	if (cfs_ring_held(t, e->qid) >= CFS_URING_HOLD) {
		if (t->unheld++ == 0)
			g_message("ring queue %u holds %d delayed requests: further delays on it "
				  "are served at once (stats: unheld)",
				  e->qid, CFS_URING_HOLD);
		return false;
	}
	e->held = true;
	return true;
}

static void cfs_ring_complete(struct cfs_transport *t, struct cfs_ring_ent *e, int res)
{
	if (res == 0) {
		cfs_ring_request(t, e);
		return;
	}
	e->dead = true;
	if (t->state == CFS_RING_REGISTERED && t->ring_requests == 0 && res != -ENOTCONN &&
	    res != -ECANCELED) {
		/* a REGISTER refused: the kernel went back to /dev/fuse (fc->io_uring = 0) */
		char why[96];
		snprintf(why, sizeof(why), "ring registration refused: %s", strerror(-res));
		t->state = CFS_RING_FAILED;
		t->uring_live = false;
		cfs_fall_back(t, why);
		return;
	}
	g_debug("ring entry %td of queue %u ended: %s", e - t->ents, e->qid, strerror(-res));
}

void cfs_transport_serve_ring(struct cfs_transport *t, cfs_request_fn *fn, void *arg)
{
	struct io_uring_cqe *cqe;

	if (!t || t->ring.ring_fd < 0)
		return;
	t->fn = fn;
	t->arg = arg;
	for (int i = 0; i < CFS_URING_BURST && io_uring_peek_cqe(&t->ring, &cqe) == 0; i++) {
		uint64_t idx = cqe->user_data;
		int res = cqe->res;
		io_uring_cqe_seen(&t->ring, cqe);
		if (t->ents && idx < (uint64_t)t->queues * CFS_URING_ENTRIES)
			cfs_ring_complete(t, &t->ents[idx], res);
	}
}

static void cfs_on_ring(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct cfs_transport *t = data;

	cfs_transport_serve_ring(t, t->fn, t->arg);
}

/* ---- libfuse's I/O ---- */

/* INIT on its way in: did the kernel offer the ring? */
static void cfs_note_init(struct cfs_transport *t, const void *buf, size_t n)
{
	const struct fuse_in_header *in = buf;
	struct fuse_init_in init;

	if (n < sizeof(*in) || in->opcode != FUSE_INIT)
		return;
	t->init_unique = in->unique;
	t->init_pending = true;
	memset(&init, 0, sizeof(init));
	memcpy(&init, (const char *)buf + sizeof(*in),
	       n - sizeof(*in) < sizeof(init) ? n - sizeof(*in) : sizeof(init));
	t->offered = (init.flags & FUSE_INIT_EXT) && (init.flags2 & (FUSE_OVER_IO_URING >> 32));
	t->mmap_offered =
	    (init.flags & FUSE_INIT_EXT) && (init.flags2 & (FUSE_DIRECT_IO_ALLOW_MMAP >> 32));
}

static ssize_t cfs_io_read(int fd, void *buf, size_t len, void *userdata)
{
	struct cfs_daemon *d = userdata;
	ssize_t n = read(fd, buf, len);

	if (n > 0 && !d->transport->init_pending && d->transport->init_unique == 0)
		cfs_note_init(d->transport, buf, (size_t)n);
	return n;
}

/* INIT's reply on its way out: FUSE_OVER_IO_URING added when the kernel offered it and the
 * entries' buffers could be made; the entries are registered once the kernel has taken the
 * reply (it refuses them before: it needs max_write to check their size). From that reply
 * on the kernel holds every request until the ring is complete or a REGISTER is refused, so
 * a failure to submit them ends the session rather than leave a mount that hangs. */
static ssize_t cfs_io_init_reply(struct cfs_transport *t, int fd, struct iovec *iov, int count)
{
	const size_t need = offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t);
	struct fuse_init_out *out = count >= 2 && iov[1].iov_len >= need ? iov[1].iov_base : NULL;
	char why[96] = "";
	ssize_t n;
	int err;

	t->init_pending = false;
	/* while fault rules stand files are opened with direct I/O (ops.c), which the kernel
	 * maps shared only when told so here: libfuse 3.14 knows nothing of the flag */
	if (out && t->mmap_offered) {
		out->flags |= FUSE_INIT_EXT;
		out->flags2 |= (uint32_t)(FUSE_DIRECT_IO_ALLOW_MMAP >> 32);
		t->d->direct_io_mmap = true;
	}
	if (t->state != CFS_RING_READY)
		return writev(fd, iov, count); /* cfs_transport_start said why */
	if (!out)
		snprintf(why, sizeof(why), "INIT reply too short for flags2");
	else if (!t->offered)
		snprintf(why, sizeof(why), "the kernel did not offer FUSE_OVER_IO_URING at INIT");
	else if ((err = cfs_ring_alloc(t, out)) != 0)
		snprintf(why, sizeof(why), "ring buffers: %s", strerror(-err));
	if (why[0]) {
		t->state = CFS_RING_FAILED;
		cfs_fall_back(t, why);
		return writev(fd, iov, count);
	}
	out->flags |= FUSE_INIT_EXT;
	out->flags2 |= (uint32_t)(FUSE_OVER_IO_URING >> 32);
	n = writev(fd, iov, count);
	if (n >= 0 && (err = cfs_ring_register(t)) != 0) {
		g_warning("ring registration not submitted: %s; ending the session",
			  strerror(-err));
		t->state = CFS_RING_FAILED;
		t->error = err;
		pc_stop(t->loop);
	}
	return n;
}

/* A reply the kernel refused without looking its request up (fs/fuse/dev.c checks the length
 * and the error first): the request still waits, so it gets a bare EIO. Over the ring the
 * kernel ends the request itself. The reply as given is still reported refused. */
static ssize_t cfs_io_refused(struct cfs_transport *t, int fd, uint64_t unique, int error)
{
	struct fuse_out_header eio = {sizeof(eio), -EIO, unique};

	t->replies_fixed++;
	g_warning("reply to request %llu (error %d) refused by the kernel; answered EIO",
		  (unsigned long long)unique, error);
	if (write(fd, &eio, sizeof(eio)) < 0 && errno != ENOENT)
		g_warning("EIO to request %llu: %s", (unsigned long long)unique, strerror(errno));
	errno = EINVAL;
	return -1;
}

/* A reply to a ring request: an error the kernel would refuse becomes EIO, as over /dev/fuse
 * (the kernel would answer EINVAL). */
static ssize_t cfs_io_ring_reply(struct cfs_transport *t, struct cfs_ring_ent *e, struct iovec *iov,
				 int count)
{
	const struct fuse_out_header *oh = iov[0].iov_base;
	struct fuse_out_header eio = {sizeof(eio), -EIO, oh->unique};
	struct iovec plain = {&eio, sizeof(eio)};

	if (oh->error <= 0 && oh->error >= -CFS_REPLY_ERRNO_MAX)
		return cfs_ring_commit(t, e, iov, count);
	t->replies_fixed++;
	g_warning(
	    "reply to ring request %llu with error %d, which the kernel refuses; answered EIO",
	    (unsigned long long)oh->unique, oh->error);
	cfs_ring_commit(t, e, &plain, 1);
	errno = EINVAL;
	return -1;
}

/* Every reply and notification libfuse sends; the notifier thread's (unique 0) touch nothing
 * of the loop's. */
static ssize_t cfs_io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct cfs_daemon *d = userdata;
	struct cfs_transport *t = d->transport;
	const struct fuse_out_header *oh = iov[0].iov_base;
	struct cfs_ring_ent *e;
	ssize_t n;

	if (count < 1 || iov[0].iov_len < sizeof(*oh) || oh->unique == 0)
		return writev(fd, iov, count);
	cfs_record_reply(d, iov, count); /* what the caller is shown, while recording */
	if (t->init_pending && oh->unique == t->init_unique)
		return cfs_io_init_reply(t, fd, iov, count);
	e = t->uring_live ? cfs_ring_find(t, oh->unique) : NULL;
	if (e)
		return cfs_io_ring_reply(t, e, iov, count);
	n = writev(fd, iov, count);
	/* an interrupt's reply (FUSE_INT_REQ_BIT) answers no request */
	if (n < 0 && errno == EINVAL && !(oh->unique & FUSE_INT_REQ_BIT))
		return cfs_io_refused(t, fd, oh->unique, oh->error);
	return n;
}

ssize_t cfs_transport_send(struct cfs_daemon *d, struct iovec *iov, int count)
{
	int fd = fuse_session_fd(d->se);

	if (!d->transport || !d->transport->custom_io)
		return writev(fd, iov, count);
	return cfs_io_writev(fd, iov, count, d);
}

/* ---- life ---- */

static int cfs_ring_setup(struct cfs_transport *t)
{
	unsigned n;
	int err;

	t->queues = cfs_possible_cpus();
	n = t->queues * CFS_URING_ENTRIES;
	err = io_uring_queue_init(n, &t->ring, IORING_SETUP_SQE128);
	if (err) {
		t->ring.ring_fd = -1;
		return err;
	}
	err = pc_io_add(t->loop, t->ring.ring_fd, POLLIN, cfs_on_ring, t);
	if (err) {
		io_uring_queue_exit(&t->ring);
		t->ring.ring_fd = -1;
	}
	return err;
}

int cfs_transport_start(struct cfs_transport *t, struct pc_loop *loop, cfs_request_fn *fn,
			void *arg)
{
	static const struct fuse_custom_io io = {.read = cfs_io_read, .writev = cfs_io_writev};
	struct fuse_session *se = t->d->se;
	int err;

	t->loop = loop;
	t->fn = fn;
	t->arg = arg;
	/* libfuse keeps using the fd it mounted; only its reads and writes change hands */
	t->custom_io = fuse_session_custom_io(se, &io, fuse_session_fd(se)) == 0;
	if (!t->custom_io && t->want == CFS_TRANSPORT_DEV)
		g_warning("libfuse refused a custom io: replies go out unchecked");
	if (t->want == CFS_TRANSPORT_DEV)
		return 0;
	if (t->why[0]) { /* auto, and cfs_transport_new found why not */
		g_message("transport auto: serving over /dev/fuse: %s", t->why);
		return 0;
	}
	if (!t->custom_io) {
		cfs_fall_back(t, "libfuse refused a custom io");
		return t->error;
	}
	err = cfs_ring_setup(t);
	if (err) {
		char why[96];
		snprintf(why, sizeof(why), "io_uring_queue_init: %s", strerror(-err));
		cfs_fall_back(t, why);
		return t->error;
	}
	t->state = CFS_RING_READY;
	return 0;
}

void cfs_transport_stop(struct cfs_transport *t)
{
	if (t && t->loop && t->ring.ring_fd >= 0)
		pc_io_del(t->loop, t->ring.ring_fd);
	if (t)
		t->loop = NULL;
}

int cfs_transport_error(const struct cfs_transport *t)
{
	return t ? t->error : 0;
}

int cfs_transport_ring_fd(const struct cfs_transport *t)
{
	return t && t->uring_live ? t->ring.ring_fd : -1;
}

/* After the session ended: the kernel has torn the queues down, nothing writes to the
 * entries any more. */
void cfs_transport_free(struct cfs_transport *t)
{
	if (!t)
		return;
	if (t->ring.ring_fd >= 0)
		io_uring_queue_exit(&t->ring);
	for (size_t i = 0; t->ents && i < (size_t)t->queues * CFS_URING_ENTRIES; i++)
		free(t->ents[i].mem);
	free(t->ents);
	free(t);
}

static unsigned cfs_ring_held_all(const struct cfs_transport *t)
{
	unsigned n = 0;

	for (unsigned q = 0; t->ents && q < t->queues; q++)
		n += cfs_ring_held(t, (uint16_t)q);
	return n;
}

void cfs_transport_stats(const struct cfs_transport *t, struct cfs_transport_stats *out)
{
	bool live = t && t->uring_live;

	*out = (struct cfs_transport_stats){
	    .live = live ? "uring" : "dev",
	    .fallback = t && t->why[0] ? t->why : NULL,
	    .queues = live ? t->queues : 0,
	    .entries = live ? CFS_URING_ENTRIES : 0,
	    .hold_max = live ? CFS_URING_HOLD : 0,
	    .held = live ? cfs_ring_held_all(t) : 0,
	    .ring_requests = t ? t->ring_requests : 0,
	    .unheld = t ? t->unheld : 0,
	    .replies_fixed = t ? t->replies_fixed : 0,
	};
}
