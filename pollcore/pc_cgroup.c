/*
 * The cgroup CPU quota, for the spin (pc_spin.c): a container held to 1 CPU has 1 to spare,
 * whatever the affinity mask says. cgroup v2 and v1, the tightest level binding.
 *
 * Where the hierarchies are comes from mountinfo, not from a fixed /sys/fs/cgroup: a hybrid
 * machine mounts v2 at /sys/fs/cgroup/unified, a v1 hierarchy may be mounted under any name,
 * and a container may see only its own part of a hierarchy (a mount whose root is not "/").
 */
#include "pc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Opens DIR/NAME for reading: the fd, or -errno. */
static int pc_open_in(const char *dir, const char *name)
{
	char path[PATH_MAX];
	int fd, n = snprintf(path, sizeof(path), "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* DIR/NAME's text into BUF; false if it cannot be read. */
static bool pc_read_text(const char *dir, const char *name, char *buf, size_t size)
{
	int fd = pc_open_in(dir, name);
	ssize_t len;

	if (fd < 0)
		return false;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len < 0)
		return false;
	buf[len] = '\0';
	return true;
}

typedef void pc_line_fn(char *line, void *arg);

/* Hands each line of the file FD to EACH, without its newline. Read in pieces (mountinfo runs
 * to hundreds of lines on a container host), without allocating: a line longer than the
 * buffer is skipped, since no line we look for is that long. 0, or -errno. */
static int pc_each_line(int fd, pc_line_fn *each, void *arg)
{
	char buf[4096], *line, *nl;
	size_t have = 0;
	bool overlong = false;

	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		have += (size_t)n;
		for (line = buf; (nl = memchr(line, '\n', have - (size_t)(line - buf)));
		     line = nl + 1) {
			*nl = '\0';
			if (!overlong)
				each(line, arg);
			overlong = false;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			overlong = true, have = 0;
	}
	buf[have] = '\0';
	if (have && !overlong)
		each(buf, arg);
	return 0;
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
 * its parent's quota, so the smallest one binds. PATH is "" or starts with '/'. */
static long pc_tree_cpus(const char *base, const char *path, bool v2)
{
	char dir[PATH_MAX];
	size_t base_len = strlen(base);
	int n = snprintf(dir, sizeof(dir), "%s%s", base, path);
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

/* Whether a comma-separated list ("cpu,cpuacct", or a mount's "rw,cpu") names the cpu
 * controller. */
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

/* What a quota read gathers: this process's place in each hierarchy (from its cgroup file),
 * then the tightest quota of the mounts that show it (from mountinfo). */
struct pc_cg_scan {
	char v2[PATH_MAX]; /* "/a/b" of "0::/a/b"; "" when there is no such line */
	char v1[PATH_MAX]; /* the path in the v1 hierarchy that holds cpu; "" when none */
	long cpus;
};

/* Copies PATH into TO, unless it is too long to be a path. */
static void pc_keep_path(char *to, const char *path)
{
	size_t len = strlen(path);

	if (len < PATH_MAX)
		memcpy(to, path, len + 1);
}

/* One cgroup file line, "0::/PATH" (v2) or "N:CONTROLLERS:/PATH" (v1). */
static void pc_cgroup_line(char *line, void *arg)
{
	struct pc_cg_scan *scan = arg;
	char *ctl = strchr(line, ':'), *path;

	path = ctl ? strchr(ctl + 1, ':') : NULL;
	if (!path || path[1] != '/')
		return;
	ctl++, path++;
	if (path - 1 == ctl) {
		if (line + 1 == ctl - 1 && line[0] == '0')
			pc_keep_path(scan->v2, path);
	} else if (pc_lists_cpu(ctl, (size_t)(path - 1 - ctl))) {
		pc_keep_path(scan->v1, path);
	}
}

/* Undoes mountinfo's octal escapes ("\040" for a space) in place. */
static void pc_unescape(char *s)
{
	char *to = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*to++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*to++ = *s;
		}
	}
	*to = '\0';
}

/* PATH's part below a mount's ROOT ("/a/b" below "/a" is "/b", the mount's top is ""), or
 * NULL when the mount shows another part of the hierarchy. */
static const char *pc_below(const char *root, const char *path)
{
	size_t n = strlen(root);

	if (!strcmp(root, "/"))
		return strcmp(path, "/") ? path : "";
	if (strncmp(path, root, n) || (path[n] && path[n] != '/'))
		return NULL;
	return path + n;
}

enum { PC_MOUNT_FIELDS = 32 };

/* Splits LINE at spaces into up to PC_MOUNT_FIELDS fields; how many. */
static int pc_fields(char *line, char **field)
{
	char *save;
	int n = 0;

	for (char *tok = strtok_r(line, " ", &save); tok && n < PC_MOUNT_FIELDS;
	     tok = strtok_r(NULL, " ", &save))
		field[n++] = tok;
	return n;
}

/* One mountinfo line, "ID PARENT DEV ROOT POINT OPTS [TAGS...] - TYPE SOURCE SUPEROPTS": a
 * cgroup2 mount, or a cgroup (v1) mount of the hierarchy holding cpu, that shows this
 * process's group counts its quota. */
static void pc_mount_line(char *line, void *arg)
{
	struct pc_cg_scan *scan = arg;
	char *f[PC_MOUNT_FIELDS], *type, *super;
	const char *path, *rel;
	int n = pc_fields(line, f), dash = 6;

	while (dash < n && strcmp(f[dash], "-"))
		dash++;
	if (dash + 3 >= n)
		return;
	type = f[dash + 1], super = f[dash + 3];
	if (!strcmp(type, "cgroup2"))
		path = scan->v2;
	else if (!strcmp(type, "cgroup") && pc_lists_cpu(super, strlen(super)))
		path = scan->v1;
	else
		return;
	if (!path[0])
		return;
	pc_unescape(f[3]);
	pc_unescape(f[4]);
	rel = pc_below(f[3], path);
	if (rel)
		scan->cpus = pc_min_cpus(scan->cpus, pc_tree_cpus(f[4], rel, path == scan->v2));
}

/* Runs EACH over every line of DIR/NAME: 0, or -errno. */
static int pc_scan_file(const char *dir, const char *name, pc_line_fn *each, void *arg)
{
	int err, fd = pc_open_in(dir, name);

	if (fd < 0)
		return fd;
	err = pc_each_line(fd, each, arg);
	close(fd);
	return err;
}

long pc_cgroup_cpus_at(const char *proc)
{
	struct pc_cg_scan scan = {.cpus = 0};
	int err = pc_scan_file(proc, "cgroup", pc_cgroup_line, &scan);

	if (!err)
		err = pc_scan_file(proc, "mountinfo", pc_mount_line, &scan);
	return err ? err : scan.cpus;
}

long pc_self_cgroup_cpus(void)
{
	/* this thread's cgroups first: v1 may place a process's threads apart */
	long cpus = pc_cgroup_cpus_at("/proc/thread-self");

	if (cpus < 0)
		cpus = pc_cgroup_cpus_at("/proc/self");
	return cpus < 0 ? 0 : cpus;
}
