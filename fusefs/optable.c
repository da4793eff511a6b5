/*
 * The requests chainfs counts, by name and by the kernel's opcode, from the one list in
 * daemon.h (CFS_OPS): stats, latency, faults and the control socket all name them from here.
 */
#include "daemon.h"

#include <string.h>

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

/* Where the name starts in each opcode's arguments, past its fixed part. */
static long cfs_name_at(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_LOOKUP:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
	case FUSE_SYMLINK: /* the new entry's name, then the target */
		return 0;
	case FUSE_MKNOD:
		return sizeof(struct fuse_mknod_in);
	case FUSE_MKDIR:
		return sizeof(struct fuse_mkdir_in);
	case FUSE_CREATE:
		return sizeof(struct fuse_create_in);
	case FUSE_LINK:
		return sizeof(struct fuse_link_in);
	case FUSE_RENAME:
		return sizeof(struct fuse_rename_in);
	case FUSE_RENAME2:
		return sizeof(struct fuse_rename2_in);
	default:
		return -1;
	}
}

const char *cfs_request_name(const struct fuse_in_header *in, size_t size)
{
	long at = cfs_name_at(in->opcode);

	if (at < 0 || size < sizeof(*in) + (size_t)at + 1)
		return NULL;
	const char *name = (const char *)(in + 1) + at;
	return memchr(name, '\0', size - sizeof(*in) - (size_t)at) ? name : NULL;
}
