/*
 * Fault rules (fusefs/fault.c): what `fault add` accepts and refuses, ids that are never
 * given twice, seeded rules that hit the same requests every time, and the bounded log; and
 * their tree changes (fusefs/change.c): all lines or none, the tree as it was, times included.
 */
#include "change.h"
#include "check_main.h"
#include "fault.h"
#include "spec.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Add ARGS; the id, or -EINVAL with the message in *msg (freed by the caller). */
static int add(struct cfs_faults *f, const char *args, char **msg)
{
	char *err = NULL;
	int id = cfs_fault_add(f, args, &err);

	if (msg)
		*msg = err;
	else
		g_free(err);
	return id;
}

START_TEST(test_refused_rules_say_why)
{
	static const struct {
		const char *args, *why;
	} cases[] = {
	    {"op=read path=/x", "needs op="},
	    {"op=nosuch path=/x errno=EIO", "unknown op"},
	    {"op=read path=/x errno=ENOPE", "errno must be a name"},
	    /* the kernel refuses a reply's error past 511: the caller would hang */
	    {"op=read path=/x errno=512", "1..511"},
	    {"op=read path=/x errno=4095", "1..511"},
	    {"op=read path=/x errno=0", "1..511"},
	    /* ENOSYS where the kernel remembers it and stops sending the op */
	    {"op=open path=/x errno=ENOSYS", "stop the kernel sending it"},
	    {"op=opendir path=/x errno=ENOSYS", "stop the kernel sending it"},
	    {"op=flush path=/x errno=38", "stop the kernel sending it"},
	    {"op=fsync path=/x errno=ENOSYS prob=0.1", "stop the kernel sending it"},
	    {"op=fsyncdir path=/x errno=ENOSYS", "stop the kernel sending it"},
	    {"op=create path=/x errno=ENOSYS", "mknod"},
	    {"op=rename path=/x errno=ENOSYS", "renameat2"},
	    {"op=link path=/x errno=ENOSYS", "EPERM"},
	    {"op=any path=/x errno=ENOSYS", "name the op"},
	    {"op=read path=/x errno=EIO prob=2", "prob must be 0..1"},
	    {"op=read path=/x errno=EIO seed=x", "seed must be a number"},
	    {"op=read path=/x delay=-1", "delay must be"},
	    {"op=read path=/x short=0", "short must be"},
	    {"op=read path=/x short=99999999999", "short must be"},
	    {"op=getattr path=/x short=10", "op=read or op=write"},
	    {"op=any path=/x short=10", "op=read or op=write"},
	    {"op=read path=/x nowrite", "give op=write"},
	    {"op=write path=/x nowrite errno=EIO", "exclude each other"},
	    {"op=write path=/x short=3 nowrite", "exclude each other"},
	    {"op=forget path=/x errno=EIO", "nothing waits for its reply"},
	    {"op=read path=/x errno", "expected key=value"},
	    {"op=read path=/x colour=red", "unknown key"},
	    /* change rules: every line must parse, and the rule is one of its own */
	    {"op=getattr path=/x change=", "an empty line"},
	    {"op=getattr path=/x change=frob /x", "unknown keyword"},
	    {"op=getattr path=/x change=link /x", "missing argument"},
	    {"op=getattr path=/x change=dir /a; link /b", "change line 2"},
	    {"op=getattr path=/x change=dir /a;", "an empty line"},
	    {"op=getattr path=/x change=rename /a", "rename FROM TO"},
	    {"op=getattr path=/x change=exchange /a /b /c", "exchange A B"},
	    {"op=getattr path=/x change=unlink a", "absolute"},
	    {"op=getattr path=/x change=rmdir /", "absolute"},
	    {"op=getattr path=/x change=unlink /a/../b", "no \".\" nor"},
	    {"op=getattr path=/x change=file /f size=-1", "size"},
	    {"op=nosuch path=/x change=unlink /x", "unknown op"},
	    {"op=getattr path=/x errno=EIO change=unlink /x", "a rule of its own"},
	    {"op=getattr path=/x delay=5 change=unlink /x", "a rule of its own"},
	    {"op=getattr path=/x when=after errno=EIO", "when= goes with change="},
	    {"op=getattr path=/x when=soon change=unlink /x", "before or after"},
	    {"op=getattr path=/x nth=0 change=unlink /x", "nth= and count="},
	    {"op=getattr path=/x nth=2 count=3 change=unlink /x", "exclude each other"},
	    {"op=getattr path=/x nth=2 prob=0.5 errno=EIO", "nth= fires at one"},
	    {"op=getattr path=/x count=2 every errno=EIO", "exclude each other"},
	    {"op=getattr path=/x every count=2 errno=EIO", "exclude each other"},
	    {"op=getattr path=/x once every errno=EIO", "exclude each other"},
	    {"op=getattr path=/x pid=-3 errno=EIO", "pid= and uid="},
	    {"op=getattr path=/x comm=sixteen-bytes-xx errno=EIO", "1..15 bytes"},
	    /* issue 34's effects and selectors */
	    {"op=read path=/x errno=EIO|EFOO", "'EFOO' in the list is not an errno"},
	    {"op=read path=/x errno=EIO||EPERM", "'' in the list"},
	    {"op=read path=/x errno=EIO|512", "1..511"},
	    {"op=read path=/x errno=1|2|3|4|5|6|7|8|9|10|11|12|13|14|16|17|18", "at most 16"},
	    {"op=open path=/x errno=EIO|ENOSYS", "stop the kernel sending it"},
	    {"op=read path=/x kill=SIGFOO", "signal name"},
	    {"op=read path=/x kill=", "signal name"},
	    {"op=read path=/x kill=0", "signal name"},
	    {"op=read path=/x kill=65", "signal name"},
	    {"op=read path=/x kill=TERM short=2", "kill= goes alone"},
	    {"op=read path=/x kill=TERM delay=2", "kill= goes alone"},
	    {"op=write path=/x kill=TERM nowrite", "kill= goes alone"},
	    {"op=read path=/x kill=TERM hold", "a rule of its own"},
	    {"op=read path=/x kill=TERM change=unlink /x", "a rule of its own"},
	    {"op=write path=/x corrupt=zero", "give op=read"},
	    {"op=read path=/x corrupt=bits", "zero, random or flip"},
	    {"op=read path=/x corrupt=zero short=2", "exclude each other"},
	    {"op=read path=/x corrupt=zero bytes=0", "bytes= takes"},
	    {"op=read path=/x corrupt=zero bytes=1048577", "bytes= takes"},
	    {"op=read path=/x errno=EIO bytes=3", "bytes= goes with corrupt="},
	    {"op=getattr path=/x at=0,len=1 errno=EIO", "give op=read or op=write"},
	    {"op=any path=/x at=0,len=1 errno=EIO", "give op=read or op=write"},
	    {"op=read path=/x at=5 errno=EIO", "at=OFF needs a length"},
	    {"op=read path=/x len=5 errno=EIO", "len= goes with at="},
	    {"op=read path=/x at=5,len=0 errno=EIO", "a length of 1 or more"},
	    {"op=read path=/x at=-5,len=2 errno=EIO", "a byte offset"},
	    {"op=read path=/x at=5,size=2 errno=EIO", "expected len="},
	    {"op=read path=/x at=18446744073709551615,len=2 errno=EIO", "largest offset"},
	    {"op=getattr path=/x attr=kind:dir", "the kernel takes an inode"},
	    {"op=getattr path=/x attr=size:-1", "out of range"},
	    {"op=getattr path=/x attr=mode:10000", "out of range"},
	    {"op=getattr path=/x attr=mode:9", "out of range"},
	    {"op=getattr path=/x attr=nlink:4294967296", "out of range"},
	    {"op=getattr path=/x attr=size:1,colour:2", "FIELD one of"},
	    {"op=getattr path=/x attr=size", "FIELD one of"},
	    {"op=getattr path=/x attr=", "FIELD one of"},
	    {"op=read path=/x attr=size:1", "give op=getattr or op=lookup"},
	    {"op=any path=/x attr=size:1", "give op=getattr or op=lookup"},
	    {"op=getattr path=/x attr=size:1 errno=EIO", "exclude each other"},
	    {"op=getattr path=/x attr=size:1 kill=TERM", "kill= goes alone"},
	    {"op=getattr path=/x after=0 errno=EIO", "after= takes 1.."},
	    {"op=getattr path=/x after=-1 errno=EIO", "after= takes 1.."},
	    {"op=getattr path=/x after=x errno=EIO", "after= takes 1.."},
	    {"op=getattr path=/x after=2 nth=3 errno=EIO", "after= and nth= contradict"},
	    {"op=getattr path=/x nth=3 after=2 change=unlink /x", "after= and nth= contradict"},
	    {"op=getattr path=/x up=100 errno=EIO", "up= and down= go together"},
	    {"op=getattr path=/x down=100 errno=EIO", "up= and down= go together"},
	    {"op=getattr path=/x up=0 down=5 errno=EIO", "up= and down= take 1..3600000"},
	    {"op=getattr path=/x up=5 down=3600001 errno=EIO", "up= and down= take 1..3600000"},
	    {"op=getattr path=/x to=/d/* errno=EIO", "give op=rename, op=link or op=symlink"},
	    {"op=any path=/x to=/d/* errno=EIO", "give op=rename, op=link or op=symlink"},
	    {"op=unlink path=/x to=/d/* kill=TERM", "give op=rename, op=link or op=symlink"},
	    {"op=rename path=/x to= errno=EIO", "to= takes a glob"},
	};
	struct cfs_faults *f = cfs_faults_new();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *msg = NULL;
		ck_assert_msg(add(f, cases[i].args, &msg) == -EINVAL, "%s: accepted",
			      cases[i].args);
		ck_assert_msg(msg && strstr(msg, cases[i].why), "%s: got '%s'", cases[i].args, msg);
		g_free(msg);
	}
	ck_assert(!cfs_faults_active(f));
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_errnos_the_kernel_takes_are_accepted)
{
	struct cfs_faults *f = cfs_faults_new();

	ck_assert_int_gt(add(f, "op=getattr path=/x errno=511", NULL), 0);
	ck_assert_int_gt(add(f, "op=getattr path=/x errno=1", NULL), 0);
	ck_assert_int_gt(add(f, "op=getattr path=/x errno=EHWPOISON", NULL), 0);
	/* the kernel forgets nothing of an ENOSYS from these */
	ck_assert_int_gt(add(f, "op=getattr path=/x errno=ENOSYS", NULL), 0);
	ck_assert_int_gt(add(f, "op=lookup path=/x errno=ENOSYS", NULL), 0);
	ck_assert_int_gt(add(f, "op=mkdir path=/x errno=ENOSYS", NULL), 0);
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_short_and_nowrite_need_answered_opens)
{
	struct cfs_faults *f = cfs_faults_new();
	char *msg = NULL;

	ck_assert_int_gt(add(f, "op=read path=/x short=3", NULL), 0);
	ck_assert_int_gt(add(f, "op=write path=/x nowrite", NULL), 0);
	cfs_faults_unsent(f, CFS_OP_open, "opens are skipped");
	ck_assert_int_eq(add(f, "op=write path=/x short=3", &msg), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "opens=answer"));
	g_free(msg);
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_ids_are_never_reused)
{
	struct cfs_faults *f = cfs_faults_new();

	ck_assert_int_eq(add(f, "op=read path=/a errno=EIO", NULL), 1);
	ck_assert_int_eq(add(f, "op=read path=/b errno=EIO", NULL), 2);
	ck_assert_int_eq(cfs_fault_remove(f, 2), 0);
	ck_assert_int_eq(cfs_fault_remove(f, 2), -ENOENT);
	ck_assert_int_eq(cfs_fault_remove(f, 77), -ENOENT);
	ck_assert_int_eq(add(f, "op=read path=/c errno=EIO", NULL), 3);
	cfs_fault_clear(f);
	ck_assert(!cfs_faults_active(f));
	ck_assert_int_eq(add(f, "op=read path=/d errno=EIO", NULL), 4);
	ck_assert_int_eq(add(f, "op=bogus", NULL), -EINVAL);
	ck_assert_int_eq(add(f, "op=read path=/e errno=EIO", NULL), 5); /* a refusal takes none */
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_removing_one_rule_leaves_the_others)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;

	add(f, "op=read path=/a errno=EIO", NULL);
	add(f, "op=read path=/a errno=EPERM", NULL);
	ck_assert(cfs_fault_match(f, CFS_OP_read, "/a", CFS_FAULT_ERRNO, &fx));
	ck_assert_int_eq(fx.err, EIO);
	cfs_fault_remove(f, 1);
	ck_assert(cfs_fault_match(f, CFS_OP_read, "/a", CFS_FAULT_ERRNO, &fx));
	ck_assert_int_eq(fx.err, EPERM);
	cfs_fault_remove(f, 2);
	ck_assert(!cfs_fault_match(f, CFS_OP_read, "/a", CFS_FAULT_ERRNO, &fx));
	ck_assert_int_eq(fx.err, 0);
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_each_kind_matches_only_its_own)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;

	add(f, "op=write path=/w short=7", NULL);
	add(f, "op=write path=/n nowrite", NULL);
	ck_assert(!cfs_fault_match(f, CFS_OP_write, "/w", CFS_FAULT_ERRNO, &fx));
	ck_assert(cfs_fault_match(f, CFS_OP_write, "/w", CFS_FAULT_SHORT, &fx));
	ck_assert_uint_eq(fx.short_len, 7);
	ck_assert(!cfs_fault_match(f, CFS_OP_write, "/w", CFS_FAULT_NOWRITE, &fx));
	ck_assert(cfs_fault_match(f, CFS_OP_write, "/n", CFS_FAULT_NOWRITE, &fx));
	ck_assert(!cfs_fault_match(f, CFS_OP_read, "/n", CFS_FAULT_NOWRITE, &fx));
	cfs_faults_free(f);
}
END_TEST

