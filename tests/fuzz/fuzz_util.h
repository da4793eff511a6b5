/*
 * Shared by the libFuzzer targets: a failure report that aborts, a byte-budget allocator for
 * cfs_tree (so generator lines cannot exhaust memory or time, and ENOMEM paths get exercised),
 * and a canonical description of a cfs_tree written without the spec module, to compare two
 * trees or one tree before and after a failed line.
 */
#ifndef CHAINFS_FUZZ_UTIL_H
#define CHAINFS_FUZZ_UTIL_H

#include "spec.h"
#include "tree.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point, declared for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Print "fuzz: <message>" and abort(): every broken invariant ends here, so libFuzzer keeps
 * the input as crash-*. */
_Noreturn void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The allocator for cfs_tree_new(): fails once live bytes would pass the limit. */
extern const struct cfs_alloc fz_budget_alloc;
void fz_budget_limit(size_t bytes);
size_t fz_budget_live(void); /* bytes the trees hold now: 0 once every tree is freed */

enum {
	FZ_CANON_IDS = 1 << 0,	 /* inode numbers, generations and data_bytes: same tree object */
	FZ_CANON_TIMES = 1 << 1, /* atime/mtime/ctime to the nanosecond */
};

/* Every node in readdir order with kind, mode, owner, link count, size, times, target or a
 * content digest, hard links shown as such, plus the tree's counters. Checks the tree's own
 * consistency on the way (lookup finds each listed entry, counts agree) and fz_fail()s if
 * not. Returns a string to g_free(). */
char *fz_canon(const struct cfs_tree *t, unsigned what);

/* What a dump, a reload or a canon of a tree would cost. */
struct fz_size {
	uint64_t nodes;
	uint64_t file_bytes; /* content the dump reads: written bytes (patterns are found from
				a window, holes are not read) */
	uint64_t path_bytes; /* every node's path, summed: a deep tree's dump is quadratic */
};

void fz_tree_size(const struct cfs_tree *t, struct fz_size *sz);

/* Small enough to dump, reload and canon in a few milliseconds. */
bool fz_tree_is_small(const struct cfs_tree *t);

/* Owner 4242:4343, and every node stamped with the embedded tree's time: loads are
 * deterministic, so a crash input replays exactly. */
extern const struct cfs_spec_defaults fz_spec_defaults;

/* A tree on the budget allocator loaded from SPEC (LEN bytes); fz_fail()s if it does not load. */
struct cfs_tree *fz_tree_of(const char *spec, size_t len);

/* cfs_spec_dump() into a malloc'ed string; *rc gets its return value (NULL on error). */
char *fz_dump(const struct cfs_tree *t, int *rc);

/* The dump of T must load into a fresh tree and give the same dump and canon again.
 * Skipped (returns false) when the dump cannot be written (-E2BIG: a line would pass the
 * line limit) or the reload runs out of budget. */
bool fz_check_round_trip(const struct cfs_tree *t);

#endif
