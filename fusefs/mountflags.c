/*
 * nosuid and nodev, however chainfs is started. Anyone who can write to a mount (with
 * allow_other: any user) can make a set-uid file or a device node on it; on a suid,dev mount
 * the first runs with its owner's rights and the second opens the host's device. So chainfs
 * mounts nosuid,nodev unless its command line says "suid" or "dev" in so many words.
 *
 * As root, libfuse mounts with the flags its options give, nosuid,nodev when none do. But
 * mount.fuse3, which `mount -t fuse` and fstab run, appends "dev" and "suid" to every option
 * list it passes on unless it was told nodev or nosuid (and mount(8) has already dropped a
 * user's own "suid" or "dev" as defaults). Those words are the helper's, not the user's, so
 * when mount.fuse3 started us they do not count.
 *
 * And before mounting: is the mount point one already (/proc/self/mountinfo)?
 */
#include "mountflags.h"

#include <errno.h>
#include <glib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* mount.fuse3's quoting of one word for sh -c: in single quotes, a ' as '\''. */
static void cfs_sh_quote(GString *cmd, const char *word)
{
	if (cmd->len)
		g_string_append_c(cmd, ' ');
	g_string_append_c(cmd, '\'');
	for (; *word; word++) {
		if (*word == '\'')
			g_string_append(cmd, "'\\''");
		else
			g_string_append_c(cmd, *word);
	}
	g_string_append_c(cmd, '\'');
}

/* Was this process started by mount.fuse3? It runs `/bin/sh -c CMD`, CMD being its own
 * quoting of the program, source, mountpoint, "-o" and options: that shell is our parent, and
 * CMD quotes our argv word for word. A shell that execs its last command instead leaves
 * mount(8) (which runs mount.fuse3) as our parent. */
static bool cfs_by_mount_fuse(int argc, char *argv[])
{
	char path[64], exe[4096];
	gchar *ps = NULL;
	gsize len = 0;
	bool yes = false;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)getppid());
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		const char *base = strrchr(exe, '/');
		if (strcmp(base ? base + 1 : exe, "mount") == 0)
			return true;
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)getppid());
	if (!g_file_get_contents(path, &ps, &len, NULL))
		return false;
	/* "SHELL\0-c\0CMD\0", nothing after */
	const char *c = memchr(ps, '\0', len);
	if (c && (size_t)(c - ps) + 4 < len && strcmp(c + 1, "-c") == 0) {
		const char *cmd = c + 4;
		GString *want = g_string_new(NULL);
		for (int i = 0; i < argc; i++)
			cfs_sh_quote(want, argv[i]);
		yes = strlen(cmd) + 1 == len - (size_t)(cmd - ps) && strcmp(cmd, want->str) == 0;
		g_string_free(want, TRUE);
	}
	g_free(ps);
	return yes;
}

static bool cfs_has_word(char **words, size_t n, const char *w)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(words[i], w) == 0)
			return true;
	return false;
}

/* How many words at the end of WORDS (N of them) mount.fuse3 added: "suid" unless the list
 * before it says nosuid, and before that "dev" unless it says nodev. */
static size_t cfs_helper_words(char **words, size_t n)
{
	size_t k = n;

	if (k && strcmp(words[k - 1], "suid") == 0 && !cfs_has_word(words, k - 1, "nosuid"))
		k--;
	if (k && strcmp(words[k - 1], "dev") == 0 && !cfs_has_word(words, k - 1, "nodev"))
		k--;
	return n - k;
}

/* The words of one -o LIST (without those mount.fuse3 added, when HELPER) that turn suid
 * and dev on or off; the last word of a pair wins, as in libfuse. */
static void cfs_scan_list(const char *list, bool helper, bool *suid, bool *dev)
{
	char **words = g_strsplit(list, ",", -1);
	size_t n = g_strv_length(words);

	if (helper)
		n -= cfs_helper_words(words, n);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(words[i], "suid") == 0 || strcmp(words[i], "nosuid") == 0)
			*suid = words[i][0] == 's';
		else if (strcmp(words[i], "dev") == 0 || strcmp(words[i], "nodev") == 0)
			*dev = words[i][0] == 'd';
	}
	g_strfreev(words);
}

int cfs_mount_flags(struct fuse_args *args, int argc, char *argv[])
{
	/* mount.fuse3's list is the last word, after "-o" */
	bool helper =
	    argc >= 3 && strcmp(argv[argc - 2], "-o") == 0 && cfs_by_mount_fuse(argc, argv);
	bool suid = false, dev = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			i++;
			cfs_scan_list(argv[i], helper && i == argc - 1, &suid, &dev);
		} else if (strncmp(argv[i], "-o", 2) == 0) {
			cfs_scan_list(argv[i] + 2, false, &suid, &dev);
		}
	}
	if ((!suid && fuse_opt_add_arg(args, "-onosuid")) ||
	    (!dev && fuse_opt_add_arg(args, "-onodev")))
		return -ENOMEM;
	return 0;
}

/* /proc/self/mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo. */
static void cfs_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

int cfs_is_mountpoint(const char *path)
{
	char *real = realpath(path, NULL), *line = NULL;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	if (!real)
		return -errno;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		free(real);
		return -errno;
	}
	while (!found && getline(&line, &cap, f) > 0) {
		char mnt[4096];
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		cfs_unescape(mnt);
		found = strcmp(mnt, real) == 0;
	}
	free(line);
	fclose(f);
	free(real);
	return found;
}
