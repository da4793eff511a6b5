/*
 * A real directory read into a tree (cfs_spec_from_dir), for cfs_spec_dump to write back as a
 * spec: the inverse of materialize.
 *
 * The directory may change while we read it and its links may lead anywhere, so nothing is
 * done by path: every call names one entry of a directory we hold open and never follows a
 * link (statx AT_SYMLINK_NOFOLLOW, readlinkat, openat O_NOFOLLOW), and what is opened is
 * checked to be what was stat'ed. A file is opened for reading only through an O_PATH
 * descriptor that showed a regular file, so a name swapped for a fifo or a device is never
 * opened. One directory descriptor is held at a time (and DIR's), so any depth fits the fd
 * limit: a directory's names are read whole and sorted (the same tree gives the same spec),
 * then each subdirectory is entered, and left by "..", checked to be the directory we came
 * from (or, when ".." may not be looked up, by DIR's path down again, checked at each step).
 */
#include "spec_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

struct sf_id {
	dev_t dev;
	ino_t ino;
};

/* A directory being read. */
struct sf_frame {
	struct sf_id id;
	uint32_t node;	  /* its node in the tree */
	struct stat st;	  /* its attributes: its times are given to the node once it is full */
	GPtrArray *names; /* its entries' names, sorted */
	guint next;	  /* the next of them to read */
	size_t plen;	  /* its path's length in spec_from.path */
};

/* A node with several names, by the first of them: each further name changes the node's
 * ctime, so its times are given again at the end. */
struct sf_linked {
	struct sf_id id; /* the key */
	uint32_t node;
	struct stat st;
};

struct spec_from {
	struct cfs_tree *t;
	int topfd, cur;	    /* DIR, and the directory being read */
	dev_t dev;	    /* DIR's filesystem, where statx cannot tell a mount point */
	GArray *stack;	    /* struct sf_frame: DIR, then each directory we are in */
	GHashTable *linked; /* struct sf_id -> struct sf_linked */
	GString *path;	    /* DIR, then the path of the entry being read */
	char *buf;
	unsigned problems;
	void (*report)(void *data, const char *path, const char *why);
	void *data;
};

/* Tell the caller about the entry at sf->path: WHAT, and ERR's message if ERR is not 0. */
static void sf_report(struct spec_from *sf, const char *what, int err)
{
	char *why = err ? g_strdup_printf("%s: %s", what, g_strerror(-err)) : g_strdup(what);

	if (sf->problems < UINT_MAX)
		sf->problems++;
	sf->report(sf->data, sf->path->len ? sf->path->str : "/", why);
	g_free(why);
}

static guint sf_id_hash(gconstpointer p)
{
	const struct sf_id *id = p;

	return g_int64_hash(&(gint64){(gint64)id->ino}) ^ (guint)id->dev;
}

static gboolean sf_id_equal(gconstpointer a, gconstpointer b)
{
	const struct sf_id *x = a, *y = b;

	return x->dev == y->dev && x->ino == y->ino;
}

static bool sf_is(const struct stat *st, struct sf_id id)
{
	return st->st_dev == id.dev && st->st_ino == id.ino;
}

static bool sf_fd_is(int fd, struct sf_id id)
{
	struct stat st;

	return fstat(fd, &st) == 0 && sf_is(&st, id);
}

static struct sf_frame *sf_top(const struct spec_from *sf)
{
	return &g_array_index(sf->stack, struct sf_frame, sf->stack->len - 1);
}

static struct timespec sf_ts(struct statx_timestamp t)
{
	return (struct timespec){t.tv_sec, t.tv_nsec};
}

/* NAME in the directory being read, not followed. *MOUNT: it is the root of a mount, as statx
 * says (bind mounts of DIR's own filesystem too); only a kernel that cannot say (before 5.8)
 * is answered by the device, which an overlayfs may give each layer's files apart. */
