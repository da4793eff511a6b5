/*
 * Faults injected on purpose (control command `fault`): by operation and path glob, an errno
 * with a probability drawn from a seeded source, or a fixed delay. As test filesystems such
 * as unreliablefs or slowfs let one make a filesystem misbehave.
 */
#ifndef CHAINFS_FAULT_H
#define CHAINFS_FAULT_H

#include "daemon.h"

#include <json-glib/json-glib.h>

struct cfs_faults;

struct cfs_faults *cfs_faults_new(void);
void cfs_faults_free(struct cfs_faults *f);

/* "op=NAME|any path=GLOB [errno=NAME|N] [prob=P] [seed=S] [delay=MS]"; 0, or -EINVAL with
 * *err set to a malloc'ed message. */
int cfs_fault_add(struct cfs_faults *f, const char *args, char **err);
void cfs_fault_clear(struct cfs_faults *f);
bool cfs_faults_active(const struct cfs_faults *f);
/* The kernel never sends OP on this mount (WHY says so, and what to do instead): rules that
 * name it are refused rather than accepted and never hit. WHY must outlive F. */
void cfs_faults_unsent(struct cfs_faults *f, enum cfs_op op, const char *why);
/* Every rule with its counters, as a JSON array. */
void cfs_fault_list(const struct cfs_faults *f, JsonBuilder *b);

/* Both kinds act where requests arrive (session.c), before any operation: delay rules hold a
 * request back, then errno rules answer it. Each asks only for its own kind, so neither
 * draws from the other's random sequence. */
enum cfs_fault_kind { CFS_FAULT_ERRNO, CFS_FAULT_DELAY };

/* Does a rule of KIND fire for OP on PATH? Sets *err (0: none) and *delay_ms (0: none). */
bool cfs_fault_match(struct cfs_faults *f, enum cfs_op op, const char *path,
		     enum cfs_fault_kind kind, int *err, unsigned *delay_ms);

/* An errno's name ("EIO") or NULL. */
const char *cfs_errno_name(int err);

#endif
