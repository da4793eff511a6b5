/*
 * A straightforward recursive path resolver, kept as an oracle for the iterative one.
 *
 * Same contract as rs_resolve() (rs.h): same flags, limits, errors and result fields, except
 * that it never allocates (heap_frames and allocs stay 0) and ignores ctx->trace and the
 * allocator hooks. It recurses once per link followed, so a long chain needs a big C stack:
 * about 200 bytes per link at -O2 (measured by bench/resolver), more under sanitizers.
 *
 * It is written from the rules (Linux's path walk, rs.h), not from resolver.c, and phrases
 * them the way the kernel does: LOOKUP_FOLLOW / LOOKUP_DIRECTORY are sticky walk flags that a
 * trailing slash turns on; RS_BENEATH compares the current directory with the start
 * directory; an intermediate component must be a directory as soon as it has been walked.
 */
#ifndef CHAINFS_REFRESOLVE_H
#define CHAINFS_REFRESOLVE_H

#include "rs.h"

int ref_resolve(const struct rs_ctx *ctx, uint64_t start, const char *path, unsigned flags,
		struct rs_result *res);

#endif