/* The hits of 200 requests as a string of 0 and 1. */
static void pattern(const char *rule, char *out)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;

	add(f, rule, NULL);
	for (int i = 0; i < 200; i++)
		out[i] = cfs_fault_match(f, CFS_OP_getattr, "/x", CFS_FAULT_ERRNO, &fx) ? '1' : '0';
	out[200] = '\0';
	cfs_faults_free(f);
}

START_TEST(test_a_seed_gives_the_same_hits)
{
	char a[201], b[201], c[201];

	pattern("op=getattr path=/x errno=EIO prob=0.3 seed=7", a);
	pattern("op=getattr path=/x errno=EIO prob=0.3 seed=7", b);
	pattern("op=getattr path=/x errno=EIO prob=0.3 seed=8", c);
	ck_assert_str_eq(a, b);
	ck_assert_str_ne(a, c);
	int hits = 0;
	for (int i = 0; i < 200; i++)
		hits += a[i] == '1';
	ck_assert_int_gt(hits, 30);
	ck_assert_int_lt(hits, 90);
}
END_TEST

/* The JSON text of the log of F. */
static char *log_text(const struct cfs_faults *f)
{
	JsonBuilder *b = json_builder_new();
	JsonGenerator *g = json_generator_new();
	char *s;

	json_builder_begin_object(b);
	cfs_fault_log(f, b);
	json_builder_end_object(b);
	JsonNode *root = json_builder_get_root(b);
	json_generator_set_root(g, root);
	s = json_generator_to_data(g, NULL);
	json_node_unref(root);
	g_object_unref(g);
	g_object_unref(b);
	return s;
}

