/*
 * The requests chainfs counts, by name and by the kernel's opcode, from the one list in
 * optable.h (CFS_OPS): stats, latency, faults and the control socket all name them from here.
 */
#include "optable.h"

#include <string.h>

#define CFS_OP_NAME(n, ...) #n,
const char *const cfs_op_names[CFS_OP_MAX] = {CFS_OPS(CFS_OP_NAME)};
#undef CFS_OP_NAME

#define CFS_OP_NOFAULT(n, opcode, nofault, ...) nofault,
static const char *const cfs_op_nofaults[CFS_OP_MAX] = {CFS_OPS(CFS_OP_NOFAULT)};
#undef CFS_OP_NOFAULT

#define CFS_OP_NAME_AT(n, opcode, nofault, at, ...) at,
static const long cfs_op_name_at[CFS_OP_MAX] = {CFS_OPS(CFS_OP_NAME_AT)};
#undef CFS_OP_NAME_AT

#define CFS_OP_KEEPS(n, opcode, nofault, at, keeps, ...) keeps,
static const bool cfs_op_kept[CFS_OP_MAX] = {CFS_OPS(CFS_OP_KEEPS)};
#undef CFS_OP_KEEPS

bool cfs_op_keeps(enum cfs_op op)
{
	return op < CFS_OP_MAX && cfs_op_kept[op];
}

const char *cfs_op_nofault(enum cfs_op op)
{
	return op < CFS_OP_MAX ? cfs_op_nofaults[op] : "not an operation chainfs serves";
}

enum cfs_op cfs_op_of_opcode(uint32_t opcode)
{
#define CFS_OP_CASE(n, code, ...)                                                                  \
	case code:                                                                                 \
		return CFS_OP_##n;
	switch (opcode) {
		CFS_OPS(CFS_OP_CASE)
	case FUSE_RENAME2: /* rename with flags: libfuse serves both through its rename */
		return CFS_OP_rename;
	default:
		return CFS_OP_MAX;
	}
#undef CFS_OP_CASE
}

/* The opcodes of include/uapi/linux/fuse.h that CFS_OPS has no row for; written by number,
 * as the system's header may be older than the kernel that sends them (statx is 52). */
static const char *const cfs_unserved_names[] = {
    [31] = "getlk",
    [32] = "setlk",
    [33] = "setlkw",
    [36] = "interrupt",
    [37] = "bmap",
    [38] = "destroy",
    [39] = "ioctl",
    [40] = "poll",
    [41] = "notify_reply",
    [45] = "rename2",
    [47] = "copy_file_range",
    [48] = "setupmapping",
    [49] = "removemapping",
    [50] = "syncfs",
    [51] = "tmpfile",
    [52] = "statx",
    [53] = "copy_file_range_64",
};

const char *cfs_opcode_name(uint32_t opcode)
{
	if (opcode == CUSE_INIT)
		return "cuse_init";
	return opcode < sizeof(cfs_unserved_names) / sizeof(cfs_unserved_names[0])
		   ? cfs_unserved_names[opcode]
		   : NULL;
}

const char *cfs_request_name(const struct fuse_in_header *in, size_t size)
{
	enum cfs_op op = cfs_op_of_opcode(in->opcode);
	long at = in->opcode == FUSE_RENAME2 ? (long)sizeof(struct fuse_rename2_in)
		  : op < CFS_OP_MAX	     ? cfs_op_name_at[op]
					     : -1;

	if (at < 0 || size < sizeof(*in) + (size_t)at + 1)
		return NULL;
	const char *name = (const char *)(in + 1) + at;
	return memchr(name, '\0', size - sizeof(*in) - (size_t)at) ? name : NULL;
}