static int sf_stat(const struct spec_from *sf, const char *name, struct stat *st, bool *mount)
{
	struct statx x;

	if (statx(sf->cur, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &x) < 0)
		return -errno;
	*st = (struct stat){.st_dev = makedev(x.stx_dev_major, x.stx_dev_minor),
			    .st_ino = x.stx_ino,
			    .st_mode = x.stx_mode,
			    .st_nlink = x.stx_nlink,
			    .st_uid = x.stx_uid,
			    .st_gid = x.stx_gid,
			    .st_rdev = makedev(x.stx_rdev_major, x.stx_rdev_minor),
			    .st_size = (off_t)x.stx_size,
			    .st_atim = sf_ts(x.stx_atime),
			    .st_mtim = sf_ts(x.stx_mtime),
			    .st_ctim = sf_ts(x.stx_ctime)};
	if (x.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
		*mount = x.stx_attributes & STATX_ATTR_MOUNT_ROOT;
	else
		*mount = st->st_dev != sf->dev;
	return 0;
}

/* Times last: everything else done to a node moves them. */
static void sf_times(struct spec_from *sf, uint32_t id, const struct stat *st)
{
	int err = cfs_tree_set_times(sf->t, id, &st->st_atim, &st->st_mtim, &st->st_ctim);

	if (err)
		sf_report(sf, "times", err);
}

/* The attributes a new node gets from ST. */
static struct cfs_new sf_new(const struct stat *st)
{
	return (struct cfs_new){st->st_mode & 07777, st->st_uid, st->st_gid};
}

/* A further name of a node already read (same device and inode): a hard link in the tree. */
static bool sf_second_name(struct spec_from *sf, const char *name, const struct stat *st)
{
	struct sf_id id = {st->st_dev, st->st_ino};
	const struct sf_linked *l = g_hash_table_lookup(sf->linked, &id);
	int err;

	if (!l)
		return false;
	err = cfs_tree_link(sf->t, l->node, sf_top(sf)->node, name, strlen(name));
	if (err)
		sf_report(sf, "hard link", err);
	return true;
}

static void sf_remember(struct spec_from *sf, uint32_t node, const struct stat *st)
{
	struct sf_linked *l = g_new(struct sf_linked, 1);

	*l = (struct sf_linked){{st->st_dev, st->st_ino}, node, *st};
	g_hash_table_replace(sf->linked, &l->id, l); /* the key lives in the value */
}

/* The extended attributes of FD (open for real, or O_PATH: then through /proc/self/fd/N,
 * which reaches a link itself) into node ID. One the tree refuses (a namespace tmpfs does
 * not keep) is reported, and the walk goes on. */
static void sf_xattrs(struct spec_from *sf, int fd, bool opath, uint32_t id)
{
	char at[32], *names = g_malloc(XATTR_LIST_MAX), *value = g_malloc(XATTR_SIZE_MAX);
	ssize_t n, len;

	snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
	n = opath ? listxattr(at, names, XATTR_LIST_MAX) : flistxattr(fd, names, XATTR_LIST_MAX);
	if (n < 0 && errno != EOPNOTSUPP)
		sf_report(sf, "list extended attributes", -errno);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		const char *name = names + i;
		len = opath ? getxattr(at, name, value, XATTR_SIZE_MAX)
			    : fgetxattr(fd, name, value, XATTR_SIZE_MAX);
		int err =
		    len < 0 ? -errno : cfs_tree_setxattr(sf->t, id, name, value, (size_t)len, 0);
		if (err)
			sf_report(sf, name, err);
	}
	g_free(names);
	g_free(value);
}

/* ID's extended attributes from NAME in the directory we are in, if it is still the node
 * ST says (an O_PATH descriptor checked against it). */
static void sf_xattrs_at(struct spec_from *sf, const char *name, uint32_t id, const struct stat *st)
{
	int fd = openat(sf->cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && sf_fd_is(fd, (struct sf_id){st->st_dev, st->st_ino}))
		sf_xattrs(sf, fd, true, id);
	else
		sf_report(sf, "read extended attributes", fd < 0 ? -errno : -ESTALE);
	if (fd >= 0)
		close(fd);
}

