/*
 * The recorder's ring (fusefs/record_log.c): a line that does not fit is dropped and counted,
 * never half written; lines that fit reach the file whole and in order, across the ring's
 * wrap; a path that is not UTF-8 goes as hex. The file is made new and 0600, never through a
 * planted link, and replaced only when asked, only if it is a plain file of the caller's.
 */
#include "check_main.h"
#include "record.h"

#include <check.h>
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmp_file(void)
{
	char *path = g_strdup("/tmp/cfs-test-record.XXXXXX");
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	return path;
}

static struct cfs_record_entry entry(const char *path)
{
	return (struct cfs_record_entry){.t_ns = 1,
					 .ns = 2,
					 .nodeid = 3,
					 .pid = 4,
					 .op = "lookup",
					 .err = 2,
					 .path = path,
					 .mode = -1};
}

static char *slurp(const char *path, size_t *len)
{
	char *text = NULL;

	ck_assert(g_file_get_contents(path, &text, len, NULL));
	return text;
}

/* The length of the line E makes. */
static size_t line_len(const struct cfs_record_entry *e)
{
	struct cfs_recorder *r;
	char *file = tmp_file(), *text;
	size_t len;

	ck_assert_int_eq(cfs_recorder_open(&r, file, 1 << 16, true), 0);
	cfs_recorder_add(r, e);
	cfs_recorder_close(r, NULL);
	text = slurp(file, &len);
	unlink(file);
	g_free(file);
	g_free(text);
	return len;
}

START_TEST(test_a_line_is_json_with_the_errno_name)
{
	struct cfs_recorder *r;
	struct cfs_record_entry e = entry("/a \"q\"\n");
	char *file = tmp_file(), *text;
	size_t len;

	ck_assert_int_eq(cfs_recorder_open(&r, file, 4096, true), 0);
	cfs_recorder_add(r, &e);
	cfs_recorder_close(r, NULL);
	text = slurp(file, &len);
	ck_assert_str_eq(text, "{\"v\":3,\"t_ns\":1,\"op\":\"lookup\",\"nodeid\":3,\"pid\":4,"
			       "\"path\":\"/a \\\"q\\\"\\u000a\",\"result\":\"ENOENT\",\"errno\":2,"
			       "\"ns\":2}\n");
	unlink(file);
	g_free(file);
	g_free(text);
}
END_TEST

/* One line of E, as the file holds it (to be g_free()d). */
static char *one_line(const struct cfs_record_entry *e)
{
	struct cfs_recorder *r;
	char *file = tmp_file(), *text;

	ck_assert_int_eq(cfs_recorder_open(&r, file, 1 << 16, true), 0);
	cfs_recorder_add(r, e);
	cfs_recorder_close(r, NULL);
	text = slurp(file, NULL);
	unlink(file);
	g_free(file);
	return text;
}

START_TEST(test_what_the_reply_showed_follows_the_request)
{
	struct cfs_record_entry e = entry("/d");
	char *text;

	e.err = 0;
	e.op = "readdirplus";
	e.has_offset = true;
	e.offset = 7;
	e.entries = "d:a/l:b \"q\"";
	text = one_line(&e);
	ck_assert_str_eq(text, "{\"v\":3,\"t_ns\":1,\"op\":\"readdirplus\",\"nodeid\":3,\"pid\":4,"
			       "\"path\":\"/d\",\"result\":0,\"errno\":0,\"ns\":2,\"offset\":7,"
			       "\"entries\":\"d:a/l:b \\\"q\\\"\"}\n");
	g_free(text);
	e = entry("/l");
	e.err = 0;
	e.kind = 'l';
	e.has_size = true;
	e.size = 3;
	e.body = "\xff";
	text = one_line(&e);
	ck_assert_msg(
	    g_str_has_suffix(text, "\"ns\":2,\"kind\":\"l\",\"size\":3,\"body_hex\":\"ff\"}\n"),
	    "%s", text);
	g_free(text);
}
END_TEST

/* The lines of T, as the file holds them (to be g_free()d). */
static char *trigger_line(const struct cfs_record_trigger *t)
{
	struct cfs_recorder *r;
	char *file = tmp_file(), *text;

	ck_assert_int_eq(cfs_recorder_open(&r, file, 1 << 16, true), 0);
	cfs_recorder_add_trigger(r, t);
	cfs_recorder_close(r, NULL);
	text = slurp(file, NULL);
	unlink(file);
	g_free(file);
	return text;
}

