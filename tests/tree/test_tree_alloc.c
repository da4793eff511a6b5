/*
 * Allocation failure, all or nothing: each operation's k-th allocation fails, for every k, and
 * the tree's canonical dump must be the same before and after.
 */
#include "test_tree.h"

#include <fcntl.h> /* FALLOC_FL_* */

enum {
	PAD_MAX = 64,	    /* fixture paddings: crosses every table's first growth */
	CHUNK_NODES = 4096, /* tree.c's node chunk: a fixture ends just before a new one */
};

/* ---- allocation failure: all or nothing ---- */

/* The failure fixture: /d1 (padded), /d2, /e (empty), files with each kind of content,
 * a hard-linked file, a link, a referenced orphan. PAD entries of 100-byte names (every
 * other one hard-linked from /d2, every third with a buffer) move the tables' growth
 * points; CHUNK fills the node chunk so the next node needs a new one. */
/* The referenced file's name: long, so that keeping it as an orphan's name (a copy) needs
 * the arena to grow in some fixture variants. */
static const char *held_name(void)
{
	static char name[201];

	memset(name, 'h', sizeof(name) - 1);
	return name;
}

struct ffix {
	uint32_t d1, d2, e, pat, buf, empty, hl, l, orphan, held, paged;
};

static struct ffix failure_fixture(struct cfs_tree *t, int pad, bool chunk)
{
	struct ffix x;
	static char name[3 * 4096];

	x.d1 = mkd(t, CFS_ROOT, "d1");
	x.d2 = mkd(t, CFS_ROOT, "d2");
	x.e = mkd(t, CFS_ROOT, "e");
	x.pat = mkf(t, x.d1, "pat");
	x.buf = mkf(t, x.d1, "buf");
	x.empty = mkf(t, x.d1, "empty");
	x.hl = mkf(t, x.d1, "hl");
	x.held = mkf(t, x.d1, held_name());
	x.l = mkl(t, x.d1, "l", "../d2/target");
	x.orphan = mkf(t, x.d2, "orphan");
	x.paged = mkf(t, x.d2, "paged");
	ck_assert_int_eq(cfs_tree_write(t, x.paged, name, 3 * 4096, 0), 3 * 4096);
	ck_assert_int_eq(cfs_tree_write(t, x.paged, "end", 3, 1 << 30), 3);
	ck_assert_int_eq(cfs_tree_set_pattern(t, x.pat, "0123456789", 10, 1000), 0);
	ck_assert_int_eq(cfs_tree_set_content(t, x.buf, "buffer", 6), 0);
	ck_assert_int_eq(cfs_tree_set_content(t, x.orphan, "orphan", 6), 0);
	ck_assert_int_eq(lk(t, x.hl, x.d2, "hl2"), 0);
	cfs_tree_ref(t, x.orphan, 1);
	cfs_tree_ref(t, x.held, 1);
	ck_assert_int_eq(rm(t, x.d2, "orphan"), 0);
	for (int i = 0; i < pad; i++) {
		snprintf(name, sizeof(name), "%0100d", i);
		uint32_t p = mkf(t, x.d1, name);
		if (i % 2 == 0)
			ck_assert_int_eq(lk(t, p, x.d2, name), 0);
		if (i % 3 == 0)
			ck_assert_int_eq(cfs_tree_set_content(t, p, name, 100), 0);
		if (i % 4 == 1) /* paged files: the table of them grows */
			ck_assert_int_eq(cfs_tree_write(t, p, "p", 1, 5000), 1);
	}
	if (chunk) {
		uint32_t id = 0, d = mkd(t, CFS_ROOT, "fill");
		for (int i = 0; id + 1 < CHUNK_NODES; i++) {
			snprintf(name, sizeof(name), "%d", i);
			id = mkf(t, d, name);
		}
	}
	return x;
}

typedef int (*fail_op_fn)(struct cfs_tree *t, const struct ffix *x);

static int op_mkdir(struct cfs_tree *t, const struct ffix *x)
{
	uint32_t id;
	return cfs_tree_mkdir(t, x->d1, "newdir", 6, &A, &id);
}

static int op_mkdir_in_empty_dir(struct cfs_tree *t, const struct ffix *x)
{
	uint32_t id;
	return cfs_tree_mkdir(t, x->e, "newdir", 6, &A, &id);
}

static int op_mkfile(struct cfs_tree *t, const struct ffix *x)
{
	uint32_t id;
	return cfs_tree_mkfile(t, x->d1, "newfile", 7, &A, &id);
}

