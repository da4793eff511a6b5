/*
 * cfs-probe OP ARGS... — make one system call and print its outcome as one line: "ok" plus
 * what it returned, or the errno's name. Integration tests compare these lines between a
 * chainfs mount and a kernel filesystem, so the format is the contract.
 *
 *   stat P | lstat P          ok <kind> <mode> <size> <nlink>
 *   ino P | lino P            ok <st_ino>
 *   readlink P                ok <target>
 *   open P FLAGS [MODE]       ok            FLAGS: r w rw creat excl trunc nofollow directory
 *   cat P                     ok <bytes>    (content to stdout only with -c)
 *   mkdir P MODE | rmdir P | unlink P | symlink TARGET P | link OLD NEW
 *   rename OLD NEW [noreplace|exchange] | chmod P MODE | truncate P SIZE | access P MODE
 *   getxattr P NAME
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* errno's name, as the C library spells it (glibc 2.32: strerrorname_np), else E<number> */
static int fail(void)
{
	int e = errno;
	const char *name = strerrorname_np(e);

	if (name)
		printf("%s\n", name);
	else
		printf("E%d\n", e);
	return 1;
}

static const char *kind(mode_t m)
{
	return S_ISDIR(m) ? "dir" : S_ISREG(m) ? "file" : S_ISLNK(m) ? "link" : "other";
}

static int do_stat(const char *p, int follow)
{
	struct stat st;

	if ((follow ? stat(p, &st) : lstat(p, &st)) != 0)
		return fail();
	printf("ok %s %04o %lld %lu\n", kind(st.st_mode), (unsigned)(st.st_mode & 07777),
	       (long long)(S_ISDIR(st.st_mode) ? 0 : st.st_size), (unsigned long)st.st_nlink);
	return 0;
}

static int do_ino(const char *p, int follow)
{
	struct stat st;

	if ((follow ? stat(p, &st) : lstat(p, &st)) != 0)
		return fail();
	printf("ok %llu\n", (unsigned long long)st.st_ino);
	return 0;
}

static int do_readlink(const char *p)
{
	char buf[8192];
	ssize_t n = readlink(p, buf, sizeof(buf) - 1);

	if (n < 0)
		return fail();
	buf[n] = '\0';
	printf("ok %s\n", buf);
	return 0;
}

static int open_flags(const char *s)
{
	static const struct {
		const char *word;
		int flag;
	} words[] = {{"r", O_RDONLY},	       {"w", O_WRONLY},
		     {"rw", O_RDWR},	       {"creat", O_CREAT},
		     {"excl", O_EXCL},	       {"trunc", O_TRUNC},
		     {"nofollow", O_NOFOLLOW}, {"directory", O_DIRECTORY},
		     {"append", O_APPEND},     {"path", O_PATH}};
	char *copy = strdup(s), *save = NULL;
	int flags = 0;

	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			if (strcmp(w, words[i].word) == 0)
				flags |= words[i].flag;
	free(copy);
	return flags;
}

static int do_open(const char *p, const char *flags, const char *mode)
{
	int fd = open(p, open_flags(flags), mode ? (mode_t)strtol(mode, NULL, 8) : 0644);

	if (fd < 0)
		return fail();
	close(fd);
	printf("ok\n");
	return 0;
}

static int do_cat(const char *p, int show)
{
	char buf[65536];
	long long total = 0;
	ssize_t n;
	int fd = open(p, O_RDONLY);

	if (fd < 0)
		return fail();
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (show)
			fwrite(buf, 1, (size_t)n, stdout);
		total += n;
	}
	if (n < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return fail();
	}
	close(fd);
	if (!show)
		printf("ok %lld\n", total);
	return 0;
}

static int do_rename(const char *a, const char *b, const char *how)
{
	unsigned flags = 0;

	if (how && strcmp(how, "noreplace") == 0)
		flags = RENAME_NOREPLACE;
	else if (how && strcmp(how, "exchange") == 0)
		flags = RENAME_EXCHANGE;
	if (renameat2(AT_FDCWD, a, AT_FDCWD, b, flags) != 0)
		return fail();
	printf("ok\n");
	return 0;
}

static int done(int rc)
{
	if (rc != 0)
		return fail();
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : NULL, *b = argc > 3 ? argv[3] : NULL;
	const char *c = argc > 4 ? argv[4] : NULL;

	if (!a)
		goto usage;
	if (!strcmp(op, "stat") || !strcmp(op, "lstat"))
		return do_stat(a, op[0] == 's');
	if (!strcmp(op, "ino") || !strcmp(op, "lino"))
		return do_ino(a, op[0] == 'i');
	if (!strcmp(op, "readlink"))
		return do_readlink(a);
	if (!strcmp(op, "cat"))
		return do_cat(a, 0);
	if (!strcmp(op, "-c"))
		return do_cat(a, 1);
	if (!strcmp(op, "rmdir"))
		return done(rmdir(a));
	if (!strcmp(op, "unlink"))
		return done(unlink(a));
	if (!b)
		goto usage;
	if (!strcmp(op, "open"))
		return do_open(a, b, c);
	if (!strcmp(op, "mkdir"))
		return done(mkdir(a, (mode_t)strtol(b, NULL, 8)));
	if (!strcmp(op, "symlink"))
		return done(symlink(a, b));
	if (!strcmp(op, "link"))
		return done(link(a, b));
	if (!strcmp(op, "rename"))
		return do_rename(a, b, c);
	if (!strcmp(op, "chmod"))
		return done(chmod(a, (mode_t)strtol(b, NULL, 8)));
	if (!strcmp(op, "truncate"))
		return done(truncate(a, strtoll(b, NULL, 10)));
	if (!strcmp(op, "getxattr")) {
		char v[256];
		return getxattr(a, b, v, sizeof(v)) < 0 ? fail() : (printf("ok\n"), 0);
	}
	if (!strcmp(op, "access"))
		return done(access(a, (int)strtol(b, NULL, 10)));
usage:
	fprintf(stderr, "usage: cfs-probe OP PATH [ARGS] (see tests/probe.c)\n");
	return 2;
}