START_TEST(test_the_log_keeps_the_latest_hits_and_counts_the_rest)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	char *s;

	add(f, "op=getattr path=/x* errno=EIO", NULL);
	for (int i = 0; i < CFS_FAULT_LOG_MAX + 10; i++) {
		char path[16];
		snprintf(path, sizeof(path), "/x%d", i);
		cfs_fault_match(f, CFS_OP_getattr, path, CFS_FAULT_ERRNO, &fx);
	}
	s = log_text(f);
	ck_assert_ptr_nonnull(strstr(s, "\"hits\":266"));
	ck_assert_ptr_nonnull(strstr(s, "\"dropped\":10"));
	ck_assert_ptr_null(strstr(s, "\"/x9\""));
	ck_assert_ptr_nonnull(
	    strstr(s, "\"path\":\"/x10\",\"prob\":1.0,\"seed\":\"0\",\"check\":11"));
	ck_assert_ptr_nonnull(strstr(s, "\"/x265\""));
	ck_assert(strstr(s, "\"/x10\"") < strstr(s, "\"/x265\"")); /* oldest first */
	g_free(s);
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_the_log_names_the_draw)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	char *s;

	add(f, "op=read path=/r errno=EIO prob=0.5 seed=42", NULL);
	for (int i = 0; i < 10; i++)
		cfs_fault_match(f, CFS_OP_read, "/r", CFS_FAULT_ERRNO, &fx);
	s = log_text(f);
	ck_assert_ptr_nonnull(strstr(s, "\"id\":1,\"op\":\"read\",\"path\":\"/r\",\"prob\":0.5"));
	ck_assert_ptr_nonnull(strstr(s, "\"seed\":\"42\""));
	ck_assert_ptr_nonnull(strstr(s, "\"draw\":0."));
	g_free(s);
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_a_change_rule_fires_once_unless_told)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;

	ck_assert_int_gt(add(f, "op=getattr path=/d/f change=replace /d /p", NULL), 0);
	ck_assert(cfs_faults_active(f));
	/* other kinds do not see it */
	ck_assert(!cfs_fault_match(f, CFS_OP_getattr, "/d/f", CFS_FAULT_ERRNO, &fx));
	ck_assert(cfs_fault_match(f, CFS_OP_getattr, "/d/f", CFS_FAULT_CHANGE, &fx));
	ck_assert_ptr_nonnull(fx.change);
	ck_assert(fx.after); /* the default */
	/* spent: never again, and it keeps the kernel from caching no more */
	ck_assert(!cfs_fault_match(f, CFS_OP_getattr, "/d/f", CFS_FAULT_CHANGE, &fx));
	ck_assert(!cfs_faults_active(f));
	cfs_faults_free(f);
}
END_TEST

