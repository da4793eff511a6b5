/*
 * bench_chains: the cost of following serial symlink chains through a mounted tree.
 *
 *   bench_chains stat|cat ROOT N:K [N:K...]
 *
 * For each N:K, ROOT/cN/k0 .. ROOT/cN/k{K-1} are K distinct chains of N links each (made by
 * bench/chains/run.sh with `chain /cN/kI N ../target`). Two passes run over them:
 *   cold  every chain once, in order: on a fresh mount none of them is in the kernel's dentry
 *         cache, so every call reaches the daemon (distinct chains, not a dropped cache);
 *   warm  the same chains again at once: what the kernel's caches make of it.
 * stat: stat() (follows the chain, like stat -L). cat: open(O_RDONLY) + read(4096) + close.
 *
 * One line per pass on stdout:
 *   op N K pass ok errors wall_ns cpu_ns first_errno
 * wall_ns: CLOCK_MONOTONIC over the pass (the calls sleep while the daemon works);
 * first_errno: the first failure's errno name, or "-".
 * cpu_ns: this thread's CPU time (user + system) over the pass.
 */
#include "errname.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned long long clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* The first error's name for the table: "-" for none, else errname.h's, else errno<number>. */
static const char *errname(int e)
{
	static char buf[16];
	const char *name = cfs_errno_name(e);

	if (!e)
		return "-";
	if (name)
		return name;
	snprintf(buf, sizeof(buf), "errno%d", e);
	return buf;
}

static int one(const char *op, const char *path)
{
	char buf[4096];
	struct stat st;

	if (op[0] == 's')
		return stat(path, &st) == 0 ? 0 : errno;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno;
	ssize_t n = read(fd, buf, sizeof(buf));
	int err = n < 0 ? errno : 0;
	close(fd);
	return err;
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "stat") != 0 && strcmp(argv[1], "cat") != 0)) {
		fprintf(stderr, "usage: bench_chains stat|cat ROOT N:K [N:K...]\n");
		return 2;
	}
	const char *op = argv[1], *root = argv[2];

	for (int a = 3; a < argc; a++) {
		unsigned long n, k;
		char path[4096];

		if (sscanf(argv[a], "%lu:%lu", &n, &k) != 2 || k == 0) {
			fprintf(stderr, "bench_chains: bad N:K '%s'\n", argv[a]);
			return 2;
		}
		for (int pass = 0; pass < 2; pass++) {
			unsigned long ok = 0, errs = 0;
			int first = 0;
			unsigned long long w0 = clock_ns(CLOCK_MONOTONIC);
			unsigned long long c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

			for (unsigned long i = 0; i < k; i++) {
				snprintf(path, sizeof(path), "%s/c%lu/k%lu", root, n, i);
				int err = one(op, path);
				if (err) {
					errs++;
					if (!first)
						first = err;
				} else {
					ok++;
				}
			}
			unsigned long long c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			unsigned long long w1 = clock_ns(CLOCK_MONOTONIC);
			printf("%s %lu %lu %s %lu %lu %llu %llu %s\n", op, n, k,
			       pass ? "warm" : "cold", ok, errs, w1 - w0, c1 - c0, errname(first));
			fflush(stdout);
		}
	}
	return 0;
}
