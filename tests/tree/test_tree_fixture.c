/*
 * The tree suite's fixture: a counting allocator that fails on demand (teardown checks
 * that freeing the tree gives every block back), the helpers, and a canonical dump of
 * everything observable, for "the tree is exactly as before".
 */
#include "test_tree.h"

/* ---- a counting allocator that fails on demand ---- */

long ca_live;		  /* blocks handed out, not yet freed */
static long ca_calls;	  /* realloc calls since the last ca_arm */
static long ca_fail_at;	  /* fail this call (1-based); 0: none */
static bool ca_fail_rest; /* and every later one */

static void *ca_realloc(void *p, size_t n)
{
	ca_calls++;
	if (ca_fail_at && (ca_calls == ca_fail_at || (ca_fail_rest && ca_calls > ca_fail_at)))
		return NULL;
	void *q = realloc(p, n);
	if (q && !p)
		ca_live++;
	return q;
}

static void ca_free(void *p)
{
	if (!p)
		return;
	ca_live--;
	free(p);
}

const struct cfs_alloc CA = {ca_realloc, ca_free};

void ca_arm(long fail_at, bool rest)
{
	ca_calls = 0;
	ca_fail_at = fail_at;
	ca_fail_rest = rest;
}

/* ---- fixture and helpers ---- */

struct cfs_tree *T;
const struct cfs_new A = {0755, 1000, 1000};
const struct cfs_new AF = {0644, 1000, 1000};

void setup(void)
{
	ca_live = 0;
	ca_arm(0, false);
	T = cfs_tree_new(&CA);
	ck_assert_ptr_nonnull(T);
}

void teardown(void)
{
	cfs_tree_free(T);
	T = NULL;
	ck_assert_int_eq(ca_live, 0);
}

uint32_t mkd(struct cfs_tree *t, uint32_t dir, const char *name)
{
	uint32_t id = 0;

	ck_assert_int_eq(cfs_tree_mkdir(t, dir, name, strlen(name), &A, &id), 0);
	return id;
}

uint32_t mkf(struct cfs_tree *t, uint32_t dir, const char *name)
{
	uint32_t id = 0;

	ck_assert_int_eq(cfs_tree_mkfile(t, dir, name, strlen(name), &AF, &id), 0);
	return id;
}

uint32_t mkl(struct cfs_tree *t, uint32_t dir, const char *name, const char *target)
{
	uint32_t id = 0;

	ck_assert_int_eq(
	    cfs_tree_symlink(t, dir, name, strlen(name), target, strlen(target), &A, &id), 0);
	return id;
}

int lk(struct cfs_tree *t, uint32_t id, uint32_t dir, const char *name)
{
	return cfs_tree_link(t, id, dir, name, strlen(name));
}

int find(const struct cfs_tree *t, uint32_t dir, const char *name, uint32_t *out)
{
	return cfs_tree_lookup(t, dir, name, strlen(name), out);
}

/* The handle NAME names in DIR, 0 when there is none. */
uint32_t at(const struct cfs_tree *t, uint32_t dir, const char *name)
{
	uint32_t id = 0;

	return find(t, dir, name, &id) ? 0 : id;
}

int rm(struct cfs_tree *t, uint32_t dir, const char *name)
{
	return cfs_tree_unlink(t, dir, name, strlen(name));
}

int rmd(struct cfs_tree *t, uint32_t dir, const char *name)
{
	return cfs_tree_rmdir(t, dir, name, strlen(name));
}

int mv(struct cfs_tree *t, uint32_t od, const char *on, uint32_t nd, const char *nn, unsigned flags)
{
	return cfs_tree_rename(t, od, on, strlen(on), nd, nn, strlen(nn), flags);
}

struct stat st_of(const struct cfs_tree *t, uint32_t id)
{
	struct stat st;

	cfs_tree_stat(t, id, &st);
	return st;
}

struct cfs_tree_stats stats_of(const struct cfs_tree *t)
{
	struct cfs_tree_stats s;

	cfs_tree_stats(t, &s);
	return s;
}

char *name_of(const struct cfs_tree *t, uint32_t id)
{
	static char buf[RS_NAME_MAX + 1];
	const char *n;
	size_t len;

	cfs_tree_name(t, id, &n, &len);
	memcpy(buf, n, len);
	buf[len] = '\0';
	return buf;
}

void assert_content(const struct cfs_tree *t, uint32_t id, const char *want, size_t len)
{
	char *buf = malloc(len + 1);

	ck_assert_int_eq(st_of(t, id).st_size, (off_t)len);
	ck_assert_int_eq(cfs_tree_read(t, id, buf, len + 1, 0), (ssize_t)len);
	ck_assert_mem_eq(buf, want, len);
	free(buf);
}

int resolve(struct cfs_tree *t, const char *path, unsigned flags, const struct rs_cred *cred,
	    uint64_t *node)
{
	struct rs_ctx ctx = {.ops = &cfs_tree_rs_ops,
			     .tree = t,
			     .root = CFS_ROOT,
			     .limits = rs_limits_linux,
			     .cred = cred};
	struct rs_result res;
	int err = rs_resolve(&ctx, CFS_ROOT, path, flags, &res);

	*node = res.node;
	return err;
}

