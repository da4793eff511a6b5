/*
 * Inside `chainfsctl replay` (replay.h): replay.c reads the recording and keeps the counts,
 * replay_line.c turns one line into a request it can trust the shape of, replay_at.c makes
 * that request again beneath MNT. A recording is input from anyone: nothing in it is taken
 * for granted, neither its JSON nor the paths it names. replay_seen.c compares what a
 * replayed request showed (a kind and size, a link's body, a listing) with what the recording
 * says the caller was shown.
 */
#ifndef CHAINFS_REPLAY_INT_H
#define CHAINFS_REPLAY_INT_H

#include <glib.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An operation's name as the recorder writes it: a libfuse handler's, the kernel's
 * (statx), or opcode_N. The recording formats replay reads: 1 (no "v": errnos only) and 2
 * (what replies showed) and 3 (a fault rule's trigger on a line of its own, which replay
 * skips: it runs no rules). */
enum { REPLAY_OP_MAX = 32, REPLAY_VERSION_MAX = 3 };

/* One request as the recording has it. Strings are owned (replay_line_clear). */
struct replay_line {
	char op[REPLAY_OP_MAX]; /* [a-z0-9_]+ */
	char *path, *to;	/* as recorded (decoded from *_hex); TO NULL when absent */
	char *target;		/* symlink's, or NULL */
	int64_t mode;		/* -1: none */
	int err;		/* the recorded errno; -1: null (libfuse answered unseen) */
	uint64_t ns;		/* the daemon's time on it */
	int version;		/* of the format: 1 when the line has no "v" */
	/* what the reply showed (version 2): kind 0, size and offset -1, NULL when not said */
	char kind;	/* d l f p s c b or ? (record.h) */
	int64_t size;	/* lookup, getattr */
	int64_t offset; /* readdir(plus): where the chunk starts, 0 a listing's start */
	char *body;	/* readlink */
	char *entries;	/* readdir(plus): "K:NAME/K:NAME...", "" at a listing's end */
};

/* Parse the LEN bytes of LINE into L: 0, or -1 with the reason in WHY (L then holds
 * nothing to free). Only a flat JSON object whose members have the recorder's types is a
 * line: op (a name), path or path_hex (a string), errno (an errno or null) and ns are
 * needed; to/to_hex, target, mode, t_ns, nodeid, pid and result are checked when present,
 * and so are version 2's v (1 to 3: a newer format is refused), kind (a kind letter), size,
 * offset, body/body_hex and entries/entries_hex (K:NAME/...). */
int replay_line_parse(const char *line, size_t len, struct replay_line *l, char *why,
		      size_t whylen);
/* replay_line_parse's answer for a trigger line (record.h: "trigger" and no "op"), whose v
 * and trigger were checked; L then holds nothing to free. */
enum { REPLAY_TRIGGER = 1 };
void replay_line_clear(struct replay_line *l);

/* What replay_at makes of a line besides an errno (>= 0). */
enum {
	REPLAY_SKIPPED = -1, /* an operation replay does not make, or a line lacking its argument */
	REPLAY_NOT_BENEATH = -2, /* refused: a recorded path that is not /NAME/NAME... */
	REPLAY_LEAVES = -3,	 /* refused: the kernel saw the walk leave MNT (a race) */
};

/* What a replayed request showed, where its operation shows something. */
struct replay_seen {
	char kind; /* 0: nothing seen */
	int64_t size;
	bool has_body;
	char body[PATH_MAX];
	GHashTable *listing; /* name -> kind letter (GINT_TO_POINTER), NULL when not listed */
};
void replay_seen_clear(struct replay_seen *s);

/* What earlier lines leave to later ones: listings under way (a listing's chunks are lines of
 * their own) and the paths whose size replay cannot know (a write or setattr, which it does
 * not make). */
struct replay_memory;
struct replay_memory *replay_memory_new(void);
void replay_memory_free(struct replay_memory *m);
/* L, replayed with errno GOT (or a REPLAY_* below), showed SEEN: NULL when that is what the
 * recording says the caller saw (or the line says nothing of it), else what differs, to be
 * g_free()d. Every line passes here, so that the memory follows the recording. */
char *replay_seen_differs(struct replay_memory *m, const struct replay_line *l, int got,
			  const struct replay_seen *seen);

/* 0 when this kernel can resolve beneath MNTFD (openat2, Linux 5.6), else a negative errno. */
int replay_at_probe(int mntfd);
/* Make L's request again beneath the directory MNTFD (an O_PATH fd of MNT): every walk is an
 * openat2 from MNTFD with RESOLVE_IN_ROOT (MNT is its "/"), every change an *at call on one
 * name in a directory so opened. Returns the syscall's errno (0: success) or one of the
 * above; what it showed goes to SEEN, zeroed by the caller (replay_seen_clear frees it). */
int replay_at(int mntfd, const struct replay_line *l, struct replay_seen *seen);

#endif