/* The hits of ARGS over 6 matching requests, as "010000". */
static void hits_of(const char *args, char *out)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;

	ck_assert_int_gt(add(f, args, NULL), 0);
	for (int i = 0; i < 6; i++)
		out[i] = cfs_fault_match(f, CFS_OP_lookup, "/x", CFS_FAULT_CHANGE, &fx) ? '1' : '0';
	out[6] = '\0';
	cfs_faults_free(f);
}

START_TEST(test_how_often_a_rule_fires)
{
	static const struct {
		const char *args, *hits;
	} cases[] = {
	    {"op=lookup path=/x change=dir /a", "100000"},
	    {"op=lookup path=/x once change=dir /a", "100000"},
	    {"op=lookup path=/x every change=dir /a", "111111"},
	    {"op=lookup path=/x nth=3 change=dir /a", "001000"},
	    {"op=lookup path=/x count=4 change=dir /a", "111100"},
	    {"op=lookup path=/x when=before count=2 change=dir /a", "110000"},
	    /* after=N: every match after the first N; with count= the first hits after them;
	     * a change rule still fires once unless told */
	    {"op=lookup path=/x after=2 every change=dir /a", "001111"},
	    {"op=lookup path=/x after=2 count=2 change=dir /a", "001100"},
	    {"op=lookup path=/x after=2 change=dir /a", "001000"},
	    {"op=lookup path=/x after=5 every change=dir /a", "000001"},
	};
	char got[8];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hits_of(cases[i].args, got);
		ck_assert_msg(strcmp(got, cases[i].hits) == 0, "%s: %s", cases[i].args, got);
	}
}
END_TEST

START_TEST(test_who_takes_only_that_sender)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	const struct cfs_fault_who me = {.pid = (uint32_t)getpid()}, other = {.pid = 1},
				   user = {.pid = 1, .uid = 65534};

	add(f, "op=getattr path=/a pid=1 every errno=EIO", NULL);
	add(f, "op=getattr path=/b uid=65534 errno=EIO", NULL);
	add(f, "op=getattr path=/c comm=test_fault errno=EIO", NULL);
	ck_assert(!cfs_fault_match_who(f, CFS_OP_getattr, "/a", &me, CFS_FAULT_ERRNO, &fx));
	ck_assert(cfs_fault_match_who(f, CFS_OP_getattr, "/a", &other, CFS_FAULT_ERRNO, &fx));
	/* an unknown sender never passes a filter */
	ck_assert(!cfs_fault_match(f, CFS_OP_getattr, "/a", CFS_FAULT_ERRNO, &fx));
	ck_assert(!cfs_fault_match_who(f, CFS_OP_getattr, "/b", &me, CFS_FAULT_ERRNO, &fx));
	ck_assert(cfs_fault_match_who(f, CFS_OP_getattr, "/b", &user, CFS_FAULT_ERRNO, &fx));
	/* comm is read from /proc: this process's name, not init's */
	ck_assert(!cfs_fault_match_who(f, CFS_OP_getattr, "/c", &other, CFS_FAULT_ERRNO, &fx));
	ck_assert(cfs_fault_match_who(f, CFS_OP_getattr, "/c", &me, CFS_FAULT_ERRNO, &fx));
	cfs_faults_free(f);
}
END_TEST

static gint64 fake_now_us; /* the clock of the window tests */
static gint64 fake_clock(void)
{
	return fake_now_us;
}

/* Does an errno rule of F hit a getattr of /w at T ms after the rule was added (at 1000 s)? */
static char window_hit(struct cfs_faults *f, gint64 t_ms)
{
	struct cfs_fault_effect fx;

	fake_now_us = 1000000000 + t_ms * 1000;
	return cfs_fault_match(f, CFS_OP_getattr, "/w", CFS_FAULT_ERRNO, &fx) ? '1' : '0';
}