START_TEST(test_a_trigger_has_its_rule_request_and_change)
{
	struct cfs_record_trigger t = {.t_ns = 5,
				       .id = 7,
				       .pid = 42,
				       .on = "getattr",
				       .path = "/race/a/f",
				       .after = true,
				       .change = "replace /race/a /race/planted"};
	char *text = trigger_line(&t);

	ck_assert_str_eq(text,
			 "{\"v\":3,\"t_ns\":5,\"trigger\":7,\"on\":\"getattr\",\"pid\":42,"
			 "\"path\":\"/race/a/f\",\"when\":\"after\","
			 "\"change\":\"replace /race/a /race/planted\",\"result\":\"applied\"}\n");
	g_free(text);
	t.after = false;
	t.change = "rmdir /keep; file /k \"x\\n\"";
	t.error = "line 1 (rmdir /keep): Directory not empty";
	text = trigger_line(&t);
	ck_assert_str_eq(text,
			 "{\"v\":3,\"t_ns\":5,\"trigger\":7,\"on\":\"getattr\",\"pid\":42,"
			 "\"path\":\"/race/a/f\",\"when\":\"before\","
			 "\"change\":\"rmdir /keep; file /k \\\"x\\\\n\\\"\",\"result\":\"failed\","
			 "\"error\":\"line 1 (rmdir /keep): Directory not empty\"}\n");
	g_free(text);
	/* after=, nth= and window rules: which matching request, where in the up window */
	t = (struct cfs_record_trigger){.t_ns = 5,
					.id = 8,
					.pid = 42,
					.on = "rename",
					.path = "/a",
					.effect = "kill=SIGTERM",
					.check = 4,
					.windowed = true,
					.window_us = 1500};
	text = trigger_line(&t);
	ck_assert_str_eq(text, "{\"v\":3,\"t_ns\":5,\"trigger\":8,\"on\":\"rename\",\"pid\":42,"
			       "\"path\":\"/a\",\"effect\":\"kill=SIGTERM\",\"check\":4,"
			       "\"window_us\":1500,\"result\":\"applied\"}\n");
	g_free(text);
}
END_TEST

START_TEST(test_lines_that_do_not_fit_are_dropped_and_counted)
{
	struct cfs_record_entry e = entry("/chains/5");
	size_t len = line_len(&e);
	struct cfs_recorder *r;
	struct cfs_record_stats s;
	char *file = tmp_file(), *text;
	size_t got;

	/* room for two lines and a half; no writer runs, so nothing is taken meanwhile */
	ck_assert_int_eq(cfs_recorder_open(&r, file, 2 * len + len / 2, true), 0);
	for (int i = 0; i < 7; i++)
		cfs_recorder_add(r, &e);
	cfs_recorder_stats(r, &s);
	ck_assert_uint_eq(s.lines, 2);
	ck_assert_uint_eq(s.dropped, 5);
	cfs_recorder_close(r, &s);
	ck_assert_uint_eq(s.bytes_written, 2 * len);
	ck_assert(!s.active);
	text = slurp(file, &got);
	ck_assert_uint_eq(got, 2 * len); /* whole lines only */
	unlink(file);
	g_free(file);
	g_free(text);
}
END_TEST

START_TEST(test_a_line_larger_than_the_ring_is_dropped)
{
	struct cfs_record_entry e = entry("/x");
	struct cfs_recorder *r;
	struct cfs_record_stats s;
	char *file = tmp_file();

	ck_assert_int_eq(cfs_recorder_open(&r, file, 16, true), 0);
	cfs_recorder_add(r, &e);
	cfs_recorder_close(r, &s);
	ck_assert_uint_eq(s.lines, 0);
	ck_assert_uint_eq(s.dropped, 1);
	ck_assert_uint_eq(s.bytes_written, 0);
	unlink(file);
	g_free(file);
}
END_TEST

/* The writer takes what the loop put, so a ring of three lines carries many, in order. */
START_TEST(test_lines_cross_the_wrap_whole_and_in_order)
{
	enum { N = 50 };
	struct cfs_record_entry e = entry("/p00");
	size_t len = line_len(&e);
	struct cfs_recorder *r;
	struct cfs_record_stats s;
	char *file = tmp_file(), *text, path[16];
	size_t got;

	ck_assert_int_eq(cfs_recorder_open(&r, file, 3 * len - 7, true), 0);
	ck_assert_int_eq(cfs_recorder_begin(r), 0);
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "/p%02d", i);
		e.path = path;
		cfs_recorder_add(r, &e);
		for (int w = 0; w < 5000; w++) { /* until the writer took it (5 s at most) */
			cfs_recorder_stats(r, &s);
			if (s.bytes_written == (uint64_t)(i + 1) * len)
				break;
			usleep(1000);
		}
	}
	cfs_recorder_close(r, &s);
	ck_assert_uint_eq(s.dropped, 0);
	ck_assert_uint_eq(s.lines, N);
	text = slurp(file, &got);
	ck_assert_uint_eq(got, N * len);
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "/p%02d", i);
		ck_assert(strstr(text + (size_t)i * len, path) == text + (size_t)i * len + 57);
	}
	unlink(file);
	g_free(file);
	g_free(text);
}
END_TEST

