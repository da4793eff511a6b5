/*
 * A host path and the mount it is on (chainfsctl_mount.h): mountinfo's mount points against
 * the canonical path, as findmnt -T does, and a host path under a mount turned into its path
 * in the mount's tree.
 */
#include "chainfsctl_mount.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many bytes of REAL the mount point POINT holds (0: none): "/" holds every path, any
 * other point itself and what lies below it. */
static size_t mount_holds(const char *point, const char *real)
{
	size_t n = strlen(point);

	if (strcmp(point, "/") == 0)
		return 1;
	return strncmp(real, point, n) == 0 && (real[n] == '\0' || real[n] == '/') ? n : 0;
}

/* One mountinfo line's mount point (\ooo escapes undone; g_free()) and type, or NULL:
 * "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER". */
static gchar *mountinfo_point(const char *line, char *type, size_t size)
{
	gchar **f = g_strsplit(line, " ", -1);
	gchar *point = NULL;
	guint n = g_strv_length(f), k = 6;

	while (k < n && strcmp(f[k], "-") != 0)
		k++;
	if (n > 4 && k + 1 < n) {
		point = g_strcompress(f[4]);
		g_strlcpy(type, f[k + 1], size);
	}
	g_strfreev(f);
	return point;
}

int cfs_mount_of(const char *path, char **mnt, char *type, size_t size)
{
	char *real = realpath(path, NULL), *line = NULL;
	size_t cap = 0, best = 0;
	FILE *f;
	int err = 0;

	*mnt = NULL;
	if (!real)
		return -errno;
	if (!(f = fopen("/proc/self/mountinfo", "re"))) {
		err = -errno;
		goto out;
	}
	while (getline(&line, &cap, f) > 0) {
		char t[CFS_FSTYPE_MAX];
		gchar *point = mountinfo_point(line, t, sizeof(t));
		size_t n = point ? mount_holds(point, real) : 0;

		if (n && n >= best) { /* a later line of the same point is mounted over it */
			best = n;
			g_free(*mnt);
			*mnt = point;
			g_strlcpy(type, t, size);
		} else {
			g_free(point);
		}
	}
	fclose(f);
	free(line);
	if (!*mnt)
		err = -ENOENT; /* no mountinfo line holds "/": not a Linux /proc we know */
out:
	free(real);
	return err;
}

int cfs_tree_path_of(const char *root, const char *host, char **tree, char **host_part)
{
	size_t rlen = strlen(root);
	const char *p = host;

	*tree = NULL;
	if (host_part)
		*host_part = NULL;
	while (*p) { /* one leading part longer each time: /a, /a/b, ... */
		p += strspn(p, "/");
		p += strcspn(p, "/");
		gchar *part = g_strndup(host, (gsize)(p - host));
		char *real = realpath(part, NULL);

		if (!real) {
			g_free(part);
			break;
		}
		if (host_part) {
			g_free(*host_part);
			*host_part = part;
		} else {
			g_free(part);
		}
		if (mount_holds(root, real)) {
			const char *in = rlen == 1 ? real : real + rlen;
			*tree = *in || *p ? g_strconcat(in, p, NULL) : g_strdup("/");
			free(real);
			return 1;
		}
		free(real);
	}
	return 0;
}
