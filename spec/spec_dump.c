/*
 * A tree back to a spec: the walk in order (shared with materialize), and the dump, whole
 * (cfs_spec_dump) or a piece at a time between other requests (cfs_spec_dumper).
 */
#include "spec_int.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* ---------------------------------------------------------------------------------------- */
/* Walking a tree in order: shared by dump and materialize */

void spec_walk_init(struct spec_walk *w, const struct cfs_tree *t)
{
	struct spec_frame root = {CFS_ROOT, cfs_tree_generation(t, CFS_ROOT), 0, 0};

	*w = (struct spec_walk){
	    .t = t, .stack = g_array_new(FALSE, FALSE, sizeof(root)), .path = g_string_new(NULL)};
	g_array_append_val(w->stack, root);
}

void spec_walk_free(struct spec_walk *w)
{
	g_array_free(w->stack, TRUE);
	g_string_free(w->path, TRUE);
}

/* The next event in pre-order: NODE for each entry (a directory's entries follow it), then
 * LEAVE for the directory when its entries are done (the root last); END after that. */
int spec_walk_next(struct spec_walk *w)
{
	if (w->stack->len == 0)
		return SPEC_WALK_END;

	struct spec_frame *f = &g_array_index(w->stack, struct spec_frame, w->stack->len - 1);
	uint32_t child;

	g_string_truncate(w->path, f->plen);
	if (cfs_tree_dir_next(w->t, f->dir, &f->cookie, &w->name, &w->name_len, &child) != 0) {
		w->id = f->dir;
		w->name = NULL;
		g_array_set_size(w->stack, w->stack->len - 1);
		return SPEC_WALK_LEAVE;
	}
	g_string_append_c(w->path, '/');
	g_string_append_len(w->path, w->name, (gssize)w->name_len);
	w->id = child;
	if (cfs_tree_kind(w->t, child) == RS_DIR) {
		struct spec_frame sub = {child, cfs_tree_generation(w->t, child), 0, w->path->len};
		g_array_append_val(w->stack, sub);
	}
	return SPEC_WALK_NODE;
}

/* ---------------------------------------------------------------------------------------- */
/* Dump */

static void spec_put_time(GString *s, const char *key, const struct timespec *ts)
{
	g_string_append_printf(s, " %s=%lld.%09ld", key, (long long)ts->tv_sec, ts->tv_nsec);
}

static void spec_put_attrs(GString *s, const struct stat *st)
{
	if (!S_ISLNK(st->st_mode)) /* a link's mode is always 0777 */
		g_string_append_printf(s, " mode=%04o", (unsigned)(st->st_mode & 07777));
	g_string_append_printf(s, " uid=%u gid=%u", (unsigned)st->st_uid, (unsigned)st->st_gid);
	spec_put_time(s, "atime", &st->st_atim);
	spec_put_time(s, "mtime", &st->st_mtim);
	spec_put_time(s, "ctime", &st->st_ctim);
}

/* The shortest period of BUF (KMP failure function): the smallest p with buf[i] == buf[i-p]. */
static size_t spec_period(const char *buf, size_t len, size_t *fail)
{
	size_t k = 0;

	fail[0] = 0;
	for (size_t i = 1; i < len; i++) {
		while (k > 0 && buf[i] != buf[k])
			k = fail[k - 1];
		if (buf[i] == buf[k])
			k++;
		fail[i] = k;
	}
	return len - fail[len - 1];
}

/* Does file ID repeat its first P bytes (PAT) all the way? Reads the whole file. */
static bool spec_repeats(const struct cfs_tree *t, uint32_t id, uint64_t size, const char *pat,
			 size_t p)
{
	g_autofree char *buf = g_malloc(SPEC_IO_CHUNK);

	for (uint64_t off = 0; off < size;) {
		ssize_t n = cfs_tree_read(t, id, buf, SPEC_IO_CHUNK, (off_t)off);
		if (n <= 0)
			return false;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pat[(off + (uint64_t)i) % p])
				return false;
		off += (uint64_t)n;
	}
	return true;
}