START_TEST(test_windows_fire_up_and_rest_down)
{
	static const gint64 at_ms[] = {0, 5, 9, 10, 20, 29, 30, 39, 40, 100, 119, 120};
	struct cfs_faults *f = cfs_faults_new();
	char got[16] = "", *log;
	JsonBuilder *b = json_builder_new();
	JsonNode *root;

	cfs_faults_clock(f, fake_clock);
	fake_now_us = 1000000000;
	ck_assert_int_gt(add(f, "op=getattr path=/w up=10 down=20 errno=EIO", NULL), 0);
	for (size_t i = 0; i < G_N_ELEMENTS(at_ms); i++)
		got[i] = window_hit(f, at_ms[i]);
	/* up 0..9, down 10..29, up 30..39, down 40..59, ..., up 90..99, down 100..119, up 120 */
	ck_assert_str_eq(got, "111000110001");
	/* nth=, count= and after= count the requests of the up windows only */
	cfs_fault_clear(f);
	fake_now_us = 1000000000;
	ck_assert_int_gt(add(f, "op=getattr path=/w up=10 down=20 after=1 count=2 errno=EIO", NULL),
			 0);
	for (size_t i = 0; i < G_N_ELEMENTS(at_ms); i++)
		got[i] = window_hit(f, at_ms[i]);
	ck_assert_str_eq(got, "011000000000");
	/* the log says where in its up window each hit came */
	json_builder_begin_object(b);
	cfs_fault_log(f, b);
	json_builder_end_object(b);
	root = json_builder_get_root(b);
	log = json_to_string(root, FALSE);
	json_node_unref(root);
	ck_assert_ptr_nonnull(strstr(log, "\"window_us\":9000"));
	g_free(log);
	g_object_unref(b);
	cfs_faults_free(f);
}
END_TEST

/* after=, windows and to= are the matcher's: every kind of rule goes by them */
START_TEST(test_every_kind_goes_by_the_selectors)
{
	static const struct {
		const char *op, *effect;
		enum cfs_op code;
		enum cfs_fault_kind kind;
	} cases[] = {
	    {"read", "errno=EIO", CFS_OP_read, CFS_FAULT_ERRNO},
	    {"read", "delay=5", CFS_OP_read, CFS_FAULT_DELAY},
	    {"read", "hold", CFS_OP_read, CFS_FAULT_DELAY},
	    {"read", "short=3", CFS_OP_read, CFS_FAULT_SHORT},
	    {"write", "nowrite", CFS_OP_write, CFS_FAULT_NOWRITE},
	    {"read", "kill=TERM", CFS_OP_read, CFS_FAULT_KILL},
	    {"read", "corrupt=zero", CFS_OP_read, CFS_FAULT_CORRUPT},
	    {"getattr", "attr=size:1", CFS_OP_getattr, CFS_FAULT_ATTR},
	    {"read", "every change=dir /a", CFS_OP_read, CFS_FAULT_CHANGE},
	};
	/* up 0..9, down 10..29, up 30..: the request at 12 ms rests; after=2 lets 2 pass */
	static const gint64 at_ms[] = {0, 5, 12, 31};
	const struct cfs_fault_who to_d = {.to = "/d/n"}, to_e = {.to = "/e/n"};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct cfs_faults *f = cfs_faults_new();
		struct cfs_fault_effect fx;
		char got[8] = "";
		gchar *args = g_strdup_printf("op=%s path=/x up=10 down=20 after=2 %s", cases[i].op,
					      cases[i].effect);

		cfs_faults_clock(f, fake_clock);
		fake_now_us = 1000000000;
		ck_assert_msg(add(f, args, NULL) > 0, "%s refused", args);
		for (size_t t = 0; t < G_N_ELEMENTS(at_ms); t++) {
			fake_now_us = 1000000000 + at_ms[t] * 1000;
			got[t] =
			    cfs_fault_match(f, cases[i].code, "/x", cases[i].kind, &fx) ? '1' : '0';
		}
		ck_assert_msg(strcmp(got, "0001") == 0, "%s: %s", args, got);
		g_free(args);
		/* the same effect on a rename with to= (short= and corrupt= are read's alone) */
		if (cases[i].kind != CFS_FAULT_SHORT && cases[i].kind != CFS_FAULT_CORRUPT &&
		    cases[i].kind != CFS_FAULT_NOWRITE && cases[i].kind != CFS_FAULT_ATTR) {
			args = g_strdup_printf("op=rename path=/x to=/d/* %s", cases[i].effect);
			ck_assert_msg(add(f, args, NULL) > 0, "%s refused", args);
			ck_assert_msg(
			    !cfs_fault_match_who(f, CFS_OP_rename, "/x", &to_e, cases[i].kind, &fx),
			    "%s", args);
			ck_assert_msg(
			    cfs_fault_match_who(f, CFS_OP_rename, "/x", &to_d, cases[i].kind, &fx),
			    "%s", args);
			g_free(args);
		}
		cfs_faults_free(f);
	}
}
END_TEST

