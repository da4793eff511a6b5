/*
 * The daemon's side of recording (record.h): what a request names, taken from the request
 * as it arrived, and the recording's life (-o record, control `record`).
 *
 * Not recorded: FORGET, BATCH_FORGET and INTERRUPT, which nobody answers and no syscall
 * waits for; replay has nothing to compare them with. The path is taken after the request
 * was served, when the nodeids it names still stand for the same places (the kernel holds
 * them); the entry name comes from the request itself, so an unlink's path is the one that
 * was removed. What the reply showed (a kind and size, a link's body, a listing) is read off
 * the reply itself on its way out (cfs_record_reply, from the transport): what the caller
 * got, whichever handler or fault rule answered.
 */
#include "record.h"
#include "record_kind.h"

#include "daemon.h"
#include "ops.h"
#include "paths.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

/* What the reply to the request being served showed, for its line. */
struct cfs_record_seen {
	uint64_t unique; /* the request expected (cfs_record_expect); 0: none */
	uint32_t opcode;
	bool caught; /* its reply went out */
	char kind;
	bool has_size, has_body, has_entries;
	uint64_t size;
	size_t len; /* of entries */
	char body[RS_PATH_MAX];
	char entries[CFS_RECORD_ENTRIES_MAX + 1];
};

static size_t cfs_record_ring_size(void)
{
	const char *s = getenv("CHAINFS_RECORD_RING");
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return CFS_RECORD_RING_DEFAULT;
	v = strtoull(s, &end, 10);
	if (*end || v < 1 || v > CFS_RECORD_RING_MAX)
		return CFS_RECORD_RING_DEFAULT;
	return (size_t)v;
}

/* A recording's room for what replies show goes with it. */
static void cfs_record_unseen(struct cfs_daemon *d)
{
	free(d->record_seen);
	d->record_seen = NULL;
}

int cfs_record_prepare(struct cfs_daemon *d, const char *file, bool replace)
{
	int err;

	if (d->recorder)
		return -EBUSY;
	d->record_seen = calloc(1, sizeof(*d->record_seen));
	if (!d->record_seen)
		return -ENOMEM;
	err = cfs_recorder_open(&d->recorder, file, cfs_record_ring_size(), replace);
	if (err) {
		d->recorder = NULL;
		cfs_record_unseen(d);
	}
	return err;
}

int cfs_record_begin(struct cfs_daemon *d)
{
	int err = d->recorder ? cfs_recorder_begin(d->recorder) : 0;

	if (err) {
		cfs_recorder_close(d->recorder, NULL);
		d->recorder = NULL;
		cfs_record_unseen(d);
	}
	return err;
}

int cfs_record_start(struct cfs_daemon *d, const char *file, bool replace)
{
	int err = cfs_record_prepare(d, file, replace);

	return err ? err : cfs_record_begin(d);
}

int cfs_record_stop(struct cfs_daemon *d)
{
	if (!d->recorder)
		return -ENOENT;
	g_free(d->record_last_file);
	d->record_last_file = g_strdup(cfs_recorder_file(d->recorder));
	cfs_recorder_close(d->recorder, &d->record_last);
	d->recorder = NULL;
	cfs_record_unseen(d);
	return 0;
}

void cfs_record_end(struct cfs_daemon *d)
{
	cfs_record_stop(d);
	g_free(d->record_last_file);
	d->record_last_file = NULL;
}

void cfs_record_status(const struct cfs_daemon *d, struct cfs_record_stats *s, const char **file)
{
	if (d->recorder) {
		cfs_recorder_stats(d->recorder, s);
		*file = cfs_recorder_file(d->recorder);
	} else {
		*s = d->record_last;
		*file = d->record_last_file;
	}
}

/* The string that follows the NUL-terminated one at S inside the request's END, or NULL. */
static const char *cfs_next_string(const char *s, const char *end)
{
	const char *nul = s ? memchr(s, '\0', (size_t)(end - s)) : NULL;

	if (!nul || nul + 1 >= end || !memchr(nul + 1, '\0', (size_t)(end - nul - 1)))
		return NULL;
	return nul + 1;
}

