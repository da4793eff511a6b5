/*
 * The spec suite's shared helpers (test_spec.h).
 */
#include "test_spec.h"

const struct cfs_spec_defaults def = {.uid = 4242, .gid = 4343};

struct cfs_tree *load_into(struct cfs_tree *t, const char *text)
{
	char *err = NULL;
	int rc = cfs_spec_load_text(t, "t.spec", text, strlen(text), &def, &err);

	ck_assert_msg(rc == 0, "load failed: %d %s", rc, err ? err : "(no message)");
	ck_assert_ptr_null(err);
	return t;
}

struct cfs_tree *load(const char *text)
{
	struct cfs_tree *t = cfs_tree_new(NULL);

	ck_assert_ptr_nonnull(t);
	return load_into(t, text);
}

struct rs_ctx ctx_for(const struct cfs_tree *t, struct rs_limits limits)
{
	return (struct rs_ctx){
	    .ops = &cfs_tree_rs_ops, .tree = (void *)t, .root = CFS_ROOT, .limits = limits};
}

const struct rs_limits big_limits = {1000000, 1000000};

int resolve_with(const struct cfs_tree *t, const char *path, struct rs_limits limits,
		 unsigned flags, struct rs_result *res)
{
	struct rs_ctx ctx = ctx_for(t, limits);

	return rs_resolve(&ctx, CFS_ROOT, path, flags, res);
}

/* The node PATH names, following links (Linux limits); aborts the test if it does not. */
uint32_t follow(const struct cfs_tree *t, const char *path)
{
	struct rs_result res;
	int rc = resolve_with(t, path, rs_limits_linux, RS_FOLLOW, &res);

	ck_assert_msg(rc == 0, "%s: %s", path, strerror(-rc));
	return (uint32_t)res.node;
}

/* The node PATH names itself (a final link is not followed). */
uint32_t node(const struct cfs_tree *t, const char *path)
{
	struct rs_result res;
	int rc = resolve_with(t, path, rs_limits_linux, 0, &res);

	ck_assert_msg(rc == 0, "%s: %s", path, strerror(-rc));
	return (uint32_t)res.node;
}

int follow_err(const struct cfs_tree *t, const char *path)
{
	struct rs_result res;

	return resolve_with(t, path, rs_limits_linux, RS_FOLLOW, &res);
}

char *target_of(const struct cfs_tree *t, const char *path)
{
	const char *s;
	size_t len;

	ck_assert_int_eq(cfs_tree_readlink(t, node(t, path), &s, &len), 0);
	return g_strndup(s, len);
}

char *content_of(const struct cfs_tree *t, uint32_t id)
{
	struct stat st;

	cfs_tree_stat(t, id, &st);
	char *buf = g_malloc((size_t)st.st_size + 1);
	ssize_t n = st.st_size ? cfs_tree_read(t, id, buf, (size_t)st.st_size, 0) : 0;
	ck_assert_int_eq(n, st.st_size);
	buf[n] = '\0';
	return buf;
}

void assert_link(const struct cfs_tree *t, const char *path, const char *target)
{
	char *s = target_of(t, path);

	ck_assert_msg(strcmp(s, target) == 0, "%s -> '%s', expected '%s'", path, s, target);
	g_free(s);
}

char *dump_of(const struct cfs_tree *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cfs_spec_dump(t, f), 0);
	fclose(f);
	return buf;
}

/* A description of T made without the spec module: every path with its kind, attributes,
 * link count, and content digest or target, in readdir order. */
char *canon(const struct cfs_tree *t, bool times)
{
	GString *out = g_string_new(NULL);
	GArray *stack = g_array_new(FALSE, FALSE, sizeof(uint64_t) * 2);
	GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
	uint64_t top[2] = {CFS_ROOT, 0};
	char *buf = g_malloc(65536);

	g_array_append_val(stack, top);
	g_ptr_array_add(paths, g_strdup(""));
	while (stack->len > 0) {
		uint64_t *f = &g_array_index(stack, uint64_t, (stack->len - 1) * 2);
		const char *name;
		size_t len;
		uint32_t child;
		struct stat st;

		if (cfs_tree_dir_next(t, (uint32_t)f[0], &f[1], &name, &len, &child) != 0) {
			g_array_set_size(stack, stack->len - 1);
			g_ptr_array_remove_index(paths, paths->len - 1);
			continue;
		}
		char *raw = g_strndup(name, len), *esc = g_strescape(raw, NULL);
		char *path = g_strdup_printf("%s/%s", (char *)paths->pdata[paths->len - 1], esc);
		enum rs_kind kind = cfs_tree_kind(t, child);

		cfs_tree_stat(t, child, &st);
		g_string_append_printf(out, "%s k%d m%o u%u g%u n%lu s%lld", path, kind,
				       (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
				       (unsigned)st.st_gid, (unsigned long)st.st_nlink,
				       (long long)st.st_size);
		if (times)
			g_string_append_printf(out, " a%lld.%09ld m%lld.%09ld c%lld.%09ld",
					       (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
					       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
					       (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
		if (kind == RS_LINK) {
			const char *s;
			size_t tl;
			CHECK(cfs_tree_readlink(t, child, &s, &tl) == 0, "readlink");
			char *r = g_strndup(s, tl), *e = g_strescape(r, NULL);
			g_string_append_printf(out, " -> %s", e);
			g_free(e);
			g_free(r);
		} else if (kind == RS_FILE) {
			GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA1);
			/* the first 64 MiB: enough to tell contents apart, and a 1 PiB pattern
			 * file stays cheap */
			for (off_t off = 0; off < st.st_size && off < (64 << 20);) {
				ssize_t n = cfs_tree_read(t, child, buf, 65536, off);
				CHECK(n > 0, "read");
				g_checksum_update(sum, (const guchar *)buf, n);
				off += n;
			}
			g_string_append_printf(out, " %s", g_checksum_get_string(sum));
			g_checksum_free(sum);
		}
		g_string_append_c(out, '\n');
		if (kind == RS_DIR) {
			uint64_t sub[2] = {child, 0};
			g_array_append_val(stack, sub);
			g_ptr_array_add(paths, path);
		} else {
			g_free(path);
		}
		g_free(esc);
		g_free(raw);
	}
	struct stat st;
	cfs_tree_stat(t, CFS_ROOT, &st);
	g_string_append_printf(out, "/ m%o u%u g%u", (unsigned)(st.st_mode & 07777),
			       (unsigned)st.st_uid, (unsigned)st.st_gid);
	if (times)
		g_string_append_printf(out, " m%lld.%09ld c%lld.%09ld",
				       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
				       (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	g_free(buf);
	g_array_free(stack, TRUE);
	g_ptr_array_free(paths, TRUE);
	return g_string_free(out, FALSE);
}

uint64_t node_count(const struct cfs_tree *t)
{
	struct cfs_tree_stats st;

	cfs_tree_stats(t, &st);
	return st.nodes;
}
