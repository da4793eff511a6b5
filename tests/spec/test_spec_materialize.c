/*
 * Materialize (spec_materialize.c): a tree written as real files, compared with what the
 * kernel finds.
 */
#include "test_spec.h"

/* ---------------------------------------------------------------------------------------- */
/* Materialize */

/* A fresh directory for materialize: on tmpfs when there is one, since a disk-backed /tmp
 * makes each mkdir or symlink cost half a millisecond. */
static char *make_temp_dir(void)
{
	struct stat st;
	const char *base = getenv("TMPDIR");

	if (!base)
		base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	char *dir = g_strdup_printf("%s/test_spec.XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_entry, 64, FTW_DEPTH | FTW_PHYS);
}

/* Compare every node of T with what lstat/readlink/read find under DIR, materialized with
 * FLAGS: links hold their in-root spelling, set-id bits and owners only with
 * CFS_MAT_KEEP_IDS. */
static void assert_materialized(const struct cfs_tree *t, const char *dir, unsigned flags)
{
	bool keep = flags & CFS_MAT_KEEP_IDS;
	GArray *stack = g_array_new(FALSE, FALSE, sizeof(uint64_t) * 2);
	GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
	uint64_t top[2] = {CFS_ROOT, 0};
	char *buf = g_malloc(65536), *real = g_malloc(65536);
	bool root = geteuid() == 0 && keep;
	uint64_t checked = 0;

	g_array_append_val(stack, top);
	g_ptr_array_add(paths, g_strdup(dir));
	while (stack->len > 0) {
		uint64_t *f = &g_array_index(stack, uint64_t, (stack->len - 1) * 2);
		const char *name;
		size_t len;
		uint32_t child;
		struct stat st, rst;

		if (cfs_tree_dir_next(t, (uint32_t)f[0], &f[1], &name, &len, &child) != 0) {
			g_array_set_size(stack, stack->len - 1);
			g_ptr_array_remove_index(paths, paths->len - 1);
			continue;
		}
		char *path = g_strdup_printf("%s/%.*s", (char *)paths->pdata[paths->len - 1],
					     (int)len, name);
		enum rs_kind kind = cfs_tree_kind(t, child);

		cfs_tree_stat(t, child, &st);
		CHECK(lstat(path, &rst) == 0, "%s: %s", path, strerror(errno));
		CHECK((st.st_mode & S_IFMT) == (rst.st_mode & S_IFMT), "%s", path);
		bool dev = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode);
		if (kind != RS_LINK)
			CHECK((st.st_mode & (keep  ? 07777
					     : dev ? 0600
						   : 01777)) == (rst.st_mode & 07777),
			      "%s", path);
		if (root)
			CHECK(st.st_uid == rst.st_uid && st.st_gid == rst.st_gid, "%s", path);
		CHECK(st.st_mtim.tv_sec == rst.st_mtim.tv_sec &&
			  st.st_mtim.tv_nsec == rst.st_mtim.tv_nsec,
		      "%s: mtime", path);
		if (kind == RS_FILE)
			CHECK(st.st_size == rst.st_size, "%s: size", path);
		if (kind == RS_LINK) {
			ssize_t n = readlink(path, real, 65536);
			ssize_t want =
			    cfs_inroot_target(t, rs_limits_linux, child, (uint32_t)f[0], buf);
			CHECK(want >= 0 && n == want && memcmp(buf, real, (size_t)n) == 0,
			      "%s: '%.*s', want '%s'", path, (int)(n > 0 ? n : 0), real, buf);
			CHECK(rst.st_size == want, "%s: size", path);
		} else if (kind == RS_FILE && st.st_size <= 65536) {
			int fd = open(path, O_RDONLY | O_NOFOLLOW);
			CHECK(fd >= 0, "%s", path);
			ssize_t n = read(fd, real, 65536);
			ssize_t m = cfs_tree_read(t, child, buf, 65536, 0);
			close(fd);
			CHECK(n == m && memcmp(real, buf, (size_t)n) == 0, "%s", path);
		}
		checked++;
		if (kind == RS_DIR) {
			uint64_t sub[2] = {child, 0};
			g_array_append_val(stack, sub);
			g_ptr_array_add(paths, path);
		} else {
			g_free(path);
		}
	}
	ck_assert_uint_gt(checked, 0);
	g_free(buf);
	g_free(real);
	g_array_free(stack, TRUE);
	g_ptr_array_free(paths, TRUE);
}

