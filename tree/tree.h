/*
 * chainfs in-memory tree: directories, files and symlinks, writable like tmpfs.
 *
 * Layout for millions of nodes: nodes live in one array indexed by 32-bit handles (no
 * per-node malloc), names and link targets in an arena, directory entries in one
 * open-addressed hash keyed by (directory, name) so lookup is O(1) in any directory, and each
 * directory keeps its entries in creation order with stable readdir cookies.
 *
 * Handles: 0 is "none", CFS_ROOT (1) is the root directory, so a handle is usable as a FUSE
 * nodeid in the modes where one path names one node. A node removed from the namespace while
 * the kernel still holds references (cfs_tree_ref) lives on as an orphan until the last
 * cfs_tree_unref; its handle is then reused with a new generation number.
 *
 * Every call returns 0 or a negative errno; a failed call leaves the tree exactly as it was.
 * New nodes get the current time; every change stamps mtime/ctime as tmpfs does (the parent
 * directory's on entry changes, the node's ctime on attribute changes).
 * Not thread-safe: the daemon's single loop thread owns the tree.
 */
#ifndef CHAINFS_TREE_H
#define CHAINFS_TREE_H

#include "rs.h"

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

enum { CFS_ROOT = 1 };
/* The name every directory of a mount answers with its parent (links.h), so no entry may take
 * it: making one gives EEXIST. */
#define CFS_UP_NAME ".^"

/* Limits, with the reason next to each (names and link targets: RS_NAME_MAX, RS_PATH_MAX). */
enum {
	CFS_PATTERN_MAX = 65536, /* a pattern comes from one spec line (CFS_SPEC_MAX_LINE) */
};

struct cfs_tree;

/* Attributes given to a new node. */
struct cfs_new {
	mode_t mode; /* permission bits only (07777); the kind comes from the call */
	uid_t uid;
	gid_t gid;
};

struct cfs_tree_stats {
	uint64_t nodes; /* live nodes, orphans included */
	uint64_t dirs, files, links;
	uint64_t bytes;	     /* memory the tree holds (arrays, arenas, hashes, file data) */
	uint64_t data_bytes; /* written file data held: small files' buffers and 4 KiB pages */
	uint64_t data_limit; /* cfs_tree_set_data_limit; UINT64_MAX: none */
	uint64_t meta_bytes; /* names, link targets, patterns, and a cost per node and name */
	uint64_t meta_limit; /* cfs_tree_set_meta_limit; UINT64_MAX: none */
	uint64_t node_limit; /* cfs_tree_set_node_limit; UINT64_MAX: none */
};

/* Optional allocator hooks (tests inject failures); NULL: libc. Set before any use. */
struct cfs_alloc {
	void *(*realloc_fn)(void *ptr, size_t size);
	void (*free_fn)(void *ptr);
};

struct cfs_tree *cfs_tree_new(const struct cfs_alloc *alloc); /* NULL on ENOMEM */
void cfs_tree_free(struct cfs_tree *t);

/* Queries. ID must be a live handle. lookup also answers "." and ".." (DIR, its parent). */
int cfs_tree_lookup(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		    uint32_t *out);
enum rs_kind cfs_tree_kind(const struct cfs_tree *t, uint32_t id);
/* The directory holding ID: a directory's parent (the root's is the root); for a file or a
 * link, the directory of its first name still linked (orphans: the last one it had). */
uint32_t cfs_tree_parent(const struct cfs_tree *t, uint32_t id);
uint32_t cfs_tree_generation(const struct cfs_tree *t, uint32_t id);
/* The name of ID in cfs_tree_parent(ID) (not NUL-terminated); the root's is "" (len 0). */
void cfs_tree_name(const struct cfs_tree *t, uint32_t id, const char **name, size_t *len);
/* How many directories below the root the deepest directory holding a name of ID is (0: every
 * name is in the root, or ID is the root). */
