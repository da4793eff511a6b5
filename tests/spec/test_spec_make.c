/*
 * Node keywords (spec_make.c) and lines as transactions: all or nothing, also when allocations
 * fail.
 */
#include "test_spec.h"

/* ---------------------------------------------------------------------------------------- */
/* Node keywords */

START_TEST(test_dir_with_attributes)
{
	struct cfs_tree *t = load("dir /a mode=0700 uid=12 gid=34 atime=1 mtime=5.25 "
				  "ctime=-2.000000001\n");
	struct stat st;

	cfs_tree_stat(t, node(t, "/a"), &st);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(st.st_uid, 12);
	ck_assert_int_eq(st.st_gid, 34);
	ck_assert_int_eq(st.st_atim.tv_sec, 1);
	ck_assert_int_eq(st.st_atim.tv_nsec, 0);
	ck_assert_int_eq(st.st_mtim.tv_sec, 5);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 250000000);
	ck_assert_int_eq(st.st_ctim.tv_sec, -2);
	ck_assert_int_eq(st.st_ctim.tv_nsec, 1);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_missing_parents_are_made_0755_with_default_owner)
{
	struct cfs_tree *t = load("file /a/b/c x\n");
	struct stat st;

	cfs_tree_stat(t, node(t, "/a/b"), &st);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(st.st_uid, def.uid);
	ck_assert_int_eq(st.st_gid, def.gid);
	cfs_tree_stat(t, node(t, "/a/b/c"), &st);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0644);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_times_on_a_dir_survive_later_entries)
{
	struct cfs_tree *t = load("dir /a mtime=5 ctime=6\nfile /a/b\nlink /a/c b\n");
	struct stat st;

	cfs_tree_stat(t, node(t, "/a"), &st);
	ck_assert_int_eq(st.st_mtim.tv_sec, 5);
	ck_assert_int_eq(st.st_ctim.tv_sec, 6);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_stamp_gives_every_node_the_spec_time_but_explicit_times_win)
{
	struct cfs_spec_defaults d = {.uid = 1, .gid = 1, .stamp = true, .time = {777, 5}};
	const char *text = "dir /a\nfile /a/b\nlink /a/c b\nchain /d/e 3 /a/b\nfile /x mtime=9\n";
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;
	struct stat st;

	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", text, strlen(text), &d, &err), 0);
	const char *paths[] = {"/", "/a", "/a/b", "/a/c", "/d", "/d/.e.chain/1", "/d/e"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		cfs_tree_stat(t, node(t, paths[i]), &st);
		ck_assert_msg(st.st_mtim.tv_sec == 777 && st.st_ctim.tv_nsec == 5, "%s", paths[i]);
	}
	cfs_tree_stat(t, node(t, "/x"), &st);
	ck_assert_int_eq(st.st_mtim.tv_sec, 9);
	ck_assert_int_eq(st.st_atim.tv_sec, 777);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_dir_root_sets_root_attributes)
{
	struct cfs_tree *t = load("dir / mode=0711 uid=7 gid=8 mtime=9\ndir /x\n");
	struct stat st;

	cfs_tree_stat(t, CFS_ROOT, &st);
	ck_assert_int_eq(st.st_mode & 07777, 0711);
	ck_assert_int_eq(st.st_uid, 7);
	ck_assert_int_eq(st.st_gid, 8);
	ck_assert_int_eq(st.st_mtim.tv_sec, 9);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_file_literal_with_escapes)
{
	struct cfs_tree *t = load("file /f \"a\\tb\\n\\x00\\xff\\\"\\\\\\r\\0\" mode=0600\n");
	static const char want[] = "a\tb\n\0\xff\"\\\r";
	uint32_t id = node(t, "/f");
	struct stat st;
	char *s = content_of(t, id);

	cfs_tree_stat(t, id, &st);
	ck_assert_int_eq(st.st_size, sizeof(want));
	ck_assert_int_eq(memcmp(s, want, sizeof(want)), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	g_free(s);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_file_size_with_pattern_and_suffix)
{
	struct cfs_tree *t = load("file /p size=1k pattern=ab\nfile /d size=20\n"
				  "file /big size=3T\nfile /e\n");
	struct stat st;
	char *s = content_of(t, node(t, "/p"));

	ck_assert_int_eq(strlen(s), 1024);
	ck_assert_int_eq(strncmp(s, "ababab", 6), 0);
	ck_assert_int_eq(s[1023], 'b');
	g_free(s);
	s = content_of(t, node(t, "/d"));
	ck_assert_str_eq(s, "chainfs\nchainfs\nchai");
	g_free(s);
	cfs_tree_stat(t, node(t, "/big"), &st);
	ck_assert_int_eq(st.st_size, 3ll << 40);
	cfs_tree_stat(t, node(t, "/e"), &st);
	ck_assert_int_eq(st.st_size, 0);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_append_extends_a_file)
{
	struct cfs_tree *t = load("file /f \"one\\n\" mtime=3\nappend /f two\nappend /f \" 3\"\n");
	struct stat st;
	char *s = content_of(t, node(t, "/f"));

	ck_assert_str_eq(s, "one\ntwo 3");
	cfs_tree_stat(t, node(t, "/f"), &st);
	ck_assert_int_eq(st.st_mtim.tv_sec, 3);
	g_free(s);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_link_target_is_byte_exact)
{
	struct cfs_tree *t = load("link /l \"../a b//c\\x01\\xfe/\" uid=5\nlink /m /x/../y\n");
	const char *s;
	size_t len;
	struct stat st;

	ck_assert_int_eq(cfs_tree_readlink(t, node(t, "/l"), &s, &len), 0);
	ck_assert_int_eq(len, 12);
	ck_assert_int_eq(memcmp(s, "../a b//c\x01\xfe/", 12), 0);
	cfs_tree_stat(t, node(t, "/l"), &st);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(st.st_uid, 5);
	assert_link(t, "/m", "/x/../y");
	cfs_tree_free(t);
}
END_TEST

/* A target is a path: an escaped '/' there is a separator, as the target means. */
START_TEST(test_escaped_slash_in_a_target_is_a_slash)
{
	struct cfs_tree *t = load("link /l \"a\\x2fb\"\n");

	assert_link(t, "/l", "a/b");
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_hardlink_names_the_same_node)
{
	struct cfs_tree *t = load("file /a/f hello\nhardlink /b/g /a/f\nlink /l f\n"
				  "hardlink /a/l2 /l\n");
	struct stat st;

	ck_assert_uint_eq(node(t, "/a/f"), node(t, "/b/g"));
	cfs_tree_stat(t, node(t, "/a/f"), &st);
	ck_assert_int_eq(st.st_nlink, 2);
	ck_assert_uint_eq(node(t, "/l"), node(t, "/a/l2"));
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_comments_blank_lines_and_hash_inside_words)
{
	struct cfs_tree *t = load("# a comment\n\n   \t\ndir /a # trailing comment\n"
				  "file /a/x#y \"#not a comment\"\r\n");
	char *s = content_of(t, node(t, "/a/x#y"));

	ck_assert_str_eq(s, "#not a comment");
	g_free(s);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_quoted_key_is_content)
{
	struct cfs_tree *t = load("file /f \"mode=0600\" mode=0640\n");
	struct stat st;
	char *s = content_of(t, node(t, "/f"));

	ck_assert_str_eq(s, "mode=0600");
	cfs_tree_stat(t, node(t, "/f"), &st);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	g_free(s);
	cfs_tree_free(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* apply_line: one line at a time, all or nothing */

START_TEST(test_apply_line_adds_and_fails_cleanly)
{
	struct cfs_tree *t = load("file /t x\ndir /c\n");
	char *err = NULL, *before;

	ck_assert_int_eq(cfs_spec_apply_line(t, "chain /c/x 5 ../t\n", &def, &err), 0);
	ck_assert_ptr_null(err);
	ck_assert_uint_eq(follow(t, "/c/x"), node(t, "/t"));

	before = canon(t, true);
	ck_assert_int_eq(cfs_spec_apply_line(t, "chain /c/x 5 ../t", &def, &err), -EINVAL);
	ck_assert_str_eq(err, "line:1: /c/x: name exists");
	free(err);
	/* the hidden directory of another chain is in the way: everything made is undone */
	ck_assert_int_eq(cfs_spec_apply_line(t, "dir /d/.y.chain", &def, &err), 0);
	char *mid = canon(t, true);
	ck_assert_int_eq(cfs_spec_apply_line(t, "chain /d/y 5 t", &def, &err), -EINVAL);
	ck_assert_str_eq(err, "line:1: /d/.y.chain: name exists");
	free(err);
	char *after = canon(t, true);
	ck_assert_str_eq(mid, after);
	ck_assert_int_eq(cfs_spec_apply_line(t, "dir /a\ndir /b", &def, &err), -EINVAL);
	ck_assert_str_eq(err, "line:1: one line expected");
	free(err);
	g_free(before);
	g_free(mid);
	g_free(after);
	cfs_tree_free(t);
}
END_TEST

/* check_line: what parses, without running it (a fault rule's change is checked so) */
START_TEST(test_check_line_parses_and_runs_nothing)
{
	static const struct {
		const char *line, *err; /* err NULL: it parses */
	} cases[] = {
	    {"link /a/b /nowhere", NULL},
	    {"hardlink /x /missing", NULL}, /* what the tree holds is known when it runs */
	    {"file /f \"a;b\" mode=0600", NULL},
	    {"frob /x", "unknown keyword"},
	    {"link /x", "missing argument"},
	    {"dir /a /b", "too many arguments"},
	    {"dir /a colour=red", "colour"},
	    {"", "an empty line"},
	    {"dir /a\ndir /b", "one line"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		char *err = NULL;
		int rc = cfs_spec_check_line(cases[i].line, &err);
		if (!cases[i].err) {
			ck_assert_msg(rc == 0 && !err, "%s: %s", cases[i].line, err);
			continue;
		}
		ck_assert_msg(rc == -EINVAL && err && strstr(err, cases[i].err), "%s: %d %s",
			      cases[i].line, rc, err);
		free(err);
	}
}
END_TEST

/* line_is: the first word, whole (how the control socket and a fault's change pick lines) */
START_TEST(test_line_is_the_first_word)
{
	ck_assert(cfs_spec_line_is("xattr /f user.a 1", "xattr"));
	ck_assert(cfs_spec_line_is("xattr\t/f", "xattr"));
	ck_assert(cfs_spec_line_is("xattr", "xattr"));
	ck_assert(!cfs_spec_line_is("xattrs /f", "xattr"));
	ck_assert(!cfs_spec_line_is("xatt /f", "xattr"));
	ck_assert(!cfs_spec_line_is("", "xattr"));
}
END_TEST

static long alloc_calls, alloc_fail_at;

static void *failing_realloc(void *p, size_t n)
{
	if (++alloc_calls == alloc_fail_at)
		return NULL;
	return realloc(p, n);
}

static const struct cfs_alloc failing_alloc = {failing_realloc, free};

static const char *const atomic_lines[] = {
    "chain /base/c 30 f",
    "chain /new/deeper/c 12 /base/f",
    "nest /base/n 20 f",
    "loop /base/ring 9",
    "tree /base/t depth=3 fanout=5 files=20% links=40% seed=5",
    "tree /fresh/t depth=2 fanout=12 seed=9",
    "wide /base/w 200",
    "deep /base/d 40",
    "file /base/g \"some content\" mode=0600 mtime=1",
    "file /base/h size=1M pattern=xyz",
    "hardlink /base/f2 /base/f",
    "append /base/f \" and more\"",
    "dir / mode=0700 uid=3 mtime=4",
    "dir /p/q/r/s mtime=5",
};

/* Fail the k-th allocation for every k until the line goes through: each failure must
 * leave the tree exactly as it was, times included. */
START_TEST(test_apply_line_is_atomic_under_allocation_failure)
{
	const char *line = atomic_lines[_i];
	struct cfs_tree *t = cfs_tree_new(&failing_alloc);
	char *before, *err = NULL;
	long k, failures = 0;
	int rc;

	ck_assert_ptr_nonnull(t);
	load_into(t, "dir /base mtime=100\nfile /base/f data\ndir /other\n");
	before = canon(t, true);
	for (k = 1;; k++) {
		alloc_calls = 0;
		alloc_fail_at = k;
		rc = cfs_spec_apply_line(t, line, &def, &err);
		alloc_fail_at = 0;
		if (rc == 0)
			break;
		ck_assert_msg(rc == -ENOMEM, "%s: k=%ld rc=%d %s", line, k, rc, err);
		ck_assert_msg(err && strstr(err, "out of memory"), "%s: %s", line, err);
		free(err);
		failures++;
		char *now = canon(t, true);
		ck_assert_msg(strcmp(now, before) == 0, "%s: k=%ld changed the tree", line, k);
		g_free(now);
		ck_assert(k < 1000000);
	}
	ck_assert_ptr_null(err);
	char *after = canon(t, true);
	ck_assert_str_ne(after, before);
	if (getenv("SPEC_ATOMIC_VERBOSE"))
		fprintf(stderr, "%-60s %ld failures\n", line, failures);
	if (strncmp(line, "tree", 4) == 0 || strncmp(line, "chain", 5) == 0)
		ck_assert_msg(failures > 0, "%s: no allocation to fail", line);
	g_free(after);
	g_free(before);
	cfs_tree_free(t);
}
END_TEST

/* The test binary is linked with --wrap=malloc,calloc,realloc: every allocation spec.c and
 * tree.c make themselves (not those inside GLib or libc) comes here, and the k-th after
 * wrap_fail_at is set fails. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
static long wrap_calls, wrap_fail_at;

static bool wrap_fails(void)
{
	return wrap_fail_at && ++wrap_calls == wrap_fail_at;
}

void *__wrap_malloc(size_t n)
{
	return wrap_fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return wrap_fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return wrap_fails() ? NULL : __real_realloc(p, n);
}

/* Loading a spec file with every kind of line fails cleanly at each of its own allocations
 * (the line buffer, undo records, names, the time-stamping stack, generator state and the
 * tree's): -ENOMEM with its message, and nothing leaked (ASan's and valgrind's runs). */
START_TEST(test_load_file_under_allocation_failure)
{
	char dir[] = "/tmp/test_spec.XXXXXX";
	char *path, *err = NULL;
	GString *text = g_string_new(NULL);
	long k, failures = 0;
	int rc;

	for (size_t i = 0; i < G_N_ELEMENTS(atomic_lines); i++)
		g_string_append_printf(text, "%s\n", atomic_lines[i]);
	g_string_prepend(text, "dir /base mtime=100\nfile /base/f data\ndir /other\n");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	path = g_strdup_printf("%s/s.spec", dir);
	ck_assert(g_file_set_contents(path, text->str, (gssize)text->len, NULL));
	for (k = 1;; k++) {
		struct cfs_tree *t = cfs_tree_new(NULL);

		ck_assert_ptr_nonnull(t);
		wrap_calls = 0;
		wrap_fail_at = k;
		rc = cfs_spec_load_file(t, path, NULL, &err);
		wrap_fail_at = 0;
		cfs_tree_free(t);
		if (rc == 0)
			break;
		ck_assert_msg(rc == -ENOMEM, "k=%ld rc=%d %s", k, rc, err);
		ck_assert_msg(err && strstr(err, "out of memory"), "k=%ld: %s", k, err);
		free(err);
		failures++;
		ck_assert(k < 1000000);
	}
	ck_assert_ptr_null(err);
	ck_assert_msg(failures > 100, "only %ld allocations failed", failures);
	unlink(path);
	rmdir(dir);
	g_free(path);
	g_string_free(text, TRUE);
}
END_TEST

/* A runtime line fails at any of spec.c's own allocations as atomically as at the tree's. */
START_TEST(test_apply_line_is_atomic_when_spec_allocations_fail)
{
	const char *line = atomic_lines[_i];
	struct cfs_tree *t = load("dir /base mtime=100\nfile /base/f data\ndir /other\n");
	char *before = canon(t, true), *err = NULL;
	long k;
	int rc;

	for (k = 1;; k++) {
		wrap_calls = 0;
		wrap_fail_at = k;
		rc = cfs_spec_apply_line(t, line, &def, &err);
		wrap_fail_at = 0;
		if (rc == 0)
			break;
		ck_assert_msg(rc == -ENOMEM, "%s: k=%ld rc=%d %s", line, k, rc, err);
		free(err);
		char *now = canon(t, true);
		ck_assert_msg(strcmp(now, before) == 0, "%s: k=%ld changed the tree", line, k);
		g_free(now);
		ck_assert(k < 1000000);
	}
	ck_assert_ptr_null(err);
	g_free(before);
	cfs_tree_free(t);
}
END_TEST

void spec_make_tests(TCase *kw, TCase *atomic)
{
	tcase_add_test(kw, test_dir_with_attributes);
	tcase_add_test(kw, test_missing_parents_are_made_0755_with_default_owner);
	tcase_add_test(kw, test_times_on_a_dir_survive_later_entries);
	tcase_add_test(kw, test_dir_root_sets_root_attributes);
	tcase_add_test(kw, test_stamp_gives_every_node_the_spec_time_but_explicit_times_win);
	tcase_add_test(kw, test_file_literal_with_escapes);
	tcase_add_test(kw, test_file_size_with_pattern_and_suffix);
	tcase_add_test(kw, test_append_extends_a_file);
	tcase_add_test(kw, test_link_target_is_byte_exact);
	tcase_add_test(kw, test_escaped_slash_in_a_target_is_a_slash);
	tcase_add_test(kw, test_hardlink_names_the_same_node);
	tcase_add_test(kw, test_comments_blank_lines_and_hash_inside_words);
	tcase_add_test(kw, test_quoted_key_is_content);
	tcase_add_test(atomic, test_apply_line_adds_and_fails_cleanly);
	tcase_add_test(atomic, test_check_line_parses_and_runs_nothing);
	tcase_add_test(atomic, test_line_is_the_first_word);
	tcase_add_loop_test(atomic, test_apply_line_is_atomic_under_allocation_failure, 0,
			    G_N_ELEMENTS(atomic_lines));
	tcase_add_loop_test(atomic, test_apply_line_is_atomic_when_spec_allocations_fail, 0,
			    G_N_ELEMENTS(atomic_lines));
	tcase_add_test(atomic, test_load_file_under_allocation_failure);
}