static int op_symlink(struct cfs_tree *t, const struct ffix *x)
{
	static char target[3000];
	uint32_t id;

	memset(target, 't', sizeof(target));
	return cfs_tree_symlink(t, x->d1, "newlink", 7, target, sizeof(target), &A, &id);
}

static int op_link_first(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_link(t, x->pat, x->d1, "newname", 7);
}

static int op_link_again(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_link(t, x->hl, x->e, "hl3", 3);
}

static int op_rename_move(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_rename(t, x->d2, "hl2", 3, x->d1, "renamed-hard-link", 17, 0);
}

static int op_rename_into_empty_dir(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_rename(t, x->d1, "buf", 3, x->e, "buf", 3, 0);
}

static int op_rename_over_held(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_rename(t, x->d1, "buf", 3, x->d1, held_name(), strlen(held_name()), 0);
}

static int op_rename_exchange(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_rename(t, x->d1, "pat", 3, x->d2, "hl2", 3, RENAME_EXCHANGE);
}

static int op_write_pattern(struct cfs_tree *t, const struct ffix *x)
{
	ssize_t n = cfs_tree_write(t, x->pat, "WXYZ", 4, 998);
	return n < 0 ? (int)n : 0;
}

static int op_write_append(struct cfs_tree *t, const struct ffix *x)
{
	static char data[5000];
	ssize_t n = cfs_tree_write(t, x->buf, data, sizeof(data), 6);
	return n < 0 ? (int)n : 0;
}

static int op_write_empty(struct cfs_tree *t, const struct ffix *x)
{
	ssize_t n = cfs_tree_write(t, x->empty, "x", 1, 100);
	return n < 0 ? (int)n : 0;
}

static int op_write_orphan(struct cfs_tree *t, const struct ffix *x)
{
	ssize_t n = cfs_tree_write(t, x->orphan, "x", 1, 10);
	return n < 0 ? (int)n : 0;
}

static int op_truncate_pattern(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_truncate(t, x->pat, 2000);
}

static int op_truncate_buffer(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_truncate(t, x->buf, 100000);
}

static int op_write_far_past_buffer(struct cfs_tree *t, const struct ffix *x)
{
	ssize_t n = cfs_tree_write(t, x->buf, "far", 3, 1ll << 40);
	return n < 0 ? (int)n : 0;
}

static int op_write_pages_into_pattern(struct cfs_tree *t, const struct ffix *x)
{
	static char data[5000];
	ssize_t n = cfs_tree_write(t, x->pat, data, sizeof(data), 500);
	return n < 0 ? (int)n : 0;
}

static int op_write_into_paged(struct cfs_tree *t, const struct ffix *x)
{
	static char data[9000];
	ssize_t n = cfs_tree_write(t, x->paged, data, sizeof(data), 2 * 4096 + 100);
	return n < 0 ? (int)n : 0;
}

static int op_write_far_into_paged(struct cfs_tree *t, const struct ffix *x)
{
	ssize_t n = cfs_tree_write(t, x->paged, "x", 1, 1ll << 35);
	return n < 0 ? (int)n : 0;
}

static int op_set_content_pages(struct cfs_tree *t, const struct ffix *x)
{
	static char data[20000];
	return cfs_tree_set_content(t, x->buf, data, sizeof(data));
}

static int op_set_content(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_set_content(t, x->pat, "literal", 7);
}

static int op_set_pattern(struct cfs_tree *t, const struct ffix *x)
{
	static char pattern[5000];

	memset(pattern, 'p', sizeof(pattern));
	return cfs_tree_set_pattern(t, x->buf, pattern, sizeof(pattern), 1 << 20);
}

static int op_fallocate_paged(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_fallocate(t, x->paged, 0, 2 * 4096, 5 * 4096);
}

static int op_fallocate_empty(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_fallocate(t, x->empty, FALLOC_FL_KEEP_SIZE, 0, 3 * 4096);
}

static int op_fallocate_buffer(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_fallocate(t, x->buf, 0, 0, 9000);
}

static int op_punch_inside_pattern(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_fallocate(t, x->pat, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 10, 20);
}

static int op_punch_pattern_end(struct cfs_tree *t, const struct ffix *x)
{
	return cfs_tree_fallocate(t, x->pat, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 500, 4096);
}

