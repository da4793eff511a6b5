#include "alloc_count.h"

#include <stdlib.h>

static _Thread_local struct ac_stats ac;
static _Thread_local long ac_fail_at;

void ac_reset(long fail_at)
{
	ac = (struct ac_stats){0};
	ac_fail_at = fail_at;
}

struct ac_stats ac_stats(void)
{
	return ac;
}

void *ac_realloc(void *ptr, size_t size)
{
	if (++ac.calls == ac_fail_at) {
		/* like a failing realloc: PTR stays valid and owned by the caller */
		ac.fails++;
		return NULL;
	}
	void *p = realloc(ptr, size);
	if (!p)
		return NULL;
	ac.allocs++;
	if (!ptr)
		ac.live++;
	return p;
}

void ac_free(void *ptr)
{
	if (!ptr)
		return;
	ac.frees++;
	ac.live--;
	free(ptr);
}
