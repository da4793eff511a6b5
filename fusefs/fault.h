/*
 * Faults injected on purpose (control command `fault`): by operation and path glob, an errno
 * with a probability drawn from a seeded source, a fixed delay, a short read or write, or a
 * write that stores nothing. As test filesystems such as unreliablefs or slowfs let one make
 * a filesystem misbehave.
 */
#ifndef CHAINFS_FAULT_H
#define CHAINFS_FAULT_H

#include "optable.h"

#include <json-glib/json-glib.h>

/* Hits kept for `fault log`: the latest ones; older ones are only counted. */
enum { CFS_FAULT_LOG_MAX = 256 };

struct cfs_faults;

struct cfs_faults *cfs_faults_new(void);
void cfs_faults_free(struct cfs_faults *f);

/* "op=NAME|any path=GLOB [errno=NAME|N] [short=N] [nowrite] [prob=P] [seed=S] [delay=MS]":
 * the new rule's id (> 0, never given twice by F), or -EINVAL with *err set to a malloc'ed
 * message. */
int cfs_fault_add(struct cfs_faults *f, const char *args, char **err);
/* The rules of FILE (-o faults=FILE), one a line as cfs_fault_add takes them; blank lines
 * and lines starting with '#' are skipped. 0, or -errno with *err a malloc'ed "FILE:LINE:
 * message" (or "FILE: reason"); then F holds the rules of the lines before. */
int cfs_faults_load(struct cfs_faults *f, const char *file, char **err);
/* 0, or -ENOENT when no rule has that id (any more). */
int cfs_fault_remove(struct cfs_faults *f, unsigned id);
void cfs_fault_clear(struct cfs_faults *f);
/* While any rule is active, the kernel may keep no answer (ops.c, gate.c). */
bool cfs_faults_active(const struct cfs_faults *f);
/* The kernel never sends OP on this mount (WHY says so, and what to do instead): rules that
 * name it are refused rather than accepted and never hit. WHY must outlive F. */
void cfs_faults_unsent(struct cfs_faults *f, enum cfs_op op, const char *why);
/* Every rule with its id and counters, as a JSON array. */
void cfs_fault_list(const struct cfs_faults *f, JsonBuilder *b);
/* Members "hits" (total), "dropped" (older than the log keeps) and "log" (the latest hits,
 * oldest first: id, op, path, prob, seed, check, draw, time_us). */
void cfs_fault_log(const struct cfs_faults *f, JsonBuilder *b);

/* Every kind acts where requests arrive (gate.c), before any operation: delay rules hold
 * a request back, then errno and nowrite rules answer it, short rules cut it. Each asks only
 * for its own kind, so none draws from another's random sequence. */
enum cfs_fault_kind { CFS_FAULT_ERRNO, CFS_FAULT_DELAY, CFS_FAULT_SHORT, CFS_FAULT_NOWRITE };

struct cfs_fault_effect {
	int err;	    /* errno rules */
	unsigned delay_ms;  /* delay rules */
	uint32_t short_len; /* short rules: at most this many bytes */
};

/* Does a rule of KIND fire for OP on PATH? Fills *out (zeroed when none) and logs the hit. */
bool cfs_fault_match(struct cfs_faults *f, enum cfs_op op, const char *path,
		     enum cfs_fault_kind kind, struct cfs_fault_effect *out);

#endif