START_TEST(test_to_takes_the_new_path)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	const struct cfs_fault_who in_d = {.to = "/d/new"}, elsewhere = {.to = "/e/new"};

	add(f, "op=rename path=/a* to=/d/* errno=EXDEV", NULL);
	ck_assert(cfs_fault_match_who(f, CFS_OP_rename, "/a1", &in_d, CFS_FAULT_ERRNO, &fx));
	ck_assert_int_eq(fx.err, EXDEV);
	ck_assert(!cfs_fault_match_who(f, CFS_OP_rename, "/a1", &elsewhere, CFS_FAULT_ERRNO, &fx));
	ck_assert(!cfs_fault_match_who(f, CFS_OP_rename, "/b1", &in_d, CFS_FAULT_ERRNO, &fx));
	/* a request whose new path is unknown passes a to= rule by */
	ck_assert(!cfs_fault_match(f, CFS_OP_rename, "/a1", CFS_FAULT_ERRNO, &fx));
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_the_log_names_the_sender_and_the_change)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	const struct cfs_fault_who who = {.pid = 4242, .uid = 7};
	char *s;

	add(f, "op=lookup path=/x count=2 change=unlink /x; dir \"/a b\"", NULL);
	cfs_fault_match_who(f, CFS_OP_lookup, "/x", &who, CFS_FAULT_CHANGE, &fx);
	cfs_fault_changed(f, NULL);
	cfs_fault_match_who(f, CFS_OP_lookup, "/x", &who, CFS_FAULT_CHANGE, &fx);
	cfs_fault_changed(f, "line 1 (unlink /x): No such file or directory");
	s = log_text(f);
	ck_assert_ptr_nonnull(strstr(s, "\"pid\":4242,\"uid\":7"));
	ck_assert_ptr_nonnull(strstr(s, "\"change\":\"unlink /x; dir \\\"/a b\\\"\""));
	ck_assert_ptr_nonnull(strstr(s, "\"result\":\"applied\""));
	ck_assert_ptr_nonnull(strstr(s, "\"result\":\"line 1 (unlink /x): No such"));
	g_free(s);
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_an_errno_list_draws_with_the_seed)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	char first[64] = "", again[64] = "";
	bool seen[3] = {false};

	add(f, "op=getattr path=/x errno=EIO|ENOENT|511 seed=9", NULL);
	for (int i = 0; i < 40; i++) {
		ck_assert(cfs_fault_match(f, CFS_OP_getattr, "/x", CFS_FAULT_ERRNO, &fx));
		ck_assert(fx.err == EIO || fx.err == ENOENT || fx.err == 511);
		seen[fx.err == EIO ? 0 : fx.err == ENOENT ? 1 : 2] = true;
		if (i < 20)
			first[i] = (char)('a' + fx.err % 26);
	}
	ck_assert(seen[0] && seen[1] && seen[2]);
	cfs_fault_clear(f);
	add(f, "op=getattr path=/x errno=EIO|ENOENT|511 seed=9", NULL);
	for (int i = 0; i < 20; i++) {
		cfs_fault_match(f, CFS_OP_getattr, "/x", CFS_FAULT_ERRNO, &fx);
		again[i] = (char)('a' + fx.err % 26);
	}
	ck_assert_str_eq(first, again);
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_a_range_takes_the_reads_that_touch_it)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	struct cfs_fault_who r = {.io = true, .size = 8};

	add(f, "op=read path=/x at=32,len=8 errno=EIO", NULL);
	for (uint64_t off = 0; off < 64; off++) {
		r.off = off;
		bool touches = off + 8 > 32 && off < 40;
		ck_assert_int_eq(
		    cfs_fault_match_who(f, CFS_OP_read, "/x", &r, CFS_FAULT_ERRNO, &fx), touches);
	}
	r = (struct cfs_fault_who){.io = true, .off = 34, .size = 0}; /* the end of the file */
	ck_assert(!cfs_fault_match_who(f, CFS_OP_read, "/x", &r, CFS_FAULT_ERRNO, &fx));
	ck_assert(!cfs_fault_match(f, CFS_OP_read, "/x", CFS_FAULT_ERRNO, &fx));
	cfs_faults_free(f);
}
END_TEST

/* Corrupt 64 bytes of 'a' with RULE, matched once: the bytes that differ, as a mask. */
static uint64_t corrupted(const char *rule, char *buf, uint64_t off)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	const struct cfs_fault_who who = {.io = true, .off = off, .size = 64};
	uint64_t mask = 0;

	memset(buf, 'a', 64);
	ck_assert_int_gt(add(f, rule, NULL), 0);
	ck_assert(cfs_fault_match_who(f, CFS_OP_read, "/x", &who, CFS_FAULT_CORRUPT, &fx));
	cfs_fault_corrupt(&fx, buf, 64, off);
	for (int i = 0; i < 64; i++)
		mask |= (uint64_t)(buf[i] != 'a') << i;
	cfs_faults_free(f);
	return mask;
}

START_TEST(test_corrupt_changes_n_bytes_the_seed_chooses)
{
	char a[64], b[64];
	uint64_t m = corrupted("op=read path=/x corrupt=random bytes=5 seed=4", a, 0);

	ck_assert_int_eq(__builtin_popcountll(m), 5); /* random never draws the same value */
	ck_assert_uint_eq(corrupted("op=read path=/x corrupt=random bytes=5 seed=4", b, 0), m);
	ck_assert(memcmp(a, b, 64) == 0);
	ck_assert_uint_ne(corrupted("op=read path=/x corrupt=random bytes=5 seed=5", b, 0), m);
	m = corrupted("op=read path=/x corrupt=flip bytes=3", a, 0);
	ck_assert_int_eq(__builtin_popcountll(m), 3);
	for (int i = 0; i < 64; i++)
		ck_assert_int_le(__builtin_popcount((unsigned char)(a[i] ^ 'a')), 1);
	m = corrupted("op=read path=/x corrupt=zero", a, 0);
	ck_assert_int_eq(__builtin_popcountll(m), 1); /* bytes=1 unless given */
	/* all of them, when N is larger than the read */
	ck_assert_uint_eq(corrupted("op=read path=/x corrupt=zero bytes=100", a, 0), UINT64_MAX);
	/* at= keeps it to the file's bytes 110..113: this read starts at 100 */
	m = corrupted("op=read path=/x corrupt=zero bytes=9 at=110,len=4", a, 100);
	ck_assert_uint_eq(m, 0xfull << 10);
}
END_TEST

