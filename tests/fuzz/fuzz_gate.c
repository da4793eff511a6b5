/*
 * Fuzz target "gate": FUSE requests (struct fuse_in_header + body), built from the input,
 * go through the request gate (cfs_serve_one) into libfuse and the daemon's handlers, with
 * and without fault rules standing, on a small tree. There is no mount: the session is
 * libfuse's own, made with fuse_session_new, whose I/O we give (fuse_session_custom_io) to
 * one end of a socket pair. Replies written by libfuse and the ones the gate writes itself
 * for a fault rule (cfs_transport_send with no transport: a writev on the session's fd) both
 * land there, one datagram each, and are read back after every request.
 *
 * The input is records of [cmd][node][len][len bytes]. CMD picks a request (fz_cmds) or a
 * fault rule (fz_rules, added to the rules standing, or clearing them); NODE picks a nodeid
 * among those the daemon handed out (the root first), as the kernel only sends those; the
 * bytes fill the request's names and fixed arguments, which are made consistent the way the
 * kernel makes them (names end in a NUL, a write's size is its data's), because libfuse
 * trusts what the kernel sends. What the gate reads itself (the path of a nodeid, a name, a
 * read's or write's size) is what varies.
 *
 * Checked:
 * - every reply is one whole message: its len is what arrived, its error in -511..0 (what
 *   the kernel takes), an error reply carries no body;
 * - with no delay rule standing, each request that wants a reply has it at once;
 * - every reply answers a request waiting for one (no reply twice, none to a forget), and at
 *   the end of an odd-sized input, once the delays have run out on the loop, every request
 *   that wants a reply has had exactly one (an even-sized one closes the gate with requests
 *   still held);
 * - a standing errno rule on every path for an op (fz_rules' "always" ones) answers each such
 *   request with its errno, at once;
 * - the gate closes with requests still delayed without leaking them (LSan), and the tree,
 *   the nodeid table and the rules are freed whole.
 */
#include "daemon.h"
#include "fault.h"
#include "fuzz_util.h"
#include "gate.h"
#include "ops.h"
#include "paths.h"
#include "pc.h"
#include "tree.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

enum {
	FZ_MAX_RECORDS = 64,
	FZ_MAX_NODES = 64,	  /* nodeids remembered from entry replies */
	FZ_MAX_WAITING = 256,	  /* requests waiting for their reply */
	FZ_MAX_IO = 65536,	  /* the largest read, write or listing asked for */
	FZ_REPLY_MAX = 1 << 18,	  /* a reply's room: FZ_MAX_IO and the headers fit */
	FZ_DELAY_RUNS = 200,	  /* loop passes of 5 ms for the delays to run out (1 s) */
	FZ_REPLY_ERRNO_MAX = 511, /* transport.h's CFS_REPLY_ERRNO_MAX */
};

static const char fz_spec[] = "file /README \"chainfs\\n\" mode=0444\n"
			      "dir /chains\n"
			      "file /chains/target \"the end of the chain\\n\"\n"
			      "chain /chains/5 5 target\n"
			      "dir /loops\n"
			      "loop /loops/self 1\n"
			      "link /dangling nothing-here\n"
			      "link /abs /chains/target\n"
			      "dir /files mode=0750 uid=1 gid=2\n"
			      "file /files/hello \"hello\\n\"\n"
			      "file /files/abc size=1k pattern=\"abc\\n\"\n"
			      "deep /deep 3\n";

/* Names a request may carry, so short inputs reach real entries (a byte below 0x80 picks
 * one); other bytes start a name of the input's own. */
static const char *const fz_names[] = {"README", "chains",   "target", "5",	"loops",
				       "self",	 "dangling", "abs",    "files", "hello",
				       "abc",	 "deep",     "1",      ".^",	"new"};

/* The rules a record can stand up. ALWAYS: an errno rule on every path, with no
 * probability, so every request of its op must be answered with ERR at once. */