/*
 * How to write a dense file ID back: as size=N pattern=P when its whole content repeats P, at
 * most CFS_PATTERN_MAX bytes, at least twice (what a pattern file is, and loads back as one),
 * else as literal content. The content decides, which costs a read of a written file (its
 * bytes are in memory). A file that is a pattern all through (WHOLE) may be huge: a window of
 * two maximal periods shows its pattern.
 */
static bool spec_find_pattern(const struct cfs_tree *t, uint32_t id, uint64_t size, bool whole,
			      char *pat, size_t *plen)
{
	size_t want = size < SPEC_PATTERN_WINDOW ? (size_t)size : SPEC_PATTERN_WINDOW;
	char *buf = g_malloc(want);
	size_t *fail = g_new(size_t, want);
	ssize_t n = cfs_tree_read(t, id, buf, want, 0);
	bool found = false;

	if (n == (ssize_t)want && want > 0) {
		size_t p = spec_period(buf, want, fail);
		if (p <= CFS_PATTERN_MAX && 2 * (uint64_t)p <= size) {
			memcpy(pat, buf, p);
			*plen = p;
			found = size <= want || whole || spec_repeats(t, id, size, pat, p);
		}
	}
	g_free(fail);
	g_free(buf);
	return found;
}

static int spec_put_line(FILE *out, const GString *s)
{
	if (s->len > CFS_SPEC_MAX_LINE)
		return -E2BIG;
	fwrite(s->str, 1, s->len, out);
	return 0;
}

/* Written bytes [OFF, END) of file ID as append at= lines, a page (SPEC_DUMP_CHUNK) each.
 * Past the pattern (PEND) a page reads zeros where not written, so its zeros at either end
 * are left out; an all-zero page keeps one byte, so it loads back as a page held. */
static int spec_dump_run(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			 uint32_t id, uint64_t off, uint64_t end, uint64_t pend)
{
	char buf[SPEC_DUMP_CHUNK];
	int err = 0;

	while (!err && off < end) {
		size_t want = end - off < sizeof(buf) ? (size_t)(end - off) : sizeof(buf), i = 0;
		ssize_t n = cfs_tree_read(t, id, buf, want, (off_t)off);
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		size_t e = (size_t)n;
		if (off >= pend) {
			while (e > 1 && !buf[e - 1])
				e--;
			while (i + 1 < e && !buf[i])
				i++;
		}
		g_string_assign(s, "append ");
		spec_quote(s, path->str, path->len);
		g_string_append_c(s, ' ');
		spec_quote(s, buf + i, e - i);
		g_string_append_printf(s, " at=%" PRIu64 "\n", off + i);
		err = spec_put_line(out, s);
		off += (uint64_t)n;
	}
	return err;
}

/*
 * A file with holes, or written over its pattern: the pattern part as size= pattern=, a
 * truncate line for the size, and the written runs as append at= lines. Holes stay holes
 * (they would be too big to write out: a file may be 2^63 - 1 bytes).
 */
static int spec_dump_sparse(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			    uint32_t id, const struct stat *st)
{
	uint64_t size = (uint64_t)st->st_size, pend, start, end;
	const char *pat;
	size_t plen;
	int err = cfs_tree_file_pattern(t, id, &pat, &plen, &pend);

	g_string_assign(s, "file ");
	spec_quote(s, path->str, path->len);
	if (!err && pend) {
		g_string_append_printf(s, " size=%" PRIu64 " pattern=", pend);
		spec_quote(s, pat, plen);
	}
	spec_put_attrs(s, st);
	g_string_append_c(s, '\n');
	if (!err)
		err = spec_put_line(out, s);
	if (!err && size > pend) {
		g_string_assign(s, "truncate ");
		spec_quote(s, path->str, path->len);
		g_string_append_printf(s, " %" PRIu64 "\n", size);
		err = spec_put_line(out, s);
	}
	for (uint64_t off = 0; !err && cfs_tree_next_written(t, id, off, &start, &end) == 0;
	     off = end)
		err = spec_dump_run(t, out, s, path, id, start, end, pend);
	return err;
}

