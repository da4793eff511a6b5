/*
 * The recorder's ring and writer thread (record.h). One producer (the loop) and one consumer
 * (the writer) share a byte ring through two counters that only grow: the loop owns head,
 * the writer owns tail, so neither ever waits for the other.
 */
#include "errname.h"
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
	/* a request: three paths and a link body of 4096 bytes and a listing, each control
	 * byte escaped as \u00XX, and the numbers */
	CFS_RECORD_REQUEST_MAX = 4 * 6 * 4096 + 6 * CFS_RECORD_ENTRIES_MAX + 512,
	/* a trigger: a path, a change= of up to a control request (64 KiB) and its error, which
	 * names the failing line (with up to a path more), escaped */
	CFS_RECORD_TRIGGER_MAX = 6 * (4096 + 2 * (65536 + 4096)) + 512,
	CFS_RECORD_LINE_MAX = CFS_RECORD_REQUEST_MAX > CFS_RECORD_TRIGGER_MAX
				  ? CFS_RECORD_REQUEST_MAX
				  : CFS_RECORD_TRIGGER_MAX,
	/* the writer looks at the ring this often even when the loop does not wake it */
	CFS_RECORD_PERIOD_MS = 20,
};

struct cfs_recorder {
	char *ring;
	size_t cap;
	_Atomic uint64_t head, tail; /* bytes ever put, bytes ever taken */
	char *line;		     /* the loop's formatting buffer */
	size_t len;		     /* of the line being formatted */
	char *file;
	int fd, wake; /* the file, the eventfd the loop wakes the writer with */
	pthread_t writer;
	bool running;
	atomic_bool stop;
	uint64_t lines, dropped; /* the loop's */
	_Atomic uint64_t bytes_written, write_errors;
};

/* The recording may land in a directory others can write (/tmp): a symlink or a hard link
 * planted at FILE would make the daemon, often root, truncate and fill the file it names.
 * So the file is made new (O_EXCL refuses any name, and never follows a symlink), and is
 * 0600, as a recording shows every path the mount served. Replacing is asked for, and still
 * takes only what the caller could have made: a regular file of its own, with one name. */
static int cfs_recorder_create(const char *file, bool replace)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW;
	int fd = open(file, flags | O_EXCL, 0600), err = 0;
	struct stat st;

	if (fd >= 0 || errno != EEXIST || !replace)
		return fd >= 0 ? fd : -errno;
	/* no O_CREAT: it exists, and O_CREAT on a symlink in a sticky directory is EACCES, not
	 * ELOOP; a fifo cannot hold us here: ENXIO (as for a socket or a device without one) */
	fd = open(file, (flags & ~O_CREAT) | O_NONBLOCK);
	if (fd < 0)
		return errno == ENXIO ? -EINVAL : -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	else if (st.st_uid != geteuid())
		err = -EPERM;
	else if (st.st_nlink != 1)
		err = -EMLINK;
	else if (ftruncate(fd, 0) || fchmod(fd, 0600) || fcntl(fd, F_SETFL, 0))
		err = -errno;
	if (!err)
		return fd;
	close(fd);
	return err;
}

const char *cfs_record_error(int err, bool replace)
{
	if (err == EEXIST)
		return "exists (replace it with `record replace FILE` or -o record_replace; a "
		       "symbolic link is never followed)";
	if (err == ELOOP)
		return "a symbolic link: never followed";
	if (replace && err == EINVAL)
		return "not a regular file: not replaced";
	if (replace && err == EPERM)
		return "another user's file: not replaced";
	if (replace && err == EMLINK)
		return "has other names (hard links): not replaced";
	return g_strerror(err);
}

int cfs_recorder_open(struct cfs_recorder **out, const char *file, size_t ring, bool replace)
{
	struct cfs_recorder *r = calloc(1, sizeof(*r));
	int err = -ENOMEM;

	if (!r)
		return -ENOMEM;
	r->fd = r->wake = -1;
	r->cap = ring ? ring : 1;
	r->ring = malloc(r->cap);
	r->line = malloc(CFS_RECORD_LINE_MAX);
	r->file = strdup(file);
	if (!r->ring || !r->line || !r->file)
		goto fail;
	r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->wake < 0) {
		err = -errno;
		goto fail;
	}
	r->fd = cfs_recorder_create(file, replace);
	if (r->fd < 0) {
		err = r->fd;
		goto fail;
	}
	*out = r;
	return 0;
