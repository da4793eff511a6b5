/*
 * Recording requests (-o record=FILE, control `record start FILE` / `record stop`): one JSON
 * line per FUSE request, for `chainfsctl replay`. The loop formats each line into a ring of
 * fixed size (no allocation, never a disk write); a writer thread drains the ring to the
 * file. A line that does not fit is dropped and counted, so a slow disk costs lines, never
 * the loop's time.
 *
 * A line: {"v":3,"t_ns":MONOTONIC,"op":"lookup","nodeid":N,"pid":P,"path":"/a/b","result":0
 * or "ENOENT","errno":0 or N,"ns":DAEMON_LATENCY} plus, where the request carries them,
 * "to" (rename's new path), "target" (symlink's), "mode" (mkdir, mknod, create) and "offset"
 * (readdir, readdirplus); and what a successful reply showed the caller: "kind" and "size"
 * (lookup, getattr), "body" (readlink), "entries" (readdir, readdirplus: "K:NAME/K:NAME...",
 * "." and ".." left out). A kind is one letter (record_kind.h): d l f p s c b (directory,
 * link, regular file, fifo, socket, character and block device).
 *
 * A fault rule's change= that fired (fault.h) has a line of its own, where the change
 * happened: before the request's line (when=before) or after it (when=after):
 * {"v":3,"t_ns":MONOTONIC,"trigger":RULE_ID,"on":"getattr","pid":P,"path":"/a/b",
 * "when":"after","change":"replace /a /t","result":"applied"} or, when a line of the change
 * failed, "result":"failed","error":"rmdir /keep: Directory not empty" (the failing line
 * and why; the lines before it were undone). It has no "op": replay skips it and counts it.
 * A kill or corrupt rule's hit has such a line too, before the request's, with "effect" in
 * place of "when" and "change": {"v":3,...,"path":"/a","effect":"kill=SIGTERM",
 * "result":"applied"} (or "failed","error":"no signal: ..."), "effect":"corrupt=flip bytes=2".
 *
 * "v" is the format's version: 3 since the trigger lines came, 2 since the reply's members
 * came; a line without it is version 1 (errnos only); replay reads all three.
 * Opcodes chainfs has no handler for (statx, ...) are answered by libfuse itself, unseen:
 * their result and errno are null; they are named as the kernel names them
 * (cfs_opcode_name), or opcode_N.
 * A string that is not UTF-8 is given as KEY_hex ("path_hex", "to_hex", ...) instead.
 */
#ifndef CHAINFS_RECORD_H
#define CHAINFS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cfs_daemon;
struct cfs_recorder;
struct fuse_in_header;
struct iovec;

/* The ring's default size: about 20,000 lines of a short path, a few seconds of a busy
 * `find` even if the disk stalls; CHAINFS_RECORD_RING=BYTES overrides it (tests make it tiny
 * to see lines dropped). */
enum { CFS_RECORD_RING_DEFAULT = 4 << 20, CFS_RECORD_RING_MAX = 1 << 30 };

enum {
	CFS_RECORD_VERSION = 3,
	/* a listing's entries kept per line, as "K:NAME/" each: a reply of more (a kernel may
	 * ask for 128 KiB at once) is recorded without them, and replay compares its errno */
	CFS_RECORD_ENTRIES_MAX = 32 << 10,
};

/* One request, as the loop saw it. Strings are borrowed for the call. */
struct cfs_record_entry {
	uint64_t t_ns, ns, nodeid;
	uint32_t pid;
	const char *op;
	int err; /* the reply's errno, 0 for success, -1 unknown (result and errno null) */
	const char *path, *to, *target;
	int mode; /* -1: none */
	/* what the reply showed; 0 or NULL where it did not, or the op shows none */
	char kind;
	bool has_size, has_offset;
	uint64_t size, offset;
	const char *body, *entries;
};