static int kernel_stat(const char *dir, const char *rel, struct stat *st)
{
	char *p = g_strdup_printf("%s%s", dir, rel);
	int rc = stat(p, st) == 0 ? 0 : -errno;

	g_free(p);
	return rc;
}

START_TEST(test_materialize_the_default_tree)
{
	char *dir = make_temp_dir();
	struct cfs_tree *t = load(cfs_default_spec);
	char *err = NULL;
	struct stat a, b;

	ck_assert_msg(cfs_materialize(t, dir, CFS_MAT_KEEP_IDS, &err) == 0, "%s", err);
	ck_assert_ptr_null(err);
	assert_materialized(t, dir, CFS_MAT_KEEP_IDS);

	/* the kernel agrees with the resolver on the documented paths */
	ck_assert_int_eq(kernel_stat(dir, "/chains/40", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/chains/target", &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(kernel_stat(dir, "/chains/41", &a), -ELOOP);
	ck_assert_int_eq(kernel_stat(dir, "/nest/40", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/nest/41", &a), -ELOOP);
	ck_assert_int_eq(kernel_stat(dir, "/loops/ring", &a), -ELOOP);
	ck_assert_int_eq(kernel_stat(dir, "/dangling/missing", &a), -ENOENT);
	ck_assert_int_eq(kernel_stat(dir, "/dangling/notdir", &a), -ENOTDIR);
	ck_assert_int_eq(kernel_stat(dir, "/dirlinks/bottom", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/files/hello.hard", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/files/hello", &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(b.st_nlink, 2);

	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

START_TEST(test_materialize_modes_times_and_readonly_dirs)
{
	char *dir = make_temp_dir();
	struct cfs_tree *t = load("dir /ro mode=0555 mtime=10.5\nfile /ro/f data mode=0400 "
				  "mtime=20\nlink /ro/l f mtime=30.25\ndir /ro/sub mode=0500 "
				  "atime=1 mtime=2\nfile \"/odd name\\t\\xff\" x\n"
				  "dir / mode=0750 mtime=40\n");
	char *err = NULL;
	struct stat st;

	ck_assert_msg(cfs_materialize(t, dir, 0, &err) == 0, "%s", err);
	assert_materialized(t, dir, 0);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0750);
	ck_assert_int_eq(st.st_mtim.tv_sec, 40);
	/* the tree may be materialized only into an empty directory */
	ck_assert_int_eq(cfs_materialize(t, dir, 0, &err), -ENOTEMPTY);
	ck_assert_msg(g_str_has_prefix(err, dir) && strstr(err, "Directory not empty"), "%s", err);
	free(err);
	char *sub = g_strdup_printf("%s/ro", dir);
	chmod(sub, 0755);
	g_free(sub);
	sub = g_strdup_printf("%s/ro/sub", dir);
	chmod(sub, 0755);
	g_free(sub);
	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

/* path relative to DIR's link, as readlink finds it in the copy */
static char *copy_readlink(const char *dir, const char *rel)
{
	char *p = g_strdup_printf("%s%s", dir, rel), buf[4096];
	ssize_t n = readlink(p, buf, sizeof(buf) - 1);

	g_free(p);
	ck_assert_msg(n >= 0, "%s: %s", rel, strerror(errno));
	return g_strndup(buf, (gsize)n);
}

/* Links whose target would climb above the copy (absolute, or a ".." past its top) are
 * written as their in-root meaning: the kernel's walk of the copy never leaves it. */
START_TEST(test_materialize_keeps_links_inside_the_copy)
{
	static const struct {
		const char *link, *want;
	} cases[] = {
	    {"/x/y/l", "../../a/b"}, /* absolute: the copy's root, not the host's */
	    {"/x/up", "../etc"},     /* ".." past the top stays at the top */
	    {"/root", "."},	     {"/rel", "x"},
	    {"/x/ok", "../x/y"},    /* cannot climb: as stored */
	    {"/x/t", "s/../../.."}, /* through a link: .. is physical, reaches the top */
	    {"/x/u", ".."},	    /* ... and one more climbs out */
	};
	char *dir = make_temp_dir(), *err = NULL;
	struct cfs_tree *t = load("dir /x/y\nfile /a/b hi\nlink /x/y/l /a/b\n"
				  "link /x/up ../../../etc\nlink /root /\nlink /rel ../x\n"
				  "link /x/ok ../x/y\ndir /deep/a/b\nlink /x/s /deep/a/b\n"
				  "link /x/t s/../../..\nlink /x/u s/../../../..\n");
	struct stat a, b;

	ck_assert_msg(cfs_materialize(t, dir, 0, &err) == 0, "%s", err);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		char *got = copy_readlink(dir, cases[i].link);
		ck_assert_msg(strcmp(got, cases[i].want) == 0, "%s: '%s', want '%s'", cases[i].link,
			      got, cases[i].want);
		g_free(got);
	}
	assert_materialized(t, dir, 0);
	/* what the kernel finds through them */
	ck_assert_int_eq(kernel_stat(dir, "/x/y/l", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "/a/b", &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(kernel_stat(dir, "/x/up", &a), -ENOENT); /* not the host's /etc */
	ck_assert_int_eq(kernel_stat(dir, "/root", &a), 0);
	ck_assert_int_eq(kernel_stat(dir, "", &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(kernel_stat(dir, "/x/u", &a), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(kernel_stat(dir, "/x/t", &a), 0); /* up from /deep/a/b: the root */
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST
START_TEST(test_materialize_leaves_holes_as_holes)
{
	char *dir = make_temp_dir();
	struct cfs_tree *t = load("file /f\nappend /f a at=1G\nfile /p size=10 pattern=x\n"
				  "truncate /p 100000\nappend /p y at=50000\n");
	char *err = NULL, *path = g_strdup_printf("%s/f", dir), c = 0;
	struct stat st;
	int fd;

	ck_assert_msg(cfs_materialize(t, dir, 0, &err) == 0, "%s", err);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, (1ll << 30) + 1);
	ck_assert_int_lt(st.st_blocks, 1024); /* not a gigabyte of zeros */
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(pread(fd, &c, 1, 1ll << 30), 1);
	ck_assert_int_eq(c, 'a');
	close(fd);
	g_free(path);
	assert_materialized(t, dir, 0);
	path = g_strdup_printf("%s/p", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 100000);
	fd = open(path, O_RDONLY);
	char buf[12];
	ck_assert_int_eq(pread(fd, buf, 12, 0), 12);
	ck_assert(!memcmp(buf, "xxxxxxxxxx\0\0", 12));
	ck_assert_int_eq(pread(fd, buf, 1, 50000), 1);
	ck_assert_int_eq(buf[0], 'y');
	close(fd);
	g_free(path);
	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

/* A spec is not trusted with set-id programs or owners: only CFS_MAT_KEEP_IDS applies them. */
START_TEST(test_materialize_drops_set_id_bits_unless_asked)
{
	struct cfs_tree *t = load("file /s x mode=06755 uid=4242 gid=4243\n"
				  "dir /d mode=02775 uid=4242\ndir /tmp mode=01777\n");
	struct stat st;

	for (unsigned flags = 0; flags <= CFS_MAT_KEEP_IDS; flags += CFS_MAT_KEEP_IDS) {
		char *dir = make_temp_dir(), *err = NULL;
		bool keep = flags, owners = keep && geteuid() == 0;

		ck_assert_msg(cfs_materialize(t, dir, flags, &err) == 0, "%s", err);
		ck_assert_int_eq(kernel_stat(dir, "/s", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, keep ? 06755 : 0755);
		ck_assert_int_eq(st.st_uid, owners ? 4242 : geteuid());
		ck_assert_int_eq(st.st_gid, owners ? 4243 : getegid());
		ck_assert_int_eq(kernel_stat(dir, "/d", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, keep ? 02775 : 0775);
		ck_assert_int_eq(st.st_uid, owners ? 4242 : geteuid());
		ck_assert_int_eq(kernel_stat(dir, "/tmp", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, 01777); /* sticky is no privilege */
		assert_materialized(t, dir, flags);
		rm_rf(dir);
		g_free(dir);
	}
	cfs_tree_free(t);
}
END_TEST

/* One body cannot mean the same place from two directories: each name of a hard-linked link
 * gets the body right for its own, as a link of its own where they differ. */
START_TEST(test_materialize_gives_each_name_of_a_link_its_own_body)
{
	char *dir = make_temp_dir(), *err = NULL;
	struct cfs_tree *t = load("dir /a/b\nlink /a/b/l /x\nhardlink /h /a/b/l\n"
				  "hardlink /a/h2 /a/b/l\nhardlink /h3 /a/b/l\n"
				  "link /a/b/rel y\nhardlink /hrel /a/b/rel\n");
	struct stat a, b, c;

	ck_assert_msg(cfs_materialize(t, dir, 0, &err) == 0, "%s", err);
	assert_materialized(t, dir, 0);
	char *l = copy_readlink(dir, "/a/b/l"), *h = copy_readlink(dir, "/h");
	ck_assert_str_eq(l, "../../x");
	ck_assert_str_eq(h, "x");
	g_free(l);
	g_free(h);
	/* names whose bodies agree are still one link */
	char *p = g_strdup_printf("%s/h", dir), *q = g_strdup_printf("%s/h3", dir);
	ck_assert_int_eq(lstat(p, &a), 0);
	ck_assert_int_eq(lstat(q, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_uint_eq(a.st_nlink, 2);
	g_free(p);
	g_free(q);
	p = g_strdup_printf("%s/hrel", dir);
	q = g_strdup_printf("%s/a/b/rel", dir);
	ck_assert_int_eq(lstat(p, &b), 0);
	ck_assert_int_eq(lstat(q, &c), 0);
	ck_assert_uint_eq(b.st_ino, c.st_ino);
	ck_assert_uint_eq(b.st_nlink, 2);
	g_free(p);
	g_free(q);
	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

/* A device node keeps the spec's mode only with CFS_MAT_KEEP_IDS, else at most 0600. */
START_TEST(test_materialize_makes_devices_private_unless_asked)
{
	struct cfs_tree *t = load("dev /null c 1 3 mode=0666\ndev /ro c 1 3 mode=0440\n"
				  "fifo /p mode=0666\n");
	struct stat st;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: devices: making device nodes needs root\n");
		cfs_tree_free(t);
		return;
	}
	for (unsigned flags = 0; flags <= CFS_MAT_KEEP_IDS; flags += CFS_MAT_KEEP_IDS) {
		char *dir = make_temp_dir(), *err = NULL;

		ck_assert_msg(cfs_materialize(t, dir, flags, &err) == 0, "%s", err);
		ck_assert_int_eq(kernel_stat(dir, "/null", &st), 0);
		ck_assert(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));
		ck_assert_int_eq(st.st_mode & 07777, flags ? 0666 : 0600);
		ck_assert_int_eq(kernel_stat(dir, "/ro", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, flags ? 0440 : 0400);
		ck_assert_int_eq(kernel_stat(dir, "/p", &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, 0666); /* a fifo is no privilege */
		assert_materialized(t, dir, flags);
		rm_rf(dir);
		g_free(dir);
	}
	cfs_tree_free(t);
}
END_TEST

/* What a copy would write, the bound chainfs --materialize puts on it: patterns whole, holes
 * and patterns of zeros not at all, written pages whole, a node of several names once. */
START_TEST(test_materialize_bytes_leave_out_holes_and_zeros)
{
	static const struct {
		const char *spec;
		uint64_t bytes;
	} cases[] = {
	    {"file /a size=600M\nfile /b size=600M\n", 1258291200},
	    {"file /a size=600M\nhardlink /b /a\nfile /c size=1\n", 629145601},
	    {"file /z size=1T pattern=\"\\x00\"\n", 0},
	    {"file /z size=1G pattern=\"\\x00\"\nappend /z y at=100000\n", 4096},
	    {"file /s\ntruncate /s 10G\nappend /s end at=5G\n", 4096},
	    {"file /p size=10000 pattern=\"a\\x00\"\ntruncate /p 10G\n", 10000},
	};
	char *err = NULL;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfs_tree *t = load(cases[i].spec);
		ck_assert_msg(cfs_materialize_bytes(t) == cases[i].bytes, "%s: %llu", cases[i].spec,
			      (unsigned long long)cfs_materialize_bytes(t));
		cfs_tree_free(t);
	}
	struct cfs_tree *u = load("file /c size=1\n");
	ck_assert_int_eq(cfs_materialize(u, "/nonexistent/dir", 0, &err), -ENOENT);
	ck_assert_str_eq(err, "/nonexistent/dir: open: No such file or directory");
	free(err);
	cfs_tree_free(u);
}
END_TEST

/* A pattern of zeros and the blocks of zeros in written pages stay holes: a terabyte of
 * zeros costs nothing on disk. */
START_TEST(test_materialize_leaves_zeros_as_holes)
{
	char *dir = make_temp_dir();
	struct cfs_tree *t = load("file /z size=1T pattern=\"\\x00\"\nappend /z y at=1G\n"
				  "file /w\nappend /w \"\\x00\\x00\\x00\\x00\" at=8192\n"
				  "append /w q at=20000\n");
	char *err = NULL, *path = g_strdup_printf("%s/z", dir), c = 0;
	struct stat st;
	int fd;

	ck_assert_msg(cfs_materialize(t, dir, 0, &err) == 0, "%s", err);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 1ll << 40);
	ck_assert_int_le(st.st_blocks, 64); /* the page holding the 'y' */
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(pread(fd, &c, 1, 1ll << 30), 1);
	ck_assert_int_eq(c, 'y');
	close(fd);
	g_free(path);
	path = g_strdup_printf("%s/w", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 20001);
	ck_assert_int_le(st.st_blocks, 16); /* the block of the 'q' alone */
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(pread(fd, &c, 1, 20000), 1);
	ck_assert_int_eq(c, 'q');
	close(fd);
	g_free(path);
	rm_rf(dir);
	g_free(dir);
	cfs_tree_free(t);
}
END_TEST

void spec_materialize_tests(TCase *mat, TCase *dump)
{
	tcase_add_test(mat, test_materialize_the_default_tree);
	tcase_add_test(mat, test_materialize_modes_times_and_readonly_dirs);
	tcase_add_test(mat, test_materialize_bytes_leave_out_holes_and_zeros);
	tcase_add_test(mat, test_materialize_leaves_zeros_as_holes);
	tcase_add_test(mat, test_materialize_keeps_links_inside_the_copy);
	tcase_add_test(mat, test_materialize_drops_set_id_bits_unless_asked);
	tcase_add_test(mat, test_materialize_gives_each_name_of_a_link_its_own_body);
	tcase_add_test(mat, test_materialize_makes_devices_private_unless_asked);
	tcase_add_test(dump, test_materialize_leaves_holes_as_holes);
}