struct fz_rule {
	const char *text;
	uint32_t always_opcode;
	int err;
};
static const struct fz_rule fz_rules[] = {
    {NULL, 0, 0}, /* clear every rule */
    {"op=getattr path=* errno=EIO", FUSE_GETATTR, EIO},
    {"op=readlink path=* errno=ELOOP", FUSE_READLINK, ELOOP},
    {"op=lookup path=/chains/* errno=ENOENT prob=0.5 seed=1", 0, 0},
    {"op=any path=* delay=1 prob=0.3 seed=7", 0, 0},
    {"op=lookup path=* delay=2", 0, 0},
    {"op=read path=* short=3", 0, 0},
    {"op=write path=* nowrite", 0, 0},
    {"op=write path=/files/* short=1", 0, 0},
    {"op=any path=/deep/* errno=EACCES prob=0.7 seed=3", 0, 0},
    /* tree changes between requests: before a handler, after a reply, one that fails */
    {"op=lookup path=* every when=before change=replace /chains /files", 0, 0},
    {"op=getattr path=* every change=rename /files /f2; exchange /f2 /deep", 0, 0},
    {"op=any path=* prob=0.2 seed=5 change=dir /x/y; rmdir /x/y; unlink /nothing", 0, 0},
    /* what a read returns changed, and rules on a byte range of a file (kill= is left out:
     * the requests here claim pid 1) */
    {"op=read path=* corrupt=flip bytes=5 seed=4", 0, 0},
    {"op=read path=* at=2,len=3 errno=EIO|ENOSPC seed=6", 0, 0},
    {"op=write path=/files/* at=0,len=1 errno=EIO", 0, 0},
    {"op=read path=* corrupt=zero bytes=2 at=1,len=4", 0, 0},
};

/* A request: its opcode and what its body holds (a fixed argument of ARG bytes, then
 * NAMES names); FILL says how the fixed argument is made consistent. */
enum fz_fill { FZ_RAW, FZ_READ, FZ_WRITE, FZ_SETATTR, FZ_NODE_ARG, FZ_FORGET };
struct fz_cmd {
	uint32_t opcode;
	size_t arg;
	int names;
	enum fz_fill fill;
};
static const struct fz_cmd fz_cmds[] = {
    {FUSE_LOOKUP, 0, 1, FZ_RAW},
    {FUSE_GETATTR, sizeof(struct fuse_getattr_in), 0, FZ_RAW},
    {FUSE_READLINK, 0, 0, FZ_RAW},
    {FUSE_ACCESS, sizeof(struct fuse_access_in), 0, FZ_RAW},
    {FUSE_STATFS, 0, 0, FZ_RAW},
    {FUSE_OPEN, sizeof(struct fuse_open_in), 0, FZ_RAW},
    {FUSE_READ, sizeof(struct fuse_read_in), 0, FZ_READ},
    {FUSE_WRITE, sizeof(struct fuse_write_in), 0, FZ_WRITE},
    {FUSE_RELEASE, sizeof(struct fuse_release_in), 0, FZ_RAW},
    {FUSE_OPENDIR, sizeof(struct fuse_open_in), 0, FZ_RAW},
    {FUSE_READDIR, sizeof(struct fuse_read_in), 0, FZ_READ},
    {FUSE_READDIRPLUS, sizeof(struct fuse_read_in), 0, FZ_READ},
    {FUSE_RELEASEDIR, sizeof(struct fuse_release_in), 0, FZ_RAW},
    {FUSE_SETATTR, sizeof(struct fuse_setattr_in), 0, FZ_SETATTR},
    {FUSE_MKDIR, sizeof(struct fuse_mkdir_in), 1, FZ_RAW},
    {FUSE_MKNOD, sizeof(struct fuse_mknod_in), 1, FZ_RAW},
    {FUSE_CREATE, sizeof(struct fuse_create_in), 1, FZ_RAW},
    {FUSE_SYMLINK, 0, 2, FZ_RAW},
    {FUSE_UNLINK, 0, 1, FZ_RAW},
    {FUSE_RMDIR, 0, 1, FZ_RAW},
    {FUSE_RENAME, sizeof(struct fuse_rename_in), 2, FZ_NODE_ARG},
    {FUSE_LINK, sizeof(struct fuse_link_in), 1, FZ_NODE_ARG},
    {FUSE_FORGET, sizeof(struct fuse_forget_in), 0, FZ_FORGET},
};

struct fz_node {
	uint64_t nodeid, lookups; /* lookups the kernel would hold: what a forget may drop */
};

struct fz_state {
	struct cfs_daemon d;
	struct pc_loop loop;
	struct cfs_gate *gate;
	int fd[2]; /* [0] the session's, [1] ours */
	uint64_t unique;
	struct fz_node nodes[FZ_MAX_NODES];
	size_t nnodes;
	struct {
		uint64_t unique;
		uint32_t opcode;
	} waiting[FZ_MAX_WAITING];
	size_t nwaiting;
	bool delays;		/* a delay rule stands: a reply may come later */
	uint32_t always_opcode; /* an ALWAYS rule's op while it stands, else 0 */
	int always_err;
	_Alignas(8) char reply[FZ_REPLY_MAX]; /* read as struct fuse_out_header */
	struct fuse_out_header last;	      /* the last reply read (a notification is none) */
};

