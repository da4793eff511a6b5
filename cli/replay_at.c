/*
 * A recorded request made again beneath MNT (replay_int.h). A recording names paths in the
 * mount it came from; joined to MNT as strings they could climb out of it ("/../../x"), and
 * even an honest one walks through links it made itself (server mode, `ln -s /var/tmp l;
 * echo > l/x` where the tree has /var/tmp, records a create of /l/x: on a tmpfs copy that
 * wrote the host's /var/tmp). So no path is ever handed to the kernel whole:
 *
 * - A recorded path must be what a recorder writes, /NAME/NAME... with no "", "." or ".."
 *   name; any other line is refused (REPLAY_NOT_BENEATH), not replayed.
 * - The kernel walks it from MNT's fd with openat2 RESOLVE_IN_ROOT: MNT is the walk's "/",
 *   so an absolute link names a place in MNT and a ".." stops at MNT, as chainfs itself
 *   resolves them (abslinks=inroot, server and collapse modes). The create above then makes
 *   MNT/var/tmp/x, as the recorded mount made its own var/tmp/x: the replay matches the
 *   recording, where RESOLVE_BENEATH would have refused an honest line. A walk the kernel
 *   still sees leaving (EXDEV: a rename raced it out) is refused (REPLAY_LEAVES).
 * - Operations on a name (lookup, readlink, and every change) open the name's directory
 *   that way and act on the last name with an *at call that does not follow it; operations
 *   on a node (open, a listing, access, statfs) open the node itself that way.
 */
#include "replay_int.h"

#include "record_kind.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
	REPLAY_RESOLVE = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	/* openat2 answers EAGAIN when a rename raced a ".." in the walk: try again a few times */
	REPLAY_RACE_TRIES = 8,
};