/* A node other than a directory is in: its times last, and its inode kept when other names
 * may share it. */
static void sf_made(struct spec_from *sf, uint32_t id, const struct stat *st)
{
	sf_times(sf, id, st);
	if (st->st_nlink > 1)
		sf_remember(sf, id, st);
}

static gint sf_name_cmp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Directory NAME opened to be listed, with O_NOATIME when we may (reading a tree should not
 * change it; only a link's atime moves, as readlink has no such flag). */
static int sf_open_dir(int dirfd, const char *name)
{
	int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(dirfd, name, flags | O_NOATIME);

	if (fd < 0 && errno == EPERM) /* not the owner */
		fd = openat(dirfd, name, flags);
	return fd;
}

/* The names in directory FD, sorted, ".", ".." left out. A failed read is reported: what was
 * read before it is kept. */
static GPtrArray *sf_names(struct spec_from *sf, int fd)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	int dfd = dup(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;

	if (!d) {
		sf_report(sf, "read directory (its entries are left out)", -errno);
		if (dfd >= 0)
			close(dfd);
		return names;
	}
	for (;;) {
		errno = 0;
		if (!(e = readdir(d)))
			break;
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			g_ptr_array_add(names, g_strdup(e->d_name));
	}
	if (errno)
		sf_report(sf, "read directory (entries after the error are left out)", -errno);
	closedir(d);
	g_ptr_array_sort(names, sf_name_cmp);
	return names;
}

/* Directory NAME as a node; then, unless it is a mount point or cannot be opened (both
 * reported), the directory we read, with its names. */
static void sf_dir(struct spec_from *sf, const char *name, const struct stat *st, bool mount)
{
	struct cfs_new a = sf_new(st);
	uint32_t id;
	int fd, err = cfs_tree_mkdir(sf->t, sf_top(sf)->node, name, strlen(name), &a, &id);

	if (err) {
		sf_report(sf, "make directory", err);
		return;
	}
	if (mount) {
		sf_times(sf, id, st);
		sf_report(sf,
			  "a mount point: another filesystem is not read (its entries "
			  "are left out)",
			  0);
		return;
	}
	fd = sf_open_dir(sf->cur, name);
	err = fd < 0 ? -errno : 0;
	if (!err && !sf_fd_is(fd, (struct sf_id){st->st_dev, st->st_ino})) {
		close(fd);
		err = -ESTALE; /* not the directory we stat'ed: swapped since */
	}
	if (err) {
		sf_times(sf, id, st);
		sf_report(sf, "open (its entries are left out)", err);
		return;
	}
	sf_xattrs(sf, fd, false, id);
	struct sf_frame f = {{st->st_dev, st->st_ino}, id, *st, NULL, 0, sf->path->len};
	f.names = sf_names(sf, fd);
	g_array_append_val(sf->stack, f);
	close(sf->cur);
	sf->cur = fd;
}

/* Regular file NAME opened for reading, through an O_PATH descriptor that showed it is the
 * regular file we stat'ed (*ST, updated to what it is now). O_NOATIME as sf_open_dir. */
static int sf_open_file(struct spec_from *sf, const char *name, struct stat *st)
{
	struct sf_id id = {st->st_dev, st->st_ino};
	char proc[32];
	int pfd = openat(sf->cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), fd, err;

	if (pfd < 0)
		return -errno;
	if (fstat(pfd, st) < 0 || !S_ISREG(st->st_mode) || !sf_is(st, id)) {
		close(pfd);
		return -ESTALE; /* swapped since */
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_NOATIME | O_CLOEXEC);
	if (fd < 0 && errno == EPERM) /* not the owner: no O_NOATIME */
		fd = open(proc, O_RDONLY | O_CLOEXEC);
	err = fd < 0 ? -errno : 0;
	close(pfd);
	return err ? err : fd;
}

/* Bytes [OFF, END) of FD into file ID at the same offsets; 0 or reported. */
static int sf_range(struct spec_from *sf, int fd, uint32_t id, uint64_t off, uint64_t end)
{
	while (off < end) {
		size_t want = end - off < SPEC_IO_CHUNK ? (size_t)(end - off) : SPEC_IO_CHUNK;
		ssize_t n = pread(fd, sf->buf, want, (off_t)off), w;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sf_report(sf, "read", -errno);
			return -1;
		}
		if (n == 0) {
			sf_report(sf, "read: the file shrank while being read", 0);
			return -1;
		}
		w = cfs_tree_write(sf->t, id, sf->buf, (size_t)n, (off_t)off);
		if (w != n) {
			sf_report(sf, "hold its data", w < 0 ? (int)w : -ENOSPC);
			return -1;
		}
		off += (uint64_t)n;
	}
	return 0;
}