static ssize_t fz_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	return writev(fd, iov, count);
}

static ssize_t fz_read(int fd, void *buf, size_t len, void *userdata)
{
	errno = EAGAIN; /* nothing comes this way: requests are handed to the gate */
	return -1;
}

static void fz_remember(struct fz_state *z, uint64_t nodeid)
{
	for (size_t i = 0; i < z->nnodes; i++) {
		if (z->nodes[i].nodeid == nodeid) {
			z->nodes[i].lookups++;
			return;
		}
	}
	if (z->nnodes < FZ_MAX_NODES)
		z->nodes[z->nnodes++] = (struct fz_node){nodeid, 1};
	/* a nodeid beyond those remembered is never sent: the kernel would forget it later */
}

static bool fz_gives_entry(uint32_t opcode)
{
	return opcode == FUSE_LOOKUP || opcode == FUSE_MKDIR || opcode == FUSE_MKNOD ||
	       opcode == FUSE_SYMLINK || opcode == FUSE_LINK || opcode == FUSE_CREATE;
}

/* One reply read back: it answers a waiting request, whole, with an errno the kernel
 * takes. Notifications (unique 0) are checked for their length only. */
static void fz_check_reply(struct fz_state *z, ssize_t n)
{
	const struct fuse_out_header *oh = (const void *)z->reply;
	size_t i;

	if (n < (ssize_t)sizeof(*oh) || oh->len != (uint32_t)n)
		fz_fail("a reply of %zd bytes says len %u", n, n >= 4 ? oh->len : 0);
	if (oh->unique == 0)
		return;
	z->last = *oh;
	if (oh->error > 0 || oh->error < -FZ_REPLY_ERRNO_MAX)
		fz_fail("reply to %llu carries error %d", (unsigned long long)oh->unique,
			oh->error);
	if (oh->error && n != sizeof(*oh))
		fz_fail("error reply to %llu with a body", (unsigned long long)oh->unique);
	for (i = 0; i < z->nwaiting && z->waiting[i].unique != oh->unique; i++)
		;
	if (i == z->nwaiting)
		fz_fail("reply to %llu, which waits for none", (unsigned long long)oh->unique);
	uint32_t opcode = z->waiting[i].opcode;
	z->waiting[i] = z->waiting[--z->nwaiting];
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "request %llu (opcode %u): error %d, %zd bytes\n",
			(unsigned long long)oh->unique, opcode, oh->error, n);
	/* a create's entry comes with its open */
	if (fz_gives_entry(opcode) && !oh->error &&
	    n >= (ssize_t)(sizeof(*oh) + sizeof(struct fuse_entry_out)))
		fz_remember(z, ((const struct fuse_entry_out *)(oh + 1))->nodeid);
}

static void fz_drain(struct fz_state *z)
{
	ssize_t n;

	while ((n = recv(z->fd[1], z->reply, sizeof(z->reply), MSG_DONTWAIT)) >= 0)
		fz_check_reply(z, n);
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		fz_fail("reading replies: %s", strerror(errno));
}

/* Hand BUF to the gate as the transport would, and read what it answered now. */
static void fz_send(struct fz_state *z, void *buf, size_t size, bool wants_reply)
{
	struct fuse_in_header *in = buf;

	if (wants_reply) {
		if (z->nwaiting == FZ_MAX_WAITING)
			fz_fail("more requests waiting than delays allow");
		z->waiting[z->nwaiting].unique = in->unique;
		z->waiting[z->nwaiting++].opcode = in->opcode;
	}
	cfs_serve_one(z->gate, &(struct fuse_buf){.size = size, .mem = buf});
	size_t unanswered = z->nwaiting;
	fz_drain(z);
	if (wants_reply && !z->delays && z->nwaiting != unanswered - 1)
		fz_fail("opcode %u not answered at once, with no delay rule standing", in->opcode);
	/* answered now (not held back by a delay rule): by the errno rule, if one stands for
	 * every path of its op; the reply read last is its (a change rule's invalidations may
	 * follow it) */
	if (wants_reply && z->always_opcode == in->opcode && z->nwaiting < unanswered) {
		const struct fuse_out_header *oh = &z->last;
		if (oh->unique != in->unique || oh->error != -z->always_err)
			fz_fail("opcode %u under an errno rule on every path: answered %d, not %d",
				in->opcode, oh->error, -z->always_err);
	}
}

