/*
 * The FUSE-over-io_uring ABI (kernel 6.14, FUSE protocol 7.42; include/uapi/linux/fuse.h).
 * Debian 12's <linux/fuse.h> (7.38) predates it, so the few definitions the uring transport
 * needs live here; a header new enough to have them wins (FUSE_OVER_IO_URING is defined beside
 * the structs, so it guards all of them).
 */
#ifndef CHAINFS_URING_ABI_H
#define CHAINFS_URING_ABI_H

#include <linux/fuse.h>
#include <stdint.h>

/* set in the unique of an interrupt's reply (7.31), which answers no request */
#ifndef FUSE_INT_REQ_BIT
#define FUSE_INT_REQ_BIT (1ULL << 0)
#endif

#ifndef FUSE_OVER_IO_URING
/* INIT flag (flags2 bit 9): offered by the kernel when enable_uring is set; answered by a
 * server that will register ring entries */
#define FUSE_OVER_IO_URING (1ULL << 41)

#define FUSE_URING_IN_OUT_HEADER_SZ 128
#define FUSE_URING_OP_IN_OUT_SZ	    128

/* the trailer of an entry's header buffer: the request's unique and the payload's length,
 * written by the kernel on fetch and by us on commit */
struct fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};

/* iov[0] of a REGISTER: fuse_in_header / fuse_out_header, then the op's fixed argument */
struct fuse_uring_req_header {
	char in_out[FUSE_URING_IN_OUT_HEADER_SZ];
	char op_in[FUSE_URING_OP_IN_OUT_SZ];
	struct fuse_uring_ent_in_out ring_ent_in_out;
};

/* sqe->cmd_op of an IORING_OP_URING_CMD on /dev/fuse */
enum fuse_uring_cmd {
	FUSE_IO_URING_CMD_INVALID = 0,
	FUSE_IO_URING_CMD_REGISTER = 1,
	FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,
};

/* in the SQE128's 80-byte command area */
struct fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};
#endif

#endif
