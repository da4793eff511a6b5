/*
 * Errors (spec_lex.c and the loaders): each bad spec with its exact place and reason.
 */
#include "test_spec.h"

/* ---------------------------------------------------------------------------------------- */
/* Errors */

static const struct bad_case {
	const char *text;
	const char *message; /* the start of the message */
} bad_cases[] = {
    {"frob /a\n", "t.spec:1: unknown keyword frob"},
    {"dir /ok\n\n# fine\nfrob", "t.spec:4: unknown keyword frob"},
    {"dir\n", "t.spec:1: dir: missing argument (dir PATH [attrs])"},
    {"dir /a /b\n", "t.spec:1: dir: too many arguments"},
    {"mode=0644\n", "t.spec:1: missing keyword"},
    {"dir a\n", "t.spec:1: a: path not absolute"},
    {"dir /a/../b\n", "t.spec:1: /a/../b: '.' and '..' are not allowed in paths"},
    {"dir /a mode=999\n", "t.spec:1: bad value 999 for mode"},
    {"dir /a mode=17777\n", "t.spec:1: bad value 17777 for mode"},
    {"dir /a uid=-1\n", "t.spec:1: bad value -1 for uid"},
    {"dir /a mtime=1.2.3\n", "t.spec:1: bad value 1.2.3 for mtime"},
    {"dir /a mtime=1.1234567890\n", "t.spec:1: bad value 1.1234567890 for mtime"},
    {"dir /a atime=-9223372036\n", "t.spec:1: bad value -9223372036 for atime"},
    {"link /l x mode=0700\n", "t.spec:1: attribute 'mode' not allowed with link"},
    {"dir /a colour=red\n", "t.spec:1: unknown attribute 'colour'"},
    {"file /g a=b\"c\"\n", "t.spec:1: unknown attribute 'a'"},
    {"dir /a size=1\n", "t.spec:1: attribute 'size' not allowed with dir"},
    {"dir /a mode=0700 mode=0755\n", "t.spec:1: duplicate attribute 'mode'"},
    {"file /a\nfile /a/b\n", "t.spec:2: /a/b: parent /a is not a directory"},
    {"link /l x\ndir /l/sub/d\n", "t.spec:2: /l/sub/d: parent /l is not a directory"},
    {"dir /a\ndir /a\n", "t.spec:2: /a: name exists"},
    {"dir /a\nfile /a\n", "t.spec:2: /a: name exists"},
    {"file /\n", "t.spec:1: /: name exists"},
    {"link /l \"\"\n", "t.spec:1: empty target"},
    {"link /l \"a\\x00b\"\n", "t.spec:1: NUL byte in target"},
    {"file /f \"abc\n", "t.spec:1: unterminated quote"},
    {"file /f \"abc\\\"\n", "t.spec:1: unterminated quote"},
    {"file /f \"a\\qb\"\n", "t.spec:1: bad escape '\\q'"},
    {"file /f \"\\x4g\"\n", "t.spec:1: bad escape '\\x4g'"},
    {"file /f size=10 content\n", "t.spec:1: file: content and size= exclude each other"},
    {"file /f pattern=ab\n", "t.spec:1: file: pattern= needs size="},
    {"file /f size=1 pattern=\"\"\n", "t.spec:1: empty pattern"},
    {"file /f size=1e18\n", "t.spec:1: bad value 1e18 for size"},
    {"file /f size=1000000000000000000\n",
     "t.spec:1: size 1000000000000000000 too big (limit 1125899906842624)"},
    {"file /f size=2P\n", "t.spec:1: size 2P too big"},
    {"file /f size=99999999999999999999999\n", "t.spec:1: size 99999999999999999999999 too big"},
    {"file /\"a\\x00b\"\n", "t.spec:1: \"/a\\x00b\": NUL byte in path"},
    {"dir /a\nfile /\"a\\x2fb\"\n", "t.spec:2: /a/b: '\\x2f' in a path: a name cannot hold '/'"},
    {"file /\"\\x2F\"x\n", "t.spec:1: //x: '\\x2f' in a path"},
    {"link /\"a\\x2fb\" t\n", "t.spec:1: /a/b: '\\x2f' in a path"},
    {"chain /\"c\\x2f\"d 3 t\n", "t.spec:1: /c/d: '\\x2f' in a path"},
    {"append /nothing x\n", "t.spec:1: /nothing: no such node"},
    {"dir /d\nappend /d x\n", "t.spec:2: /d: not a regular file"},
    {"file /f\nappend /f x at=9223372036854775807\n", "t.spec:2: bad value"},
    {"file /f\nappend /f xy at=9223372036854775806\n", "t.spec:2: append: file would exceed"},
    {"file /f\nappend /f x at=-1\n", "t.spec:2: bad value -1 for at"},
    {"file /f\nappend /f x size=1\n", "t.spec:2: attribute 'size' not allowed with append"},
    {"dir /d\ntruncate /d 5\n", "t.spec:2: /d: not a regular file"},
    {"truncate /nothing 5\n", "t.spec:1: /nothing: no such node"},
    {"file /f\ntruncate /f x\n", "t.spec:2: bad number x for size"},
    {"file /f\ntruncate /f 9223372036854775808\n",
     "t.spec:2: size 9223372036854775808 out of range"},
    {"file /f\ntruncate /f\n", "t.spec:2: truncate: missing argument"},
    {"hardlink /h /nothing\n", "t.spec:1: /nothing: no such node"},
    {"dev /d x 1 2\n", "t.spec:1: dev: the kind is c or b"},
    {"dev /d c 4096 0\n", "t.spec:1: major 4096 out of range 0..4095"},
    {"dev /d b 1 1048576\n", "t.spec:1: minor 1048576 out of range 0..1048575"},
    {"dev /d c 1\n", "t.spec:1: dev"},
    {"fifo /f\nfifo /f\n", "t.spec:2: /f"},
    {"hardlink /h /\n", "t.spec:1: /: is a directory"},
    {"chain /c x t\n", "t.spec:1: bad number x for chain length"},
    {"chain /c 0 t\n", "t.spec:1: chain length 0 out of range 1..1073741822"},
    {"chain /c 2000000000 t\n", "t.spec:1: chain length 2000000000 out of range"},
    {"chain /c 3 \"\"\n", "t.spec:1: empty target"},
    {"nest /n 2000000000 t\n", "t.spec:1: nest depth 2000000000 out of range"},
    {"loop /l 0\n", "t.spec:1: loop size 0 out of range"},
    {"wide /w 2000000000\n", "t.spec:1: wide count 2000000000 out of range"},
    {"wide /w 3 prefix=a/b\n", "t.spec:1: bad prefix"},
    {"deep /d 2000000000\n", "t.spec:1: deep depth 2000000000 out of range"},
    {"tree /t depth=3\n", "t.spec:1: tree: depth= and fanout= are required"},
    {"tree /t depth=2000000000 fanout=2\n", "t.spec:1: tree depth 2000000000 out of range"},
    {"tree /t depth=3 fanout=3 files=80% links=30%\n", "t.spec:1: tree: files + links exceed 100%"},
    {"tree /t depth=3 fanout=3 files=101%\n", "t.spec:1: bad value 101% for files"},
    {"tree /t depth=8 fanout=100\n", "t.spec:1: tree too big: more than 1073741823 nodes"},
    {"tree /t depth=256 fanout=2000000000\n", "t.spec:1: tree fanout 2000000000 out of range"},
    {"dir /a\ntree /a depth=1 fanout=1\n", "t.spec:2: /a: name exists"},
    {"chain /c 5 t\nchain /c 5 t\n", "t.spec:2: /c: name exists"},
    {"dir /x\ndir /.c.chain\nchain /c 5 t\n", "t.spec:3: /.c.chain: name exists"},
    {"dir /a\"b\"c\"\n", "t.spec:1: unterminated quote"},
};