/* INIT, as the kernel opens a session: libfuse answers nothing else before it. */
static void fz_init(struct fz_state *z)
{
	struct {
		struct fuse_in_header in;
		struct fuse_init_in init;
	} req = {{.len = sizeof(req), .opcode = FUSE_INIT, .unique = ++z->unique},
		 {.major = FUSE_KERNEL_VERSION,
		  .minor = 31,
		  .max_readahead = 131072,
		  .flags = FUSE_ASYNC_READ | FUSE_DO_READDIRPLUS | FUSE_CACHE_SYMLINKS |
			   FUSE_BIG_WRITES}};

	fz_send(z, &req, sizeof(req), true);
	if (z->nwaiting != 0)
		fz_fail("INIT was not answered");
}

static int fz_start(struct fz_state *z)
{
	static const struct fuse_custom_io io = {.writev = fz_writev, .read = fz_read};
	char *argv[] = {"fuzz_gate", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	int big = FZ_REPLY_MAX * 4;

	memset(&z->d, 0, sizeof(z->d));
	z->unique = 0;
	z->nwaiting = 0; /* a run that left requests delayed dropped them */
	z->delays = false;
	z->always_opcode = 0;
	z->d.ctl_fd = -1;
	z->d.opts.follow = CFS_FOLLOW_KERNEL;
	z->d.opts.limits = rs_limits_linux;
	z->d.opts.entry_timeout = 1;
	z->d.opts.attr_timeout = 1;
	z->d.tree = fz_tree_of(fz_spec, sizeof(fz_spec) - 1);
	cfs_tree_record(z->d.tree, &z->d.changes);
	z->d.walk_left = RS_WALK_BUDGET;
	z->d.walk_budget = &z->d.walk_left;
	z->d.paths = cfs_paths_new();
	z->d.faults = cfs_faults_new();
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, z->fd) != 0)
		fz_fail("socketpair: %s", strerror(errno));
	setsockopt(z->fd[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(z->fd[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	z->d.se = fuse_session_new(&args, &cfs_ops, sizeof(cfs_ops), &z->d);
	fuse_opt_free_args(&args); /* libfuse may have made a copy of its own */
	if (!z->d.se || fuse_session_custom_io(z->d.se, &io, z->fd[0]) != 0)
		fz_fail("a session without a mount could not be made");
	if (pc_loop_init(&z->loop, NULL) != 0 || cfs_gate_open(&z->gate, &z->d, &z->loop) != 0)
		fz_fail("the gate could not be opened");
	z->nodes[0] = (struct fz_node){FUSE_ROOT_ID, 0};
	z->nnodes = 1;
	fz_init(z);
	return 0;
}

static void fz_stop(struct fz_state *z)
{
	cfs_gate_close(z->gate);
	if (pc_loop_destroy(&z->loop) != 0)
		fz_fail("pc_loop_destroy failed");
	fuse_session_destroy(z->d.se); /* closes fd[0], the session's */
	close(z->fd[1]);
	cfs_faults_free(z->d.faults);
	cfs_paths_free(z->d.paths);
	cfs_tree_free(z->d.tree);
	if (fz_budget_live() != 0)
		fz_fail("the tree kept %zu bytes", fz_budget_live());
}

/* A name from the bytes at *P (up to END), consumed: a byte below 0x80 picks from fz_names,
 * else up to that many bytes of the input, without NUL or '/' (the kernel sends neither). */
static size_t fz_name(const uint8_t **p, const uint8_t *end, char *out)
{
	size_t n = 0;

	if (*p == end || **p < 0x80) {
		const char *s =
		    fz_names[*p == end ? 0 : **p % (sizeof(fz_names) / sizeof(*fz_names))];
		*p += *p != end;
		n = strlen(s);
		memcpy(out, s, n + 1);
		return n + 1;
	}
	size_t want = **p - 0x7f; /* 1..128 */
	for ((*p)++; *p < end && n < want; (*p)++)
		if (**p && **p != '/')
			out[n++] = (char)**p;
	if (n == 0 || (n <= 2 && memcmp(out, "..", n) == 0))
		out[n++] = 'x';
	out[n] = '\0';
	return n + 1;
}

/* Forget what the kernel may: some of a remembered node's lookups, never while a request
 * waits (the kernel holds the inode of a request in flight). False: nothing to forget. */
static bool fz_forget(struct fz_state *z, size_t i, uint8_t pick, struct fuse_forget_in *f)
{
	struct fz_node *n = &z->nodes[i];

	if (n->lookups == 0 || z->nwaiting)
		return false;
	f->nlookup = 1 + pick % n->lookups;
	n->lookups -= f->nlookup;
	if (n->lookups == 0) /* gone: its nodeid may be handed out again */
		z->nodes[i] = z->nodes[--z->nnodes];
	return true;
}

/* Make the fixed argument ARG consistent as the kernel would; the write's data follows it
 * (DATA bytes of P). False: the request is not sent. */
static bool fz_fix_arg(struct fz_state *z, const struct fz_cmd *c, void *arg, size_t inode,
		       size_t data)
{
	uint8_t pick = *(const uint8_t *)arg;

	switch (c->fill) {
	case FZ_READ:
		((struct fuse_read_in *)arg)->size %= FZ_MAX_IO + 1;
		((struct fuse_read_in *)arg)->offset %= 1 << 20;
		return true;
	case FZ_WRITE:
		((struct fuse_write_in *)arg)->size = (uint32_t)data;
		((struct fuse_write_in *)arg)->offset %= 1 << 20;
		return true;
	case FZ_SETATTR:
		((struct fuse_setattr_in *)arg)->size %= 1 << 20;
		return true;
	case FZ_NODE_ARG: /* rename's newdir, link's oldnodeid: both lead */
		*(uint64_t *)arg = z->nodes[pick % z->nnodes].nodeid;
		return true;
	case FZ_FORGET:
		return fz_forget(z, inode, pick, arg);
	case FZ_RAW:
		break;
	}
	return true;
}

/* One request of kind C on the node picked by NODE, from the bytes P..END. */
static void fz_request(struct fz_state *z, const struct fz_cmd *c, uint8_t node, const uint8_t *p,
		       const uint8_t *end)
{
	static _Alignas(8) char buf[sizeof(struct fuse_in_header) + 128 + 2 * 256 + FZ_MAX_IO];
	struct fuse_in_header *in = (void *)buf;
	char *arg = (char *)(in + 1);
	size_t i = node % z->nnodes, size = sizeof(*in) + c->arg;
	size_t take = MIN(c->arg, (size_t)(end - p));

	memset(arg, 0, c->arg);
	memcpy(arg, p, take);
	p += take;
	size_t data = c->fill == FZ_WRITE ? MIN((size_t)(end - p), (size_t)FZ_MAX_IO) : 0;
	*in = (struct fuse_in_header){
	    .opcode = c->opcode, .unique = ++z->unique, .nodeid = z->nodes[i].nodeid, .pid = 1};
	if (!fz_fix_arg(z, c, arg, i, data))
		return;
	memcpy(buf + size, p, data);
	size += data;
	for (int k = 0; k < c->names; k++)
		size += fz_name(&p, end, buf + size);
	in->len = (uint32_t)size;
	fz_send(z, buf, size, c->opcode != FUSE_FORGET);
}

static void fz_rule(struct fz_state *z, const struct fz_rule *r)
{
	char *err = NULL;

	if (!r->text) {
		cfs_fault_clear(z->d.faults);
		z->delays = false;
		z->always_opcode = 0;
		return;
	}
	if (cfs_fault_add(z->d.faults, r->text, &err) < 0)
		fz_fail("rule %s refused: %s", r->text, err);
	if (strstr(r->text, "delay="))
		z->delays = true;
	if (r->always_opcode) {
		z->always_opcode = r->always_opcode;
		z->always_err = r->err;
	}
}

/* The delays run out on the loop: every request that wants a reply has its one. */
static void fz_finish(struct fz_state *z)
{
	for (int i = 0; i < FZ_DELAY_RUNS && z->nwaiting; i++) {
		pc_run_once(&z->loop, 5);
		fz_drain(z);
	}
	if (z->nwaiting)
		fz_fail("%zu requests never answered (the first: opcode %u)", z->nwaiting,
			z->waiting[0].opcode);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz_state z;
	const uint8_t *p = data, *end = data + size;
	const size_t ncmds = sizeof(fz_cmds) / sizeof(*fz_cmds);
	const size_t nrules = sizeof(fz_rules) / sizeof(*fz_rules);

	fz_budget_limit(4 << 20);
	fz_start(&z);
	for (int r = 0; r < FZ_MAX_RECORDS && end - p >= 3; r++) {
		uint8_t cmd = p[0], node = p[1];
		size_t len = MIN(p[2], (size_t)(end - p - 3));
		const uint8_t *body = p + 3;

		p = body + len;
		if (cmd % (ncmds + nrules) < ncmds)
			fz_request(&z, &fz_cmds[cmd % (ncmds + nrules)], node, body, body + len);
		else
			fz_rule(&z, &fz_rules[cmd % (ncmds + nrules) - ncmds]);
	}
	/* half the inputs leave requests delayed for the gate's close to drop */
	if (size % 2)
		fz_finish(&z);
	fz_stop(&z);
	return 0;
}