/* What the request carries besides its path: rename's new path, symlink's target, a mode. */
static void cfs_record_extras(struct cfs_daemon *d, const struct fuse_in_header *in, size_t size,
			      struct cfs_record_entry *e, char *to)
{
	const char *end = (const char *)in + size, *name = cfs_request_name(in, size);
	const void *arg = in + 1;
	size_t argsz = size - sizeof(*in);

	if (in->opcode == FUSE_SYMLINK)
		e->target = cfs_next_string(name, end);
	if (in->opcode == FUSE_MKDIR && argsz >= sizeof(struct fuse_mkdir_in))
		e->mode = (int)((const struct fuse_mkdir_in *)arg)->mode;
	if (in->opcode == FUSE_MKNOD && argsz >= sizeof(struct fuse_mknod_in))
		e->mode = (int)((const struct fuse_mknod_in *)arg)->mode;
	if (in->opcode == FUSE_CREATE && argsz >= sizeof(struct fuse_create_in))
		e->mode = (int)((const struct fuse_create_in *)arg)->mode;
	if ((in->opcode == FUSE_READDIR || in->opcode == FUSE_READDIRPLUS) &&
	    argsz >= sizeof(struct fuse_read_in)) {
		e->has_offset = true;
		e->offset = ((const struct fuse_read_in *)arg)->offset;
	}
	if (in->opcode == FUSE_RENAME || in->opcode == FUSE_RENAME2) {
		const char *newname = cfs_next_string(name, end);
		if (newname) { /* both structs start with newdir */
			cfs_nodeid_path(d->tree, d->paths,
					((const struct fuse_rename_in *)arg)->newdir, newname, to,
					RS_PATH_MAX);
			e->to = to;
		}
	}
}

/* ---- what the reply showed ---- */

/* "K:NAME" after the entries so far; false when it does not fit or cannot be told apart (a
 * name with a '/' or a NUL, which no reply of ours holds). "." and ".." are left out. */
static bool cfs_seen_entry(struct cfs_record_seen *s, const struct fuse_dirent *de)
{
	size_t n = de->namelen;

	if ((n == 1 && de->name[0] == '.') || (n == 2 && !memcmp(de->name, "..", 2)))
		return true;
	if (!n || memchr(de->name, '/', n) || memchr(de->name, '\0', n) ||
	    n + 3 > CFS_RECORD_ENTRIES_MAX - s->len)
		return false;
	if (s->len)
		s->entries[s->len++] = '/';
	s->entries[s->len++] = cfs_kind_letter(de->type << 12); /* a DT_ is S_IF >> 12 */
	s->entries[s->len++] = ':';
	memcpy(s->entries + s->len, de->name, n);
	s->len += n;
	return true;
}

/* A listing's reply: its entries, or none when one does not fit or the reply is malformed. */
static void cfs_seen_entries(struct cfs_record_seen *s, const char *p, size_t n, bool plus)
{
	size_t head = plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET;

	s->len = 0;
	for (size_t at = 0; at < n;) {
		const struct fuse_direntplus *dp = (const void *)(p + at);
		const struct fuse_dirent *de = plus ? &dp->dirent : (const void *)(p + at);
		if (n - at < head)
			return;
		size_t size = plus ? FUSE_DIRENTPLUS_SIZE(dp) : FUSE_DIRENT_SIZE(de);
		if (size > n - at || !cfs_seen_entry(s, de))
			return;
		at += size;
	}
	s->entries[s->len] = '\0';
	s->has_entries = true;
}

static void cfs_seen_attr(struct cfs_record_seen *s, const struct fuse_attr *a)
{
	s->kind = cfs_kind_letter(a->mode);
	s->has_size = true;
	s->size = a->size;
}

