/*
 * cfs-fsops DIR < SCRIPT — run a script of file operations under DIR, one per line, and print
 * each line followed by " => " and its outcome: "ok", "ok" plus what stat found, or the
 * errno's name. tests/mount_types.sh runs the same script on tmpfs and on chainfs, as root
 * and as another uid, and compares the outputs line by line.
 *
 *   lstat P | stat P           ok TYPE MODE UID GID NLINK SIZE MAJOR:MINOR
 *   mkdir P MODE | creat P MODE | mkfifo P MODE | symlink TARGET P | link OLD NEW
 *   mknod P p|s|c|b MODE [MAJOR MINOR]
 *   bind P                     a unix socket bound at P (the node stays, the socket goes)
 *   connect P                  bind, listen, connect through P, one byte across
 *   pipe P                     a child writes one byte into fifo P, we read it
 *   rename OLD NEW [noreplace|exchange] | unlink P | rmdir P
 *   chmod P MODE | chown P UID GID | lchown P UID GID
 *   keepown P                  lchown(P, -1, -1), which sets nothing: "ok ctime moved" or
 *                              "ok ctime kept" (the clock is let pass P's ctime first)
 *   touch P                    utimensat(P, NULL): "now", which write permission allows
 *   settime P SEC              explicit times, which only the owner may set
 *   open P FLAGS [MODE]        FLAGS: r w rw creat excl trunc (always non-blocking)
 *   write P DATA | truncate P SIZE
 *
 * Lines starting with '#' are echoed as they are. Paths are relative to DIR; the umask is
 * 022 whoever runs it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { FSOPS_MAX_WORDS = 8, FSOPS_WAIT_S = 5 };

static int fail(void)
{
	const char *name = strerrorname_np(errno);

	if (name)
		printf("%s\n", name);
	else
		printf("E%d\n", errno);
	return 1;
}

static int done(int rc)
{
	if (rc < 0)
		return fail();
	printf("ok\n");
	return 0;
}

static const char *type_of(mode_t m)
{
	static const struct {
		mode_t type;
		const char *name;
	} types[] = {{S_IFREG, "reg"},	 {S_IFDIR, "dir"}, {S_IFLNK, "lnk"}, {S_IFIFO, "fifo"},
		     {S_IFSOCK, "sock"}, {S_IFCHR, "chr"}, {S_IFBLK, "blk"}};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((m & S_IFMT) == types[i].type)
			return types[i].name;
	return "?";
}

static int do_stat(const char *p, int follow)
{
	struct stat st;

	if ((follow ? stat(p, &st) : lstat(p, &st)) != 0)
		return fail();
	printf("ok %s %04o %u %u %lu %lld %u:%u\n", type_of(st.st_mode),
	       (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid,
	       (unsigned long)st.st_nlink, (long long)st.st_size, major(st.st_rdev),
	       minor(st.st_rdev));
	return 0;
}

static mode_t octal(const char *s)
{
	return s ? (mode_t)strtoul(s, NULL, 8) : 0644;
}

static int do_mknod(char **w, int n)
{
	static const struct {
		char c;
		mode_t type;
	} kinds[] = {{'p', S_IFIFO}, {'s', S_IFSOCK}, {'c', S_IFCHR}, {'b', S_IFBLK}};
	mode_t type = 0;
	dev_t dev = 0;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (w[2][0] == kinds[i].c)
			type = kinds[i].type;
	if (n >= 6)
		dev = makedev(strtoul(w[4], NULL, 10), strtoul(w[5], NULL, 10));
	return done(mknod(w[1], type | octal(w[3]), dev));
}

static int unix_socket_at(const char *p, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(p) >= sizeof(sa->sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa->sun_path, p);
	return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static int do_bind(const char *p)
{
	struct sockaddr_un sa;
	int s = unix_socket_at(p, &sa), rc;

	if (s < 0)
		return fail();
	rc = bind(s, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	close(s);
	errno = e;
	return done(rc);
}

/* A listener bound at P and a client connected through the path: one byte each way proves
 * the kernel found the listening socket by the node the mount gave it. */