/* A change rule that fired, as the loop saw it. Strings are borrowed for the call. */
struct cfs_record_trigger {
	uint64_t t_ns;
	unsigned id; /* the rule's */
	uint32_t pid;
	const char *on, *path; /* the request's op and path */
	bool after;
	const char *change, *error; /* the rule's lines; why one failed, or NULL: applied */
	const char *effect;	    /* a kill or corrupt rule's ("kill=SIGTERM"), or NULL */
	uint64_t check;		    /* the rule's how manyth matching request (after=, nth=) */
	bool windowed;		    /* a window rule's: its place in its up window */
	int64_t window_us;
};

struct cfs_record_stats {
	uint64_t lines, dropped, bytes_written, write_errors;
	bool active;
};

/* Open FILE with a ring of RING bytes; no thread yet. The file is made new, mode 0600: a
 * name that exists is -EEXIST (a planted symlink too: none is ever followed). With REPLACE an
 * existing file is emptied instead, if it is a regular file (-EINVAL) of the caller's own
 * (-EPERM) with no other name (-EMLINK); a symlink there is -ELOOP. cfs_record_error says
 * what each means. */
int cfs_recorder_open(struct cfs_recorder **out, const char *file, size_t ring, bool replace);
/* The message for an error of cfs_recorder_open (a positive errno). */
const char *cfs_record_error(int err, bool replace);
/* Start the writer thread (after daemonizing: a fork keeps only the calling thread). */
int cfs_recorder_begin(struct cfs_recorder *r);
/* The loop's side: format E into the ring, or count it dropped. Never blocks. */
void cfs_recorder_add(struct cfs_recorder *r, const struct cfs_record_entry *e);
void cfs_recorder_add_trigger(struct cfs_recorder *r, const struct cfs_record_trigger *t);
void cfs_recorder_stats(const struct cfs_recorder *r, struct cfs_record_stats *s);
const char *cfs_recorder_file(const struct cfs_recorder *r);
/* Flush what the ring holds, join the writer, close the file, free R (NULL is fine). The
 * final counters go to *S when S is not NULL. */
void cfs_recorder_close(struct cfs_recorder *r, struct cfs_record_stats *s);

/* The daemon's side (record.c). Start recording to FILE (an absolute path; REPLACE as for
 * cfs_recorder_open); -EBUSY when a recording runs. The ring's size comes from
 * CHAINFS_RECORD_RING. */
int cfs_record_start(struct cfs_daemon *d, const char *file, bool replace);
/* The same in two steps, for -o record: open the file before daemonizing (a bad path is told
 * on the caller's terminal), start the writer after. */
int cfs_record_prepare(struct cfs_daemon *d, const char *file, bool replace);
int cfs_record_begin(struct cfs_daemon *d);
/* Stop and flush; the final counters stay in stats. -ENOENT when none runs. */
int cfs_record_stop(struct cfs_daemon *d);
/* At exit: stop (the writer joined, the file flushed) and free what stats kept. */
void cfs_record_end(struct cfs_daemon *d);
/* What stats shows: the running recording's counters, else the last one's. */
void cfs_record_status(const struct cfs_daemon *d, struct cfs_record_stats *s, const char **file);
/* Called by the request gate once it served a request (gate.c, cfs_process): BUF is the
 * request as it arrived, T0 its arrival; the reply's errno is d->reply_errno, which this
 * resets for the next request. Costs one test when no recording runs. */
void cfs_record_request(struct cfs_daemon *d, const void *buf, size_t size, uint64_t t0);
/* Called by the gate before it serves the request IN (while a recording runs), and by the
 * transport for every reply it sends (transport.c): the reply to IN is read for what it
 * shows (kind, size, link body, listing), which cfs_record_request then writes. */
/* A change rule fired on the request being served (gate.c): its line, when a recording
 * runs. */
void cfs_record_trigger(struct cfs_daemon *d, const struct cfs_record_trigger *t);
void cfs_record_expect(struct cfs_daemon *d, const struct fuse_in_header *in);
void cfs_record_reply(struct cfs_daemon *d, const struct iovec *iov, int count);

#endif
