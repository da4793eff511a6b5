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
#include <sys/stat.h>

/* Hits kept for `fault log`: the latest ones; older ones are only counted. */
enum { CFS_FAULT_LOG_MAX = 256 };

struct cfs_faults;

struct cfs_faults *cfs_faults_new(void);
void cfs_faults_free(struct cfs_faults *f);
/* The clock up= and down= windows go by: monotonic microseconds (g_get_monotonic_time unless
 * set; tests set their own). */
void cfs_faults_clock(struct cfs_faults *f, gint64 (*now)(void));

/* "op=NAME|any path=GLOB [errno=E|E1|E2...] [short=N] [nowrite] [kill=SIG]
 * [corrupt=zero|random|flip [bytes=N]] [attr=FIELD:VALUE,...] [at=OFF,len=N] [prob=P] [seed=S]
 * [delay=MS] [hold|hold=MS] [once|every|nth=N|count=N] [after=N] [up=MS down=MS] [to=GLOB]
 * [pid=N] [uid=N] [comm=NAME] [when=before|after] [change=LINES]": the new rule's id (> 0, never
 * given twice by F), or -EINVAL with *err set to a malloc'ed message. change= takes the rest of
 * ARGS: lines as change.h parses them (one that does not parse refuses the rule). A change rule
 * fires once unless told (every, nth=N: at the Nth matching request only, count=N: at the first N);
 * a rule that fired as often as it may is spent: listed, never checked again. after=N lets the
 * first N matching requests pass (with count=M: the M after them; not with nth=). up=MS down=MS:
 * the rule fires only in its up windows, up ms each, the first from when it is added, with down ms
 * of rest between them; a request in a down window does not match (nth=, count=, after= and prob=
 * see only the up windows' requests). to=GLOB (rename, link, symlink): the new path must match too.
 * pid=, uid= and comm= take only requests of that sender (the pid and uid the kernel puts in each
 * request; comm as /proc/PID/comm). hold keeps a matching request waiting until it is released
 * (gate.h), hold=MS at most MS ms. errno= with several errnos answers one drawn with the seed;
 * kill= signals the request's sender, then the request is answered (with errno= if given, else as
 * usual); corrupt= (reads) changes N bytes of what the read returns, drawn with the seed;
 * at=OFF,len=N takes only * reads and writes that touch those bytes of the file; attr= (getattr,
 * lookup) answers with those fields changed (size, mode, nlink, uid, gid, atime, mtime, ctime). */
int cfs_fault_add(struct cfs_faults *f, const char *args, char **err);
/* The rules of FILE (-o faults=FILE), one a line as cfs_fault_add takes them; blank lines
 * and lines starting with '#' are skipped. 0, or -errno with *err a malloc'ed "FILE:LINE:
 * message" (or "FILE: reason"); then F holds the rules of the lines before. */
int cfs_faults_load(struct cfs_faults *f, const char *file, char **err);
/* 0, or -ENOENT when no rule has that id (any more). */
int cfs_fault_remove(struct cfs_faults *f, unsigned id);
bool cfs_fault_exists(const struct cfs_faults *f, unsigned id);
/* The gate holds one more (DELTA 1) or one fewer (-1) request for rule ID, a delay or a hold:
 * `fault list` shows how many. A rule gone since is left alone. */
void cfs_fault_holding(struct cfs_faults *f, unsigned id, int delta);
void cfs_fault_clear(struct cfs_faults *f);
/* While any rule stands (one not spent), the kernel may keep no answer (ops.c, gate.c). */
bool cfs_faults_active(const struct cfs_faults *f);
/* Change rules are refused from now on, WHY saying so (a read-only mount). WHY must outlive
 * F. */
void cfs_faults_no_change(struct cfs_faults *f, const char *why);
/* The kernel never sends OP on this mount (WHY says so, and what to do instead): rules that
 * name it are refused rather than accepted and never hit. WHY must outlive F. */
void cfs_faults_unsent(struct cfs_faults *f, enum cfs_op op, const char *why);
/* Every rule with its id and counters, as a JSON array. */
void cfs_fault_list(const struct cfs_faults *f, JsonBuilder *b);
/* Members "hits" (total), "dropped" (older than the log keeps) and "log" (the latest hits,
 * oldest first: id, op, path, prob, seed, check, draw, time_us, pid, uid; a change rule's
 * change and result). */
void cfs_fault_log(const struct cfs_faults *f, JsonBuilder *b);
/* Members for `stats`: rules, rules_standing and held (the requests delays and holds keep
 * waiting now): levels; hits, changes (applied or tried) and changes_failed: counts since the
 * mount or the last cfs_fault_stats_reset. */
