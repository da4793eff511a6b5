#include "fuzz_util.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum {
	FZ_READ_CHUNK = 65536,
	FZ_DIGEST_WHOLE = 65536, /* files up to this are digested whole; bigger: three samples */
	FZ_DIGEST_SAMPLE = 4096,
	/* a small tree: dump, reload and canon take milliseconds under the sanitizers */
	FZ_SMALL_NODES = 4096,
	FZ_SMALL_FILE_BYTES = 1 << 20,
	FZ_SMALL_PATH_BYTES = 256 << 10,
};

const struct cfs_spec_defaults fz_spec_defaults = {
    .uid = 4242, .gid = 4343, .stamp = true, .time = {CFS_DEFAULT_TREE_TIME, 0}};

void fz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* ---- the budget allocator: a size header in front of each block ---- */

struct fz_hdr {
	size_t size;
	size_t pad; /* keeps the block 16-byte aligned, as malloc's */
};

static size_t fz_live, fz_limit = SIZE_MAX;

static void *fz_budget_realloc(void *p, size_t size)
{
	struct fz_hdr *h = p ? (struct fz_hdr *)p - 1 : NULL;
	size_t old = h ? h->size : 0;

	if (size > old && size - old > fz_limit - fz_live)
		return NULL; /* as realloc on failure: the old block stays */
	if (size > SIZE_MAX - sizeof(*h))
		return NULL;
	struct fz_hdr *n = realloc(h, sizeof(*h) + size);
	if (!n)
		return NULL;
	fz_live = fz_live - old + size;
	n->size = size;
	return n + 1;
}

static void fz_budget_free(void *p)
{
	if (!p)
		return;
	struct fz_hdr *h = (struct fz_hdr *)p - 1;
	if (h->size > fz_live)
		fz_fail("budget allocator: freeing %zu bytes with %zu live", h->size, fz_live);
	fz_live -= h->size;
	free(h);
}

const struct cfs_alloc fz_budget_alloc = {fz_budget_realloc, fz_budget_free};

void fz_budget_limit(size_t bytes)
{
	fz_limit = bytes > fz_live ? bytes : fz_live;
}

size_t fz_budget_live(void)
{
	return fz_live;
}

/* ---- canonical description ---- */

/* Bytes as themselves when printable, else \xHH: unambiguous, one line. */
static void fz_put_bytes(GString *s, const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)p[i];
		if (ch > 0x20 && ch < 0x7f && ch != '\\')
			g_string_append_c(s, (char)ch);
		else
			g_string_append_printf(s, "\\x%02x", ch);
	}
}

static uint64_t fz_fnv(uint64_t h, const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h;
}

/* Digest [OFF, END) of file ID; every read must return what stat promised. */
static uint64_t fz_digest_range(const struct cfs_tree *t, uint32_t id, uint64_t off, uint64_t end,
				uint64_t h, char *buf)
{
	while (off < end) {
		size_t want = end - off < FZ_READ_CHUNK ? (size_t)(end - off) : FZ_READ_CHUNK;
		ssize_t n = cfs_tree_read(t, id, buf, want, (off_t)off);
		if (n != (ssize_t)want)
			fz_fail("read of node %u at %" PRIu64 ": %zd, expected %zu", id, off, n,
				want);
		h = fz_fnv(h, buf, want);
		off += want;
	}
	return h;
}

/* Bytes file ID holds written (not holes, not its pattern): what a dump reads of it. */
static uint64_t fz_written_bytes(const struct cfs_tree *t, uint32_t id)
{
	uint64_t s, e, total = 0;

	for (uint64_t off = 0; cfs_tree_next_written(t, id, off, &s, &e) == 0; off = e)
		total += e - s;
	return total;
}

static uint64_t fz_digest(const struct cfs_tree *t, uint32_t id, uint64_t size)
{
	/* no read is longer than the file or a chunk; a small file's buffer stays small, as
	 * every canon digests every file and 64 KiB blocks are slow under ASan */
	char *buf = g_malloc(size < FZ_READ_CHUNK ? (size_t)size + 1 : FZ_READ_CHUNK);
	uint64_t h = 1469598103934665603ull;

	if (size <= FZ_DIGEST_WHOLE) {
		h = fz_digest_range(t, id, 0, size, h, buf);
	} else { /* head, middle, tail and where it is written: cheap for a PiB */
		uint64_t s, e;
		h = fz_digest_range(t, id, 0, FZ_DIGEST_SAMPLE, h, buf);
		h = fz_digest_range(t, id, size / 2, size / 2 + FZ_DIGEST_SAMPLE, h, buf);
		h = fz_digest_range(t, id, size - FZ_DIGEST_SAMPLE, size, h, buf);
		for (uint64_t off = 0; cfs_tree_next_written(t, id, off, &s, &e) == 0; off = e)
			h = fz_digest_range(t, id, s,
					    e - s < FZ_DIGEST_SAMPLE ? e : s + FZ_DIGEST_SAMPLE,
					    h ^ s, buf);
	}
	g_free(buf);
	return h;
}

