/*
 * A tree written out as real directories, files, links and special files under an empty
 * directory (cfs_materialize), holding one directory descriptor at a time.
 *
 * DIR may be writable by others (its owner, say), who can rename and replace its entries while
 * we work. So nothing is done by path: every call names one entry of a directory we hold open
 * and never follows a link, and what we make is used through a descriptor of it from the
 * moment it exists (files are created open; directories, links and special files are opened
 * with O_NOFOLLOW right after and checked to be what we made). The directories we make stay
 * 0700 and ours until they are full, so below DIR nobody else can change a name under us.
 */
#include "spec_int.h"
#include "inroot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* Materialize */

/* Says that a name was swapped between making it and opening it (with -EBUSY). */
#define SPEC_MAT_REPLACED "replaced while being made"

struct spec_mat_id {
	dev_t dev;
	ino_t ino;
};

/* A node with several names, as one of its names was made (a link may need several). */
struct spec_mat_first {
	char *path; /* from DIR: "/a/b" */
	char *body; /* a link's body there, else NULL */
	struct spec_mat_id id;
};

struct spec_mat {
	const struct cfs_tree *t;
	const char *top; /* DIR, for messages */
	int topfd;
	int cur;	   /* the directory being filled */
	uid_t euid;	   /* who owns what we make, until chown */
	bool owners;	   /* running as root with CFS_MAT_KEEP_IDS: owners too */
	bool devices;	   /* CFS_MAT_KEEP_IDS: device nodes with the tree's mode */
	mode_t modes;	   /* mode bits applied: set-id bits only with CFS_MAT_KEEP_IDS */
	GArray *dirs;	   /* struct spec_mat_id of DIR and of each directory we are in */
	GHashTable *first; /* node with several names -> GSList of struct spec_mat_first */
	char *buf;
	char **err;
};

static int spec_mat_fail(struct spec_mat *m, const char *path, const char *what, int err)
{
	if (!*m->err && asprintf(m->err, "%s%s: %s: %s", m->top, path, what, strerror(-err)) < 0)
		*m->err = NULL;
	return err;
}

/* Whether PAT (LEN bytes) is all zeros: such a pattern reads as a hole does. */
static bool spec_zeros(const char *pat, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (pat[i])
			return false;
	return true;
}

/* Where file ID's data to write starts past its pattern part: 0 when there is no pattern or
 * it is all zeros (the written runs are then all there is), else the pattern's end. */
static uint64_t spec_file_pattern_end(const struct cfs_tree *t, uint32_t id)
{
	const char *pat;
	size_t plen;
	uint64_t pend;

	if (cfs_tree_file_pattern(t, id, &pat, &plen, &pend) || spec_zeros(pat, plen))
		return 0;
	return pend;
}

/* Bytes of file ID that materialize may write: its pattern part (unless zeros) and its
 * written runs past it; holes hold nothing. */
static uint64_t spec_file_bytes(const struct cfs_tree *t, uint32_t id)
{
	uint64_t pend = spec_file_pattern_end(t, id), start, end, total = pend;

	for (uint64_t off = pend; cfs_tree_next_written(t, id, off, &start, &end) == 0; off = end)
		total += end - start;
	return total;
}

uint64_t cfs_materialize_bytes(const struct cfs_tree *t)
{
	struct spec_walk w;
	GHashTable *seen = g_hash_table_new(NULL, NULL);
	uint64_t total = 0;
	int ev;

	spec_walk_init(&w, t);
	while ((ev = spec_walk_next(&w)) != SPEC_WALK_END) {
		struct stat st;

		if (ev != SPEC_WALK_NODE || cfs_tree_kind(t, w.id) != RS_FILE)
			continue;
		cfs_tree_stat(t, w.id, &st);
		if (st.st_nlink > 1 && !g_hash_table_add(seen, GUINT_TO_POINTER(w.id)))
			continue;
		total += spec_file_bytes(t, w.id);
	}
	spec_walk_free(&w);
	g_hash_table_destroy(seen);
	return total;
}