fail:
	cfs_recorder_close(r, NULL);
	return err;
}

/* Write what the ring holds; bytes the file refuses are counted and let go, so a full disk
 * cannot stop the ring from draining. */
static void cfs_recorder_drain(struct cfs_recorder *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	while (tail < head) {
		size_t at = (size_t)(tail % r->cap);
		size_t n =
		    (size_t)(head - tail) < r->cap - at ? (size_t)(head - tail) : r->cap - at;
		ssize_t w = write(r->fd, r->ring + at, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			atomic_fetch_add(&r->write_errors, 1);
			w = (ssize_t)n;
		} else {
			atomic_fetch_add(&r->bytes_written, (uint64_t)w);
		}
		tail += (uint64_t)w;
		atomic_store_explicit(&r->tail, tail, memory_order_release);
	}
}

static void *cfs_recorder_main(void *data)
{
	struct cfs_recorder *r = data;
	struct pollfd p = {r->wake, POLLIN, 0};
	uint64_t n;

	for (;;) {
		/* the loop stored head before stop: a drain after seeing stop takes all */
		bool last = atomic_load(&r->stop);
		cfs_recorder_drain(r);
		if (last)
			return NULL;
		if (poll(&p, 1, CFS_RECORD_PERIOD_MS) > 0 && read(r->wake, &n, sizeof(n)) < 0)
			n = 0; /* EAGAIN: someone else's wake was already read */
	}
}

int cfs_recorder_begin(struct cfs_recorder *r)
{
	int err = pthread_create(&r->writer, NULL, cfs_recorder_main, r);

	if (err)
		return -err;
	r->running = true;
	return 0;
}

static void cfs_recorder_wake(struct cfs_recorder *r)
{
	uint64_t one = 1;

	if (write(r->wake, &one, sizeof(one)) < 0)
		return; /* the counter is full: the writer has a wake pending anyway */
}

void cfs_recorder_close(struct cfs_recorder *r, struct cfs_record_stats *s)
{
	if (!r)
		return;
	if (r->running) {
		atomic_store(&r->stop, true);
		cfs_recorder_wake(r);
		pthread_join(r->writer, NULL);
	} else if (r->fd >= 0) {
		cfs_recorder_drain(r); /* never started: the caller's thread writes */
	}
	if (s)
		cfs_recorder_stats(r, s);
	if (s)
		s->active = false;
	if (r->fd >= 0)
		close(r->fd);
	if (r->wake >= 0)
		close(r->wake);
	free(r->ring);
	free(r->line);
	free(r->file);
	free(r);
}

void cfs_recorder_stats(const struct cfs_recorder *r, struct cfs_record_stats *s)
{
	s->lines = r->lines;
	s->dropped = r->dropped;
	s->bytes_written = atomic_load(&r->bytes_written);
	s->write_errors = atomic_load(&r->write_errors);
	s->active = true;
}

const char *cfs_recorder_file(const struct cfs_recorder *r)
{
	return r->file;
}

/* ---- one line ---- */

static void cfs_put(struct cfs_recorder *r, const char *s, size_t n)
{
	if (n > CFS_RECORD_LINE_MAX - r->len)
		n = CFS_RECORD_LINE_MAX - r->len; /* cannot happen: the line's size is bounded */
	memcpy(r->line + r->len, s, n);
	r->len += n;
}

