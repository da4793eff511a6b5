/*
 * The daemon's side of recording (record.h): what a request names, taken from the request
 * as it arrived, and the recording's life (-o record, control `record`).
 *
 * Not recorded: FORGET, BATCH_FORGET and INTERRUPT, which nobody answers and no syscall
 * waits for; replay has nothing to compare them with. The path is taken after the request
 * was served, when the nodeids it names still stand for the same places (the kernel holds
 * them); the entry name comes from the request itself, so an unlink's path is the one that
 * was removed.
 */
#include "record.h"

#include "daemon.h"
#include "ops.h"
#include "paths.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int cfs_record_prepare(struct cfs_daemon *d, const char *file, bool replace)
{
	int err;

	if (d->recorder)
		return -EBUSY;
	err = cfs_recorder_open(&d->recorder, file, cfs_record_ring_size(), replace);
	if (err)
		d->recorder = NULL;
	return err;
}

int cfs_record_begin(struct cfs_daemon *d)
{
	int err = d->recorder ? cfs_recorder_begin(d->recorder) : 0;

	if (err) {
		cfs_recorder_close(d->recorder, NULL);
		d->recorder = NULL;
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
	if (op == CFS_OP_MAX)
		snprintf(other, sizeof(other), "opcode_%u", in->opcode);
	e.op = op == CFS_OP_MAX ? other : cfs_op_names[op];
	path[0] = '\0';
	if (in->nodeid) /* INIT names no node */
		cfs_nodeid_path(d->tree, d->paths, in->nodeid, cfs_request_name(in, size), path,
				sizeof(path));
	cfs_record_extras(d, in, size, &e, to);
	cfs_recorder_add(d->recorder, &e);
}

void cfs_record_request(struct cfs_daemon *d, const void *buf, size_t size, uint64_t t0)
{
	if (d->recorder && size >= sizeof(struct fuse_in_header))
		cfs_record_note(d, buf, size, t0);
	d->reply_errno = 0;
}