START_TEST(test_kill_rules_log_the_signal)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	const struct cfs_fault_who who = {.pid = 4242};
	char *s;

	ck_assert_int_gt(add(f, "op=read path=/x kill=sigusr1", NULL), 0);
	ck_assert_int_gt(add(f, "op=read path=/y kill=9 errno=EIO", NULL), 0);
	/* a kill rule is no errno rule: its errno is answered after the signal */
	ck_assert(!cfs_fault_match_who(f, CFS_OP_read, "/y", &who, CFS_FAULT_ERRNO, &fx));
	ck_assert(cfs_fault_match_who(f, CFS_OP_read, "/y", &who, CFS_FAULT_KILL, &fx));
	ck_assert_int_eq(fx.kill_sig, 9);
	ck_assert_int_eq(fx.err, EIO);
	cfs_fault_killed(f, true);
	ck_assert(cfs_fault_match_who(f, CFS_OP_read, "/x", &who, CFS_FAULT_KILL, &fx));
	ck_assert_int_eq(fx.kill_sig, SIGUSR1);
	cfs_fault_killed(f, false);
	s = log_text(f);
	ck_assert_ptr_nonnull(strstr(s, "\"errno\":\"EIO\",\"kill\":\"SIGKILL\",\"sent\":true"));
	ck_assert_ptr_nonnull(strstr(s, "\"kill\":\"SIGUSR1\",\"sent\":false"));
	g_free(s);
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_attr_changes_only_the_fields_given)
{
	struct cfs_faults *f = cfs_faults_new();
	struct cfs_fault_effect fx;
	struct stat st = {.st_mode = S_IFLNK | 0777, .st_size = 1, .st_nlink = 1, .st_uid = 5};

	ck_assert_int_gt(add(f, "op=getattr path=/l attr=size:99,mode:0640,mtime:86400", NULL), 0);
	ck_assert(!cfs_fault_match(f, CFS_OP_lookup, "/l", CFS_FAULT_ATTR, &fx));
	ck_assert(cfs_fault_match(f, CFS_OP_getattr, "/l", CFS_FAULT_ATTR, &fx));
	cfs_fault_attr(&fx, &st);
	ck_assert_int_eq(st.st_size, 99);
	ck_assert_uint_eq(st.st_mode, S_IFLNK | 0640); /* the kind stays */
	ck_assert_int_eq(st.st_mtim.tv_sec, 86400);
	ck_assert_int_eq(st.st_nlink, 1);
	ck_assert_int_eq(st.st_uid, 5);
	cfs_faults_free(f);
}
END_TEST

START_TEST(test_a_read_only_mount_refuses_change_rules)
{
	struct cfs_faults *f = cfs_faults_new();
	char *msg = NULL;

	cfs_faults_no_change(f, "the mount is read-only");
	ck_assert_int_eq(add(f, "op=getattr path=/x change=unlink /x", &msg), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "read-only"));
	g_free(msg);
	ck_assert_int_gt(add(f, "op=getattr path=/x errno=EIO", NULL), 0);
	cfs_faults_free(f);
}
END_TEST

/* ---- change= lines: all or none ---- */

/* A tree to change: a directory with entries in an order, a hard link, an empty directory, a
 * subtree, a link target. Every node gets old times, so a stamp left behind shows. */
static struct cfs_tree *change_tree(void)
{
	static const char *const lines[] = {
	    "file /d/a \"a\\n\"",
	    "file /d/b \"b\\n\"",
	    "file /d/c \"c\\n\"",
	    "hardlink /h /d/b",
	    "dir /e",
	    "file /s/t/u \"u\\n\"",
	    "link /s/l /d/a",
	    "dir /t",
	};
	struct cfs_tree *t = cfs_tree_new(NULL);
	const struct cfs_spec_defaults def = {1000, 1000, false, {0, 0}};

	ck_assert_ptr_nonnull(t);
	for (size_t i = 0; i < G_N_ELEMENTS(lines); i++) {
		char *err = NULL;
		ck_assert_msg(cfs_spec_apply_line(t, lines[i], &def, &err) == 0, "%s: %s", lines[i],
			      err);
	}
	/* the dump writes times to the second: old ones, and a different one for each node */
	struct cfs_tree_stats st;
	cfs_tree_stats(t, &st);
	for (uint32_t id = CFS_ROOT; id <= st.nodes; id++) { /* no handle freed yet */
		const struct timespec ts = {1000000 + id, 0};
		cfs_tree_set_times(t, id, &ts, &ts, &ts);
	}
	return t;
}

static char *spec_of(const struct cfs_tree *t)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cfs_spec_dump(t, f), 0);
	fclose(f);
	return out;
}

/* Apply TEXT, which must fail at its last line: the tree's dump is as before. */
static void change_fails_whole(const char *text)
{
	struct cfs_tree *t = change_tree();
	char *why = NULL, *err = NULL, *before = spec_of(t), *after;
	struct cfs_change *c = cfs_change_parse(text, &why);
	struct cfs_tree_stats st0, st1;

	ck_assert_msg(c != NULL, "%s: %s", text, why);
	cfs_tree_stats(t, &st0);
	ck_assert_int_lt(cfs_change_apply(t, c, 0, 0, &err), 0);
	ck_assert_ptr_nonnull(strstr(err, "the lines before it were undone"));
	after = spec_of(t);
	ck_assert_msg(strcmp(before, after) == 0, "%s\nbefore:\n%s\nafter:\n%s", text, before,
		      after);
	cfs_tree_stats(t, &st1);
	ck_assert_uint_eq(st1.nodes, st0.nodes); /* what went and came back is no copy */
	g_free(err);
	free(before);
	free(after);
	cfs_change_free(c);
	cfs_tree_free(t);
}