void cfs_fault_stats(const struct cfs_faults *f, JsonBuilder *b);
/* `stats reset`: the counts start again; the log, and each rule's own hits, stay. */
void cfs_fault_stats_reset(struct cfs_faults *f);

/* Every kind acts where requests arrive (gate.c), before any operation: delay and hold rules
 * (both CFS_FAULT_DELAY) hold a request back, then errno and nowrite rules answer it, short rules
 * cut it. Each asks only for its own kind, so none draws from another's random sequence. */
enum cfs_fault_kind {
	CFS_FAULT_ERRNO,
	CFS_FAULT_DELAY,
	CFS_FAULT_SHORT,
	CFS_FAULT_NOWRITE,
	CFS_FAULT_CHANGE,
	CFS_FAULT_KILL,	   /* before the errno rules: the sender is signalled, then answered */
	CFS_FAULT_CORRUPT, /* read rules that change the bytes the handler returns */
	CFS_FAULT_ATTR,	   /* getattr and lookup rules that change the attributes it answers */
};

struct cfs_fault_attrs; /* an attr= rule's fields */

enum cfs_corrupt { CFS_CORRUPT_NONE, CFS_CORRUPT_ZERO, CFS_CORRUPT_RANDOM, CFS_CORRUPT_FLIP };

struct cfs_change;

struct cfs_fault_effect {
	unsigned id;		  /* the rule's */
	int err;		  /* errno rules (drawn from the rule's list); kill rules: 0
				     or the errno to answer with after the signal */
	int kill_sig;		  /* kill rules */
	enum cfs_corrupt corrupt; /* corrupt rules: how, how many bytes, and the seed of
				     where (drawn from the rule's source at the hit) */
	uint32_t corrupt_bytes;
	uint64_t corrupt_seed;
	const struct cfs_fault_attrs *attrs; /* attr rules: F's, valid until F changes */
	bool has_range;			     /* ... only the bytes of [at, at + len) of the file */
	uint64_t at, len;
	unsigned delay_ms;		 /* delay rules; hold rules: their timeout, 0: none */
	bool hold;			 /* ... until released (or that timeout) */
	uint32_t short_len;		 /* short rules: at most this many bytes */
	const struct cfs_change *change; /* change rules: F's, valid until F changes */
	bool after;			 /* ... applied after the reply, not before the handler */
	uint64_t check;			 /* the rule's how manyth matching request this was */
	int64_t window_us;		 /* a window rule's place in its up window, or -1 */
};

/* Who sent a request: the pid and uid the kernel gave in it; for a read or a write (io) also
 * the bytes of the file it spans, for at= rules. */
struct cfs_fault_who {
	uint32_t pid, uid;
	bool io;
	uint64_t off, size;
	const char *to; /* a rename's, link's or symlink's new path, for to= rules; or NULL */
};

/* Does a rule of KIND fire for OP on PATH sent by WHO (NULL: unknown, and rules that filter
 * on the sender pass it by)? Fills *out (zeroed when none) and logs the hit. */
bool cfs_fault_match_who(struct cfs_faults *f, enum cfs_op op, const char *path,
			 const struct cfs_fault_who *who, enum cfs_fault_kind kind,
			 struct cfs_fault_effect *out);
bool cfs_fault_match(struct cfs_faults *f, enum cfs_op op, const char *path,
		     enum cfs_fault_kind kind, struct cfs_fault_effect *out);
/* FX's corruption on the N bytes a read of offset OFF returns in BUF: bytes drawn from
 * FX->corrupt_seed (the same seed, the same bytes), within FX's range if it has one. */
void cfs_fault_corrupt(const struct cfs_fault_effect *fx, char *buf, size_t n, uint64_t off);
/* FX's attr= fields into ST, the attributes a getattr or lookup answers; A's as given. */
const char *cfs_fault_attrs_text(const struct cfs_fault_attrs *a);
void cfs_fault_attr(const struct cfs_fault_effect *fx, struct stat *st);
/* The signal of the hit just logged was sent (SENT) or not (no pid to send it to): noted in
 * its log line. */
void cfs_fault_killed(struct cfs_faults *f, bool sent);
/* "zero", "random" or "flip" */
const char *cfs_corrupt_name(enum cfs_corrupt c);
/* "SIGTERM" for SIGTERM, into BUF. */
const char *cfs_signal_name(int sig, char *buf, size_t size);
/* The change of the hit just logged was applied (ERROR NULL) or failed (ERROR says why):
 * noted in its log line and counted. */
void cfs_fault_changed(struct cfs_faults *f, const char *error);

#endif
