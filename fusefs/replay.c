/*
 * Replaying a recording (replay.h). Each line that names a path becomes the syscall that makes
 * the kernel send that request: lookup and getattr an lstat, readlink a readlink, open and
 * read an open (and a read), opendir and readdir(plus) a whole listing, access, statfs, and
 * the changes whose arguments the line holds (mkdir, create, symlink, unlink, rmdir, rename).
 * The rest is counted as skipped: setattr, write and link (the line lacks what changed),
 * mknod (device numbers), flush, release, releasedir and fsync (they follow a close, not a
 * syscall of their own), xattrs (answered ENOSYS on purpose), init, and opcodes libfuse
 * answered itself (their result is null).
 */
#include "replay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

enum { REPLAY_SHOW_DIFFS = 5 }; /* differing paths shown per operation */

struct replay_op {
	const char *name;
	uint64_t replayed, differ, skipped;
	GArray *rec_ns, *our_ns; /* uint64_t each */
	GString *diffs;		 /* the first REPLAY_SHOW_DIFFS */
};

/* One request as the recording has it. */
struct replay_line {
	const char *op;
	char *path, *to; /* under the mount */
	const char *target;
	int mode, err;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int err_of(int rc)
{
	return rc < 0 ? errno : 0;
}

static int replay_read(const char *path, bool dir)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC | (dir ? O_DIRECTORY : 0));

	if (fd < 0)
		return errno;
	int err = !dir && read(fd, buf, sizeof(buf)) < 0 ? errno : 0;
	close(fd);
	return err;
}

static int replay_list(const char *path)
{
	DIR *dir = opendir(path);

	if (!dir)
		return errno;
	errno = 0;
	while (readdir(dir))
		;
	int err = errno;
	closedir(dir);
	return err;
}

static int replay_create(const char *path, int mode)
{
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, (mode_t)mode & 07777);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* The syscall for L's request and its errno; -1: not replayed. */
static int replay_one(const struct replay_line *l)
{
	struct stat st;
	struct statvfs sv;
	char buf[4096];
	const char *op = l->op;

	if (!strcmp(op, "lookup") || !strcmp(op, "getattr"))
		return err_of(lstat(l->path, &st));
	if (!strcmp(op, "readlink"))
		return err_of((int)readlink(l->path, buf, sizeof(buf)));
	if (!strcmp(op, "open") || !strcmp(op, "read"))
		return replay_read(l->path, false);
	if (!strcmp(op, "opendir"))
		return replay_read(l->path, true);
	if (!strcmp(op, "readdir") || !strcmp(op, "readdirplus"))
		return replay_list(l->path);
	if (!strcmp(op, "access"))
		return err_of(access(l->path, F_OK));
	if (!strcmp(op, "statfs"))
		return err_of(statvfs(l->path, &sv));
	if (!strcmp(op, "mkdir") && l->mode >= 0)
		return err_of(mkdir(l->path, (mode_t)l->mode & 07777));
	if (!strcmp(op, "create") && l->mode >= 0)
		return replay_create(l->path, l->mode);
	if (!strcmp(op, "symlink") && l->target)
		return err_of(symlink(l->target, l->path));
	if (!strcmp(op, "unlink"))
		return err_of(unlink(l->path));
	if (!strcmp(op, "rmdir"))
		return err_of(rmdir(l->path));
	if (!strcmp(op, "rename") && l->to)
		return err_of(rename(l->path, l->to));
	return -1;
}

/* MNT joined with the recorded path, given as "KEY" or as hex in "KEY_hex"; NULL if none. */
static char *replay_path(JsonObject *o, const char *key, const char *mnt)
{
	char hexkey[32];
	const char *hex;

	if (json_object_has_member(o, key))
		return g_strconcat(mnt, json_object_get_string_member(o, key), NULL);
	snprintf(hexkey, sizeof(hexkey), "%s_hex", key);
	if (!json_object_has_member(o, hexkey))
		return NULL;
	hex = json_object_get_string_member(o, hexkey);
	GString *p = g_string_new(mnt);
	for (; hex[0] && hex[1]; hex += 2)
		g_string_append_c(
		    p, (char)(g_ascii_xdigit_value(hex[0]) * 16 + g_ascii_xdigit_value(hex[1])));
	return g_string_free(p, FALSE);
}