uint32_t cfs_tree_name_depth(const struct cfs_tree *t, uint32_t id);
void cfs_tree_stat(const struct cfs_tree *t, uint32_t id, struct stat *st); /* st_ino = id */
int cfs_tree_readlink(const struct cfs_tree *t, uint32_t id, const char **target, size_t *len);
/* Copy up to SIZE bytes of file ID's content from OFF into BUF; returns bytes or -errno. */
ssize_t cfs_tree_read(const struct cfs_tree *t, uint32_t id, char *buf, size_t size, off_t off);
/* 0 if CRED may access ID with MASK (R_OK|W_OK|X_OK), else -EACCES; uid 0 may all but X
 * on a file with no x bit (as the kernel's generic_permission). */
int cfs_tree_may(const struct cfs_tree *t, uint32_t id, const struct rs_cred *cred, int mask);
void cfs_tree_stats(const struct cfs_tree *t, struct cfs_tree_stats *st);

/*
 * Readdir. *cookie starts at 0; each call returns the next live entry after *cookie in
 * creation order and sets *cookie to that entry's cookie (stable across additions and
 * removals of other entries; never 0). Returns 1 when there is no further entry.
 * "." and ".." are not listed (the caller adds them).
 */
int cfs_tree_dir_next(const struct cfs_tree *t, uint32_t dir, uint64_t *cookie, const char **name,
		      size_t *len, uint32_t *child);
uint64_t cfs_tree_dir_count(const struct cfs_tree *t, uint32_t dir);

/* Creation: -EEXIST if NAME is taken, -ENOTDIR, -ENAMETOOLONG (> 255), -EINVAL for "", "."
 * and ".." or a name containing '/', -ENOMEM. *out gets the new handle. */
int cfs_tree_mkdir(struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		   const struct cfs_new *a, uint32_t *out);
int cfs_tree_mkfile(struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		    const struct cfs_new *a, uint32_t *out);
/* TARGET of LEN bytes kept exactly; -ENOENT for an empty target, -ENAMETOOLONG past 4095. */
int cfs_tree_symlink(struct cfs_tree *t, uint32_t dir, const char *name, size_t len,
		     const char *target, size_t target_len, const struct cfs_new *a, uint32_t *out);
/* A fifo, a socket or a device node: TYPE is S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK (else
 * -EINVAL); RDEV (devices only) within the kernel's 12-bit major and 20-bit minor (else
 * -EINVAL). The tree only stores them: the kernel does their I/O. cfs_tree_kind: RS_OTHER. */
int cfs_tree_mknod(struct cfs_tree *t, uint32_t dir, const char *name, size_t len, mode_t type,
		   dev_t rdev, const struct cfs_new *a, uint32_t *out);
/* A hard link to the non-directory ID (-EPERM for a directory). */
int cfs_tree_link(struct cfs_tree *t, uint32_t id, uint32_t dir, const char *name, size_t len);
/* O_TMPFILE: a file in DIR with no name (nlink 0), held by one reference that is the caller's
 * (cfs_tree_unref frees it unless it got a name meanwhile); the errnos of cfs_tree_mkfile. */
int cfs_tree_mkfile_unnamed(struct cfs_tree *t, uint32_t dir, const struct cfs_new *a,
			    uint32_t *out);
/* linkat of an O_TMPFILE file (the kernel checked it may, I_LINKABLE): the referenced
 * regular file ID with no name gets NAME in DIR as its first (-EINVAL for any other node;
 * otherwise cfs_tree_link's errnos). */
int cfs_tree_link_unnamed(struct cfs_tree *t, uint32_t id, uint32_t dir, const char *name,
			  size_t len);

/*
 * File content, sparse as on tmpfs. A pattern file holds SIZE bytes repeating PATTERN (stored
 * once, shared with the file that got the same pattern just before); a literal holds a copy
 * of its bytes. Written data lives in 4 KiB pages allocated where written (a file of at most
 * a page: in a buffer of its size); holes, and whatever a truncate adds, read as zeros and
 * hold nothing. A write into a pattern file stores only the pages it touches; the rest still
 * reads the pattern. Sizes go up to INT64_MAX (the kernel's MAX_LFS_FILESIZE): a write
 * starting there is -EFBIG, one crossing it stops there (as the kernel's).
 * Data limit: written data held (cfs_tree_stats.data_bytes) may not pass the limit: a write
 * that needs more stops short where it runs out, -ENOSPC when not a byte fits (as tmpfs);
 * set_content is all or nothing (-ENOSPC). -EISDIR on a directory, -EINVAL on a link or a
 * pattern longer than CFS_PATTERN_MAX (or empty with SIZE > 0). -ENOMEM: nothing changed.
 */