START_TEST(test_a_failed_change_undoes_each_kind_of_line)
{
	static const char *const lines[] = {
	    "dir /d/new/deeper", "file /d/z \"z\\n\"", "link /d/l /t",	  "hardlink /d/h2 /d/b",
	    "chain /ch 5 /d/a",	 "fifo /e/p",	       "dir / mode=0700", "rename /d/a /e/a",
	    "rename /d/a /d/c",	 "rename /s /e",       "rename /d/b /h",  "exchange /d/a /e",
	    "unlink /d/b",	 "unlink /h",	       "rmdir /e",	  "replace /d/b /t",
	    "replace /s /t",	 "replace /d/new /t",
	};

	for (size_t i = 0; i < G_N_ELEMENTS(lines); i++) {
		char *text = g_strdup_printf("%s; unlink /d/missing", lines[i]);
		change_fails_whole(text);
		g_free(text);
	}
}
END_TEST

START_TEST(test_a_failed_change_of_many_lines_leaves_no_trace)
{
	/* the TOCTOU swap of the README with a last line that cannot run */
	change_fails_whole("rename /d /d.old; link /d /t; unlink /d.old/missing");
	change_fails_whole("replace /s /t; rename /d/a /s.a; hardlink /s.b /d/b; rmdir /e; "
			   "dir /e/x; exchange /d /e; unlink /nope");
	/* a spec line that fails halfway (its parent is a file) after others */
	change_fails_whole("unlink /d/a; rename /d/b /d/a; dir /d/c/x");
}
END_TEST

START_TEST(test_a_change_that_succeeds_stays_whole)
{
	struct cfs_tree *t = change_tree();
	char *why = NULL, *err = NULL;
	struct cfs_change *c =
	    cfs_change_parse("replace /s /t; unlink /d/a; rename /d/b /d/a", &why);
	struct cfs_tree_stats st0, st1;
	uint32_t id;

	ck_assert_ptr_nonnull(c);
	cfs_tree_stats(t, &st0);
	ck_assert_int_eq(cfs_change_apply(t, c, 0, 0, &err), 0);
	ck_assert_ptr_null(err);
	cfs_tree_stats(t, &st1);
	/* /s, /s/t, /s/t/u, /s/l and /d/a went (freed at once), the link /s came */
	ck_assert_uint_eq(st1.nodes, st0.nodes - 4);
	ck_assert_int_eq(cfs_tree_lookup(t, CFS_ROOT, "s", 1, &id), 0);
	ck_assert_int_eq(cfs_tree_kind(t, id), RS_LINK);
	cfs_change_free(c);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_a_change_that_edits_a_file_in_place_is_refused)
{
	static const char *const texts[] = {"append /d/a \"more\"", "rename /x /y; truncate /d/a 0",
					    "xattr /d/a user.a 1"};

	for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
		char *why = NULL;
		ck_assert_ptr_null(cfs_change_parse(texts[i], &why));
		ck_assert_ptr_nonnull(strstr(why, "does not edit a node in place"));
		g_free(why);
	}
}
END_TEST

static Suite *fault_suite(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, test_refused_rules_say_why);
	tcase_add_test(tc, test_errnos_the_kernel_takes_are_accepted);
	tcase_add_test(tc, test_short_and_nowrite_need_answered_opens);
	tcase_add_test(tc, test_ids_are_never_reused);
	tcase_add_test(tc, test_removing_one_rule_leaves_the_others);
	tcase_add_test(tc, test_each_kind_matches_only_its_own);
	tcase_add_test(tc, test_a_seed_gives_the_same_hits);
	tcase_add_test(tc, test_the_log_keeps_the_latest_hits_and_counts_the_rest);
	tcase_add_test(tc, test_the_log_names_the_draw);
	tcase_add_test(tc, test_a_change_rule_fires_once_unless_told);
	tcase_add_test(tc, test_how_often_a_rule_fires);
	tcase_add_test(tc, test_who_takes_only_that_sender);
	tcase_add_test(tc, test_windows_fire_up_and_rest_down);
	tcase_add_test(tc, test_to_takes_the_new_path);
	tcase_add_test(tc, test_every_kind_goes_by_the_selectors);
	tcase_add_test(tc, test_the_log_names_the_sender_and_the_change);
	tcase_add_test(tc, test_a_read_only_mount_refuses_change_rules);
	tcase_add_test(tc, test_an_errno_list_draws_with_the_seed);
	tcase_add_test(tc, test_a_range_takes_the_reads_that_touch_it);
	tcase_add_test(tc, test_corrupt_changes_n_bytes_the_seed_chooses);
	tcase_add_test(tc, test_kill_rules_log_the_signal);
	tcase_add_test(tc, test_attr_changes_only_the_fields_given);
	suite_add_tcase(s, tc);
	tc = tcase_create("change");
	tcase_add_test(tc, test_a_failed_change_undoes_each_kind_of_line);
	tcase_add_test(tc, test_a_failed_change_of_many_lines_leaves_no_trace);
	tcase_add_test(tc, test_a_change_that_succeeds_stays_whole);
	tcase_add_test(tc, test_a_change_that_edits_a_file_in_place_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

void unit_add_suites(SRunner *sr)
{
	srunner_add_suite(sr, fault_suite());
}