/* FD's content into file ID: its size, then only its data (SEEK_DATA, SEEK_HOLE), so holes
 * stay holes; 0 or reported. */
static int sf_content(struct spec_from *sf, int fd, uint32_t id, uint64_t size)
{
	int err = cfs_tree_truncate(sf->t, id, size);

	if (err) {
		sf_report(sf, "hold its size", err);
		return -1;
	}
	for (uint64_t off = 0; off < size;) {
		off_t data = lseek(fd, (off_t)off, SEEK_DATA), hole;
		if (data < 0 && errno == ENXIO)
			break; /* a hole to the end */
		hole = data < 0 ? -1 : lseek(fd, data, SEEK_HOLE);
		if (hole < 0) {
			sf_report(sf, "seek", -errno);
			return -1;
		}
		uint64_t end = (uint64_t)hole < size ? (uint64_t)hole : size;
		if ((uint64_t)data < end && sf_range(sf, fd, id, (uint64_t)data, end))
			return -1;
		off = (uint64_t)hole;
	}
	return 0;
}

/* A regular file, with its content; left out when it cannot be read (reported). */
static void sf_file(struct spec_from *sf, const char *name, struct stat *st)
{
	int fd = sf_open_file(sf, name, st), err;
	struct cfs_new a = sf_new(st);
	uint32_t id;

	if (fd < 0) {
		sf_report(sf, "open (left out)", fd);
		return;
	}
	err = cfs_tree_mkfile(sf->t, sf_top(sf)->node, name, strlen(name), &a, &id);
	if (err) {
		close(fd);
		sf_report(sf, "make file", err);
		return;
	}
	if (sf_content(sf, fd, id, (uint64_t)st->st_size) == 0) {
		sf_xattrs(sf, fd, false, id);
		sf_made(sf, id, st);
	} else {
		cfs_tree_unlink(sf->t, sf_top(sf)->node, name, strlen(name)); /* no half file */
	}
	close(fd);
}

/* A symlink, its target exactly as it is. */
static void sf_link(struct spec_from *sf, const char *name, const struct stat *st)
{
	struct cfs_new a = sf_new(st);
	ssize_t len = readlinkat(sf->cur, name, sf->buf, RS_PATH_MAX);
	uint32_t id;
	int err = len < 0 ? -errno : 0;

	if (!err && len >= RS_PATH_MAX)
		err = -ENAMETOOLONG;
	if (err) {
		sf_report(sf, "read link", err);
		return;
	}
	err = cfs_tree_symlink(sf->t, sf_top(sf)->node, name, strlen(name), sf->buf, (size_t)len,
			       &a, &id);
	if (err) {
		sf_report(sf, "make link", err);
		return;
	}
	sf_xattrs_at(sf, name, id, st);
	sf_made(sf, id, st);
}