int cfs_tree_set_pattern(struct cfs_tree *t, uint32_t id, const char *pattern, size_t plen,
			 uint64_t size);
int cfs_tree_set_content(struct cfs_tree *t, uint32_t id, const char *data, size_t len);
ssize_t cfs_tree_write(struct cfs_tree *t, uint32_t id, const char *buf, size_t size, off_t off);
int cfs_tree_truncate(struct cfs_tree *t, uint32_t id, uint64_t size);
/*
 * fallocate(2) as tmpfs answers it. MODE 0 and FALLOC_FL_KEEP_SIZE hold pages for
 * [OFF, OFF + LEN): what the file reads does not change; pages new over holes read zeros and
 * count in st_blocks, yet stay holes to cfs_tree_seek (and to dump) until written, as tmpfs's
 * fallocated pages; without KEEP_SIZE the size grows to OFF + LEN. All or nothing: -ENOSPC when
 * the pages would pass the data limit. FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE frees the
 * whole pages of the range and zeros the rest of it; a hole inside a spec pattern's part of a
 * file is held as zero pages instead (the pattern has no holes), so that punch may be -ENOSPC.
 * Any other mode (ZERO_RANGE, COLLAPSE_RANGE, INSERT_RANGE, UNSHARE_RANGE, PUNCH_HOLE alone)
 * is -EOPNOTSUPP, as tmpfs; -EINVAL for OFF < 0 or LEN <= 0, -EFBIG past INT64_MAX, -EISDIR,
 * -EINVAL on a non-file; -ENOMEM: nothing changed.
 */
int cfs_tree_fallocate(struct cfs_tree *t, uint32_t id, int mode, off_t off, off_t len);
/* lseek(2)'s SEEK_DATA (DATA) or SEEK_HOLE from OFF in file ID, by 4 KiB pages as tmpfs: data
 * is a page written (or a spec pattern's, or a small file's one buffer), a hole everything
 * else, and the end of the file is a hole. Returns the offset, -ENXIO at or past the size
 * (or when no data follows OFF, for SEEK_DATA). */
off_t cfs_tree_seek(const struct cfs_tree *t, uint32_t id, off_t off, bool data);
/* The most written data the tree may hold, in bytes (default: no limit). Data held beyond a
 * lowered limit stays; only new data is refused. */
void cfs_tree_set_data_limit(struct cfs_tree *t, uint64_t bytes);
/* The most metadata the tree may hold, in bytes (default: no limit), as tmpfs's nr_inodes
 * bounds what names and inodes cost: names and link targets (and patterns) count their
 * bytes, each node 128 and each extra hard-link name 64 more, extended attributes their
 * names, values and 64 each (cfs_tree_stats.meta_bytes).
 * Creating a node, a link or a name, or renaming to a longer name, that would pass it is
 * -ENOSPC; removing gives the room back. Metadata held beyond a lowered limit stays. */
void cfs_tree_set_meta_limit(struct cfs_tree *t, uint64_t bytes);
/* The most live nodes the tree may hold (default: no limit but the handle space, 2^30 - 1):
 * creating one more is -ENOSPC. A node budget from the memory at hand (-o max_nodes), which
 * spec lines check before building, so a generator past it fails before making anything.
 * Nodes held beyond a lowered limit stay. */
void cfs_tree_set_node_limit(struct cfs_tree *t, uint64_t nodes);
/* How many more nodes (with empty names) fit under the metadata and node limits: statfs's
 * f_ffree. */
uint64_t cfs_tree_nodes_room(const struct cfs_tree *t);
/* How file ID stores its bytes, for writing it back (dump, materialize) without reading its
 * holes: its base pattern (*pat, *plen; NULL, 0: none), which shows over [0, *end) where not
 * written; and the next run of written bytes at or after OFF, [*start, *end) within the size
 * (1: none). Everything else reads as zeros and holds nothing. */
int cfs_tree_file_pattern(const struct cfs_tree *t, uint32_t id, const char **pat, size_t *plen,
			  uint64_t *end);
