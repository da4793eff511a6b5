/*
 * Replaying a recording (replay.h). Each line that names a path becomes the syscall that makes
 * the kernel send that request: lookup and getattr an lstat, readlink a readlink, open and
 * read an open (and a read), opendir and readdir(plus) a whole listing, access, statfs, and
 * the changes whose arguments the line holds (mkdir, create, symlink, unlink, rmdir, rename).
 * The rest is counted as skipped: setattr, write and link (the line lacks what changed),
 * mknod (device numbers), flush, release, releasedir and fsync (they follow a close, not a
 * syscall of their own), xattrs (the line lacks the attribute's name), init, and opcodes libfuse
 * answered itself (their result is null). Every path is walked with MNT as its root
 * (replay_at.c); a line whose path is not one a recorder writes (a "..") is refused and
 * counted. A line that is not a recorded request (replay_line.c) stops the replay with its
 * number; a fault rule's trigger line (format 3) is skipped and counted. A result differs when its
 * errno does, or (unless --errno-only) what it showed does: a recording of format 2 says what each
 * lookup, getattr, readlink and listing showed its caller (replay_seen.c).
 */
#include "errname.h"
#include "replay.h"
#include "replay_int.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { REPLAY_SHOW_DIFFS = 5 }; /* differing (and refused) paths shown per operation */

/* What replay's exit status says (replay.h). */
enum { REPLAY_SAME = 0, REPLAY_DIFFER = 1, REPLAY_UNUSABLE = 2, REPLAY_REFUSED = 3 };

struct replay_op {
	const char *name;
	uint64_t replayed, differ, skipped, refused;
	GArray *rec_ns, *our_ns; /* uint64_t each */
	GString *diffs;		 /* the first REPLAY_SHOW_DIFFS differing, then refused */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *err_name(int err)
{
	static char num[16];
	const char *n = err ? cfs_errno_name(err) : "0";

	if (n)
		return n;
	snprintf(num, sizeof(num), "%d", err);
	return num;
}

static struct replay_op *replay_op_of(GHashTable *ops, const char *name)
{
	struct replay_op *r = g_hash_table_lookup(ops, name);

