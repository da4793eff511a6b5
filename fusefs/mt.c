/*
 * -o loop=libfuse_mt: libfuse's multi-threaded loop, kept to compare our single loop with.
 * The tree belongs to one thread at a time, so every operation runs under one lock: the
 * workers overlap only in the kernel round trips, which is what the comparison measures.
 */
#include "ops.h"

#include <pthread.h>

static pthread_mutex_t cfs_big_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fuse_lowlevel_ops cfs_inner;

#define CFS_LOCKED(op, params, args)                                                               \
	static void cfs_mt_##op params                                                             \
	{                                                                                          \
		pthread_mutex_lock(&cfs_big_lock);                                                 \
		cfs_inner.op args;                                                                 \
		pthread_mutex_unlock(&cfs_big_lock);                                               \
	}

typedef fuse_req_t R;
typedef fuse_ino_t I;
typedef struct fuse_file_info F;

CFS_LOCKED(init, (void *u, struct fuse_conn_info *c), (u, c))
CFS_LOCKED(lookup, (R r, I p, const char *n), (r, p, n))
CFS_LOCKED(forget, (R r, I i, uint64_t n), (r, i, n))
CFS_LOCKED(forget_multi, (R r, size_t c, struct fuse_forget_data *f), (r, c, f))
CFS_LOCKED(getattr, (R r, I i, F *f), (r, i, f))
CFS_LOCKED(setattr, (R r, I i, struct stat *a, int s, F *f), (r, i, a, s, f))
CFS_LOCKED(readlink, (R r, I i), (r, i))
CFS_LOCKED(mknod, (R r, I p, const char *n, mode_t m, dev_t d), (r, p, n, m, d))
CFS_LOCKED(mkdir, (R r, I p, const char *n, mode_t m), (r, p, n, m))
CFS_LOCKED(unlink, (R r, I p, const char *n), (r, p, n))
CFS_LOCKED(rmdir, (R r, I p, const char *n), (r, p, n))
CFS_LOCKED(symlink, (R r, const char *t, I p, const char *n), (r, t, p, n))
CFS_LOCKED(rename, (R r, I p, const char *n, I np, const char *nn, unsigned f),
	   (r, p, n, np, nn, f))
CFS_LOCKED(link, (R r, I i, I np, const char *nn), (r, i, np, nn))
CFS_LOCKED(open, (R r, I i, F *f), (r, i, f))
CFS_LOCKED(read, (R r, I i, size_t s, off_t o, F *f), (r, i, s, o, f))
CFS_LOCKED(write, (R r, I i, const char *b, size_t s, off_t o, F *f), (r, i, b, s, o, f))
CFS_LOCKED(flush, (R r, I i, F *f), (r, i, f))
CFS_LOCKED(release, (R r, I i, F *f), (r, i, f))
CFS_LOCKED(fsync, (R r, I i, int d, F *f), (r, i, d, f))
CFS_LOCKED(fsyncdir, (R r, I i, int d, F *f), (r, i, d, f))
CFS_LOCKED(opendir, (R r, I i, F *f), (r, i, f))
CFS_LOCKED(readdir, (R r, I i, size_t s, off_t o, F *f), (r, i, s, o, f))
CFS_LOCKED(readdirplus, (R r, I i, size_t s, off_t o, F *f), (r, i, s, o, f))
CFS_LOCKED(releasedir, (R r, I i, F *f), (r, i, f))
CFS_LOCKED(statfs, (R r, I i), (r, i))
CFS_LOCKED(access, (R r, I i, int m), (r, i, m))
CFS_LOCKED(create, (R r, I p, const char *n, mode_t m, F *f), (r, p, n, m, f))
CFS_LOCKED(getxattr, (R r, I i, const char *n, size_t s), (r, i, n, s))
CFS_LOCKED(listxattr, (R r, I i, size_t s), (r, i, s))

/* Every operation set in OPS runs under the lock. */
#define CFS_SWAP(op)                                                                               \
	do {                                                                                       \
		if (ops->op)                                                                       \
			ops->op = cfs_mt_##op;                                                     \
	} while (0)

void cfs_mt_wrap(struct fuse_lowlevel_ops *ops)
{
	cfs_inner = *ops;
	CFS_SWAP(init);
	CFS_SWAP(lookup);
	CFS_SWAP(forget);
	CFS_SWAP(forget_multi);
	CFS_SWAP(getattr);
	CFS_SWAP(setattr);
	CFS_SWAP(readlink);
	CFS_SWAP(mknod);
	CFS_SWAP(mkdir);
	CFS_SWAP(unlink);
	CFS_SWAP(rmdir);
	CFS_SWAP(symlink);
	CFS_SWAP(rename);
	CFS_SWAP(link);
	CFS_SWAP(open);
	CFS_SWAP(read);
	CFS_SWAP(write);
	CFS_SWAP(flush);
	CFS_SWAP(release);
	CFS_SWAP(fsync);
	CFS_SWAP(fsyncdir);
	CFS_SWAP(opendir);
	CFS_SWAP(readdir);
	CFS_SWAP(readdirplus);
	CFS_SWAP(releasedir);
	CFS_SWAP(statfs);
	CFS_SWAP(access);
	CFS_SWAP(create);
	CFS_SWAP(getxattr);
	CFS_SWAP(listxattr);
}
