/*
 * The FUSE operations chainfs serves (optable.c) and the errnos a reply may carry, apart from
 * the daemon's state, so that a module that only names operations (fault.c) needs nothing else
 * of the daemon.
 */
#ifndef CHAINFS_OPTABLE_H
#define CHAINFS_OPTABLE_H

#include <linux/fuse.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every FUSE operation chainfs serves, one row each, and everything that differs by operation:
 * X(name, opcode, nofault, name_at, keeps, params, args)
 *   name     libfuse's member of struct fuse_lowlevel_ops, the handler cfs_ll_NAME (ops.c,
 *            ops_write.c), and the name `stats`, latency and fault rules use
 *   opcode   the kernel's; FUSE_RENAME2 is served as rename too (cfs_op_of_opcode)
 *   nofault  why no fault rule may name it (a rule would be accepted and never seen), or NULL
 *   name_at  where the entry name starts in the request's arguments, past their fixed part;
 *            -1: it names none
 *   keeps    the kernel may keep what its answer carries (pages, a listing, a link body)
 *            and answer the next call from it: while fault rules stand, that goes after
 *            each answer, so the next call reaches the rules (session.c)
 *   params, args  the handler's parameter list and the call passing them on (mt.c's lock)
 * From it come the enum, the names, the opcode map (optable.c), the libfuse tables (ops.c,
 * mt.c) and the handlers' prototypes (ops.h), so none of them can miss an operation.
 */
/* clang-format off */
#define CFS_OP_FI struct fuse_file_info *
#define CFS_OPS(X) \
	X(init, FUSE_INIT, CFS_NOFAULT_NOREPLY, -1, false, (void *u, struct fuse_conn_info *c), (u, c)) \
	X(lookup, FUSE_LOOKUP, NULL, 0, false, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n)) \
	X(forget, FUSE_FORGET, CFS_NOFAULT_NOREPLY, -1, false, (fuse_req_t r, fuse_ino_t i, uint64_t n), (r, i, n)) \
	X(forget_multi, FUSE_BATCH_FORGET, CFS_NOFAULT_NOREPLY, -1, false, \
	  (fuse_req_t r, size_t c, struct fuse_forget_data *f), (r, c, f)) \
	X(getattr, FUSE_GETATTR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(setattr, FUSE_SETATTR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, struct stat *a, int s, CFS_OP_FI f), \
	  (r, i, a, s, f)) \
	X(readlink, FUSE_READLINK, NULL, -1, true, (fuse_req_t r, fuse_ino_t i), (r, i)) \
	X(mknod, FUSE_MKNOD, NULL, (long)sizeof(struct fuse_mknod_in), false, \
	  (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, dev_t d), (r, p, n, m, d)) \
	X(mkdir, FUSE_MKDIR, NULL, (long)sizeof(struct fuse_mkdir_in), false, \
	  (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m), (r, p, n, m)) \
	X(unlink, FUSE_UNLINK, NULL, 0, false, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n)) \
	X(rmdir, FUSE_RMDIR, NULL, 0, false, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n)) \
	/* the new entry's name comes first, then the target */ \
	X(symlink, FUSE_SYMLINK, NULL, 0, false, (fuse_req_t r, const char *t, fuse_ino_t p, const char *n), \
	  (r, t, p, n)) \
	X(rename, FUSE_RENAME, NULL, (long)sizeof(struct fuse_rename_in), false, \
	  (fuse_req_t r, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn, unsigned f), \
	  (r, p, n, np, nn, f)) \
	X(link, FUSE_LINK, NULL, (long)sizeof(struct fuse_link_in), false, \
	  (fuse_req_t r, fuse_ino_t i, fuse_ino_t np, const char *nn), (r, i, np, nn)) \
	X(open, FUSE_OPEN, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(read, FUSE_READ, NULL, -1, true, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, CFS_OP_FI f), \
	  (r, i, s, o, f)) \
	X(write, FUSE_WRITE, NULL, -1, true, \
	  (fuse_req_t r, fuse_ino_t i, const char *b, size_t s, off_t o, CFS_OP_FI f), \
	  (r, i, b, s, o, f)) \
	X(flush, FUSE_FLUSH, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(release, FUSE_RELEASE, CFS_NOFAULT_UNWAITED, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(fsync, FUSE_FSYNC, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, int d, CFS_OP_FI f), (r, i, d, f)) \
	X(fsyncdir, FUSE_FSYNCDIR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, int d, CFS_OP_FI f), \
	  (r, i, d, f)) \
	X(opendir, FUSE_OPENDIR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(readdir, FUSE_READDIR, NULL, -1, true, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, CFS_OP_FI f), \
	  (r, i, s, o, f)) \
	X(readdirplus, FUSE_READDIRPLUS, NULL, -1, true, \
	  (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, CFS_OP_FI f), (r, i, s, o, f)) \
	X(releasedir, FUSE_RELEASEDIR, CFS_NOFAULT_UNWAITED, -1, false, (fuse_req_t r, fuse_ino_t i, CFS_OP_FI f), (r, i, f)) \
	X(statfs, FUSE_STATFS, NULL, -1, false, (fuse_req_t r, fuse_ino_t i), (r, i)) \
	X(access, FUSE_ACCESS, CFS_NOFAULT_ACCESS, -1, false, (fuse_req_t r, fuse_ino_t i, int m), (r, i, m)) \
	X(create, FUSE_CREATE, NULL, (long)sizeof(struct fuse_create_in), false, \
	  (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, CFS_OP_FI f), (r, p, n, m, f)) \
	X(getxattr, FUSE_GETXATTR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, const char *n, size_t s), \
	  (r, i, n, s)) \
	X(listxattr, FUSE_LISTXATTR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, size_t s), (r, i, s)) \
	X(setxattr, FUSE_SETXATTR, NULL, -1, false, \
	  (fuse_req_t r, fuse_ino_t i, const char *n, const char *v, size_t s, int f), (r, i, n, v, s, f)) \
	X(removexattr, FUSE_REMOVEXATTR, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, const char *n), (r, i, n)) \
	X(fallocate, FUSE_FALLOCATE, NULL, -1, false, \
	  (fuse_req_t r, fuse_ino_t i, int m, off_t o, off_t l, CFS_OP_FI f), (r, i, m, o, l, f)) \
	X(lseek, FUSE_LSEEK, NULL, -1, false, (fuse_req_t r, fuse_ino_t i, off_t o, int w, CFS_OP_FI f), \
	  (r, i, o, w, f))
