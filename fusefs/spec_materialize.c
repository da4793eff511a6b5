/*
 * A tree written out as real directories, files, links and special files under an empty
 * directory (cfs_materialize), holding one directory descriptor at a time.
 */
#include "spec_int.h"
#include "inroot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* Materialize */

struct spec_mat {
	const struct cfs_tree *t;
	const char *top; /* DIR, for messages */
	int topfd;
	int cur;	   /* the directory being filled */
	bool owners;	   /* running as root with CFS_MAT_KEEP_IDS: owners too */
	mode_t modes;	   /* mode bits applied: set-id bits only with CFS_MAT_KEEP_IDS */
	GHashTable *first; /* node with several names -> relative path of its first one */
	char *buf;
	char **err;
};

static int spec_mat_fail(struct spec_mat *m, const char *path, const char *what, int err)
{
	if (!*m->err && asprintf(m->err, "%s%s: %s: %s", m->top, path, what, strerror(-err)) < 0)
		*m->err = NULL;
	return err;
}

/* Bytes of file ID that are not holes: its pattern part and its written runs past it. */
static uint64_t spec_file_bytes(const struct cfs_tree *t, uint32_t id)
{
	uint64_t pend, start, end, total;
	const char *pat;
	size_t plen;

	if (cfs_tree_file_pattern(t, id, &pat, &plen, &pend))
		return 0;
	total = pend;
	for (uint64_t off = pend; cfs_tree_next_written(t, id, off, &start, &end) == 0; off = end)
		total += end - start;
	return total;
}

/* How many bytes of file data (holes left out) T holds, each node counted once. */
static uint64_t spec_data_bytes(const struct cfs_tree *t)
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

static int spec_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
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

/* Bytes [OFF, END) of file ID to FD at the same offsets. */
static int spec_mat_range(struct spec_mat *m, int fd, uint32_t id, uint64_t off, uint64_t end)
{
	int err = 0;

	if (off < end && lseek(fd, (off_t)off, SEEK_SET) < 0)
		return -errno;
	while (!err && off < end) {
		size_t want = end - off < SPEC_IO_CHUNK ? (size_t)(end - off) : SPEC_IO_CHUNK;
		ssize_t n = cfs_tree_read(m->t, id, m->buf, want, (off_t)off);
		if (n <= 0)
			err = n < 0 ? (int)n : -EIO;
		else
			err = spec_write_all(fd, m->buf, (size_t)n);
		off += n > 0 ? (uint64_t)n : 0;
	}
	return err;
}

