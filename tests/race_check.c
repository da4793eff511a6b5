/*
 * cfs-race-check PATH PLANTED — the check-then-use of a program that trusts what it checked:
 * lstat(PATH), then open(PATH), and whether the open landed on PLANTED (the same file, by
 * device and inode) or not. Prints one line: "planted", "original", or "error STEP: why"
 * (exit 2). tests/mount_race.sh swaps PATH's directory for a link between the two calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *step)
{
	printf("error %s: %s\n", step, strerror(errno));
	return 2;
}

int main(int argc, char **argv)
{
	struct stat checked, used, planted;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: cfs-race-check PATH PLANTED\n");
		return 2;
	}
	/* the check: a regular file, not a link */
	if (lstat(argv[1], &checked) != 0)
		return fail("lstat");
	if (!S_ISREG(checked.st_mode)) {
		printf("error lstat: not a regular file\n");
		return 2;
	}
	/* the use, trusting the check */
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("open");
	if (fstat(fd, &used) != 0)
		return fail("fstat");
	close(fd);
	if (stat(argv[2], &planted) != 0)
		return fail("stat of the planted file");
	puts(used.st_dev == planted.st_dev && used.st_ino == planted.st_ino ? "planted"
									    : "original");
	return 0;
}
