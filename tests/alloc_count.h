/*
 * A counting, failing allocator for the resolver's ctx.realloc_fn / ctx.free_fn hooks.
 * The hooks take no user pointer, so the state is per thread; tests reset it before a walk.
 */
#ifndef CHAINFS_ALLOC_COUNT_H
#define CHAINFS_ALLOC_COUNT_H

#include <stddef.h>

struct ac_stats {
	long calls;  /* realloc calls made, failed ones included */
	long allocs; /* calls that returned memory */
	long fails;  /* calls we made fail */
	long frees;  /* free calls with a non-NULL pointer */
	long live;   /* blocks handed out and not yet freed */
};

/* Forget all counts. FAIL_AT > 0 makes the FAIL_AT-th realloc call (1-based) return NULL;
 * 0 never fails. */
void ac_reset(long fail_at);
struct ac_stats ac_stats(void);

void *ac_realloc(void *ptr, size_t size);
void ac_free(void *ptr);

#endif