static void fz_put_time(GString *s, const struct timespec *ts)
{
	g_string_append_printf(s, " %lld.%09ld", (long long)ts->tv_sec, ts->tv_nsec);
}

/* One node's line. FIRST: node -> path it was first listed under (hard links). False when
 * the node was listed before under another name. */
static bool fz_canon_node(GString *s, const struct cfs_tree *t, uint32_t id, const GString *path,
			  GHashTable *first, unsigned what)
{
	struct stat st;
	enum rs_kind kind = cfs_tree_kind(t, id);

	cfs_tree_stat(t, id, &st);
	fz_put_bytes(s, path->len ? path->str : "/", path->len ? path->len : 1);
	if (kind != RS_DIR && st.st_nlink > 1) {
		const char *seen = g_hash_table_lookup(first, GUINT_TO_POINTER(id));
		if (seen) {
			g_string_append_printf(s, " = %s\n", seen);
			return false;
		}
		GString *q = g_string_new(NULL);
		fz_put_bytes(q, path->str, path->len);
		g_hash_table_insert(first, GUINT_TO_POINTER(id), g_string_free(q, FALSE));
	}
	g_string_append_printf(s, " kind=%d mode=%06o uid=%u gid=%u nlink=%lu size=%lld", kind,
			       (unsigned)st.st_mode, (unsigned)st.st_uid, (unsigned)st.st_gid,
			       (unsigned long)st.st_nlink, (long long)st.st_size);
	if (what & FZ_CANON_IDS)
		g_string_append_printf(s, " ino=%lu gen=%u", (unsigned long)st.st_ino,
				       cfs_tree_generation(t, id));
	if (what & FZ_CANON_TIMES) {
		fz_put_time(s, &st.st_atim);
		fz_put_time(s, &st.st_mtim);
		fz_put_time(s, &st.st_ctim);
	}
	if (kind == RS_LINK) {
		const char *target;
		size_t len;
		if (cfs_tree_readlink(t, id, &target, &len) != 0 || len != (size_t)st.st_size)
			fz_fail("readlink of node %u disagrees with its size", id);
		g_string_append(s, " -> ");
		fz_put_bytes(s, target, len);
	} else if (kind == RS_FILE) {
		g_string_append_printf(s, " data=%016" PRIx64,
				       fz_digest(t, id, (uint64_t)st.st_size));
	} else if (kind == RS_OTHER) {
		/* fifo, socket or device: the type is in the mode, a device's number here */
		g_string_append_printf(s, " rdev=%lx", (unsigned long)st.st_rdev);
	} else if (kind != RS_DIR) {
		fz_fail("node %u has kind %d", id, kind);
	}
	g_string_append_c(s, '\n');
	return true;
}

struct fz_frame {
	uint32_t dir;
	uint64_t cookie;
	size_t plen;
	uint64_t seen; /* entries listed so far */
};

/* The directory is done: its listing must agree with its count. */
static void fz_check_count(const struct cfs_tree *t, const struct fz_frame *f)
{
	uint64_t count = cfs_tree_dir_count(t, f->dir);

	if (count != f->seen)
		fz_fail("directory %u lists %" PRIu64 " entries, counts %" PRIu64, f->dir, f->seen,
			count);
}

/* Entry NAME of DIR, listed as CHILD, must be found again by name, with DIR as parent. */
static void fz_check_entry(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
			   uint32_t child)
{
	uint32_t found = 0;
	int err = cfs_tree_lookup(t, dir, name, len, &found);

	if (err || found != child)
		fz_fail("directory %u lists child %u, lookup gives %d/%u", dir, child, err, found);
	if (cfs_tree_kind(t, child) == RS_DIR && cfs_tree_parent(t, child) != dir)
		fz_fail("directory %u lives in %u, parent says %u", child, dir,
			cfs_tree_parent(t, child));
}

char *fz_canon(const struct cfs_tree *t, unsigned what)
{
	GString *s = g_string_new(NULL), *path = g_string_new(NULL);
	GArray *stack = g_array_new(FALSE, FALSE, sizeof(struct fz_frame));
	GHashTable *first = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	struct fz_frame root = {CFS_ROOT, 0, 0, 0};
	struct cfs_tree_stats st;
	uint64_t nodes = 1;

	fz_canon_node(s, t, CFS_ROOT, path, first, what);
	g_array_append_val(stack, root);
	while (stack->len > 0) {
		struct fz_frame *f = &g_array_index(stack, struct fz_frame, stack->len - 1);
		const char *name;
		size_t len;
		uint32_t child;

		g_string_truncate(path, f->plen);
		int rc = cfs_tree_dir_next(t, f->dir, &f->cookie, &name, &len, &child);
		if (rc < 0)
			fz_fail("readdir of directory %u: %d", f->dir, rc);
		if (rc > 0) {
			fz_check_count(t, f);
			g_array_set_size(stack, stack->len - 1);
			continue;
		}
		f->seen++;
		fz_check_entry(t, f->dir, name, len, child);
		g_string_append_c(path, '/');
		g_string_append_len(path, name, (gssize)len);
		nodes += fz_canon_node(s, t, child, path, first, what);
		if (cfs_tree_kind(t, child) == RS_DIR) {
			struct fz_frame sub = {child, 0, path->len, 0};
			g_array_append_val(stack, sub); /* may move f: not used after this */
		}
	}
	cfs_tree_stats(t, &st);
	/* the fuzz targets never take kernel references, so there are no orphans */
	if (st.nodes != nodes)
		fz_fail("the tree counts %" PRIu64 " nodes, %" PRIu64 " are reachable", st.nodes,
			nodes);
	g_string_append_printf(
	    s, "nodes=%" PRIu64 " dirs=%" PRIu64 " files=%" PRIu64 " links=%" PRIu64 "\n", st.nodes,
	    st.dirs, st.files, st.links);
	if (what & FZ_CANON_IDS)
		g_string_append_printf(s, "data_bytes=%" PRIu64 "\n", st.data_bytes);
	g_hash_table_destroy(first);
	g_array_free(stack, TRUE);
	g_string_free(path, TRUE);
	return g_string_free(s, FALSE);
}

