/*
 * The requests chainfs counts, by name and by the kernel's opcode, from the one list in
 * daemon.h (CFS_OPS): stats, latency, faults and the control socket all name them from here.
 */
#include "daemon.h"

#define CFS_OP_NAME(n, opcode) #n,
const char *const cfs_op_names[CFS_OP_MAX] = {CFS_OPS(CFS_OP_NAME)};
#undef CFS_OP_NAME

enum cfs_op cfs_op_of_opcode(uint32_t opcode)
{
#define CFS_OP_CASE(n, code)                                                                       \
	case code:                                                                                 \
		return CFS_OP_##n;
	switch (opcode) {
		CFS_OPS(CFS_OP_CASE)
	case FUSE_RENAME:
		return CFS_OP_rename;
	case FUSE_FSYNCDIR:
		return CFS_OP_fsync;
	default:
		return CFS_OP_MAX;
	}
#undef CFS_OP_CASE
}