START_TEST(test_bad_spec_reports_place_and_reason)
{
	const struct bad_case *bc = &bad_cases[_i];
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;
	int rc = cfs_spec_load_text(t, "t.spec", bc->text, strlen(bc->text), &def, &err);

	ck_assert_msg(rc == -EINVAL, "'%s': rc %d", bc->text, rc);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strncmp(err, bc->message, strlen(bc->message)) == 0,
		      "'%s': got '%s', want '%s'", bc->text, err, bc->message);
	free(err);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_nul_byte_in_text)
{
	static const char text[] = "dir /a\ndir /b\0c\n";
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;

	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", text, sizeof(text) - 1, &def, &err),
			 -EINVAL);
	ck_assert_str_eq(err, "t.spec:2: NUL byte in file");
	free(err);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_line_of_100k_is_too_long)
{
	size_t n = 100 * 1024;
	char *text = g_malloc(n + 32);
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;

	memcpy(text, "dir /a\nfile /f ", 15);
	memset(text + 15, 'x', n);
	strcpy(text + 15 + n, "\n");
	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", text, strlen(text), &def, &err), -EINVAL);
	ck_assert_msg(g_str_has_prefix(err, "t.spec:2: line too long (102408 bytes, limit 65536)"),
		      "%s", err);
	free(err);
	g_free(text);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_name_and_target_too_long)
{
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *name = g_strnfill(256, 'n'), *target = g_strnfill(4096, 't'), *err = NULL;
	char *l1 = g_strdup_printf("dir /%s\n", name),
	     *l2 = g_strdup_printf("link /l %s\n", target);

	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", l1, strlen(l1), &def, &err), -EINVAL);
	ck_assert_msg(strstr(err, ": name too long (256 bytes, limit 255)"), "%s", err);
	free(err);
	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", l2, strlen(l2), &def, &err), -EINVAL);
	ck_assert_str_eq(err, "t.spec:1: target too long (4096 bytes, limit 4095)");
	free(err);
	target[4095] = '\0'; /* 4095 bytes is fine */
	g_free(l2);
	l2 = g_strdup_printf("link /l %s\n", target);
	ck_assert_int_eq(cfs_spec_load_text(t, "t.spec", l2, strlen(l2), &def, &err), 0);
	g_free(l1);
	g_free(l2);
	g_free(name);
	g_free(target);
	cfs_tree_free(t);
}
END_TEST