/* Whether file ID holds its bytes all through: a pattern (*whole) or written bytes. */
static bool spec_dense(const struct cfs_tree *t, uint32_t id, uint64_t size, bool *whole)
{
	uint64_t pend, start, end;
	const char *pat;
	size_t plen;
	bool written = cfs_tree_next_written(t, id, 0, &start, &end) == 0;

	if (cfs_tree_file_pattern(t, id, &pat, &plen, &pend))
		return false;
	*whole = !written && pend == size;
	return size == 0 || *whole || (!pend && written && start == 0 && end == size);
}

static int spec_dump_file(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			  uint32_t id, const struct stat *st)
{
	g_autofree char *pat = NULL;
	char buf[SPEC_DUMP_CHUNK];
	size_t plen;
	uint64_t size = (uint64_t)st->st_size, off = 0;
	bool whole = false;

	if (!spec_dense(t, id, size, &whole))
		return spec_dump_sparse(t, out, s, path, id, st);
	pat = g_malloc(CFS_PATTERN_MAX);
	g_string_assign(s, "file ");
	spec_quote(s, path->str, path->len);
	if (size > 0 && spec_find_pattern(t, id, size, whole, pat, &plen)) {
		g_string_append_printf(s, " size=%" PRIu64 " pattern=", size);
		spec_quote(s, pat, plen);
		off = size;
	} else if (size > 0) {
		ssize_t n = cfs_tree_read(t, id, buf, sizeof(buf), 0);
		if (n < 0)
			return (int)n;
		g_string_append_c(s, ' ');
		spec_quote(s, buf, (size_t)n);
		off = (uint64_t)n;
	}
	spec_put_attrs(s, st);
	g_string_append_c(s, '\n');
	if (s->len > CFS_SPEC_MAX_LINE)
		return -E2BIG;
	fwrite(s->str, 1, s->len, out);
	/* the rest of a literal, a line per chunk, so no line outgrows the limit */
	while (off < size) {
		ssize_t n = cfs_tree_read(t, id, buf, sizeof(buf), (off_t)off);
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		g_string_assign(s, "append ");
		spec_quote(s, path->str, path->len);
		g_string_append_c(s, ' ');
		spec_quote(s, buf, (size_t)n);
		g_string_append_c(s, '\n');
		if (s->len > CFS_SPEC_MAX_LINE)
			return -E2BIG;
		fwrite(s->str, 1, s->len, out);
		off += (uint64_t)n;
	}
	return 0;
}

/* A node with several names: the path of its node line and, until that is written, the
 * other names the walk met first (their "hardlink" lines wait for it). */
struct spec_seen {
	uint32_t gen;
	bool written;
	GPtrArray *waiting; /* char *, or NULL */
	char path[];
};

static void spec_seen_free(gpointer p)
{
	struct spec_seen *seen = p;

	if (seen->waiting)
		g_ptr_array_free(seen->waiting, TRUE);
	g_free(seen);
}

/* The xattr lines of node ID at PATH, a value of more than SPEC_DUMP_CHUNK bytes in pieces
 * (at=), so that no line outgrows the limit. */
static int spec_dump_xattrs(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			    uint32_t id)
{
	const char *name, *value;
	size_t len;
	int err = 0;

	for (uint32_t i = 0; !err && !cfs_tree_xattr_at(t, id, i, &name, &value, &len); i++) {
		size_t off = 0;
		do {
			size_t n = len - off < SPEC_DUMP_CHUNK ? len - off : SPEC_DUMP_CHUNK;
			g_string_assign(s, "xattr ");
			spec_quote(s, path->len ? path->str : "/", path->len ? path->len : 1);
			g_string_append_c(s, ' ');
			spec_quote(s, name, strlen(name));
			g_string_append_c(s, ' ');
			spec_quote(s, value + off, n);
			if (off)
				g_string_append_printf(s, " at=%zu", off);
			g_string_append_c(s, '\n');
			err = spec_put_line(out, s);
			off += n;
		} while (!err && off < len);
	}
	return err;
}