struct fz_dir_len {
	uint32_t dir;
	uint64_t plen;
};

void fz_tree_size(const struct cfs_tree *t, struct fz_size *sz)
{
	struct cfs_tree_stats st;
	GArray *todo = g_array_new(FALSE, FALSE, sizeof(struct fz_dir_len));
	struct fz_dir_len root = {CFS_ROOT, 0};

	cfs_tree_stats(t, &st);
	*sz = (struct fz_size){.nodes = st.nodes, .path_bytes = 1};
	g_array_append_val(todo, root);
	while (todo->len > 0) {
		struct fz_dir_len d = g_array_index(todo, struct fz_dir_len, todo->len - 1);
		uint64_t cookie = 0;
		const char *name;
		size_t len;
		uint32_t child;

		g_array_set_size(todo, todo->len - 1);
		while (cfs_tree_dir_next(t, d.dir, &cookie, &name, &len, &child) == 0) {
			struct fz_dir_len sub = {child, d.plen + 1 + len};
			enum rs_kind kind = cfs_tree_kind(t, child);

			sz->path_bytes += sub.plen;
			if (kind == RS_DIR) {
				g_array_append_val(todo, sub);
				continue;
			}
			if (kind == RS_FILE)
				sz->file_bytes += fz_written_bytes(t, child);
		}
	}
	g_array_free(todo, TRUE);
}

bool fz_tree_is_small(const struct cfs_tree *t)
{
	struct fz_size sz;

	fz_tree_size(t, &sz);
	return sz.nodes <= FZ_SMALL_NODES && sz.file_bytes <= FZ_SMALL_FILE_BYTES &&
	       sz.path_bytes <= FZ_SMALL_PATH_BYTES;
}

char *fz_dump(const struct cfs_tree *t, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		fz_fail("open_memstream failed");
	*rc = cfs_spec_dump(t, f);
	fclose(f);
	if (*rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void fz_check_same(const char *what, const char *a, const char *b, const char *dump)
{
	if (strcmp(a, b) == 0)
		return;
	fprintf(stderr, "---- dump\n%s---- first\n%s---- reloaded\n%s----\n", dump, a, b);
	fz_fail("%s differs after a dump round trip", what);
}

bool fz_check_round_trip(const struct cfs_tree *t)
{
	int rc;
	char *d1 = fz_dump(t, &rc), *d2 = NULL, *err = NULL;

	if (!d1) {
		if (rc != -E2BIG)
			fz_fail("cfs_spec_dump: %d", rc);
		return false; /* a path or content too long for one spec line */
	}
	struct cfs_tree *u = cfs_tree_new(&fz_budget_alloc);
	if (!u) {
		free(d1);
		return false;
	}
	rc = cfs_spec_load_text(u, "dump", d1, strlen(d1), &fz_spec_defaults, &err);
	if (rc == -ENOMEM) {
		free(err);
		free(d1);
		cfs_tree_free(u);
		return false;
	}
	if (rc) {
		fprintf(stderr, "---- dump\n%s----\n", d1);
		fz_fail("the dump does not load back: %d %s", rc, err ? err : "(no message)");
	}
	d2 = fz_dump(u, &rc);
	if (!d2)
		fz_fail("the reloaded tree does not dump: %d", rc);
	fz_check_same("the dump", d1, d2, d1);
	char *c1 = fz_canon(t, FZ_CANON_TIMES), *c2 = fz_canon(u, FZ_CANON_TIMES);
	fz_check_same("the tree", c1, c2, d1);
	g_free(c1);
	g_free(c2);
	free(d1);
	free(d2);
	cfs_tree_free(u);
	return true;
}

struct cfs_tree *fz_tree_of(const char *spec, size_t len)
{
	char *err = NULL;
	struct cfs_tree *t = cfs_tree_new(&fz_budget_alloc);

	if (!t)
		fz_fail("cfs_tree_new failed");
	int rc = cfs_spec_load_text(t, "base", spec, len, &fz_spec_defaults, &err);
	if (rc)
		fz_fail("the base spec does not load: %d %s", rc, err ? err : "");
	return t;
}