static const struct {
	const char *name;
	fail_op_fn run;
	bool allocates; /* in some fixture variant: the loop must meet failures */
} fail_ops[] = {
    {"mkdir", op_mkdir, true},
    {"mkdir in an empty dir", op_mkdir_in_empty_dir, true},
    {"mkfile", op_mkfile, true},
    {"symlink", op_symlink, true},
    {"first hard link", op_link_first, true},
    {"another hard link", op_link_again, true},
    {"rename to a free name", op_rename_move, true},
    {"rename into an empty dir", op_rename_into_empty_dir, true},
    {"rename over a referenced file", op_rename_over_held, true},
    {"rename exchange", op_rename_exchange, false},
    {"write into a pattern file", op_write_pattern, true},
    {"appending write", op_write_append, true},
    {"write past the end of an empty file", op_write_empty, true},
    {"write to an orphan", op_write_orphan, true},
    {"truncate a pattern file up", op_truncate_pattern, true},
    {"truncate a buffer up", op_truncate_buffer, false}, /* zeros past it: no memory */
    {"write far past a buffer's end", op_write_far_past_buffer, true},
    {"write pages into a pattern file", op_write_pages_into_pattern, true},
    {"write into a paged file", op_write_into_paged, true},
    {"write a new group into a paged file", op_write_far_into_paged, true},
    {"set_content of pages", op_set_content_pages, true},
    {"set_content", op_set_content, true},
    {"set_pattern", op_set_pattern, true},
    {"fallocate pages into a paged file", op_fallocate_paged, true},
    {"fallocate an empty file", op_fallocate_empty, true},
    {"fallocate past a buffer", op_fallocate_buffer, true},
    {"punch a hole inside a pattern", op_punch_inside_pattern, true},
    {"punch a pattern to its end", op_punch_pattern_end, true},
};

/* Fail allocation K of the operation on a fresh fixture: -ENOMEM, the same dump, the same
 * live blocks; or success once K passes the operation's allocations. Returns whether it
 * failed. */
static bool fail_once(int op, int pad, bool chunk, long k)
{
	long base = ca_live; /* the fixture's tree */
	struct cfs_tree *t = cfs_tree_new(&CA);
	struct ffix x = failure_fixture(t, pad, chunk);
	uint32_t orphans[] = {x.orphan};
	char *before = dump(t, orphans, 1);
	long live = ca_live;

	ca_arm(k, false);
	int err = fail_ops[op].run(t, &x);
	ca_arm(0, false);
	if (err) {
		ck_assert_msg(err == -ENOMEM, "%s pad %d k %ld: %d", fail_ops[op].name, pad, k,
			      err);
		char *after = dump(t, orphans, 1);
		ck_assert_msg(!strcmp(before, after),
			      "%s pad %d k %ld changed the tree:\n%s\n---\n%s", fail_ops[op].name,
			      pad, k, before, after);
		ck_assert_msg(ca_live == live, "%s pad %d k %ld leaked %ld blocks",
			      fail_ops[op].name, pad, k, ca_live - live);
		free(after);
	}
	free(before);
	cfs_tree_free(t);
	ck_assert_int_eq(ca_live, base);
	return err != 0;
}

START_TEST(test_failed_allocation_leaves_tree_identical)
{
	long failures = 0;

	for (int pad = 0; pad <= PAD_MAX + 1; pad++) {
		bool chunk = pad == PAD_MAX + 1;
		long k = 1;
		while (fail_once(_i, chunk ? 0 : pad, chunk, k))
			k++;
		failures += k - 1;
	}
	printf("%s: %ld failed allocations checked\n", fail_ops[_i].name, failures);
	ck_assert_msg(!fail_ops[_i].allocates || failures > 0, "%s: no allocation ever failed",
		      fail_ops[_i].name);
}
END_TEST

/* Removal never needs memory: with every allocation failing it still succeeds. */
START_TEST(test_removal_succeeds_without_memory)
{
	struct ffix x = failure_fixture(T, 40, false);

	ca_arm(1, true);
	ck_assert_int_eq(rm(T, x.d1, "pat"), 0);
	ck_assert_int_eq(rm(T, x.d2, "hl2"), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "e"), 0);
	ck_assert_int_eq(mv(T, x.d1, "buf", x.d1, "empty", 0), 0);
	ck_assert_int_eq(mv(T, x.d1, "l", CFS_ROOT, "d2", RENAME_EXCHANGE), 0);
	cfs_tree_unref(T, x.orphan, 1);
	ck_assert_int_eq(cfs_tree_truncate(T, x.buf, 1), 0);
	ca_arm(0, false);
	ck_assert_uint_eq(at(T, x.d1, "empty"), x.buf);
}
END_TEST

/* ---- the test cases ---- */

void tree_tcase_alloc_failure(TCase *tc)
{
	tcase_add_loop_test(tc, test_failed_allocation_leaves_tree_identical, 0,
			    sizeof(fail_ops) / sizeof(fail_ops[0]));
	tcase_add_test(tc, test_removal_succeeds_without_memory);
}