/* The line that makes node ID at PATH, and its extended attributes. */
static int spec_dump_kind_line(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			       uint32_t id, enum rs_kind kind, const struct stat *st)
{
	const char *target;
	size_t tlen;

	if (kind == RS_FILE)
		return spec_dump_file(t, out, s, path, id, st);
	if (kind == RS_OTHER) {
		g_string_assign(s, S_ISFIFO(st->st_mode)   ? "fifo "
				   : S_ISSOCK(st->st_mode) ? "socket "
							   : "dev ");
		spec_quote(s, path->str, path->len);
		if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
			g_string_append_printf(s, " %c %u %u", S_ISCHR(st->st_mode) ? 'c' : 'b',
					       major(st->st_rdev), minor(st->st_rdev));
	} else if (kind == RS_LINK) {
		int err = cfs_tree_readlink(t, id, &target, &tlen);
		if (err)
			return err;
		g_string_assign(s, "link ");
		spec_quote(s, path->str, path->len);
		g_string_append_c(s, ' ');
		spec_quote(s, target, tlen);
	} else {
		g_string_assign(s, "dir ");
		spec_quote(s, path->len ? path->str : "/", path->len ? path->len : 1);
	}
	spec_put_attrs(s, st);
	g_string_append_c(s, '\n');
	return spec_put_line(out, s);
}

static int spec_dump_line(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			  uint32_t id, enum rs_kind kind, const struct stat *st)
{
	int err = spec_dump_kind_line(t, out, s, path, id, kind, st);

	return err ? err : spec_dump_xattrs(t, out, s, path, id);
}

/* ID's path from the root by its first name (the one cfs_tree_parent and cfs_tree_name
 * give), into OUT. */
static void spec_first_path(const struct cfs_tree *t, uint32_t id, GString *out)
{
	const char *name;
	size_t len;

	g_string_truncate(out, 0);
	for (; id != CFS_ROOT; id = cfs_tree_parent(t, id)) {
		cfs_tree_name(t, id, &name, &len);
		g_string_prepend_len(out, name, (gssize)len);
		g_string_prepend_c(out, '/');
	}
}

static int spec_hardlink(FILE *out, GString *s, const char *path, size_t len, const char *existing)
{
	g_string_assign(s, "hardlink ");
	spec_quote(s, path, len);
	g_string_append_c(s, ' ');
	spec_quote(s, existing, strlen(existing));
	g_string_append_c(s, '\n');
	return spec_put_line(out, s);
}

/* The node line of SEEN (node ID) under PATH, then the names that waited for it. */
static int spec_seen_write(const struct cfs_tree *t, FILE *out, GString *s, uint32_t id,
			   struct spec_seen *seen, const GString *path)
{
	struct stat st;
	int err;

	cfs_tree_stat(t, id, &st);
	err = spec_dump_line(t, out, s, path, id, cfs_tree_kind(t, id), &st);
	seen->written = true;
	for (guint i = 0; !err && seen->waiting && i < seen->waiting->len; i++) {
		const char *w = g_ptr_array_index(seen->waiting, i);
		err = spec_hardlink(out, s, w, strlen(w), path->str);
	}
	return err;
}

/*
 * One node's line(s). A node with several names gets its node line under its first name
 * (cfs_tree_parent's) and a "hardlink" line for each other: collapse and server modes answer
 * the path to a node by its first name and walk a link's relative target from there, so a
 * mount of the dump answers as the tree does. Names the walk meets before the first wait.
 */
static int spec_dump_node(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			  uint32_t id, GHashTable *first)
{
	enum rs_kind kind = cfs_tree_kind(t, id);
	struct stat st;

	cfs_tree_stat(t, id, &st);
	if (kind == RS_DIR || st.st_nlink < 2)
		return spec_dump_line(t, out, s, path, id, kind, &st);
	/* with the node's generation: a streamed dump may see a handle freed and reused */
	struct spec_seen *seen = g_hash_table_lookup(first, GUINT_TO_POINTER(id));
	uint32_t gen = cfs_tree_generation(t, id);
	if (!seen || seen->gen != gen) {
		GString *at = g_string_new(NULL);
		spec_first_path(t, id, at);
		seen = g_malloc0(sizeof(*seen) + at->len + 1);
		seen->gen = gen;
		memcpy(seen->path, at->str, at->len + 1);
		g_hash_table_insert(first, GUINT_TO_POINTER(id), seen);
		g_string_free(at, TRUE);
	}
	bool here =
	    strlen(seen->path) == path->len && memcmp(seen->path, path->str, path->len) == 0;
	if (here)
		return seen->written ? 0 : spec_seen_write(t, out, s, id, seen, path);
	if (seen->written)
		return spec_hardlink(out, s, path->str, path->len, seen->path);
	if (!seen->waiting)
		seen->waiting = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(seen->waiting, g_strndup(path->str, path->len));
	return 0;
}