/* A file is read a chunk at a time: lines of every length across the chunk boundaries (up to
 * the longest allowed, a last line without a newline) make the same tree as the same text
 * given whole, and a line past the limit is refused with its own line number. */
START_TEST(test_load_file_streams_lines_across_chunks)
{
	char dir[] = "/tmp/test_spec.XXXXXX";
	GString *text = g_string_new("dir /d\n");
	uint64_t rng = 5;
	char *path, *err = NULL;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	path = g_strdup_printf("%s/s.spec", dir);
	for (unsigned i = 0; text->len < 600000; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t pad = i % 50 == 7 ? CFS_SPEC_MAX_LINE - 40 : (rng >> 33) % 3000;
		g_string_append_printf(text, "file /d/f%u \"", i);
		for (size_t j = 0; j < pad; j++)
			g_string_append_c(text, (char)('a' + j % 26));
		g_string_append(text, "\"\n");
	}
	g_string_append(text, "# a full-length comment: ");
	while (text->len % 65536 != 0)
		g_string_append_c(text, 'c');
	g_string_append(text, "\nlink /d/last f1"); /* no newline */
	ck_assert(g_file_set_contents(path, text->str, (gssize)text->len, NULL));

	struct cfs_tree *a = cfs_tree_new(NULL), *b = cfs_tree_new(NULL);
	struct cfs_spec_defaults d = def;
	ck_assert_int_eq(cfs_spec_load_file(a, path, &def, &err), 0);
	ck_assert_ptr_null(err);
	d.stamp = true; /* what load_file gives nodes without times: the file's mtime */
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	d.time = st.st_mtim;
	ck_assert_int_eq(cfs_spec_load_text(b, path, text->str, text->len, &d, &err), 0);
	char *ca = canon(a, true), *cb = canon(b, true);
	ck_assert_str_eq(ca, cb);
	ck_assert_int_eq(cfs_tree_kind(a, node(a, "/d/last")), RS_LINK);
	g_free(ca);
	g_free(cb);
	cfs_tree_free(a);
	cfs_tree_free(b);

	/* line 3 is one byte too long; line 2 is exactly the limit */
	g_string_assign(text, "dir /d\n#");
	for (unsigned i = 1; i < CFS_SPEC_MAX_LINE; i++)
		g_string_append_c(text, 'x');
	g_string_append(text, "\n#");
	for (unsigned i = 0; i < CFS_SPEC_MAX_LINE; i++)
		g_string_append_c(text, 'y');
	g_string_append(text, "\ndir /e\n");
	ck_assert(g_file_set_contents(path, text->str, (gssize)text->len, NULL));
	a = cfs_tree_new(NULL);
	ck_assert_int_eq(cfs_spec_load_file(a, path, &def, &err), -EINVAL);
	char *want = g_strdup_printf("%s:3: line too long", path);
	ck_assert_msg(g_str_has_prefix(err, want), "%s", err);
	free(err);
	g_free(want);
	/* and one far too long, never held whole */
	g_string_truncate(text, 7);
	for (unsigned i = 0; i < 5 * CFS_SPEC_MAX_LINE; i++)
		g_string_append_c(text, 'z');
	ck_assert(g_file_set_contents(path, text->str, (gssize)text->len, NULL));
	cfs_tree_free(a);
	a = cfs_tree_new(NULL);
	ck_assert_int_eq(cfs_spec_load_file(a, path, &def, &err), -EINVAL);
	want = g_strdup_printf("%s:2: line too long", path);
	ck_assert_msg(g_str_has_prefix(err, want), "%s", err);
	free(err);
	g_free(want);
	cfs_tree_free(a);
	unlink(path);
	rmdir(dir);
	g_free(path);
	g_string_free(text, TRUE);
}
END_TEST