/* clang-format on */

/* Why some operations take no fault rule: each would be accepted and never seen. */
#define CFS_NOFAULT_NOREPLY  "nothing waits for its reply, so it can neither fail nor wait"
#define CFS_NOFAULT_UNWAITED "the kernel sends it after close(2) returned and waits for no answer"
#define CFS_NOFAULT_ACCESS                                                                         \
	"the kernel checks permissions itself (default_permissions is always on) and never sends " \
	"it"

/* The largest errno a reply may carry: the kernel takes an error only from -511 to 0
 * (fs/fuse/dev.c, dev_uring.c). Over /dev/fuse it refuses anything else before it looks the
 * request up, so the request would stay unanswered and its caller unkillable. */
enum { CFS_REPLY_ERRNO_MAX = 511 };

#define CFS_OP_ENUM(n, ...) CFS_OP_##n,
enum cfs_op { CFS_OPS(CFS_OP_ENUM) CFS_OP_MAX };
#undef CFS_OP_ENUM

/* The op of a kernel opcode; CFS_OP_MAX for one chainfs does not count by name. */
enum cfs_op cfs_op_of_opcode(uint32_t opcode);
/* The kernel's name for an opcode chainfs serves no handler for (statx, getlk,
 * ...), in the lower case of cfs_op_names, as far as Linux 6.18 defines them (53); NULL for
 * any other. The recording names such requests by it. */
const char *cfs_opcode_name(uint32_t opcode);
/* The entry name a request of SIZE bytes (header included) carries (lookup, mknod, mkdir,
 * create, symlink, link, unlink, rmdir, rename: the old one), or NULL: none, or malformed. */
const char *cfs_request_name(const struct fuse_in_header *in, size_t size);

extern const char *const cfs_op_names[CFS_OP_MAX];
/* Why no fault rule may name OP (see CFS_OPS), or NULL: rules may. */
const char *cfs_op_nofault(enum cfs_op op);
/* Whether the kernel may keep what OP's answer carries (see CFS_OPS). */
bool cfs_op_keeps(enum cfs_op op);

#endif
