/*
 * The lowlevel operations table libfuse serves from: one wrapper per row of CFS_OPS that counts
 * the request, then calls its handler (ops.c, ops_write.c). A file of its own, so that the
 * handlers' files need not call each other through it.
 */
#include "ops.h"

static struct cfs_daemon *cfs_of_userdata(void *userdata)
{
	return userdata;
}

/* The daemon a handler's first argument leads to: its request's, or init's userdata. */
#define CFS_FIRST(first, ...) first
#define CFS_DAEMON_OF(args)                                                                        \
	_Generic((CFS_FIRST args), void * : cfs_of_userdata, default : cfs_of)(CFS_FIRST args)

/* One wrapper per row of the table (optable.h): the request is counted, and its walks get a
 * fresh budget, before its handler runs, so no handler can forget either. */
#define CFS_COUNTED(n, opcode, nofault, at, keeps, params, args)                                   \
	static void cfs_counted_##n params                                                         \
	{                                                                                          \
		cfs_count(CFS_DAEMON_OF(args), CFS_OP_##n);                                        \
		cfs_ll_##n args;                                                                   \
	}
CFS_OPS(CFS_COUNTED)
#undef CFS_COUNTED

/* Every operation of the one table, each counted, then served by its handler. */
#define CFS_LL_OP(n, ...) .n = cfs_counted_##n,
const struct fuse_lowlevel_ops cfs_ops = {CFS_OPS(CFS_LL_OP)};
#undef CFS_LL_OP