START_TEST(test_a_path_that_is_not_utf8_goes_as_hex)
{
	struct cfs_record_entry e = entry("/\xff");
	struct cfs_recorder *r;
	char *file = tmp_file(), *text;
	size_t len;

	ck_assert_int_eq(cfs_recorder_open(&r, file, 4096, true), 0);
	cfs_recorder_add(r, &e);
	cfs_recorder_close(r, NULL);
	text = slurp(file, &len);
	ck_assert_ptr_nonnull(strstr(text, "\"path_hex\":\"2fff\""));
	unlink(file);
	g_free(file);
	g_free(text);
}
END_TEST

/* ---- the file (a recording may land where others can write) ---- */

struct file_case {
	const char *what;
	const char *plant; /* "none", "file", "symlink", "hardlink", "fifo", "other_user" */
	bool replace;
	int err; /* cfs_recorder_open's, negative */
};

static const struct file_case file_cases[] = {
    {"a new name is made", "none", false, 0},
    {"an existing file is refused", "file", false, -EEXIST},
    {"replace empties an existing file", "file", true, 0},
    {"a planted symlink is not followed", "symlink", false, -EEXIST},
    {"replace does not follow a symlink either", "symlink", true, -ELOOP},
    {"replace refuses a file with another name", "hardlink", true, -EMLINK},
    {"replace refuses a fifo, without waiting for a reader", "fifo", true, -EINVAL},
    {"replace refuses another user's file", "other_user", true, -EPERM},
};

/* DIR/rec as the case plants it; DIR/victim the file a link would reach. */
static void plant(const char *dir, const char *rec, const char *victim, const char *how)
{
	ck_assert(g_file_set_contents(victim, "victim\n", -1, NULL));
	ck_assert_int_eq(chmod(victim, 0640), 0);
	if (!strcmp(how, "file") || !strcmp(how, "other_user"))
		ck_assert(g_file_set_contents(rec, "old\n", -1, NULL));
	if (!strcmp(how, "other_user"))
		ck_assert_int_eq(chown(rec, 65534, 65534), 0);
	if (!strcmp(how, "symlink"))
		ck_assert_int_eq(symlink(victim, rec), 0);
	if (!strcmp(how, "hardlink"))
		ck_assert_int_eq(link(victim, rec), 0);
	if (!strcmp(how, "fifo"))
		ck_assert_int_eq(mkfifo(rec, 0600), 0);
}

START_TEST(test_the_file_is_new_and_0600_unless_replace_is_asked)
{
	const struct file_case *c = &file_cases[_i];
	char *dir = g_dir_make_tmp("cfs-test-record-XXXXXX", NULL);
	char *rec = g_build_filename(dir, "rec", NULL),
	     *victim = g_build_filename(dir, "victim", NULL);
	struct cfs_record_entry e = entry("/x");
	struct cfs_recorder *r = NULL;
	struct stat st;
	char *text;
	mode_t old = umask(0); /* the mode is chainfs's own, not the umask's */

	if (!strcmp(c->plant, "other_user") && geteuid() != 0) {
		printf("test_record: skipped: %s (needs root)\n", c->what);
		goto out;
	}
	plant(dir, rec, victim, c->plant);
	ck_assert_msg(cfs_recorder_open(&r, rec, 4096, c->replace) == c->err, "%s", c->what);
	if (r) {
		cfs_recorder_add(r, &e);
		cfs_recorder_close(r, NULL);
		ck_assert_int_eq(lstat(rec, &st), 0);
		ck_assert_msg(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600, "%s: mode %o",
			      c->what, st.st_mode);
		text = slurp(rec, NULL);
		ck_assert_msg(g_str_has_prefix(text, "{\"v\":3,\"t_ns\""), "%s: %s", c->what, text);
		g_free(text);
	}
	text = slurp(victim, NULL);
	ck_assert_msg(!strcmp(text, "victim\n"), "%s: the victim holds %s", c->what, text);
	g_free(text);
	ck_assert_int_eq(stat(victim, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
out:
	umask(old);
	unlink(rec);
	unlink(victim);
	rmdir(dir);
	g_free(rec);
	g_free(victim);
	g_free(dir);
}
END_TEST

static Suite *record_suite(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("ring");

	tcase_add_test(tc, test_a_line_is_json_with_the_errno_name);
	tcase_add_test(tc, test_what_the_reply_showed_follows_the_request);
	tcase_add_test(tc, test_a_trigger_has_its_rule_request_and_change);
	tcase_add_test(tc, test_lines_that_do_not_fit_are_dropped_and_counted);
	tcase_add_test(tc, test_a_line_larger_than_the_ring_is_dropped);
	tcase_add_test(tc, test_lines_cross_the_wrap_whole_and_in_order);
	tcase_add_test(tc, test_a_path_that_is_not_utf8_goes_as_hex);
	tcase_add_loop_test(tc, test_the_file_is_new_and_0600_unless_replace_is_asked, 0,
			    (int)G_N_ELEMENTS(file_cases));
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

void unit_add_suites(SRunner *sr)
{
	srunner_add_suite(sr, record_suite());
}