/* Entries of DIR in readdir order, names joined by ' '. */
char *listing(const struct cfs_tree *t, uint32_t dir)
{
	static char buf[4096];
	uint64_t cookie = 0;
	const char *name;
	size_t len, n = 0;
	uint32_t child;

	buf[0] = '\0';
	while (cfs_tree_dir_next(t, dir, &cookie, &name, &len, &child) == 0) {
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%.*s", n ? " " : "", (int)len,
				      name);
		ck_assert_uint_lt(n, sizeof(buf));
	}
	return buf;
}

/* ---- canonical dump: everything observable, for "the tree is exactly as before" ---- */

static uint64_t fnv(const char *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h;
}

static void dump_content(FILE *f, const struct cfs_tree *t, uint32_t id, uint64_t size)
{
	enum { WINDOW = 1 << 16 };
	static char buf[WINDOW];
	uint64_t h = 1469598103934665603ull;

	if (size <= 4 * WINDOW) {
		for (uint64_t off = 0; off < size; off += WINDOW) {
			ssize_t n = cfs_tree_read(t, id, buf, WINDOW, (off_t)off);
			ck_assert_int_ge(n, 0);
			h = fnv(buf, (size_t)n, h);
		}
	} else { /* a huge file: its two ends and what is written in it tell */
		uint64_t s, e;
		h = fnv(buf, (size_t)cfs_tree_read(t, id, buf, WINDOW, 0), h);
		h = fnv(buf, (size_t)cfs_tree_read(t, id, buf, WINDOW, (off_t)(size - WINDOW)), h);
		for (uint64_t off = 0; cfs_tree_next_written(t, id, off, &s, &e) == 0; off = e) {
			fprintf(f, " run=%llu+%llu", (unsigned long long)s,
				(unsigned long long)(e - s));
			h = fnv(buf, (size_t)cfs_tree_read(t, id, buf, WINDOW, (off_t)s), h);
		}
	}
	fprintf(f, " data=%016llx", (unsigned long long)h);
}

static void dump_node(FILE *f, const struct cfs_tree *t, uint32_t id)
{
	struct stat st = st_of(t, id);
	const char *s;
	size_t len;

	cfs_tree_name(t, id, &s, &len);
	fprintf(f, " id=%u gen=%u mode=%o nlink=%lu uid=%u gid=%u size=%lld blocks=%lld", id,
		cfs_tree_generation(t, id), st.st_mode, (unsigned long)st.st_nlink, st.st_uid,
		st.st_gid, (long long)st.st_size, (long long)st.st_blocks);
	fprintf(f, " a=%lld.%09ld m=%lld.%09ld c=%lld.%09ld refs=%llu parent=%u name=%.*s",
		(long long)st.st_atim.tv_sec, st.st_atim.tv_nsec, (long long)st.st_mtim.tv_sec,
		st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec,
		(unsigned long long)cfs_tree_refs(t, id), cfs_tree_parent(t, id), (int)len, s);
	if (S_ISLNK(st.st_mode)) {
		ck_assert_int_eq(cfs_tree_readlink(t, id, &s, &len), 0);
		fprintf(f, " target=%016llx",
			(unsigned long long)fnv(s, len, 14695981039346656037ull));
	} else if (S_ISREG(st.st_mode)) {
		dump_content(f, t, id, (uint64_t)st.st_size);
	} else {
		fprintf(f, " entries=%llu", (unsigned long long)cfs_tree_dir_count(t, id));
	}
	fputc('\n', f);
}

static void dump_dir(FILE *f, const struct cfs_tree *t, uint32_t dir, const char *path)
{
	uint64_t cookie = 0;
	const char *name;
	size_t len;
	uint32_t child;

	while (cfs_tree_dir_next(t, dir, &cookie, &name, &len, &child) == 0) {
		char sub[4096];
		snprintf(sub, sizeof(sub), "%s/%.*s", path, (int)len, name);
		fprintf(f, "%s", sub);
		dump_node(f, t, child);
		if (cfs_tree_kind(t, child) == RS_DIR)
			dump_dir(f, t, child, sub);
	}
}

/* EXTRA: handles outside the namespace (orphans) to include. Caller frees. */
char *dump(const struct cfs_tree *t, const uint32_t *extra, int nextra)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	struct cfs_tree_stats s = stats_of(t);

	ck_assert_ptr_nonnull(f);
	fprintf(f, "nodes=%llu dirs=%llu files=%llu links=%llu data=%llu refs=%llu\n",
		(unsigned long long)s.nodes, (unsigned long long)s.dirs,
		(unsigned long long)s.files, (unsigned long long)s.links,
		(unsigned long long)s.data_bytes, (unsigned long long)cfs_tree_total_refs(t));
	fprintf(f, "/");
	dump_node(f, t, CFS_ROOT);
	dump_dir(f, t, CFS_ROOT, "");
	for (int i = 0; i < nextra; i++) {
		fprintf(f, "orphan");
		dump_node(f, t, extra[i]);
	}
	fclose(f);
	return out;
}