/* The payload P of N bytes of a successful reply to S's request. */
static void cfs_seen_read(struct cfs_record_seen *s, const char *p, size_t n)
{
	const struct fuse_entry_out *eo = (const void *)p;

	switch (s->opcode) {
	case FUSE_LOOKUP: /* nodeid 0: a negative entry, nothing there */
		if (n >= sizeof(*eo) && eo->nodeid)
			cfs_seen_attr(s, &eo->attr);
		break;
	case FUSE_GETATTR:
		if (n >= sizeof(struct fuse_attr_out))
			cfs_seen_attr(s, &((const struct fuse_attr_out *)p)->attr);
		break;
	case FUSE_READLINK:
		if (n < sizeof(s->body) && !memchr(p, '\0', n)) {
			memcpy(s->body, p, n);
			s->body[n] = '\0';
			s->has_body = true;
		}
		break;
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
		cfs_seen_entries(s, p, n, s->opcode == FUSE_READDIRPLUS);
		break;
	}
}

void cfs_record_expect(struct cfs_daemon *d, const struct fuse_in_header *in)
{
	struct cfs_record_seen *s = d->record_seen;

	if (!s)
		return;
	s->unique = in->unique;
	s->opcode = in->opcode;
	s->caught = s->has_size = s->has_body = s->has_entries = false;
	s->kind = 0;
}

void cfs_record_reply(struct cfs_daemon *d, const struct iovec *iov, int count)
{
	struct cfs_record_seen *s = d->record_seen;
	const struct fuse_out_header *oh = iov[0].iov_base;

	if (!s || !s->unique || oh->unique != s->unique || s->caught)
		return;
	s->caught = true;
	/* the replies read here are one piece after the header (fuse_reply_buf and kin), or
	 * none: a listing's end */
	if (!oh->error && count <= 2)
		cfs_seen_read(s, count == 2 ? iov[1].iov_base : "",
			      count == 2 ? iov[1].iov_len : 0);
}

/* What S caught of IN's reply, into E. */
static void cfs_record_shown(struct cfs_record_seen *s, const struct fuse_in_header *in,
			     struct cfs_record_entry *e)
{
	if (!s || !s->caught || s->unique != in->unique)
		return;
	e->kind = s->kind;
	e->has_size = s->has_size;
	e->size = s->size;
	e->body = s->has_body ? s->body : NULL;
	e->entries = s->has_entries ? s->entries : NULL;
	s->unique = 0;
}

static void cfs_record_note(struct cfs_daemon *d, const struct fuse_in_header *in, size_t size,
			    uint64_t t0)
{
	enum cfs_op op = cfs_op_of_opcode(in->opcode);
	char path[RS_PATH_MAX], to[RS_PATH_MAX], other[32];
	struct cfs_record_entry e = {.t_ns = t0,
				     .nodeid = in->nodeid,
				     .pid = in->pid,
				     .err = d->reply_errno,
				     .path = path,
				     .mode = -1,
				     .ns = cfs_now_ns() - t0}; /* our time, not the recorder's */

	if (op == CFS_OP_forget || op == CFS_OP_forget_multi || in->opcode == FUSE_INTERRUPT)
		return;
	if (op == CFS_OP_MAX) /* libfuse answers it itself: we cannot tell how */
		e.err = -1;
	if (op == CFS_OP_MAX && cfs_opcode_name(in->opcode))
		snprintf(other, sizeof(other), "%s", cfs_opcode_name(in->opcode));
	else if (op == CFS_OP_MAX)
		snprintf(other, sizeof(other), "opcode_%u", in->opcode);
	e.op = op == CFS_OP_MAX ? other : cfs_op_names[op];
	path[0] = '\0';
	if (in->nodeid) /* INIT names no node */
		cfs_nodeid_path(d->tree, d->paths, in->nodeid, cfs_request_name(in, size), path,
				sizeof(path));
	cfs_record_extras(d, in, size, &e, to);
	cfs_record_shown(d->record_seen, in, &e);
	cfs_recorder_add(d->recorder, &e);
}

void cfs_record_request(struct cfs_daemon *d, const void *buf, size_t size, uint64_t t0)
{
	if (d->recorder && size >= sizeof(struct fuse_in_header))
		cfs_record_note(d, buf, size, t0);
	d->reply_errno = 0;
}

void cfs_record_trigger(struct cfs_daemon *d, const struct cfs_record_trigger *t)
{
	if (d->recorder)
		cfs_recorder_add_trigger(d->recorder, t);
}