START_TEST(test_load_file_errors)
{
	char dir[] = "/tmp/test_spec.XXXXXX";
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL, *missing, *bad, *good;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	missing = g_strdup_printf("%s/missing", dir);
	bad = g_strdup_printf("%s/bad.spec", dir);
	good = g_strdup_printf("%s/good.spec", dir);
	ck_assert_int_eq(cfs_spec_load_file(t, missing, &def, &err), -ENOENT);
	char *want = g_strdup_printf("%s: No such file or directory", missing);
	ck_assert_str_eq(err, want);
	free(err);
	g_free(want);

	ck_assert_int_eq(cfs_spec_load_file(t, dir, &def, &err), -EINVAL);
	want = g_strdup_printf("%s: not a regular file", dir);
	ck_assert_str_eq(err, want);
	free(err);
	g_free(want);

	char *fifo = g_strdup_printf("%s/fifo", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(cfs_spec_load_file(t, fifo, &def, &err), -EINVAL);
	ck_assert(g_str_has_suffix(err, "/fifo: not a regular file"));
	free(err);
	unlink(fifo);
	g_free(fifo);

	ck_assert(g_file_set_contents(bad, "dir /a\n\nlink /b\n", -1, NULL));
	ck_assert_int_eq(cfs_spec_load_file(t, bad, &def, &err), -EINVAL);
	want = g_strdup_printf("%s:3: link: missing argument", bad);
	ck_assert_msg(g_str_has_prefix(err, want), "%s", err);
	free(err);
	g_free(want);

	struct cfs_tree *u = cfs_tree_new(NULL);
	ck_assert(g_file_set_contents(good, "file /x/y hi\n", -1, NULL));
	ck_assert_int_eq(cfs_spec_load_file(u, good, &def, &err), 0);
	ck_assert_ptr_null(err);
	ck_assert_int_eq(cfs_tree_kind(u, node(u, "/x/y")), RS_FILE);

	unlink(bad);
	unlink(good);
	rmdir(dir);
	g_free(missing);
	g_free(bad);
	g_free(good);
	cfs_tree_free(u);
	cfs_tree_free(t);
}
END_TEST

void spec_lex_tests(TCase *bad)
{
	tcase_add_loop_test(bad, test_bad_spec_reports_place_and_reason, 0,
			    G_N_ELEMENTS(bad_cases));
	tcase_add_test(bad, test_nul_byte_in_text);
	tcase_add_test(bad, test_line_of_100k_is_too_long);
	tcase_add_test(bad, test_name_and_target_too_long);
	tcase_add_test(bad, test_load_file_errors);
	tcase_add_test(bad, test_load_file_streams_lines_across_chunks);
}