static int do_connect(const char *p)
{
	struct sockaddr_un sa;
	int l = unix_socket_at(p, &sa), c = -1, a = -1, rc = -1;
	char b = 'x';

	if (l < 0)
		return fail();
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 1) == 0 &&
	    (c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 &&
	    connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    (a = accept(l, NULL, NULL)) >= 0 && write(c, "y", 1) == 1 && read(a, &b, 1) == 1)
		rc = b == 'y' ? 0 : (errno = EIO, -1);
	int e = errno;
	close(l);
	if (c >= 0)
		close(c);
	if (a >= 0)
		close(a);
	errno = e;
	return done(rc);
}

/* Two processes meet at fifo P: the child writes, we read. Both opens block until the
 * other end comes, which is the kernel's pipe, not the filesystem. */
static int do_pipe(const char *p)
{
	pid_t pid = fork();
	char b = 0;
	int fd, status, rc = -1;

	if (pid < 0)
		return fail();
	if (pid == 0) {
		alarm(FSOPS_WAIT_S);
		fd = open(p, O_WRONLY | O_CLOEXEC);
		_exit(fd >= 0 && write(fd, "z", 1) == 1 ? 0 : 1);
	}
	alarm(FSOPS_WAIT_S);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		rc = read(fd, &b, 1) == 1 && b == 'z' ? 0 : (errno = EIO, -1);
		close(fd);
	}
	int e = errno;
	alarm(0);
	if (fd < 0)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		rc = -1, e = EIO;
	errno = e;
	return done(rc);
}

static int open_flags(const char *s)
{
	static const struct {
		const char *word;
		int flag;
	} words[] = {{"r", O_RDONLY},	 {"w", O_WRONLY},  {"rw", O_RDWR},
		     {"creat", O_CREAT}, {"excl", O_EXCL}, {"trunc", O_TRUNC}};
	char *copy = strdup(s), *save = NULL;
	int flags = O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			if (strcmp(w, words[i].word) == 0)
				flags |= words[i].flag;
	free(copy);
	return flags;
}

static int do_open(const char *p, const char *flags, const char *mode)
{
	int fd = open(p, open_flags(flags), octal(mode));

	if (fd >= 0)
		close(fd);
	return done(fd < 0 ? -1 : 0);
}

static int do_write(const char *p, const char *data)
{
	int fd = open(p, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), rc = -1;

	if (fd < 0)
		return fail();
	if (write(fd, data, strlen(data)) == (ssize_t)strlen(data))
		rc = 0;
	int e = errno;
	close(fd);
	errno = e;
	return done(rc);
}

static int do_settime(const char *p, const char *sec)
{
	struct timespec ts[2] = {{atol(sec), 0}, {atol(sec), 0}};

	return done(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW));
}

static bool ts_after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec : a->tv_nsec > b->tv_nsec;
}

/* A change that sets nothing still marks one on tmpfs: ctime moves. tmpfs stamps with the
 * coarse clock, which may still show P's ctime: it is let pass it first, so a move shows. */
static int do_keepown(const char *p)
{
	struct stat before, after;
	struct timespec now;

	if (lstat(p, &before) < 0)
		return fail();
	for (int ms = 0;; ms++) {
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		if (ts_after(&now, &before.st_ctim))
			break;
		if (ms > FSOPS_WAIT_S * 1000) {
			printf("the clock did not pass the ctime in %d s\n", FSOPS_WAIT_S);
			return 1;
		}
		usleep(1000);
	}
	if (lchown(p, (uid_t)-1, (gid_t)-1) < 0 || lstat(p, &after) < 0)
		return fail();
	printf("ok ctime %s\n", ts_after(&after.st_ctim, &before.st_ctim) ? "moved" : "kept");
	return 0;
}

static int do_rename(char **w, int n)
{
	unsigned flags = 0;

	if (n > 3 && strcmp(w[3], "noreplace") == 0)
		flags = RENAME_NOREPLACE;
	else if (n > 3 && strcmp(w[3], "exchange") == 0)
		flags = RENAME_EXCHANGE;
	return done(renameat2(AT_FDCWD, w[1], AT_FDCWD, w[2], flags));
}