int cfs_tree_next_written(const struct cfs_tree *t, uint32_t id, uint64_t off, uint64_t *start,
			  uint64_t *end);

/* Attributes: NULL / -1 leave a field as is. Times are set exactly (no "now" here), within
 * the int64-nanosecond range (1677..2262; beyond, clamped); -EINVAL for a bad tv_nsec.
 * Links are always 0777: chmod on one is -EOPNOTSUPP. */
int cfs_tree_chmod(struct cfs_tree *t, uint32_t id, mode_t mode);
/* A write or truncate of ID by CRED (NULL: root, who keeps them) drops set-id bits as the
 * kernel does on tmpfs (setattr_should_drop_suidgid): set-uid always, set-gid when the file
 * is group-executable or CRED is outside its group. Only regular files. True if the
 * mode changed. */
bool cfs_tree_drop_setid(struct cfs_tree *t, uint32_t id, const struct rs_cred *cred);
int cfs_tree_chown(struct cfs_tree *t, uint32_t id, uid_t uid, gid_t gid);
int cfs_tree_set_times(struct cfs_tree *t, uint32_t id, const struct timespec *atime,
		       const struct timespec *mtime, const struct timespec *ctime);

/* Namespace changes. unlink: -EISDIR on a directory; rmdir: -ENOTDIR, -ENOTEMPTY.
 * rename: flags 0, RENAME_NOREPLACE (-EEXIST) or RENAME_EXCHANGE (both must exist), the
 * POSIX rules (-EISDIR, -ENOTDIR, -ENOTEMPTY, -EINVAL for a directory into itself). */
int cfs_tree_unlink(struct cfs_tree *t, uint32_t dir, const char *name, size_t len);
int cfs_tree_rmdir(struct cfs_tree *t, uint32_t dir, const char *name, size_t len);
int cfs_tree_rename(struct cfs_tree *t, uint32_t olddir, const char *oldname, size_t oldlen,
		    uint32_t newdir, const char *newname, size_t newlen, unsigned flags);

/*
 * The journal: a series of changes kept whole or undone whole. From cfs_tree_journal_begin to
 * its end, each name made, moved, exchanged or removed and each attribute or time changed is
 * noted with what undoes it, and a node that loses its last name is kept (as an orphan)
 * rather than freed. cfs_tree_journal_undo then puts the tree back as it was at begin: the
 * same names in the same readdir order, naming the same nodes (handles and generations, so
 * what the kernel holds stays right), each node's first name first, the same attributes,
 * link counts and times, and the extra hard-link names of each node in their order (the one a
 * removed first name passes to). Not noted: file content (a journal must not write, truncate
 * or set the content of a file that existed when it began). cfs_tree_journal_commit keeps the
 * changes and frees what they removed. Only the tree's own calls run meanwhile.
 */
int cfs_tree_journal_begin(struct cfs_tree *t); /* 0, -EBUSY (one is open) or -ENOMEM */
void cfs_tree_journal_commit(struct cfs_tree *t);
/* 0, or -ENOMEM: a note found no memory (nothing is put back: the tree stays as the changes
 * left it), or a step back did (the others were taken). */
int cfs_tree_journal_undo(struct cfs_tree *t);

/* Kernel references (FUSE lookup counts). A node unlinked while referenced stays readable
 * until its count returns to 0; meanwhile it keeps its last name and directory, and keeps
 * that directory alive (removed or not), as a dentry pins its parent. A count that reaches
 * 2^32 - 1 sticks there (the node is then never freed: a bounded leak, never an early free). */
void cfs_tree_ref(struct cfs_tree *t, uint32_t id, uint64_t n);
void cfs_tree_unref(struct cfs_tree *t, uint32_t id, uint64_t n);
uint64_t cfs_tree_refs(const struct cfs_tree *t, uint32_t id);
uint64_t cfs_tree_total_refs(const struct cfs_tree *t); /* sum over all nodes, for tests */
/* Call FN for every node the kernel holds references to (to invalidate its caches). */
void cfs_tree_each_referenced(const struct cfs_tree *t, void (*fn)(void *data, uint32_t id),
			      void *data);