	if (r)
		return r;
	r = g_new0(struct replay_op, 1);
	r->name = g_strdup(name);
	r->rec_ns = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	r->our_ns = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	r->diffs = g_string_new(NULL);
	g_hash_table_insert(ops, (gpointer)r->name, r);
	return r;
}

static void replay_op_free(gpointer p)
{
	struct replay_op *r = p;

	g_array_free(r->rec_ns, TRUE);
	g_array_free(r->our_ns, TRUE);
	g_string_free(r->diffs, TRUE);
	g_free((gpointer)r->name);
	g_free(r);
}

/* The recorded errno as the caller of the syscall saw it: an ENOSYS to OPEN or OPENDIR
 * means "the kernel opens by itself from now on" (-o opens=skip), a success. */
static int replay_expected(const char *op, int err)
{
	if (err == ENOSYS && (!strcmp(op, "open") || !strcmp(op, "opendir")))
		return 0;
	return err;
}

/* A recorded path as it may be shown on a terminal: control bytes escaped, valid UTF-8 kept
 * (bytes that are not UTF-8 are escaped too: a lone 0x9b is a control for some terminals). */
static char *replay_shown(const char *path)
{
	static char high[129];

	for (int i = 0; !high[0] && i < 128; i++)
		high[i] = (char)(0x80 + i);
	return g_strescape(path, g_utf8_validate(path, -1, NULL) ? high : NULL);
}

static void replay_refused(struct replay_op *r, const struct replay_line *l, int why)
{
	if (r->refused++ >= REPLAY_SHOW_DIFFS)
		return;
	char *p = replay_shown(l->path), *to = l->to ? replay_shown(l->to) : NULL;
	g_string_append_printf(
	    r->diffs, "  %s %s%s%s: refused, %s\n", l->op, p, to ? " -> " : "", to ? to : "",
	    why == REPLAY_NOT_BENEATH ? "not a path beneath the mount" : "its walk left the mount");
	g_free(p);
	g_free(to);
}

/* What one replay keeps from line to line. */
struct replay_run {
	GHashTable *ops; /* name -> struct replay_op */
	struct replay_memory *mem;
	int mntfd;
	bool errno_only;   /* --errno-only: what replies showed is not compared */
	uint64_t triggers; /* fault rules' trigger lines, skipped */
};

static void replay_differ(struct replay_op *r, const struct replay_line *l, const char *why)
{
	if (r->differ++ >= REPLAY_SHOW_DIFFS)
		return;
	char *p = replay_shown(l->path);
	g_string_append_printf(r->diffs, "  %s %s: %s\n", l->op, p, why);
	g_free(p);
}

/* Replay L into its operation's counters: a result differs by its errno, or else by what it
 * showed (replay_seen.c). */
static void replay_count(struct replay_run *run, const struct replay_line *l)
{
	struct replay_op *r = replay_op_of(run->ops, l->op);
	struct replay_seen seen = {0};
	uint64_t t0 = now_ns();
	int got = l->err < 0 ? REPLAY_SKIPPED : replay_at(run->mntfd, l, &seen);
	uint64_t ours = now_ns() - t0;
	int want = replay_expected(l->op, l->err);
	char *why = run->errno_only ? NULL : replay_seen_differs(run->mem, l, got, &seen);

	replay_seen_clear(&seen);
	if (got == REPLAY_SKIPPED) {
		r->skipped++;
	} else if (got < 0) {
		replay_refused(r, l, got);
	} else {
		r->replayed++;
		g_array_append_val(r->rec_ns, l->ns);
		g_array_append_val(r->our_ns, ours);
		if (got != want) {
			g_free(why);
			why = g_strdup_printf("recorded %s, replayed %s", err_name(want),
					      err_name(got));
		}
		if (why)
			replay_differ(r, l, why);
	}
	g_free(why);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t p50(GArray *a)
{
	if (!a->len)
		return 0;
	g_array_sort(a, cmp_u64);
	return g_array_index(a, uint64_t, (a->len - 1) / 2);
}

static gint by_name(gconstpointer a, gconstpointer b)
{
	return strcmp(((const struct replay_op *)a)->name, ((const struct replay_op *)b)->name);
}

/* The table, then the differing and refused paths; returns the exit status. */
static int replay_report(GHashTable *ops)
{
	GList *all = g_list_sort(g_hash_table_get_values(ops), by_name);
	uint64_t differ = 0, refused = 0;

	printf("%-12s %9s %7s %8s %8s %16s %16s\n", "op", "replayed", "differ", "skipped",
	       "refused", "recorded_p50_ns", "replayed_p50_ns");
	for (GList *i = all; i; i = i->next) {
		struct replay_op *r = i->data;
		printf("%-12s %9" G_GUINT64_FORMAT " %7" G_GUINT64_FORMAT " %8" G_GUINT64_FORMAT
		       " %8" G_GUINT64_FORMAT " %16" G_GUINT64_FORMAT " %16" G_GUINT64_FORMAT "\n",
		       r->name, r->replayed, r->differ, r->skipped, r->refused, p50(r->rec_ns),
		       p50(r->our_ns));
		differ += r->differ;
		refused += r->refused;
	}
	if (differ || refused)
		printf("differences and refusals (first %d of each per op):\n", REPLAY_SHOW_DIFFS);
	for (GList *i = all; i; i = i->next)
		fputs(((struct replay_op *)i->data)->diffs->str, stdout);
	printf("%" G_GUINT64_FORMAT " results differ\n", differ);
	printf("%" G_GUINT64_FORMAT " lines refused\n", refused);
	g_list_free(all);
	return refused ? REPLAY_REFUSED : differ ? REPLAY_DIFFER : REPLAY_SAME;
}

/* MNT as the fd every walk starts from; -1 when it cannot be (said on stderr). */
static int replay_open_mnt(const char *mnt)
{
	int fd = open(mnt, O_PATH | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0) {
		fprintf(stderr, "chainfsctl: replay: %s: %s\n", mnt, strerror(errno));
		return -1;
	}
	err = replay_at_probe(fd);
	if (err) {
		fprintf(stderr, "chainfsctl: replay: %s: cannot resolve beneath it (%s%s)\n", mnt,
			strerror(-err), err == -ENOSYS ? ": openat2 needs Linux 5.6" : "");
		close(fd);
		return -1;
	}
	return fd;
}

/* Each line of F in turn; a line that is not a recorded request stops it with its number. */
static int replay_lines(FILE *f, const char *file, struct replay_run *run)
{
	struct replay_line l;
	char *line = NULL, why[128];
	size_t cap = 0;
	ssize_t len;
	long n = 0;
	int rc = 0;

	while (!rc && (len = getline(&line, &cap, f)) > 0) {
		n++;
		rc = replay_line_parse(line, (size_t)len, &l, why, sizeof(why));
		/* replay runs no rules: a mount given the recording's rules meets the same
		 * changes, any other may answer the requests after a trigger differently */
		if (rc == REPLAY_TRIGGER) {
			run->triggers++;
			rc = 0;
			continue;
		}
		if (rc)
			fprintf(stderr, "chainfsctl: replay: %s:%ld: %s\n", file, n, why);
		else
			replay_count(run, &l);
		if (!rc)
			replay_line_clear(&l);
	}
	if (!rc && ferror(f)) {
		fprintf(stderr, "chainfsctl: replay: %s:%ld: %s\n", file, n + 1, strerror(errno));
		rc = -1;
	}
	free(line);
	return rc;
}

int cfs_replay(const char *file, const char *mnt, bool errno_only)
{
	struct replay_run run = {
	    .ops = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, replay_op_free),
	    .mem = replay_memory_new(),
	    .mntfd = -1,
	    .errno_only = errno_only,
	};
	FILE *f = fopen(file, "re");
	int rc = REPLAY_UNUSABLE;

	if (!f)
		fprintf(stderr, "chainfsctl: replay: %s: %s\n", file, strerror(errno));
	if (!f || (run.mntfd = replay_open_mnt(mnt)) < 0)
		goto out;
	if (replay_lines(f, file, &run) == 0)
		rc = replay_report(run.ops);
	if (rc != REPLAY_UNUSABLE && run.triggers)
		printf("%" G_GUINT64_FORMAT " fault rule triggers skipped (replay runs no rules)\n",
		       run.triggers);
out:
	if (run.mntfd >= 0)
		close(run.mntfd);
	if (f)
		fclose(f);
	replay_memory_free(run.mem);
	g_hash_table_destroy(run.ops);
	return rc;
}