static const char *err_name(int err)
{
	static char num[16];
	const char *n = err ? strerrorname_np(err) : "0";

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

/* Replay one parsed line into its operation's counters. */
static void replay_record(GHashTable *ops, JsonObject *o, const char *mnt, const char *raw_path)
{
	struct replay_line l = {.op = json_object_get_string_member(o, "op"), .mode = -1};
	struct replay_op *r = replay_op_of(ops, l.op);
	JsonNode *e = json_object_get_member(o, "errno");

	l.path = replay_path(o, "path", mnt);
	l.to = replay_path(o, "to", mnt);
	if (json_object_has_member(o, "target"))
		l.target = json_object_get_string_member(o, "target");
	if (json_object_has_member(o, "mode"))
		l.mode = (int)json_object_get_int_member(o, "mode");
	int got = -1;
	uint64_t t0 = now_ns(), t1 = t0;
	if (l.path && e && !json_node_is_null(e)) {
		l.err = replay_expected(l.op, (int)json_node_get_int(e));
		got = replay_one(&l);
		t1 = now_ns();
	}
	if (got < 0) {
		r->skipped++;
	} else {
		uint64_t rec = (uint64_t)json_object_get_int_member(o, "ns"), ours = t1 - t0;
		r->replayed++;
		g_array_append_val(r->rec_ns, rec);
		g_array_append_val(r->our_ns, ours);
		if (got != l.err && r->differ++ < REPLAY_SHOW_DIFFS)
			g_string_append_printf(r->diffs, "  %s %s: recorded %s, replayed %s\n",
					       l.op, raw_path, err_name(l.err), err_name(got));
	}
	g_free(l.path);
	g_free(l.to);
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

/* The table, then the differing paths; returns whether any result differed. */
static bool replay_report(GHashTable *ops)
{
	GList *all = g_list_sort(g_hash_table_get_values(ops), by_name);
	uint64_t differ = 0;

	printf("%-12s %9s %7s %8s %16s %16s\n", "op", "replayed", "differ", "skipped",
	       "recorded_p50_ns", "replayed_p50_ns");
	for (GList *i = all; i; i = i->next) {
		struct replay_op *r = i->data;
		printf("%-12s %9" G_GUINT64_FORMAT " %7" G_GUINT64_FORMAT " %8" G_GUINT64_FORMAT
		       " %16" G_GUINT64_FORMAT " %16" G_GUINT64_FORMAT "\n",
		       r->name, r->replayed, r->differ, r->skipped, p50(r->rec_ns), p50(r->our_ns));
		differ += r->differ;
	}
	if (differ)
		printf("differences (first %d per op):\n", REPLAY_SHOW_DIFFS);
	for (GList *i = all; i; i = i->next)
		fputs(((struct replay_op *)i->data)->diffs->str, stdout);
	printf("%" G_GUINT64_FORMAT " results differ\n", differ);
	g_list_free(all);
	return differ > 0;
}

int cfs_replay(const char *file, const char *mnt)
{
	GHashTable *ops = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, replay_op_free);
	FILE *f = fopen(file, "re");
	char *line = NULL;
	size_t cap = 0;
	long n = 0;
	int rc = 2;

	struct stat st;

	if (!f || stat(mnt, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "chainfsctl: replay: %s: %s\n", f ? mnt : file,
			f && !errno ? "not a directory" : strerror(errno));
		goto out;
	}
	while (getline(&line, &cap, f) > 0) {
		JsonParser *p = json_parser_new();
		JsonNode *root = NULL;
		n++;
		if (json_parser_load_from_data(p, line, -1, NULL))
			root = json_parser_get_root(p);
		if (!root || !JSON_NODE_HOLDS_OBJECT(root) ||
		    !json_object_has_member(json_node_get_object(root), "op")) {
			fprintf(stderr, "chainfsctl: replay: %s:%ld: not a recorded request\n",
				file, n);
			g_object_unref(p);
			goto out;
		}
		JsonObject *o = json_node_get_object(root);
		const char *shown = json_object_has_member(o, "path")
					? json_object_get_string_member(o, "path")
					: "(path in hex)";
		replay_record(ops, o, mnt, shown);
		g_object_unref(p);
	}
	rc = replay_report(ops) ? 1 : 0;
out:
	if (f)
		fclose(f);
	free(line);
	g_hash_table_destroy(ops);
	return rc;
}