static int spec_pwrite_all(int fd, const char *buf, size_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* LEN bytes of BUF to FD at OFF, but for the blocks (SPEC_HOLE_BLOCK, at multiples of it in
 * the file) that hold only zeros: the file was sized first, so they read as zeros already
 * and stay holes. */
static int spec_write_data(int fd, const char *buf, size_t len, uint64_t off)
{
	int err = 0;

	while (!err && len > 0) {
		size_t n = SPEC_HOLE_BLOCK - (size_t)(off % SPEC_HOLE_BLOCK);
		if (n > len)
			n = len;
		if (!spec_zeros(buf, n))
			err = spec_pwrite_all(fd, buf, n, off);
		buf += n;
		len -= n;
		off += n;
	}
	return err;
}

static bool spec_mat_same(const struct stat *st, struct spec_mat_id id)
{
	return st->st_dev == id.dev && st->st_ino == id.ino;
}

/* Owner (as root), mode and times on an open file or directory, in that order: chown
 * clears set-id bits, and anything after the times would move them. */
static int spec_mat_attrs(struct spec_mat *m, int fd, const struct stat *st, const char **what)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	*what = "chown";
	if (m->owners && fchown(fd, st->st_uid, st->st_gid) < 0)
		return -errno;
	*what = "chmod";
	if (fchmod(fd, st->st_mode & m->modes) < 0)
		return -errno;
	*what = "utimens";
	if (futimens(fd, ts) < 0)
		return -errno;
	return 0;
}

/* The same on an O_PATH descriptor of a link or special file, with MODE. fchown, fchmod and
 * futimens refuse such descriptors, and opening a fifo or a device for real could block or
 * reach a driver. fchownat and utimensat take the descriptor itself (AT_EMPTY_PATH); the mode
 * is set by chmod of /proc/self/fd/N, which reaches the inode the descriptor holds whatever
 * its name leads to by now (fchmodat2 with AT_EMPTY_PATH would too, but only from Linux 6.6).
 * A link has no mode of its own. */
