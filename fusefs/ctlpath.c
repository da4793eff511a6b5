#include "ctlpath.h"

#include <errno.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t cfs_fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void cfs_runtime_dir(char *out, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (xdg && *xdg)
		snprintf(out, size, "%s/chainfs", xdg);
	else if (getuid() == 0)
		snprintf(out, size, "/run/chainfs");
	else
		snprintf(out, size, "/tmp/chainfs-%u", (unsigned)getuid());
}

/* DIR, made if missing, must be ours alone: in /tmp anybody may make it first, then read
 * or replace the socket clients talk to (as ssh-agent and tmux check their own). */
static int cfs_private_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

int cfs_ctl_default_path(const char *mountpoint, char *out, size_t size, int make_dir)
{
	char dir[CFS_SUN_PATH_MAX], *real = realpath(mountpoint, NULL), *copy;
	int n;

	if (!real)
		return -errno;
	copy = strdup(real);
	if (!copy) {
		free(real);
		return -ENOMEM;
	}
	cfs_runtime_dir(dir, sizeof(dir));
	n = snprintf(out, size, "%s/%.32s-%016llx.sock", dir, basename(copy),
		     (unsigned long long)cfs_fnv1a(real));
	free(copy);
	free(real);
	if (n < 0 || (size_t)n >= size || n >= CFS_SUN_PATH_MAX)
		return -ENAMETOOLONG;
	return make_dir ? cfs_private_dir(dir) : 0;
}