/*
 * What changes touched, as far as the kernel's caches go (coherence.c turns it into
 * invalidations): the nodes whose attributes, content, link count or entries changed that
 * the kernel may hold (the root, or nodes with references: a node made by the change is not
 * one), and whether any name was added, removed or moved. Past CFS_CHANGES_MAX nodes,
 * OVERFLOW stands for every node the kernel holds.
 */
enum { CFS_CHANGES_MAX = 16 };
struct cfs_changes {
	uint32_t nodes[CFS_CHANGES_MAX];
	unsigned count;
	bool overflow;
	bool names;
};
/* From now on every change is recorded INTO (NULL: none is); the reader empties it. */
void cfs_tree_record(struct cfs_tree *t, struct cfs_changes *into);
/* Note NODE in CH (once), if the kernel may hold it. */
void cfs_changes_node(const struct cfs_tree *t, struct cfs_changes *ch, uint32_t node);

/*
 * Extended attributes, kept as tmpfs keeps them: names in the security., system. (POSIX
 * ACLs: system.posix_acl_access, system.posix_acl_default), trusted. and user. namespaces,
 * user.* on regular files and directories only; each costs its name, its value and
 * CFS_XATTR_COST under the metadata limit (as tmpfs charges its inode space). What the kernel
 * checks before asking a filesystem (who may read or write which namespace) is the caller's
 * business. Values are kept as given (an ACL's too: cfs_tree_setxattr checks only its shape).
 * setxattr: FLAGS XATTR_CREATE (-EEXIST) or XATTR_REPLACE (-ENODATA); -ERANGE for a name of
 * 0 or over CFS_XATTR_NAME_MAX bytes, -E2BIG for a value over CFS_XATTR_SIZE_MAX,
 * -EOPNOTSUPP for another namespace, -EINVAL for a bare prefix ("user."), -EPERM for user.*
 * on another kind, -ENOSPC past the metadata limit, -EINVAL for a malformed ACL, -EACCES for a
 * default ACL on a non-directory. Stamps ctime. removexattr: -ENODATA without it.
 * getxattr/listxattr with SIZE 0 answer the length; -ERANGE when SIZE is short. listxattr
 * leaves trusted.* out unless TRUSTED (tmpfs shows them to CAP_SYS_ADMIN only); its order is
 * tmpfs's (the ACLs, then by strcmp). xattr_at: the I-th attribute in that order (1: none).
 */
enum {
	CFS_XATTR_NAME_MAX = 255,   /* the kernel's XATTR_NAME_MAX */
	CFS_XATTR_SIZE_MAX = 65536, /* the kernel's XATTR_SIZE_MAX */
};
int cfs_tree_setxattr(struct cfs_tree *t, uint32_t id, const char *name, const void *value,
		      size_t size, int flags);
int cfs_tree_removexattr(struct cfs_tree *t, uint32_t id, const char *name);
/*
 * POSIX ACLs, as the kernel keeps them for tmpfs: setting system.posix_acl_access (without
 * flags) sets the mode's permission bits from it and keeps it only if it says more than they
 * can; chmod rewrites it; the ACL must be one the kernel would take (-EINVAL). acl_create
 * gives new node ID (just made in DIR, its mode as asked) DIR's default ACL: as its access
 * ACL, masked by the mode (which it masks in turn), and as its own default ACL when ID is a
 * directory; without a default ACL, UMASK masks the mode. Links take neither. -ENOSPC,
 * -ENOMEM: ID is as it was made.
 */
int cfs_tree_acl_create(struct cfs_tree *t, uint32_t dir, uint32_t id, mode_t umask);
ssize_t cfs_tree_getxattr(const struct cfs_tree *t, uint32_t id, const char *name, void *buf,
			  size_t size);
ssize_t cfs_tree_listxattr(const struct cfs_tree *t, uint32_t id, char *buf, size_t size,
			   bool trusted);
int cfs_tree_xattr_at(const struct cfs_tree *t, uint32_t id, uint32_t i, const char **name,
		      const char **value, size_t *len);
/* Whether any node holds an extended attribute (an ACL included). */
bool cfs_tree_has_xattrs(const struct cfs_tree *t);

/* The resolver's view of the tree: handles are the same numbers widened to 64 bits. */
extern const struct rs_tree_ops cfs_tree_rs_ops;

#endif
