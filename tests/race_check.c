/*
 * cfs-race-check — the check-then-use of a program that trusts what it checked, and whether
 * the use landed on a planted target. tests/mount_race.sh swaps a directory on the path for
 * a link between the check and the use. Prints one line: "planted", "original", or
 * "error STEP: why" (exit 2).
 *
 *   cfs-race-check PATH PLANTED          lstat(PATH), then open(PATH): planted when the file
 *                                        opened is PLANTED (same device and inode)
 *   cfs-race-check chown PATH PLANTED    stat(PATH), then chown(PATH) to a uid neither file
 *                                        has: planted when PLANTED's owner changed
 *   cfs-race-check mkdir-p PATH PLANTED  mkdir -p PATH as coreutils' does it, component by
 *                                        component (mkdir; on EEXIST, stat: a directory?):
 *                                        planted when PATH's last name appeared in PLANTED
 *                                        (a directory), which is then removed again
 *
 * PATH "-": one run for each line of standard input (a path), one after the other in this
 * process, a line of output each, exit status 0: a hundred runs cost one program start.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *step)
{
	printf("error %s: %s\n", step, strerror(errno));
	return 2;
}

static int verdict(int planted)
{
	puts(planted ? "planted" : "original");
	return 0;
}

/* lstat, then open */
static int race_open(const char *path, const char *planted_path)
{
	struct stat checked, used, planted;
	int fd;

	/* the check: a regular file, not a link */
	if (lstat(path, &checked) != 0)
		return fail("lstat");
	if (!S_ISREG(checked.st_mode)) {
		printf("error lstat: not a regular file\n");
		return 2;
	}
	/* the use, trusting the check */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("open");
	if (fstat(fd, &used) != 0)
		return fail("fstat");
	close(fd);
	if (stat(planted_path, &planted) != 0)
		return fail("stat of the planted file");
	return verdict(used.st_dev == planted.st_dev && used.st_ino == planted.st_ino);
}

/* stat, then chown */
static int race_chown(const char *path, const char *planted_path)
{
	struct stat checked, planted;
	uid_t uid;

	if (stat(planted_path, &planted) != 0)
		return fail("stat of the planted file");
	/* the check, as chown -R's walk makes it: a regular file */
	if (stat(path, &checked) != 0)
		return fail("stat");
	if (!S_ISREG(checked.st_mode)) {
		printf("error stat: not a regular file\n");
		return 2;
	}
	/* an owner neither file has, so that a change on either one shows */
	for (uid = 1000; uid == planted.st_uid || uid == checked.st_uid; uid++)
		;
	if (chown(path, uid, (gid_t)-1) != 0)
		return fail("chown");
	if (stat(planted_path, &planted) != 0)
		return fail("stat of the planted file");
	return verdict(planted.st_uid == uid);
}

/* mkdir -p: each component made, or checked to be a directory when it exists */
static int race_mkdir_p(const char *path, const char *planted_path)
{
	char prefix[4096], made[4096];
	const char *last = strrchr(path, '/');
	struct stat st;
	size_t n = strlen(path);

	if (n >= sizeof(prefix) || !last || !last[1]) {
		printf("error usage: PATH must be absolute with a last name\n");
		return 2;
	}
	for (size_t at = 1; at <= n; at++) {
		if (at < n && path[at] != '/')
			continue;
		memcpy(prefix, path, at);
		prefix[at] = '\0';
		if (mkdir(prefix, 0755) == 0)
			continue;
		if (errno != EEXIST)
			return fail("mkdir");
		/* the check: it exists; is it a directory? */
		if (stat(prefix, &st) != 0)
			return fail("stat");
		if (!S_ISDIR(st.st_mode)) {
			printf("error stat: %s is not a directory\n", prefix);
			return 2;
		}
	}
	if (snprintf(made, sizeof(made), "%s%s", planted_path, last) >= (int)sizeof(made)) {
		printf("error usage: PLANTED too long\n");
		return 2;
	}
	if (lstat(made, &st) != 0)
		return errno == ENOENT ? verdict(0) : fail("lstat in the planted directory");
	if (rmdir(made) != 0) /* the next run starts with the planted directory as it was */
		return fail("rmdir in the planted directory");
	return verdict(1);
}

typedef int race_fn(const char *path, const char *planted_path);

/* a run for each line of standard input */
static int each_line(race_fn *run, const char *planted_path)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		run(line, planted_path);
	}
	free(line);
	return 0;
}

int main(int argc, char **argv)
{
	race_fn *run = NULL;

	if (argc == 3)
		run = race_open;
	else if (argc == 4 && !strcmp(argv[1], "chown"))
		run = race_chown;
	else if (argc == 4 && !strcmp(argv[1], "mkdir-p"))
		run = race_mkdir_p;
	if (!run) {
		fprintf(stderr, "usage: cfs-race-check [chown|mkdir-p] PATH|- PLANTED\n");
		return 2;
	}
	if (!strcmp(argv[argc - 2], "-"))
		return each_line(run, argv[argc - 1]);
	return run(argv[argc - 2], argv[argc - 1]);
}
