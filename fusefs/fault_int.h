/*
 * The fault rules' insides, shared by the files of the fault module and no other: fault.c
 * (the rules' life, matching, the effects), fault_parse.c (a rule from its text) and
 * fault_json.c (`fault list`, `fault log`, `stats`). fault.h is the module's API.
 */
#ifndef CFS_FAULT_INT_H
#define CFS_FAULT_INT_H

#include "fault.h"
#include "change.h"

#include <stdbool.h>
#include <stdint.h>

enum {
	CFS_FAULT_MAX_DELAY_MS = 600000,   /* ten minutes: longer would only hang clients */
	CFS_FAULT_ERRNOS = 16,		   /* errno=E1|E2|...: as many as a line reads well */
	CFS_FAULT_MAX_BYTES = 1 << 20,	   /* corrupt's bytes=: a read is at most 1 MiB */
	CFS_FAULT_MAX_WINDOW_MS = 3600000, /* up= and down=: an hour each at most */
};

/* corrupt=: the kinds' names, by enum cfs_corrupt (fault.c) */
extern const char *const cfs_corrupt_names[4];

/* attr=FIELD:VALUE,...: the fields of a getattr's or lookup's answer a rule may change. Not
 * the kind: the kernel takes an inode whose kind changed for a broken one (EIO from then on). */
enum cfs_attr_field {
	CFS_A_SIZE,
	CFS_A_MODE,
	CFS_A_NLINK,
	CFS_A_UID,
	CFS_A_GID,
	CFS_A_ATIME,
	CFS_A_MTIME,
	CFS_A_CTIME,
	CFS_A_FIELDS
};
struct cfs_fault_attrs {
	bool set[CFS_A_FIELDS];
	uint64_t val[CFS_A_FIELDS];
	char *text; /* as given, for the list and the log */
};
struct cfs_fault {
	unsigned id;
	int op; /* enum cfs_op, or CFS_OP_MAX for any */
	char *glob;
	int errs[CFS_FAULT_ERRNOS]; /* errno=: one drawn with the seed when there are more */
	unsigned nerrs;
	int kill_sig;		       /* kill=: the signal sent to the request's pid */
	enum cfs_corrupt corrupt;      /* corrupt=: what becomes of the bytes a read returns */
	uint32_t corrupt_bytes;	       /* ... how many of them (bytes=, 1 unless given) */
	struct cfs_fault_attrs *attrs; /* attr=: the fields a getattr or lookup answers changed */
	bool has_range;		       /* at=OFF,len=N: reads and writes that touch those bytes */
	uint64_t at, len;
	double prob;
	unsigned delay_ms;
	uint32_t short_len;
	bool nowrite;
	bool hold; /* until released, or hold_ms (0: no timeout) */
	unsigned hold_ms;
	unsigned held; /* requests the gate keeps waiting for this rule now (delays too) */
	uint64_t seed; /* as given, for the list and the log */
	uint64_t rng;  /* splitmix64 state: the same seed gives the same sequence of hits */
	uint64_t checks, hits;
	struct cfs_change *change; /* change rules: what they do to the tree */
	bool after;		   /* ... after the matching request's reply, not before it */
	/* how often: at the nth matching request only, or at most count times (0: unbounded);
	 * change rules fire once unless told (how_set) */
	uint64_t nth, count;
	bool every, once, how_set, when_set;
	/* who: only requests of this pid, this uid, this process name (has_: given) */
	bool has_pid, has_uid;
	uint32_t pid, uid;
	char *comm;
	uint64_t skip;		 /* after=N: the first N matching requests pass (0: none) */
	unsigned up_ms, down_ms; /* up=MS down=MS: fires up ms, rests down ms, from start_us */
	gint64 start_us;	 /* when added, on F's clock (monotonic) */
	gint64 start_real_us;	 /* ... and on the wall clock, for `fault list` */
	char *to;		 /* to=GLOB: rename's, link's and symlink's new path must match */
};

/* One hit, as `fault log` shows it: enough to tell which draw of which seed fired, who sent
 * the request, and what a change rule did. */
struct cfs_fault_hit {
	unsigned id;
	int op;
	char *path;
	uint32_t pid, uid; /* the request's sender, as the kernel gave them */
	int err;	   /* the errno it was answered with (drawn from a list), or 0 */
	int kill_sig;	   /* the signal sent to its sender, or 0 */
	bool kill_sent;	   /* ... and whether it went (no pid, or ours: not sent) */
	enum cfs_corrupt corrupt;
	bool io; /* a read or a write: the bytes it spanned */
	uint64_t off, size;
	char *attr;	  /* an attr rule's fields */
	char *to;	  /* a rename's, link's or symlink's new path */
	gint64 window_us; /* a window rule's place in its up window at the hit, or -1 */
	char *change;	  /* a change rule's lines, and how they went (NULL: not a change) */
	char *result;
	double prob, draw; /* draw < 0: the rule always fires, nothing was drawn */
	uint64_t seed, check;
	gint64 time_us;
};

struct cfs_faults {
	GPtrArray *rules;
	unsigned next_id; /* ids are never reused, so a log line names one rule for good */
	const char *unsent[CFS_OP_MAX];		     /* why an op never reaches us, or NULL */
	struct cfs_fault_hit log[CFS_FAULT_LOG_MAX]; /* a ring: hit n at n % MAX */
	uint64_t logged;
	const char *no_change; /* why change rules are refused (a read-only mount), or NULL */
	uint64_t changes, changes_failed;
	uint64_t kills, kills_unsent, corruptions; /* signals sent and not, reads corrupted */
	uint64_t logged_base;  /* logged at `stats reset`: logged itself numbers the log */
	gint64 (*clock)(void); /* for up= and down= windows: monotonic microseconds */
};

/* A rule may give an errno's name or number (errname.h), up to what the kernel takes in a
 * reply (transport.h: a larger one would leave the caller waiting for good over /dev/fuse,
 * and give EINVAL over io_uring). */
enum { CFS_ERRNO_MAX = CFS_REPLY_ERRNO_MAX };

/* A rule's memory (fault.c). */
void cfs_fault_free(gpointer p);
/* Whether a rule has fired as often as it may (fault.c). */
bool cfs_fault_spent(const struct cfs_fault *r);
/* A window rule's place in its up window at NOW, -1 while it rests (fault.c). */
gint64 cfs_fault_window(const struct cfs_fault *r, gint64 now);

#endif
