/*
 * -o loop=libfuse_mt: libfuse's multi-threaded loop, kept to compare our single loop with.
 * The tree belongs to one thread at a time, so every operation runs under one lock: the
 * workers overlap only in the kernel round trips, which is what the comparison measures.
 */
#include "ops.h"

#include <pthread.h>

static pthread_mutex_t cfs_big_lock = PTHREAD_MUTEX_INITIALIZER;

/* One locked wrapper per row of the table (optable.h), calling that row's entry of cfs_ops
 * (which counts the request, then calls its handler). */
#define CFS_LOCKED(n, opcode, nofault, at, keeps, params, args)                                    \
	static void cfs_mt_##n params                                                              \
	{                                                                                          \
		pthread_mutex_lock(&cfs_big_lock);                                                 \
		cfs_ops.n args;                                                                    \
		pthread_mutex_unlock(&cfs_big_lock);                                               \
	}
CFS_OPS(CFS_LOCKED)
#undef CFS_LOCKED

#define CFS_MT_OP(n, ...) .n = cfs_mt_##n,
const struct fuse_lowlevel_ops cfs_mt_ops = {CFS_OPS(CFS_MT_OP)};
#undef CFS_MT_OP