static void cfs_putf(struct cfs_recorder *r, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void cfs_putf(struct cfs_recorder *r, const char *fmt, ...)
{
	size_t room = CFS_RECORD_LINE_MAX - r->len;
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(r->line + r->len, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->len += (size_t)n < room ? (size_t)n : room - 1;
}

/* ,"KEY":"S" with JSON's escapes; a string that is not UTF-8 goes as ,"KEY_hex":"..." so
 * that replay gets its bytes back exactly. */
static void cfs_put_str(struct cfs_recorder *r, const char *key, const char *s)
{
	bool utf8 = g_utf8_validate(s, -1, NULL);

	cfs_putf(r, ",\"%s%s\":\"", key, utf8 ? "" : "_hex");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (!utf8)
			cfs_putf(r, "%02x", *p);
		else if (*p == '"' || *p == '\\')
			cfs_putf(r, "\\%c", *p);
		else if (*p < 0x20)
			cfs_putf(r, "\\u%04x", *p);
		else
			cfs_put(r, (const char *)p, 1);
	}
	cfs_put(r, "\"", 1);
}

static void cfs_format(struct cfs_recorder *r, const struct cfs_record_entry *e)
{
	const char *name = cfs_errno_name(e->err);

	r->len = 0;
	cfs_putf(r, "{\"v\":%d,\"t_ns\":%llu,\"op\":\"%s\",\"nodeid\":%llu,\"pid\":%u",
		 CFS_RECORD_VERSION, (unsigned long long)e->t_ns, e->op,
		 (unsigned long long)e->nodeid, e->pid);
	cfs_put_str(r, "path", e->path ? e->path : "");
	if (e->err < 0)
		cfs_putf(r, ",\"result\":null,\"errno\":null");
	else if (name)
		cfs_putf(r, ",\"result\":\"%s\",\"errno\":%d", name, e->err);
	else
		cfs_putf(r, ",\"result\":%d,\"errno\":%d", e->err, e->err);
	cfs_putf(r, ",\"ns\":%llu", (unsigned long long)e->ns);
	if (e->to)
		cfs_put_str(r, "to", e->to);
	if (e->target)
		cfs_put_str(r, "target", e->target);
	if (e->mode >= 0)
		cfs_putf(r, ",\"mode\":%d", e->mode);
	if (e->has_offset)
		cfs_putf(r, ",\"offset\":%llu", (unsigned long long)e->offset);
	if (e->kind)
		cfs_putf(r, ",\"kind\":\"%c\"", e->kind);
	if (e->has_size)
		cfs_putf(r, ",\"size\":%llu", (unsigned long long)e->size);
	if (e->body)
		cfs_put_str(r, "body", e->body);
	if (e->entries)
		cfs_put_str(r, "entries", e->entries);
	cfs_put(r, "}\n", 2);
}

static void cfs_format_trigger(struct cfs_recorder *r, const struct cfs_record_trigger *t)
{
	r->len = 0;
	cfs_putf(r, "{\"v\":%d,\"t_ns\":%llu,\"trigger\":%u,\"on\":\"%s\",\"pid\":%u",
		 CFS_RECORD_VERSION, (unsigned long long)t->t_ns, t->id, t->on, t->pid);
	cfs_put_str(r, "path", t->path ? t->path : "");
	if (t->effect) {
		cfs_put_str(r, "effect", t->effect);
	} else {
		cfs_putf(r, ",\"when\":\"%s\"", t->after ? "after" : "before");
		cfs_put_str(r, "change", t->change ? t->change : "");
	}
	if (t->check)
		cfs_putf(r, ",\"check\":%llu", (unsigned long long)t->check);
	if (t->windowed)
		cfs_putf(r, ",\"window_us\":%lld", (long long)t->window_us);
	cfs_putf(r, ",\"result\":\"%s\"", t->error ? "failed" : "applied");
	if (t->error)
		cfs_put_str(r, "error", t->error);
	cfs_put(r, "}\n", 2);
}

/* The line just formatted into the ring, or dropped and counted when it does not fit. */
static void cfs_recorder_push(struct cfs_recorder *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t used = head - atomic_load_explicit(&r->tail, memory_order_acquire);

	if (r->len > r->cap - used) {
		r->dropped++;
		return;
	}
	size_t at = (size_t)(head % r->cap), first = r->cap - at;
	if (first > r->len)
		first = r->len;
	memcpy(r->ring + at, r->line, first);
	memcpy(r->ring, r->line + first, r->len - first);
	atomic_store_explicit(&r->head, head + r->len, memory_order_release);
	r->lines++;
	/* wake the writer once the ring is half full, not per line: a line costs no syscall */
	if (used < r->cap / 2 && used + r->len >= r->cap / 2 && r->running)
		cfs_recorder_wake(r);
}

void cfs_recorder_add(struct cfs_recorder *r, const struct cfs_record_entry *e)
{
	cfs_format(r, e);
	cfs_recorder_push(r);
}

void cfs_recorder_add_trigger(struct cfs_recorder *r, const struct cfs_record_trigger *t)
{
	cfs_format_trigger(r, t);
	cfs_recorder_push(r);
}