/* The size first, so holes stay holes; then the pattern part and the written runs past it. */
static int spec_mat_file(struct spec_mat *m, const char *name, const char *path, uint32_t id,
			 const struct stat *st)
{
	const char *what = "open", *pat;
	size_t plen;
	uint64_t pend = 0, start, end;
	int fd = openat(m->cur, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int err = fd < 0 ? -errno : 0;

	if (!err && ftruncate(fd, st->st_size) < 0)
		err = -errno, what = "truncate";
	if (!err)
		err = cfs_tree_file_pattern(m->t, id, &pat, &plen, &pend);
	if (!err)
		err = spec_mat_range(m, fd, id, 0, pend), what = "write";
	for (uint64_t off = pend; !err && cfs_tree_next_written(m->t, id, off, &start, &end) == 0;
	     off = end)
		err = spec_mat_range(m, fd, id, start, end);
	if (!err)
		err = spec_mat_attrs(m, fd, st, &what);
	if (fd >= 0 && close(fd) < 0 && !err)
		err = -errno, what = "close";
	return err ? spec_mat_fail(m, path, what, err) : 0;
}

/* A fifo, socket or device (devices need CAP_MKNOD: the error says so). */
static int spec_mat_special(struct spec_mat *m, const char *name, const char *path,
			    const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	if (mknodat(m->cur, name, (st->st_mode & S_IFMT) | 0600, st->st_rdev) < 0)
		return spec_mat_fail(m, path, "mknod", -errno);
	if (m->owners && fchownat(m->cur, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return spec_mat_fail(m, path, "chown", -errno);
	if (fchmodat(m->cur, name, st->st_mode & m->modes, 0) < 0)
		return spec_mat_fail(m, path, "chmod", -errno);
	if (utimensat(m->cur, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return spec_mat_fail(m, path, "utimensat", -errno);
	return 0;
}

static int spec_mat_link(struct spec_mat *m, const char *name, const char *path, uint32_t id,
			 const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	/* the kernel walks the copy with its own limits */
	ssize_t len = cfs_inroot_target(m->t, rs_limits_linux, id, m->buf);

	if (len < 0)
		return spec_mat_fail(m, path, "readlink", (int)len);
	if (memchr(m->buf, '\0', (size_t)len))
		return spec_mat_fail(m, path, "symlink", -EINVAL);
	if (symlinkat(m->buf, m->cur, name) < 0)
		return spec_mat_fail(m, path, "symlink", -errno);
	if (m->owners && fchownat(m->cur, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return spec_mat_fail(m, path, "lchown", -errno);
	if (utimensat(m->cur, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return spec_mat_fail(m, path, "utimensat", -errno);
	return 0;
}

/* Make directory NAME with private permissions (its own are set when we leave it, so a
 * read-only directory can still be filled) and step into it. */
static int spec_mat_enter(struct spec_mat *m, const char *name, const char *path)
{
	int fd;

	if (mkdirat(m->cur, name, 0700) < 0)
		return spec_mat_fail(m, path, "mkdir", -errno);
	fd = openat(m->cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return spec_mat_fail(m, path, "open", -errno);
	close(m->cur);
	m->cur = fd;
	return 0;
}

/* Done with the directory we are in: set its attributes and step back up. ".." is opened
 * first, while the directory is still searchable. Holding one descriptor at a time keeps a
 * tree of any depth within the fd limit. */
static int spec_mat_leave(struct spec_mat *m, uint32_t id, const char *path, bool top)
{
	struct stat st;
	const char *what;
	int up = -1, err;

	cfs_tree_stat(m->t, id, &st);
	if (!top) {
		up = openat(m->cur, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (up < 0)
			return spec_mat_fail(m, path, "open ..", -errno);
	}
	err = spec_mat_attrs(m, m->cur, &st, &what);
	if (err) {
		if (up >= 0)
			close(up);
		return spec_mat_fail(m, path, what, err);
	}
	if (!top) {
		close(m->cur);
		m->cur = up;
	}
	return 0;
}

static int spec_mat_node(struct spec_mat *m, const struct spec_walk *w)
{
	char name[RS_NAME_MAX + 1];
	const char *path = w->path->str;
	struct stat st;
	enum rs_kind kind = cfs_tree_kind(m->t, w->id);

	if (memchr(w->name, '\0', w->name_len))
		return spec_mat_fail(m, path, "name", -EINVAL);
	memcpy(name, w->name, w->name_len);
	name[w->name_len] = '\0';
	if (kind == RS_DIR)
		return spec_mat_enter(m, name, path);
	cfs_tree_stat(m->t, w->id, &st);
	if (st.st_nlink > 1) {
		const char *seen = g_hash_table_lookup(m->first, GUINT_TO_POINTER(w->id));
		if (seen) {
			if (linkat(m->topfd, seen + 1, m->cur, name, 0) < 0)
				return spec_mat_fail(m, path, "link", -errno);
			return 0;
		}
		g_hash_table_insert(m->first, GUINT_TO_POINTER(w->id), g_strdup(path));
	}
	if (kind == RS_FILE)
		return spec_mat_file(m, name, path, w->id, &st);
	if (kind == RS_LINK)
		return spec_mat_link(m, name, path, w->id, &st);
	return spec_mat_special(m, name, path, &st);
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

int cfs_materialize(const struct cfs_tree *t, const char *dir, unsigned flags, char **err)
{
	bool keep = flags & CFS_MAT_KEEP_IDS;
	struct spec_mat m = {.t = t,
			     .top = dir,
			     .owners = keep && geteuid() == 0,
			     .modes = keep ? 07777 : 01777,
			     .err = err};
	struct spec_walk w;
	uint64_t bytes = spec_data_bytes(t);
	int ev, rc;

	*err = NULL;
	if (bytes > SPEC_MATERIALIZE_MAX_BYTES) {
		if (asprintf(err,
			     "%s: the tree holds %" PRIu64 " bytes of file data, more than "
			     "the %llu materialize writes",
			     dir, bytes, (unsigned long long)SPEC_MATERIALIZE_MAX_BYTES) < 0)
			*err = NULL;
		return -EFBIG;
	}
	m.topfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m.topfd < 0)
		return spec_mat_fail(&m, "", "open", -errno);
	rc = spec_mat_check_empty(m.topfd);
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
	m.first = g_hash_table_new_full(NULL, NULL, NULL, g_free);
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
	g_free(m.buf);
	close(m.cur);
	close(m.topfd);
	return rc;
}