/* One operation: W[0] is its name, N words in all (checked by the table). */
static int run(char **w, int n)
{
	const char *op = w[0];

	if (!strcmp(op, "lstat") || !strcmp(op, "stat"))
		return do_stat(w[1], op[0] == 's');
	if (!strcmp(op, "mkdir"))
		return done(mkdir(w[1], octal(w[2])));
	if (!strcmp(op, "creat"))
		return do_open(w[1], "w,creat,excl", w[2]);
	if (!strcmp(op, "mkfifo"))
		return done(mkfifo(w[1], octal(w[2])));
	if (!strcmp(op, "mknod"))
		return do_mknod(w, n);
	if (!strcmp(op, "bind"))
		return do_bind(w[1]);
	if (!strcmp(op, "connect"))
		return do_connect(w[1]);
	if (!strcmp(op, "pipe"))
		return do_pipe(w[1]);
	if (!strcmp(op, "symlink"))
		return done(symlink(w[1], w[2]));
	if (!strcmp(op, "link"))
		return done(link(w[1], w[2]));
	if (!strcmp(op, "rename"))
		return do_rename(w, n);
	if (!strcmp(op, "unlink"))
		return done(unlink(w[1]));
	if (!strcmp(op, "rmdir"))
		return done(rmdir(w[1]));
	if (!strcmp(op, "chmod"))
		return done(chmod(w[1], octal(w[2])));
	if (!strcmp(op, "chown") || !strcmp(op, "lchown"))
		return done(
		    (op[0] == 'c' ? chown : lchown)(w[1], (uid_t)atol(w[2]), (gid_t)atol(w[3])));
	if (!strcmp(op, "keepown"))
		return do_keepown(w[1]);
	if (!strcmp(op, "touch"))
		return done(utimensat(AT_FDCWD, w[1], NULL, 0));
	if (!strcmp(op, "settime"))
		return do_settime(w[1], w[2]);
	if (!strcmp(op, "open"))
		return do_open(w[1], w[2], n > 3 ? w[3] : NULL);
	if (!strcmp(op, "write"))
		return do_write(w[1], w[2]);
	if (!strcmp(op, "truncate"))
		return done(truncate(w[1], atol(w[2])));
	printf("unknown operation\n");
	return 2;
}

/* Words each operation needs at least (its name included). */
static int min_words(const char *op)
{
	static const struct {
		const char *op;
		int words;
	} need[] = {{"lstat", 2}, {"stat", 2},	 {"mkdir", 3},	 {"creat", 3}, {"mkfifo", 3},
		    {"mknod", 4}, {"bind", 2},	 {"connect", 2}, {"pipe", 2},  {"symlink", 3},
		    {"link", 3},  {"rename", 3}, {"unlink", 2},	 {"rmdir", 2}, {"chmod", 3},
		    {"chown", 4}, {"lchown", 4}, {"keepown", 2}, {"touch", 2}, {"settime", 3},
		    {"open", 3},  {"write", 3},	 {"truncate", 3}};

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!strcmp(op, need[i].op))
			return need[i].words;
	return 1;
}

int main(int argc, char *argv[])
{
	char line[4096];
	int bad = 0;

	if (argc != 2 || chdir(argv[1]) != 0) {
		fprintf(stderr, "usage: cfs-fsops DIR < SCRIPT\n");
		return 2;
	}
	umask(022);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char *w[FSOPS_MAX_WORDS], *save = NULL;
		int n = 0;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0') {
			printf("%s\n", line);
			continue;
		}
		printf("%s => ", line);
		for (char *s = strtok_r(line, " ", &save); s && n < FSOPS_MAX_WORDS;
		     s = strtok_r(NULL, " ", &save))
			w[n++] = s;
		if (n < min_words(w[0])) {
			printf("missing arguments\n");
			bad = 1;
			continue;
		}
		if (run(w, n) == 2)
			bad = 1;
	}
	return bad ? 2 : 0;
}