/* A fifo, a socket or a device: stored, never opened. */
static void sf_special(struct spec_from *sf, const char *name, const struct stat *st)
{
	struct cfs_new a = sf_new(st);
	uint32_t id;
	int err = cfs_tree_mknod(sf->t, sf_top(sf)->node, name, strlen(name), st->st_mode & S_IFMT,
				 st->st_rdev, &a, &id);

	if (err) {
		sf_report(sf, "make special file", err);
		return;
	}
	sf_xattrs_at(sf, name, id, st);
	sf_made(sf, id, st);
}

/* Entry NAME of the directory we are in. */
static void sf_entry(struct spec_from *sf, const char *name)
{
	struct stat st;
	bool mount = false;
	int err;

	g_string_truncate(sf->path, sf_top(sf)->plen);
	g_string_append_c(sf->path, '/');
	g_string_append(sf->path, name);
	if (strcmp(name, CFS_UP_NAME) == 0) {
		sf_report(sf,
			  "left out: in a chainfs mount every directory answers this "
			  "name with its parent",
			  0);
		return;
	}
	err = sf_stat(sf, name, &st, &mount);
	if (err) {
		sf_report(sf, "stat (left out)", err);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		sf_dir(sf, name, &st, mount);
		return;
	}
	if (mount) {
		sf_report(sf, "left out: a mount point (another filesystem is not read)", 0);
		return;
	}
	if (st.st_nlink > 1 && sf_second_name(sf, name, &st))
		return;
	if (S_ISREG(st.st_mode))
		sf_file(sf, name, &st);
	else if (S_ISLNK(st.st_mode))
		sf_link(sf, name, &st);
	else
		sf_special(sf, name, &st);
}

/* DIR's path down to the directory the top frame is, each step checked to be the directory
 * we read there. */
