/*
 * The cgroup CPU quota, for the spin (pc_spin.c): a container held to 1 CPU has 1 to spare,
 * whatever the affinity mask says. cgroup v2 and v1, the tightest level binding.
 */
#include "pc_int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* DIR/NAME's text into BUF; false if it cannot be read. */
static bool pc_read_text(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	int fd, n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	ssize_t len;

	if (n < 0 || (size_t)n >= sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len < 0)
		return false;
	buf[len] = '\0';
	return true;
}

/* QUOTA per PERIOD, in whole CPUs rounded up (a 1.5 CPU quota runs two threads at once);
 * 0 for no quota. */
static long pc_quota_cpus(long long quota, long long period)
{
	if (quota <= 0 || period <= 0)
		return 0;
	return (long)(quota / period + (quota % period != 0));
}

/* One cgroup directory's quota: v2 cpu.max ("max 100000" or "50000 100000"), v1
 * cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us. 0: none, or nothing readable. */
static long pc_dir_cpus(const char *dir, bool v2)
{
	char buf[64], end;
	long long quota, period;

	if (v2)
		return pc_read_text(dir, "cpu.max", buf, sizeof(buf)) &&
			       sscanf(buf, "%lld %lld %c", &quota, &period, &end) == 2
			   ? pc_quota_cpus(quota, period)
			   : 0;
	if (!pc_read_text(dir, "cpu.cfs_quota_us", buf, sizeof(buf)) ||
	    sscanf(buf, "%lld %c", &quota, &end) != 1)
		return 0;
	if (!pc_read_text(dir, "cpu.cfs_period_us", buf, sizeof(buf)) ||
	    sscanf(buf, "%lld %c", &period, &end) != 1)
		return 0;
	return pc_quota_cpus(quota, period);
}

/* The tightest quota of BASE/PATH and each ancestor up to BASE: a cgroup never gets more than
 * its parent's quota, so the smallest one binds. */
static long pc_tree_cpus(const char *base, const char *path, int path_len, bool v2)
{
	char dir[PATH_MAX];
	size_t base_len = strlen(base);
	int n = snprintf(dir, sizeof(dir), "%s%.*s", base, path_len, path);
	long cpus = 0;

	if (n < 0 || (size_t)n >= sizeof(dir))
		return 0;
	for (;;) {
		char *slash = strrchr(dir + base_len, '/');

		cpus = pc_min_cpus(cpus, pc_dir_cpus(dir, v2));
		if (!slash)
			return cpus;
		*slash = '\0';
	}
}

/* Whether a v1 controller list ("cpu,cpuacct") names the cpu controller. */
static bool pc_lists_cpu(const char *list, size_t len)
{
	while (len) {
		const char *comma = memchr(list, ',', len);
		size_t word = comma ? (size_t)(comma - list) : len;

		if (word == 3 && !memcmp(list, "cpu", 3))
			return true;
		len -= comma ? word + 1 : word;
		list += word + 1;
	}
	return false;
}

/* One /proc/self/cgroup line, "0::/PATH" (v2) or "N:CONTROLLERS:/PATH" (v1), without its
 * newline. A v1 hierarchy is mounted under its controller list ("cpu,cpuacct"), often with a
 * "cpu" link beside it; either will do. */
static long pc_line_cpus(const char *line, size_t len, const char *root)
{
	const char *end = line + len, *ctl = memchr(line, ':', len), *path;
	char base[PATH_MAX];
	int n;

	path = ctl ? memchr(ctl + 1, ':', (size_t)(end - ctl - 1)) : NULL;
	if (!path || path + 1 >= end || path[1] != '/')
		return 0;
	ctl++, path++;
	if (path - 1 == ctl)
		return line + 1 == ctl - 1 && line[0] == '0'
			   ? pc_tree_cpus(root, path, (int)(end - path), true)
			   : 0;
	if (!pc_lists_cpu(ctl, (size_t)(path - 1 - ctl)))
		return 0;
	n = snprintf(base, sizeof(base), "%s/%.*s", root, (int)(path - 1 - ctl), ctl);
	if (n < 0 || (size_t)n >= sizeof(base) || access(base, F_OK) != 0)
		n = snprintf(base, sizeof(base), "%s/cpu", root);
	if (n < 0 || (size_t)n >= sizeof(base))
		return 0;
	return pc_tree_cpus(base, path, (int)(end - path), false);
}

long pc_cgroup_cpus(const char *cgroup, const char *root)
{
	long cpus = 0;

	while (*cgroup) {
		const char *eol = strchrnul(cgroup, '\n');

		cpus = pc_min_cpus(cpus, pc_line_cpus(cgroup, (size_t)(eol - cgroup), root));
		cgroup = *eol ? eol + 1 : eol;
	}
	return cpus;
}

long pc_self_cgroup_cpus(void)
{
	char buf[4096];

	/* this thread's cgroups first: v1 may place a process's threads apart */
	if (pc_read_text("/proc/thread-self", "cgroup", buf, sizeof(buf)) ||
	    pc_read_text("/proc/self", "cgroup", buf, sizeof(buf)))
		return pc_cgroup_cpus(buf, "/sys/fs/cgroup");
	return 0;
}
