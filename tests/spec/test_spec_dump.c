/*
 * Dump (spec_dump.c): every kind written back as lines that load into the same tree, and the
 * embedded default tree.
 */
#include "test_spec.h"

/* ---------------------------------------------------------------------------------------- */
/* Dump */

/* fifos, sockets and devices: made by their lines, dumped as such, refused when malformed */
START_TEST(test_special_nodes_load_and_dump)
{
	struct cfs_tree *t =
	    load("fifo /f mode=0640 uid=3 gid=4 atime=1 mtime=1 ctime=1\n"
		 "socket /s mode=0755 uid=0 gid=0 atime=1 mtime=1 ctime=1\n"
		 "dev /c c 1 3 mode=0666 uid=0 gid=0 atime=1 mtime=1 ctime=1\n"
		 "dev /b b 4095 1048575 mode=0600 uid=0 gid=0 atime=1 mtime=1 ctime=1\n");
	struct stat st;
	char *d = dump_of(t);

	cfs_tree_stat(t, node(t, "/f"), &st);
	ck_assert(S_ISFIFO(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(cfs_tree_kind(t, node(t, "/f")), RS_OTHER);
	cfs_tree_stat(t, node(t, "/s"), &st);
	ck_assert(S_ISSOCK(st.st_mode));
	cfs_tree_stat(t, node(t, "/c"), &st);
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_uint_eq(major(st.st_rdev), 1);
	ck_assert_uint_eq(minor(st.st_rdev), 3);
	cfs_tree_stat(t, node(t, "/b"), &st);
	ck_assert(S_ISBLK(st.st_mode));
	ck_assert_uint_eq(major(st.st_rdev), 4095);
	ck_assert_uint_eq(minor(st.st_rdev), 1048575);
	ck_assert_ptr_nonnull(strstr(d, "\nfifo /f mode=0640 uid=3 gid=4 "));
	ck_assert_ptr_nonnull(strstr(d, "\nsocket /s mode=0755 "));
	ck_assert_ptr_nonnull(strstr(d, "\ndev /c c 1 3 mode=0666 "));
	ck_assert_ptr_nonnull(strstr(d, "\ndev /b b 4095 1048575 mode=0600 "));
	struct cfs_tree *again = load(d); /* the dump loads back to the same dump */
	char *d2 = dump_of(again);
	ck_assert_str_eq(d, d2);
	free(d);
	free(d2);
	cfs_tree_free(again);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_dump_writes_each_kind)
{
	struct cfs_tree *t =
	    load("dir / mode=0755 uid=0 gid=0 atime=1 mtime=2 ctime=3\n"
		 "dir /a mode=0700 uid=1 gid=2 atime=4 mtime=5.5 ctime=6\n"
		 "file /a/f \"hi there\\n\" mode=0644 uid=1 gid=2 atime=7 mtime=8 "
		 "ctime=9\n"
		 "hardlink /a/g /a/f\n"
		 "file /p size=100 pattern=ab mode=0600 uid=0 gid=0 atime=1 mtime=1 "
		 "ctime=1\n"
		 "link \"/l x\" \"../a b\" uid=0 gid=0 atime=1 mtime=1 ctime=1\n");
	char *d = dump_of(t);
	static const char want[] =
	    "# chainfs spec (cfs_spec_dump)\n"
	    "dir / mode=0755 uid=0 gid=0 atime=1.000000000 mtime=2.000000000 "
	    "ctime=3.000000000\n"
	    "dir /a mode=0700 uid=1 gid=2 atime=4.000000000 mtime=5.500000000 "
	    "ctime=6.000000000\n"
	    "file /a/f \"hi there\\n\" mode=0644 uid=1 gid=2 atime=7.000000000 "
	    "mtime=8.000000000 ctime=9.000000000\n"
	    "hardlink /a/g /a/f\n"
	    "file /p size=100 pattern=ab mode=0600 uid=0 gid=0 atime=1.000000000 "
	    "mtime=1.000000000 ctime=1.000000000\n"
	    "link \"/l x\" \"../a b\" uid=0 gid=0 atime=1.000000000 "
	    "mtime=1.000000000 ctime=1.000000000\n";

	ck_assert_str_eq(d, want);
	free(d);
	cfs_tree_free(t);
}
END_TEST

/* A node with several names is written under its first name (collapse and server modes walk
 * a link's relative target from there, and answer paths to a file by it), though the walk
 * meets another of its names first. */
START_TEST(test_dump_writes_a_hard_linked_node_under_its_first_name)
{
	struct cfs_tree *t = load("dir /a\ndir /z\nfile /z/0\nlink /z/l ../a\nfile /z/9\n"
				  "hardlink /a/h /z/l\nfile /z/g y\nhardlink /a/g2 /z/g\n");
	char *d = dump_of(t);
	struct cfs_tree *u = load(d);
	uint32_t l, z, a;

	ck_assert_ptr_nonnull(strstr(d, "\nlink /z/l ../a"));
	ck_assert_ptr_nonnull(strstr(d, "\nhardlink /a/h /z/l\n"));
	ck_assert_ptr_nonnull(strstr(d, "\nfile /z/g y"));
	ck_assert_ptr_nonnull(strstr(d, "\nhardlink /a/g2 /z/g\n"));
	ck_assert_int_eq(cfs_tree_lookup(u, CFS_ROOT, "z", 1, &z), 0);
	ck_assert_int_eq(cfs_tree_lookup(u, z, "l", 1, &l), 0);
	ck_assert_uint_eq(cfs_tree_parent(u, l), z);
	ck_assert_int_eq(cfs_tree_lookup(u, CFS_ROOT, "a", 1, &a), 0);
	ck_assert_int_eq(cfs_tree_lookup(u, a, "h", 1, &l), 0);
	struct stat st;
	cfs_tree_stat(u, l, &st);
	ck_assert_uint_eq(st.st_nlink, 2);
	free(d);
	cfs_tree_free(u);
	cfs_tree_free(t);
}
END_TEST

/* A streamed dump whose tree loses the first name before the walk reaches it: the names
 * that waited for it get the node line under the first of them. */
START_TEST(test_streamed_dump_writes_a_link_whose_first_name_went)
{
	struct cfs_tree *t = load("dir /a\ndir /z\nlink /z/l ../a\nhardlink /a/h /z/l\n");
	struct cfs_spec_dumper *dd = cfs_spec_dumper_new(t);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	uint32_t z, a, h;

	/* a piece a line: the walk has met /a/h and waits for /z/l */
	while (!strstr(buf ? buf : "", "dir /z") && cfs_spec_dumper_next(dd, f, 1) > 0)
		fflush(f);
	fflush(f);
	ck_assert_ptr_null(strstr(buf, "link"));
	ck_assert_int_eq(cfs_tree_lookup(t, CFS_ROOT, "z", 1, &z), 0);
	ck_assert_int_eq(cfs_tree_unlink(t, z, "l", 1), 0);
	while (cfs_spec_dumper_next(dd, f, 1) > 0)
		;
	fclose(f);
	cfs_spec_dumper_free(dd);
	ck_assert_ptr_nonnull(strstr(buf, "\nlink /a/h ../a"));
	struct cfs_tree *u = load(buf);
	ck_assert_int_eq(cfs_tree_lookup(u, CFS_ROOT, "a", 1, &a), 0);
	ck_assert_int_eq(cfs_tree_lookup(u, a, "h", 1, &h), 0);
	ck_assert_int_eq(cfs_tree_kind(u, h), RS_LINK);
	free(buf);
	cfs_tree_free(u);
	cfs_tree_free(t);
}
END_TEST

static void assert_round_trip(struct cfs_tree *t)
{
	char *d1 = dump_of(t), *c1 = canon(t, true);
	struct cfs_tree *u = load(d1);
	char *d2 = dump_of(u), *c2 = canon(u, true);

	ck_assert_str_eq(d1, d2);
	ck_assert_str_eq(c1, c2);
	free(d1);
	free(d2);
	g_free(c1);
	g_free(c2);
	cfs_tree_free(u);
}

START_TEST(test_dump_round_trips_odd_names_and_bytes)
{
	struct cfs_tree *t = load("file \"/q/a b\" x\nfile \"/q/#hash\" x\nfile /q/x=y x\n"
				  "file \"/q/\\\"quote\\\\\" x\nfile \"/q/\\x01\\x7f\\xff\\t\" x\n"
				  "link \"/q/l\" \"a  b\\n\"\nfile /q/bin \"\\x00\\x01\\xfe\"\n"
				  "file \"/q/mode=1\" \"mode=1\"\nfile /q/e\n"
				  "file /q/big size=300000 pattern=\"0123456789\"\n"
				  "file /q/aa \"aa\"\nfile /q/chain size=5\n");
	GString *big = g_string_new(NULL);

	/* a literal bigger than one dump line holds: written as file + append lines */
	for (int i = 0; i < 20000; i++)
		g_string_append_printf(big, "%d,", i);
	load_into(t, "file /q/lit x\nfile /q/almost x\nfile /q/huge size=1P pattern=\"ab\\n\"\n");
	ck_assert_int_eq(cfs_tree_set_content(t, node(t, "/q/lit"), big->str, big->len), 0);
	/* a repetition but for its last byte, longer than the window dump looks at first */
	g_string_truncate(big, 0);
	for (int i = 0; i < 100000; i++)
		g_string_append(big, "ab");
	big->str[big->len - 1] = 'x';
	ck_assert_int_eq(cfs_tree_set_content(t, node(t, "/q/almost"), big->str, big->len), 0);
	assert_round_trip(t);
	char *d = dump_of(t);
	ck_assert_ptr_nonnull(strstr(d, "append /q/lit "));
	ck_assert_ptr_nonnull(strstr(d, "file /q/big size=300000 pattern=0123456789 "));
	ck_assert_ptr_nonnull(strstr(d, "file /q/chain chain "));
	ck_assert_ptr_nonnull(strstr(d, "append /q/almost "));
	ck_assert_ptr_nonnull(strstr(d, "file /q/huge size=1125899906842624 pattern=\"ab\\n\" "));
	free(d);
	g_string_free(big, TRUE);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_dump_round_trips_the_default_tree)
{
	struct cfs_tree *t = load(cfs_default_spec);

	assert_round_trip(t);
	char *d = dump_of(t);
	ck_assert_ptr_nonnull(strstr(d, "\nfile /files/big size=16777216 pattern=\"chainfs\\n\" "));
	ck_assert_ptr_nonnull(strstr(d, "\nhardlink /files/hello.hard /files/hello\n"));
	free(d);
	cfs_tree_free(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* The default tree */

START_TEST(test_default_spec_loads_fast_with_100k_nodes)
{
	struct timespec a, b;
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;

	clock_gettime(CLOCK_MONOTONIC, &a);
	int rc = cfs_spec_load_text(t, "<default>", cfs_default_spec, strlen(cfs_default_spec),
				    &def, &err);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ck_assert_msg(rc == 0, "%s", err);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	struct cfs_tree_stats st;
	cfs_tree_stats(t, &st);
	fprintf(stderr,
		"default tree: %" PRIu64 " nodes (%" PRIu64 " dirs, %" PRIu64 " files, %" PRIu64
		" links), %.1f MiB, loaded in %.3f s\n",
		st.nodes, st.dirs, st.files, st.links, (double)st.bytes / (1 << 20), s);
	ck_assert_msg(s < 10, "%.3f s: a load-time regression", s); /* loose: valgrind too */
	ck_assert_uint_ge(st.nodes, 100000);
	ck_assert_uint_le(st.nodes, 120000);
	ck_assert_uint_eq(cfs_tree_dir_count(t, node(t, "/wide")), 10000);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_default_spec_matches_the_source_file)
{
	char *text = NULL;
	gsize len;

	ck_assert(g_file_get_contents(CFS_SRCDIR "/spec/default.spec", &text, &len, NULL));
	ck_assert_uint_eq(strlen(cfs_default_spec), len);
	ck_assert_str_eq(cfs_default_spec, text);
	g_free(text);
}
END_TEST

static const struct default_case {
	const char *path;
	int err;	     /* with Linux's limits, following the final link */
	const char *reaches; /* NULL: don't care; else the node it must end at */
} default_cases[] = {
    {"/README", 0, NULL},
    {"/chains/5", 0, "/chains/target"},
    {"/chains/40", 0, "/chains/target"},
    {"/chains/41", -ELOOP, NULL},
    {"/chains/1000", -ELOOP, NULL},
    {"/nest/8", 0, "/nest/dir/file"},
    {"/nest/40", 0, "/nest/dir/file"},
    {"/nest/41", -ELOOP, NULL},
    {"/nest/100", -ELOOP, NULL},
    {"/loops/self", -ELOOP, NULL},
    {"/loops/pair", -ELOOP, NULL},
    {"/loops/ring", -ELOOP, NULL},
    {"/loops/ring.3", -ELOOP, NULL},
    {"/dangling/missing", -ENOENT, NULL},
    {"/dangling/deeper", -ENOENT, NULL},
    {"/dangling/up", -ENOENT, NULL},
    {"/dangling/absolute", -ENOENT, NULL},
    {"/dangling/notdir", -ENOTDIR, NULL},
    {"/dangling/tolink", -ENOENT, NULL},
    {"/abs/target", 0, "/chains/target"},
    {"/abs/chain40", -ELOOP, NULL}, /* 1 + 40 links */
    {"/abs/tree", 0, "/tree"},
    {"/abs/root", 0, "/"},
    {"/abs/dotdot", 0, "/"},
    {"/dirlinks/deep/1/2/3", 0, "/deep/1/2/3"},
    {"/dirlinks/linklink/1", 0, "/deep/1"},
    {"/dirlinks/bottom", 0, "/deep/1/2/3/4/5/6/7/8/9/10"},
    {"/dirlinks/nest/file", 0, "/nest/dir/file"},
    {"/files/hello.hard", 0, "/files/hello"},
    {"/wide/f10000", 0, NULL},
};

START_TEST(test_default_paths_resolve_as_documented)
{
	struct cfs_tree *t = load(cfs_default_spec);

	for (size_t i = 0; i < G_N_ELEMENTS(default_cases); i++) {
		const struct default_case *dc = &default_cases[i];
		struct rs_result res;
		int rc = resolve_with(t, dc->path, rs_limits_linux, RS_FOLLOW, &res);

		ck_assert_msg(rc == dc->err, "%s: %d, expected %d", dc->path, rc, dc->err);
		if (dc->reaches)
			ck_assert_msg(res.node == node(t, dc->reaches), "%s", dc->path);
	}
	/* the deep bottom, and the long chains with the limits raised */
	GString *p = g_string_new("/deep");
	for (int i = 1; i <= 200; i++)
		g_string_append_printf(p, "/%d", i);
	g_string_append(p, "/bottom");
	ck_assert_int_eq(cfs_tree_kind(t, follow(t, p->str)), RS_FILE);
	g_string_free(p, TRUE);
	struct rs_result res;
	ck_assert_int_eq(resolve_with(t, "/chains/1000", big_limits, RS_FOLLOW, &res), 0);
	ck_assert_uint_eq(res.links, 1000);
	ck_assert_uint_eq(res.max_depth, 1);
	ck_assert_int_eq(resolve_with(t, "/nest/100", big_limits, RS_FOLLOW, &res), 0);
	ck_assert_uint_eq(res.links, 100);
	ck_assert_uint_eq(res.max_depth, 100);
	ck_assert_uint_eq(cfs_tree_dir_count(t, node(t, "/tree")), 20);
	char *readme = content_of(t, node(t, "/README"));
	ck_assert_ptr_nonnull(strstr(readme, "/chains"));
	g_free(readme);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_append_at_writes_at_an_offset_and_truncate_sets_the_size)
{
	struct cfs_tree *t = load("file /f abc\nappend /f XY at=6\ntruncate /f 10\n"
				  "file /g abcdef\ntruncate /g 2\nfile /h\ntruncate /h 1T\n");
	uint32_t f = node(t, "/f");
	struct stat st;
	char buf[16];

	cfs_tree_stat(t, f, &st);
	ck_assert_int_eq(st.st_size, 10);
	ck_assert_int_eq(cfs_tree_read(t, f, buf, sizeof(buf), 0), 10);
	ck_assert(!memcmp(buf, "abc\0\0\0XY\0\0", 10));
	char *s = content_of(t, node(t, "/g"));
	ck_assert_str_eq(s, "ab");
	g_free(s);
	cfs_tree_stat(t, node(t, "/h"), &st);
	ck_assert_int_eq(st.st_size, 1ll << 40);
	ck_assert_int_eq(st.st_blocks, 0);
	cfs_tree_free(t);
}
END_TEST

/* xattr lines: on every kind (a link's own), any bytes, a long value in at= pieces; the
 * dump writes them back and loads into the same attributes. */
START_TEST(test_dump_round_trips_xattrs)
{
	GString *spec = g_string_new("dir /d\nfile /d/f x\nlink /l d/f\nfifo /p\n"
				     "xattr / security.root \"\"\n"
				     "xattr /d/f user.a \"a\\0b\\xff\"\nxattr /l trusted.t own\n"
				     "xattr /p trusted.p pp\nxattr /d user.long \"");
	for (int i = 0; i < 10000; i++)
		g_string_append_printf(spec, "\\x%02x", i % 256);
	g_string_append(spec, "\"\n");
	struct cfs_tree *t = load(spec->str);
	char *d1 = dump_of(t), buf[16];

	ck_assert_ptr_nonnull(strstr(d1, "\nxattr /d user.long \""));
	ck_assert_ptr_nonnull(strstr(d1, " at=8192\n")); /* in pieces of SPEC_DUMP_CHUNK */
	ck_assert_ptr_nonnull(strstr(d1, "\nxattr /l trusted.t own\n"));
	struct cfs_tree *u = load(d1);
	char *d2 = dump_of(u);
	ck_assert_str_eq(d1, d2);
	ck_assert_int_eq(cfs_tree_getxattr(u, node(u, "/d"), "user.long", NULL, 0), 10000);
	ck_assert_int_eq(cfs_tree_getxattr(u, node(u, "/d/f"), "user.a", buf, sizeof(buf)), 4);
	ck_assert(!memcmp(buf, "a\0b\xff", 4));
	ck_assert_int_eq(cfs_tree_getxattr(u, node(u, "/d/f"), "trusted.t", NULL, 0), -ENODATA);
	free(d1);
	free(d2);
	g_string_free(spec, TRUE);
	cfs_tree_free(t);
	cfs_tree_free(u);
}
END_TEST

/* bad xattr lines: the error names the errno tmpfs gives, and the tree is as before */
static const struct {
	const char *line, *says;
} bad_xattrs[] = {
    {"xattr /f foo.a 1", "Operation not supported"},
    {"xattr /f user. 1", "Invalid argument"},
    {"xattr /l user.a 1", "Operation not permitted"},
    {"xattr /f system.posix_acl_access \"\\x02\\0\\0\\0\"", "Invalid argument"},
    {"xattr /f system.posix_acl_default \"\\x02\\0\\0\\0\\x01\\0\\x07\\0\\0\\0\\0\\0"
     "\\x04\\0\\x05\\0\\0\\0\\0\\0\\x20\\0\\x05\\0\\0\\0\\0\\0\"",
     "Permission denied"},
    {"xattr /f user.a 1 at=3", "not the end of its value"},
    {"xattr /nope user.a 1", "no such node"},
    {"xattr /f \"\" 1", "a name is 1 to 255 bytes"},
};

START_TEST(test_bad_xattr_line_is_refused_and_changes_nothing)
{
	struct cfs_tree *t = load("file /f x\nlink /l f\nxattr /f user.keep k\n");
	char *before = dump_of(t), *after, *err = NULL;

	ck_assert_int_eq(cfs_spec_apply_line(t, bad_xattrs[_i].line, &def, &err), -EINVAL);
	ck_assert_msg(err && strstr(err, bad_xattrs[_i].says), "%s: %s", bad_xattrs[_i].line, err);
	after = dump_of(t);
	ck_assert_str_eq(before, after);
	free(err);
	free(before);
	free(after);
	cfs_tree_free(t);
}
END_TEST

/* Files with holes, written over a pattern, or up to the largest size dump as lines that
 * load back into the same content, without writing the holes out. */
START_TEST(test_dump_round_trips_sparse_files)
{
	static const struct {
		const char *path;
		int64_t off;
	} probes[] = {
	    {"/s/zeros", (1ll << 40) - 4}, {"/s/far", 1ll << 31}, {"/s/far", INT64_MAX - 4},
	    {"/s/far", 1ll << 35},	   {"/s/pat", 1ll << 45}, {"/s/pat", (1ll << 48) - 2},
	    {"/s/pat", (1ll << 49) - 4},   {"/s/small", 0},	  {"/s/small", 4000}};
	struct cfs_tree *t = load("file /s/zeros\ntruncate /s/zeros 1T\n"
				  "file /s/far\nappend /s/far a at=2G\n"
				  "append /s/far end at=9223372036854775804\n"
				  "file /s/pat size=1P pattern=\"ab\\n\"\nappend /s/pat X at=32T\n"
				  "truncate /s/pat 256T\ntruncate /s/pat 512T\n"
				  "file /s/small hello\ntruncate /s/small 5000\n");
	char *d = dump_of(t);
	struct cfs_tree *u = load(d);
	char *d2 = dump_of(u);
	char a[8], b[8];

	ck_assert_str_eq(d, d2);
	ck_assert_uint_lt(strlen(d), 16384); /* holes are not written out */
	ck_assert_ptr_nonnull(strstr(d, "truncate /s/zeros 1099511627776\n"));
	ck_assert_ptr_nonnull(strstr(d, "append /s/far a at=2147483648\n"));
	ck_assert_ptr_nonnull(strstr(d, "file /s/pat size=281474976710656 pattern=\"ab\\n\" "));
	for (size_t i = 0; i < G_N_ELEMENTS(probes); i++) {
		struct stat st, su;
		cfs_tree_stat(t, node(t, probes[i].path), &st);
		cfs_tree_stat(u, node(u, probes[i].path), &su);
		ck_assert_int_eq(st.st_size, su.st_size);
		ck_assert_int_eq(st.st_blocks, su.st_blocks);
		ssize_t n = cfs_tree_read(t, node(t, probes[i].path), a, 8, probes[i].off);
		ck_assert_int_eq(cfs_tree_read(u, node(u, probes[i].path), b, 8, probes[i].off), n);
		ck_assert_msg(n > 0 && !memcmp(a, b, (size_t)n), "%s at %lld", probes[i].path,
			      (long long)probes[i].off);
	}
	ck_assert_int_eq(cfs_tree_read(u, node(u, "/s/pat"), a, 1, 1ll << 45), 1);
	ck_assert_int_eq(a[0], 'X');
	free(d);
	free(d2);
	cfs_tree_free(u);
	cfs_tree_free(t);
}
END_TEST

void spec_dump_tests(TCase *dump, TCase *dflt)
{
	tcase_add_test(dump, test_dump_writes_each_kind);
	tcase_add_test(dump, test_dump_writes_a_hard_linked_node_under_its_first_name);
	tcase_add_test(dump, test_streamed_dump_writes_a_link_whose_first_name_went);
	tcase_add_test(dump, test_special_nodes_load_and_dump);
	tcase_add_test(dump, test_dump_round_trips_odd_names_and_bytes);
	tcase_add_test(dump, test_dump_round_trips_the_default_tree);
	tcase_add_test(dump, test_dump_round_trips_sparse_files);
	tcase_add_test(dump, test_dump_round_trips_xattrs);
	tcase_add_loop_test(dump, test_bad_xattr_line_is_refused_and_changes_nothing, 0,
			    sizeof(bad_xattrs) / sizeof(bad_xattrs[0]));
	tcase_add_test(dump, test_append_at_writes_at_an_offset_and_truncate_sets_the_size);
	tcase_add_test(dflt, test_default_spec_loads_fast_with_100k_nodes);
	tcase_add_test(dflt, test_default_spec_matches_the_source_file);
	tcase_add_test(dflt, test_default_paths_resolve_as_documented);
}