/* A file descriptor of REL in MNTFD's tree, or a negative errno (-EXDEV: it left). */
static int replay_open(int mntfd, const char *rel, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC), .resolve = REPLAY_RESOLVE};
	long fd = -1;

	for (int i = 0; i < REPLAY_RACE_TRIES; i++) {
		fd = syscall(SYS_openat2, mntfd, rel, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd >= 0 ? (int)fd : -errno;
}

int replay_at_probe(int mntfd)
{
	int fd = replay_open(mntfd, ".", O_PATH | O_DIRECTORY);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* P is "/" or "/NAME/NAME...", each NAME neither "." nor "..": what a recorder writes. */
static bool replay_canonical(const char *p)
{
	if (p[0] != '/')
		return false;
	if (!p[1])
		return true;
	for (const char *s = p + 1;; s++) {
		size_t n = strcspn(s, "/");
		if (!n || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n;
		if (!*s)
			return true;
	}
}

/* 0 with *DFD open on the directory holding P's last name, *NAME (the root's is "."),
 * beneath MNTFD; else what replay_at returns: an errno (ENOENT, ENAMETOOLONG...) or a
 * refusal. */
static int replay_parent(int mntfd, const char *p, int *dfd, const char **name)
{
	char dir[PATH_MAX];

	if (!replay_canonical(p))
		return REPLAY_NOT_BENEATH;
	const char *slash = strrchr(p, '/'); /* there is one: P starts with it */
	size_t n = (size_t)(slash - p);
	if (n >= sizeof(dir))
		return ENAMETOOLONG;
	*name = slash[1] ? slash + 1 : ".";
	if (n)
		memcpy(dir, p + 1, n - 1);
	dir[n ? n - 1 : 0] = '\0';
	*dfd = replay_open(mntfd, n ? dir : ".", O_PATH | O_DIRECTORY);
	return *dfd >= 0 ? 0 : *dfd == -EXDEV ? REPLAY_LEAVES : -*dfd;
}

/* ---- on a name ---- */

static int err_of(long rc)
{
	return rc < 0 ? errno : 0;
}

static int at_lstat(int dfd, const char *name, const struct replay_line *l, int mntfd,
		    struct replay_seen *seen)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno;
	seen->kind = cfs_kind_letter(st.st_mode);
	seen->size = st.st_size;
	return 0;
}

static int at_readlink(int dfd, const char *name, const struct replay_line *l, int mntfd,
		       struct replay_seen *seen)
{
	ssize_t n = readlinkat(dfd, name, seen->body, sizeof(seen->body) - 1);

	if (n < 0)
		return errno;
	seen->body[n] = '\0';
	seen->has_body = true;
	return 0;
}

/* Never a set-id bit from a recording: a file replay makes is empty, but root's all the same */
static int at_mkdir(int dfd, const char *name, const struct replay_line *l, int mntfd,
		    struct replay_seen *seen)
{
	return err_of(mkdirat(dfd, name, (mode_t)l->mode & 01777));
}

static int at_create(int dfd, const char *name, const struct replay_line *l, int mntfd,
		     struct replay_seen *seen)
{
	int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
			(mode_t)l->mode & 0777);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int at_symlink(int dfd, const char *name, const struct replay_line *l, int mntfd,
		      struct replay_seen *seen)
{
	return err_of(symlinkat(l->target, dfd, name));
}

static int at_unlink(int dfd, const char *name, const struct replay_line *l, int mntfd,
		     struct replay_seen *seen)
{
	return err_of(unlinkat(dfd, name, 0));
}

static int at_rmdir(int dfd, const char *name, const struct replay_line *l, int mntfd,
		    struct replay_seen *seen)
{
	return err_of(unlinkat(dfd, name, AT_REMOVEDIR));
}

static int at_rename(int dfd, const char *name, const struct replay_line *l, int mntfd,
		     struct replay_seen *seen)
{
	const char *toname;
	int tfd, err = replay_parent(mntfd, l->to, &tfd, &toname);

	if (err)
		return err;
	err = err_of(renameat(dfd, name, tfd, toname));
	close(tfd);
	return err;
}

/* ---- on a node ---- */

static int on_read(int fd, struct replay_seen *seen)
{
	char buf[4096];

	return err_of(read(fd, buf, sizeof(buf)));
}

static int on_open(int fd, struct replay_seen *seen)
{
	return 0;
}

/* A kind the directory does not give (DT_UNKNOWN) is asked of the entry itself. */
static char dirent_kind(int fd, const struct dirent64 *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return cfs_kind_letter((unsigned)de->d_type << 12); /* a DT_ is S_IF >> 12 */
	if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return '?';
	return cfs_kind_letter(st.st_mode);
}

/* The whole listing, its names and kinds into SEEN ("." and ".." left out, as recorded). */
static int on_list(int fd, struct replay_seen *seen)
{
	char buf[32768];
	long n;

	seen->listing = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	while ((n = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (long at = 0; at < n;) {
			const struct dirent64 *de = (const void *)(buf + at);
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				g_hash_table_replace(seen->listing, g_strdup(de->d_name),
						     GINT_TO_POINTER(dirent_kind(fd, de)));
			at += de->d_reclen;
		}
	}
	return err_of(n);
}

static int on_access(int fd, struct replay_seen *seen)
{
	return err_of(faccessat(fd, "", F_OK, AT_EMPTY_PATH));
}

static int on_statfs(int fd, struct replay_seen *seen)
{
	struct statfs sf;

	return err_of(fstatfs(fd, &sf));
}

enum replay_needs { NEEDS_NONE, NEEDS_MODE, NEEDS_TARGET, NEEDS_TO };

/* A fifo or a terminal where the recording had a file must not hold replay or become its
 * terminal: opens do not wait, and never take a controlling terminal. */
#define REPLAY_RD (O_RDONLY | O_NONBLOCK | O_NOCTTY)

/* Each operation replay makes: on a name (AT) or on the node opened with FLAGS (ON). */
static const struct replay_verb {
	const char *op;
	int (*at)(int dfd, const char *name, const struct replay_line *l, int mntfd,
		  struct replay_seen *seen);
	int (*on)(int fd, struct replay_seen *seen);
	int flags;
	enum replay_needs needs; /* without it the line is skipped */
} replay_verbs[] = {
    {"lookup", at_lstat, NULL, 0, NEEDS_NONE},
    {"getattr", at_lstat, NULL, 0, NEEDS_NONE},
    {"readlink", at_readlink, NULL, 0, NEEDS_NONE},
    {"open", NULL, on_read, REPLAY_RD, NEEDS_NONE},
    {"read", NULL, on_read, REPLAY_RD, NEEDS_NONE},
    {"opendir", NULL, on_open, REPLAY_RD | O_DIRECTORY, NEEDS_NONE},
    {"readdir", NULL, on_list, REPLAY_RD | O_DIRECTORY, NEEDS_NONE},
    {"readdirplus", NULL, on_list, REPLAY_RD | O_DIRECTORY, NEEDS_NONE},
    {"access", NULL, on_access, O_PATH, NEEDS_NONE},
    {"statfs", NULL, on_statfs, O_PATH, NEEDS_NONE},
    {"mkdir", at_mkdir, NULL, 0, NEEDS_MODE},
    {"create", at_create, NULL, 0, NEEDS_MODE},
    {"symlink", at_symlink, NULL, 0, NEEDS_TARGET},
    {"unlink", at_unlink, NULL, 0, NEEDS_NONE},
    {"rmdir", at_rmdir, NULL, 0, NEEDS_NONE},
    {"rename", at_rename, NULL, 0, NEEDS_TO},
};

static const struct replay_verb *replay_verb_of(const struct replay_line *l)
{
	for (size_t i = 0; i < sizeof(replay_verbs) / sizeof(replay_verbs[0]); i++) {
		const struct replay_verb *v = &replay_verbs[i];
		if (strcmp(v->op, l->op))
			continue;
		if ((v->needs == NEEDS_MODE && l->mode < 0) ||
		    (v->needs == NEEDS_TARGET && !l->target) || (v->needs == NEEDS_TO && !l->to))
			return NULL;
		return v;
	}
	return NULL;
}

static int replay_node(int mntfd, const struct replay_verb *v, const char *p,
		       struct replay_seen *seen)
{
	if (!replay_canonical(p))
		return REPLAY_NOT_BENEATH;
	int fd = replay_open(mntfd, p[1] ? p + 1 : ".", v->flags);
	if (fd == -EXDEV)
		return REPLAY_LEAVES;
	if (fd < 0)
		return -fd;
	int err = v->on(fd, seen);
	close(fd);
	return err;
}

int replay_at(int mntfd, const struct replay_line *l, struct replay_seen *seen)
{
	const struct replay_verb *v = replay_verb_of(l);
	const char *name;
	int dfd, err;

	if (!v)
		return REPLAY_SKIPPED;
	if (v->on)
		return replay_node(mntfd, v, l->path, seen);
	err = replay_parent(mntfd, l->path, &dfd, &name);
	if (err)
		return err;
	err = v->at(dfd, name, l, mntfd, seen);
	close(dfd);
	return err;
}