static int spec_mat_path_attrs(struct spec_mat *m, int fd, const struct stat *st, mode_t mode,
			       const char **what)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	char proc[32];

	*what = "chown";
	if (m->owners && fchownat(fd, "", st->st_uid, st->st_gid, AT_EMPTY_PATH) < 0)
		return -errno;
	*what = "chmod";
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (!S_ISLNK(st->st_mode) && chmod(proc, mode) < 0)
		return -errno;
	*what = "utimensat";
	if (utimensat(fd, "", ts, AT_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

/* The extended attributes of ID on FD: a file or directory open for real, or (PROC) an O_PATH
 * descriptor, reached through /proc/self/fd/N as chmod reaches it above. Set after the owner
 * (chown drops security.capability) and the mode, and before nothing that moves the times
 * (only ctime moves). One the copy's filesystem or our privileges refuse (EOPNOTSUPP: a
 * filesystem without that namespace; EPERM: trusted.* and security.* need CAP_SYS_ADMIN) is
 * left out and whoever made the copy is told, as for a device's mode. */
static int spec_mat_xattrs(struct spec_mat *m, int fd, bool proc, uint32_t id, const char *path,
			   const char **what)
{
	const char *name, *value;
	char at[32];
	size_t len;

	snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
	*what = "setxattr";
	for (uint32_t i = 0; !cfs_tree_xattr_at(m->t, id, i, &name, &value, &len); i++) {
		int r =
		    proc ? setxattr(at, name, value, len, 0) : fsetxattr(fd, name, value, len, 0);
		if (r == 0)
			continue;
		if (errno != EOPNOTSUPP && errno != EPERM)
			return -errno;
		g_warning("%s%s: extended attribute %s not kept: %s", m->top, path, name,
			  g_strerror(errno));
	}
	return 0;
}

/* Whether MADE, opened by name right after we made WANT's kind there, is ours: whoever can
 * write the directory could have put something else under the name in between. Our own, one
 * name, and (a link's body aside) no permission for group or others, so nobody else made it
 * or can change it; a link of WANT's length, a device of WANT's number. */
static bool spec_mat_ours(const struct spec_mat *m, const struct stat *made,
			  const struct stat *want)
{
	mode_t type = want->st_mode & S_IFMT;

	if ((made->st_mode & S_IFMT) != type || made->st_uid != m->euid || made->st_nlink != 1)
		return false;
	if (S_ISLNK(type))
		return made->st_size == want->st_size;
	if ((S_ISCHR(type) || S_ISBLK(type)) && made->st_rdev != want->st_rdev)
		return false;
	return !(made->st_mode & 077);
}

/* NAME, just made like WANT in the current directory, as an O_PATH descriptor checked to be
 * still what we made (spec_mat_ours): from here on only the descriptor is used. */
static int spec_mat_open_made(struct spec_mat *m, const char *name, const struct stat *want,
			      struct stat *made, const char **what)
{
	int fd = openat(m->cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), err;

	*what = "open";
	if (fd < 0)
		return -errno;
	*what = "stat";
	err = fstat(fd, made) < 0 ? -errno : 0;
	if (!err && !spec_mat_ours(m, made, want))
		err = -EBUSY, *what = SPEC_MAT_REPLACED;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* Bytes [OFF, END) of file ID to FD at the same offsets (blocks of zeros left as holes). */
static int spec_mat_range(struct spec_mat *m, int fd, uint32_t id, uint64_t off, uint64_t end)
{
	int err = 0;

	while (!err && off < end) {
		size_t want = end - off < SPEC_IO_CHUNK ? (size_t)(end - off) : SPEC_IO_CHUNK;
		ssize_t n = cfs_tree_read(m->t, id, m->buf, want, (off_t)off);
		if (n <= 0)
			err = n < 0 ? (int)n : -EIO;
		else
			err = spec_write_data(fd, m->buf, (size_t)n, off);
		off += n > 0 ? (uint64_t)n : 0;
	}
	return err;
}

/* Created open (O_EXCL, O_NOFOLLOW), so there is nothing to swap. The size first, so holes
 * stay holes; then the pattern part (none when the pattern is zeros) and the written runs
 * past it. */
static int spec_mat_file(struct spec_mat *m, const char *name, const char *path, uint32_t id,
			 const struct stat *st, struct stat *made)
{
	const char *what = "open";
	uint64_t pend = spec_file_pattern_end(m->t, id), start, end;
	int fd = openat(m->cur, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int err = fd < 0 ? -errno : 0;

	if (!err && fstat(fd, made) < 0)
		err = -errno, what = "stat";
	if (!err && ftruncate(fd, st->st_size) < 0)
		err = -errno, what = "truncate";
	if (!err)
		err = spec_mat_range(m, fd, id, 0, pend), what = "write";
	for (uint64_t off = pend; !err && cfs_tree_next_written(m->t, id, off, &start, &end) == 0;
	     off = end)
		err = spec_mat_range(m, fd, id, start, end);
	if (!err)
		err = spec_mat_attrs(m, fd, st, &what);
	if (!err)
		err = spec_mat_xattrs(m, fd, false, id, path, &what);
	if (fd >= 0 && close(fd) < 0 && !err)
		err = -errno, what = "close";
	return err ? spec_mat_fail(m, path, what, err) : 0;
}

/* A fifo, socket or device (devices need CAP_MKNOD: the error says so), made 0600 and given
 * the rest through a descriptor once it is known to be ours. A device keeps the tree's mode
 * only with CFS_MAT_KEEP_IDS (a spec is not to hand out a writable /dev/kmsg): else at most
 * 0600, and whoever made the copy is told. */
static int spec_mat_special(struct spec_mat *m, const char *name, const char *path, uint32_t id,
			    const struct stat *st, struct stat *made)
{
	bool dev = S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode);
	mode_t want = st->st_mode & m->modes, mode = dev && !m->devices ? want & 0600 : want;
	const char *what = "mknod";
	int fd, err;

	if (mknodat(m->cur, name, (st->st_mode & S_IFMT) | 0600, st->st_rdev) < 0)
		return spec_mat_fail(m, path, what, -errno);
	fd = spec_mat_open_made(m, name, st, made, &what);
	if (fd < 0)
		return spec_mat_fail(m, path, what, fd);
	err = spec_mat_path_attrs(m, fd, st, mode, &what);
	if (!err)
		err = spec_mat_xattrs(m, fd, true, id, path, &what);
	close(fd);
	if (err)
		return spec_mat_fail(m, path, what, err);
	if (mode != want)
		g_warning("%s%s: device node made %04o, not %04o: only --keep-ids keeps a "
			  "device's mode",
			  m->top, path, (unsigned)mode, (unsigned)want);
	return 0;
}

/* Link W's body for its name in the directory it is listed in, into m->buf: its length. The
 * kernel walks the copy with its own limits. */
static ssize_t spec_mat_body(struct spec_mat *m, const struct spec_walk *w)
{
	uint32_t dir = g_array_index(w->stack, struct spec_frame, w->stack->len - 1).dir;
	ssize_t len = cfs_inroot_target(m->t, rs_limits_linux, w->id, dir, m->buf);

	if (len < 0)
		return spec_mat_fail(m, w->path->str, "readlink", (int)len);
	if (memchr(m->buf, '\0', (size_t)len))
		return spec_mat_fail(m, w->path->str, "symlink", -EINVAL);
	return len;
}

/* A link with the body in m->buf (LEN bytes). */
static int spec_mat_link(struct spec_mat *m, const char *name, const char *path, size_t len,
			 uint32_t id, const struct stat *st, struct stat *made)
{
	struct stat want = *st;
	const char *what = "symlink";
	int fd, err;

	if (symlinkat(m->buf, m->cur, name) < 0)
		return spec_mat_fail(m, path, what, -errno);
	want.st_size = (off_t)len;
	fd = spec_mat_open_made(m, name, &want, made, &what);
	if (fd < 0)
		return spec_mat_fail(m, path, what, fd);
	err = spec_mat_path_attrs(m, fd, st, 0, &what);
	if (!err)
		err = spec_mat_xattrs(m, fd, true, id, path, &what);
	close(fd);
	return err ? spec_mat_fail(m, path, what, err) : 0;
}

/* FIRST's name, looked up from DIR one directory at a time without following a link, as an
 * O_PATH descriptor checked to be the inode we made there. */
static int spec_mat_reopen(struct spec_mat *m, const struct spec_mat_first *first)
{
	char name[RS_NAME_MAX + 1];
	const char *p = first->path + 1, *slash;
	int dir = m->topfd, fd = -1;
	struct stat st;

	for (;;) {
		slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n > RS_NAME_MAX) {
			fd = -ENAMETOOLONG;
		} else {
			memcpy(name, p, n);
			name[n] = '\0';
			fd = openat(dir, name,
				    O_PATH | O_NOFOLLOW | O_CLOEXEC | (slash ? O_DIRECTORY : 0));
			fd = fd < 0 ? -errno : fd;
		}
		if (dir != m->topfd)
			close(dir);
		if (fd < 0 || !slash)
			break;
		dir = fd;
		p = slash + 1;
	}
	if (fd >= 0 && (fstat(fd, &st) < 0 || !spec_mat_same(&st, first->id))) {
		close(fd);
		fd = -EBUSY; /* not what we made there: changed since */
	}
	return fd;
}

/* Another name of a node made before as FIRST: that inode, reached through a descriptor, is
 * linked (with AT_EMPTY_PATH when we may, else through /proc/self/fd: AT_EMPTY_PATH needs
 * CAP_DAC_READ_SEARCH), so no name is looked up twice. */
static int spec_mat_second(struct spec_mat *m, const char *name, const char *path,
			   const struct spec_mat_first *first)
{
	char proc[32], *what = g_strdup_printf("link to %s%s", m->top, first->path);
	int fd = spec_mat_reopen(m, first), err = 0;

	if (fd >= 0 && linkat(fd, "", m->cur, name, AT_EMPTY_PATH) < 0)
		err = -errno;
	if (err == -ENOENT) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		err = linkat(AT_FDCWD, proc, m->cur, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
	}
	if (fd >= 0)
		close(fd);
	else
		err = fd;
	if (err)
		spec_mat_fail(m, path, what, err);
	g_free(what);
	return err;
}

/* 0 if FD's directory has nothing but "." and "..". */
static int spec_mat_check_empty(int fd)
{
	int dfd = dup(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;
	int err = 0;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return -errno;
	}
	while (!err && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			err = -ENOTEMPTY;
	closedir(d);
	return err;
}

/* Make directory NAME private (0700: its own mode is set when we leave it, so a read-only
 * directory can still be filled, and nobody else can change it while we do) and step into
 * it. Between mkdirat and openat the name may have been swapped: what we step into must be a
 * directory only we can change, and empty, which is as good as the one we made. */
static int spec_mat_enter(struct spec_mat *m, const char *name, const char *path)
{
	struct stat st;
	int fd, err;

	if (mkdirat(m->cur, name, 0700) < 0)
		return spec_mat_fail(m, path, "mkdir", -errno);
	fd = openat(m->cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return spec_mat_fail(m, path, "open", -errno);
	err = fstat(fd, &st) < 0 ? -errno : 0;
	if (!err && (st.st_uid != m->euid || (st.st_mode & 077)))
		err = -ENOTEMPTY; /* not ours: replaced, as a directory with entries is */
	if (!err)
		err = spec_mat_check_empty(fd);
	if (err) {
		close(fd);
		return err == -ENOTEMPTY ? spec_mat_fail(m, path, SPEC_MAT_REPLACED, -EBUSY)
					 : spec_mat_fail(m, path, "stat", err);
	}
	struct spec_mat_id id = {st.st_dev, st.st_ino};
	g_array_append_val(m->dirs, id);
	close(m->cur);
	m->cur = fd;
	return 0;
}

/* The descriptor of the directory above the one we are in, which must be the one we came
 * from. ".." is opened while the directory is still searchable. */
static int spec_mat_up(struct spec_mat *m, const char *path)
{
	struct spec_mat_id id = g_array_index(m->dirs, struct spec_mat_id, m->dirs->len - 2);
	int up = openat(m->cur, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (up < 0)
		return spec_mat_fail(m, path, "open ..", -errno);
	if (fstat(up, &st) < 0 || !spec_mat_same(&st, id)) {
		close(up);
		return spec_mat_fail(m, path, "open ..", -EBUSY); /* moved out of its parent */
	}
	return up;
}

/* Done with the directory we are in: set its attributes and step back up. Holding one
 * descriptor at a time keeps a tree of any depth within the fd limit. */
static int spec_mat_leave(struct spec_mat *m, uint32_t id, const char *path, bool top)
{
	struct stat st;
	const char *what;
	int up = top ? -1 : spec_mat_up(m, path), err;

	if (up < 0 && !top)
		return up;
	cfs_tree_stat(m->t, id, &st);
	err = spec_mat_attrs(m, m->cur, &st, &what);
	if (!err)
		err = spec_mat_xattrs(m, m->cur, false, id, path, &what);
	if (err) {
		if (up >= 0)
			close(up);
		return spec_mat_fail(m, path, what, err);
	}
	if (!top) {
		close(m->cur);
		m->cur = up;
		g_array_set_size(m->dirs, m->dirs->len - 1);
	}
	return 0;
}

static void spec_mat_first_free(gpointer p)
{
	struct spec_mat_first *f = p;

	g_free(f->path);
	g_free(f->body);
	g_free(f);
}

static void spec_mat_firsts_free(gpointer list)
{
	g_slist_free_full(list, spec_mat_first_free);
}

/* The name of node ID made before that this one can be a second name of: any for a file or
 * special file; for a link, one with the same body (BODY), as a hard link shares it. */
static const struct spec_mat_first *spec_mat_find(struct spec_mat *m, uint32_t id, const char *body,
						  bool *others)
{
	GSList *l = g_hash_table_lookup(m->first, GUINT_TO_POINTER(id));

	*others = l != NULL;
	for (; l; l = l->next) {
		const struct spec_mat_first *f = l->data;
		if (!body || strcmp(f->body, body) == 0)
			return f;
	}
	return NULL;
}

static void spec_mat_remember(struct spec_mat *m, uint32_t id, const char *path, const char *body,
			      const struct stat *made)
{
	struct spec_mat_first *f = g_new(struct spec_mat_first, 1);
	GSList *l = g_hash_table_lookup(m->first, GUINT_TO_POINTER(id));

	*f = (struct spec_mat_first){g_strdup(path), g_strdup(body), {made->st_dev, made->st_ino}};
	if (l)
		l = g_slist_append(l, f); /* the head stays */
	else
		g_hash_table_insert(m->first, GUINT_TO_POINTER(id), g_slist_append(NULL, f));
}

/* A hard-linked link whose body must differ from its other names' here is made a link of its
 * own: one body cannot mean the same place from both directories. */
static void spec_mat_broken(struct spec_mat *m, const char *path, uint32_t id)
{
	const struct spec_mat_first *f =
	    ((GSList *)g_hash_table_lookup(m->first, GUINT_TO_POINTER(id)))->data;

	g_warning("%s%s: not a hard link of %s%s but a symlink of its own: their target leads "
		  "elsewhere from here",
		  m->top, path, m->top, f->path);
}

static int spec_mat_node(struct spec_mat *m, const struct spec_walk *w)
{
	char name[RS_NAME_MAX + 1];
	const char *path = w->path->str;
	const struct spec_mat_first *first = NULL;
	struct stat st, made;
	enum rs_kind kind = cfs_tree_kind(m->t, w->id);
	ssize_t len = 0;
	bool others = false;
	int err;

	if (memchr(w->name, '\0', w->name_len))
		return spec_mat_fail(m, path, "name", -EINVAL);
	memcpy(name, w->name, w->name_len);
	name[w->name_len] = '\0';
	if (kind == RS_DIR)
		return spec_mat_enter(m, name, path);
	cfs_tree_stat(m->t, w->id, &st);
	if (kind == RS_LINK && (len = spec_mat_body(m, w)) < 0)
		return (int)len;
	if (st.st_nlink > 1)
		first = spec_mat_find(m, w->id, kind == RS_LINK ? m->buf : NULL, &others);
	if (first)
		return spec_mat_second(m, name, path, first);
	if (others)
		spec_mat_broken(m, path, w->id);
	if (kind == RS_FILE)
		err = spec_mat_file(m, name, path, w->id, &st, &made);
	else if (kind == RS_LINK)
		err = spec_mat_link(m, name, path, (size_t)len, w->id, &st, &made);
	else
		err = spec_mat_special(m, name, path, w->id, &st, &made);
	if (!err && st.st_nlink > 1)
		spec_mat_remember(m, w->id, path, kind == RS_LINK ? m->buf : NULL, &made);
	return err;
}

int cfs_materialize(const struct cfs_tree *t, const char *dir, unsigned flags, char **err)
{
	bool keep = flags & CFS_MAT_KEEP_IDS;
	struct spec_mat m = {.t = t,
			     .top = dir,
			     .euid = geteuid(),
			     .owners = keep && geteuid() == 0,
			     .devices = keep,
			     .modes = keep ? 07777 : 01777,
			     .err = err};
	struct spec_walk w;
	struct stat st;
	int ev, rc;

	*err = NULL;
	m.topfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m.topfd < 0)
		return spec_mat_fail(&m, "", "open", -errno);
	rc = fstat(m.topfd, &st) < 0 ? -errno : spec_mat_check_empty(m.topfd);
	if (rc) {
		close(m.topfd);
		return spec_mat_fail(&m, "", "materialize", rc);
	}
	m.cur = dup(m.topfd);
	if (m.cur < 0) {
		rc = spec_mat_fail(&m, "", "dup", -errno);
		close(m.topfd);
		return rc;
	}
	struct spec_mat_id top = {st.st_dev, st.st_ino};
	m.dirs = g_array_new(FALSE, FALSE, sizeof(top));
	g_array_append_val(m.dirs, top);
	m.first = g_hash_table_new_full(NULL, NULL, NULL, spec_mat_firsts_free);
	m.buf = g_malloc(SPEC_IO_CHUNK);
	spec_walk_init(&w, t);
	rc = 0;
	while (!rc && (ev = spec_walk_next(&w)) != SPEC_WALK_END) {
		if (ev == SPEC_WALK_NODE)
			rc = spec_mat_node(&m, &w);
		else
			rc = spec_mat_leave(&m, w.id, w.path->str, w.stack->len == 0);
	}
	spec_walk_free(&w);
	g_hash_table_destroy(m.first);
	g_array_free(m.dirs, TRUE);
	g_free(m.buf);
	close(m.cur);
	close(m.topfd);
	return rc;
}