/* After the walk: names still waiting for a first name the walk never met (the tree changed
 * between two pieces of a streamed dump) get the node line under the first of them. */
static int spec_dump_waiting(const struct cfs_tree *t, FILE *out, GString *s, GHashTable *first)
{
	GHashTableIter it;
	gpointer key, value;
	int err = 0;

	g_hash_table_iter_init(&it, first);
	while (!err && g_hash_table_iter_next(&it, &key, &value)) {
		struct spec_seen *seen = value;
		uint32_t id = GPOINTER_TO_UINT(key);
		if (seen->written || !seen->waiting || !seen->waiting->len)
			continue;
		struct stat st;
		if (cfs_tree_generation(t, id) != seen->gen)
			continue; /* gone, its handle reused */
		cfs_tree_stat(t, id, &st);
		if (!st.st_nlink)
			continue; /* gone (freed, or an orphan only the kernel holds) */
		char *name = g_ptr_array_steal_index(seen->waiting, 0);
		GString *at = g_string_new(name);
		err = spec_seen_write(t, out, s, id, seen, at);
		g_string_free(at, TRUE);
		g_free(name);
	}
	return err;
}

struct cfs_spec_dumper {
	struct spec_walk w;
	GString *s;
	GHashTable *first;
	bool started;
};

struct cfs_spec_dumper *cfs_spec_dumper_new(const struct cfs_tree *t)
{
	struct cfs_spec_dumper *d = g_new0(struct cfs_spec_dumper, 1);

	spec_walk_init(&d->w, t);
	d->s = g_string_new(NULL);
	d->first = g_hash_table_new_full(NULL, NULL, NULL, spec_seen_free);
	return d;
}

void cfs_spec_dumper_free(struct cfs_spec_dumper *d)
{
	if (!d)
		return;
	spec_walk_free(&d->w);
	g_hash_table_destroy(d->first);
	g_string_free(d->s, TRUE);
	g_free(d);
}

/* Between two pieces the tree may have changed: a directory on the walk's stack that was
 * removed (its handle freed, maybe reused) ends there, with all below it. */
static void spec_walk_revalidate(struct spec_walk *w)
{
	for (guint i = 0; i < w->stack->len; i++) {
		const struct spec_frame *f = &g_array_index(w->stack, struct spec_frame, i);
		if (cfs_tree_kind(w->t, f->dir) != RS_DIR ||
		    cfs_tree_generation(w->t, f->dir) != f->gen) {
			g_array_set_size(w->stack, i);
			return;
		}
	}
}

int cfs_spec_dumper_next(struct cfs_spec_dumper *d, FILE *out, size_t want)
{
	long start = ftell(out);
	int ev, err = 0;

	if (!d->started) {
		d->started = true;
		fputs("# chainfs spec (cfs_spec_dump)\n", out);
		err = spec_dump_node(d->w.t, out, d->s, d->w.path, CFS_ROOT, d->first);
	}
	spec_walk_revalidate(&d->w);
	while (!err && (ev = spec_walk_next(&d->w)) != SPEC_WALK_END) {
		if (ev == SPEC_WALK_NODE)
			err = spec_dump_node(d->w.t, out, d->s, d->w.path, d->w.id, d->first);
		if (!err && start >= 0 && ftell(out) - start >= (long)want)
			break;
	}
	if (!err && d->w.stack->len == 0)
		err = spec_dump_waiting(d->w.t, out, d->s, d->first);
	if (!err && (fflush(out) != 0 || ferror(out)))
		err = -EIO;
	return err ? err : d->w.stack->len > 0;
}

int cfs_spec_dump(const struct cfs_tree *t, FILE *out)
{
	struct cfs_spec_dumper *d = cfs_spec_dumper_new(t);
	int rc;

	while ((rc = cfs_spec_dumper_next(d, out, SIZE_MAX / 2)) > 0)
		;
	cfs_spec_dumper_free(d);
	return rc;
}