static int sf_reopen(const struct spec_from *sf)
{
	int fd = dup(sf->topfd);

	for (guint i = 1; fd >= 0 && i < sf->stack->len; i++) {
		const struct sf_frame *up = &g_array_index(sf->stack, struct sf_frame, i - 1);
		const struct sf_frame *f = &g_array_index(sf->stack, struct sf_frame, i);
		char *name = g_strndup(sf->path->str + up->plen + 1, f->plen - up->plen - 1);
		int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		g_free(name);
		close(fd);
		fd = next;
		if (fd >= 0 && !sf_fd_is(fd, f->id)) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

/* The directory of the top frame, from the one we are in (its child): "..", else (a
 * directory we may read but not search) down from DIR again. */
static int sf_up(const struct spec_from *sf)
{
	int up = openat(sf->cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (up >= 0 && sf_fd_is(up, sf_top(sf)->id))
		return up;
	if (up >= 0)
		close(up);
	return sf_reopen(sf);
}

/* Done with the directory we are in: its times, then back to its parent. -1 when the way back
 * was moved (reported): the walk ends there. */
static int sf_leave(struct spec_from *sf)
{
	struct sf_frame *f = sf_top(sf);
	int up;

	g_string_truncate(sf->path, f->plen);
	sf_times(sf, f->node, &f->st);
	g_ptr_array_free(f->names, TRUE);
	g_array_set_size(sf->stack, sf->stack->len - 1);
	if (sf->stack->len == 0)
		return 0;
	up = sf_up(sf);
	if (up < 0) {
		g_string_truncate(sf->path, sf_top(sf)->plen);
		sf_report(sf,
			  "moved while being read: the entries of it and of the directories "
			  "above it not read yet are left out",
			  0);
		return -1;
	}
	close(sf->cur);
	sf->cur = up;
	return 0;
}

/* DIR as the root: refused when it is a link (nothing is followed, not even DIR). */
static int sf_open_top(struct spec_from *sf, const char *dir, struct stat *st, char **err)
{
	const char *why = NULL;
	int rc = -EINVAL;

	if (lstat(dir, st) < 0)
		rc = -errno, why = g_strerror(errno);
	else if (S_ISLNK(st->st_mode))
		rc = -ELOOP, why = "a symbolic link: spec-from follows no link; name the directory "
				   "it leads to";
	else if (!S_ISDIR(st->st_mode))
		rc = -ENOTDIR, why = "not a directory";
	else if ((sf->topfd = sf_open_dir(AT_FDCWD, dir)) < 0)
		rc = -errno, why = g_strerror(errno);
	else if (!sf_fd_is(sf->topfd, (struct sf_id){st->st_dev, st->st_ino}))
		rc = -ESTALE, why = "replaced while being opened";
	if (!why)
		return 0;
	*err = g_strdup_printf("%s: %s", dir, why);
	if (sf->topfd >= 0)
		close(sf->topfd);
	return rc;
}

/* The root's owner and mode from DIR; its times when it is left. */
static int sf_root(struct spec_from *sf, const struct stat *st)
{
	int err = cfs_tree_chmod(sf->t, CFS_ROOT, st->st_mode & 07777);

	if (!err)
		err = cfs_tree_chown(sf->t, CFS_ROOT, st->st_uid, st->st_gid);
	if (err)
		return err;
	sf_xattrs(sf, sf->topfd, false, CFS_ROOT);
	struct sf_frame f = {{st->st_dev, st->st_ino}, CFS_ROOT, *st, NULL, 0, sf->path->len};
	f.names = sf_names(sf, sf->topfd);
	g_array_append_val(sf->stack, f);
	return 0;
}

static void sf_walk(struct spec_from *sf)
{
	while (sf->stack->len > 0) {
		struct sf_frame *f = sf_top(sf);
		if (f->next < f->names->len)
			sf_entry(sf, g_ptr_array_index(f->names, f->next++));
		else if (sf_leave(sf) < 0)
			break;
	}
	while (sf->stack->len > 0) { /* a walk cut short: what it holds keeps its times */
		struct sf_frame *f = sf_top(sf);
		sf_times(sf, f->node, &f->st);
		g_ptr_array_free(f->names, TRUE);
		g_array_set_size(sf->stack, sf->stack->len - 1);
	}
}

static void sf_relinked_times(struct spec_from *sf)
{
	GHashTableIter it;
	gpointer value;

	g_hash_table_iter_init(&it, sf->linked);
	while (g_hash_table_iter_next(&it, NULL, &value)) {
		const struct sf_linked *l = value;
		sf_times(sf, l->node, &l->st);
	}
}

int cfs_spec_from_dir(struct cfs_tree *t, const char *dir,
		      void (*report)(void *data, const char *path, const char *why), void *data,
		      char **err)
{
	struct spec_from sf = {.t = t, .topfd = -1, .report = report, .data = data};
	struct stat st;
	int rc;

	*err = NULL;
	rc = sf_open_top(&sf, dir, &st, err);
	if (rc)
		return rc;
	sf.cur = dup(sf.topfd);
	if (sf.cur < 0) {
		rc = -errno;
		close(sf.topfd);
		return rc;
	}
	sf.dev = st.st_dev;
	sf.stack = g_array_new(FALSE, FALSE, sizeof(struct sf_frame));
	sf.linked = g_hash_table_new_full(sf_id_hash, sf_id_equal, NULL, g_free);
	sf.path = g_string_new(dir);
	while (sf.path->len > 0 && sf.path->str[sf.path->len - 1] == '/')
		g_string_truncate(sf.path, sf.path->len - 1); /* DIR/ and /: no "//" in paths */
	sf.buf = g_malloc(SPEC_IO_CHUNK);
	rc = sf_root(&sf, &st);
	if (!rc) {
		sf_walk(&sf);
		sf_relinked_times(&sf);
		rc = sf.problems > INT_MAX ? INT_MAX : (int)sf.problems;
	}
	g_free(sf.buf);
	g_string_free(sf.path, TRUE);
	g_hash_table_destroy(sf.linked);
	g_array_free(sf.stack, TRUE);
	close(sf.cur);
	close(sf.topfd);
	return rc;
}
