/*
 * Inside `chainfsctl replay` (replay.h): replay.c reads the recording and keeps the counts,
 * replay_line.c turns one line into a request it can trust the shape of, replay_at.c makes
 * that request again beneath MNT. A recording is input from anyone: nothing in it is taken
 * for granted, neither its JSON nor the paths it names.
 */
#ifndef CHAINFS_REPLAY_INT_H
#define CHAINFS_REPLAY_INT_H

#include <stddef.h>
#include <stdint.h>

/* An operation's name as the recorder writes it: a libfuse handler's or opcode_N. */
enum { REPLAY_OP_MAX = 32 };

/* One request as the recording has it. Strings are owned (replay_line_clear). */
struct replay_line {
	char op[REPLAY_OP_MAX]; /* [a-z0-9_]+ */
	char *path, *to;	/* as recorded (decoded from *_hex); TO NULL when absent */
	char *target;		/* symlink's, or NULL */
	int64_t mode;		/* -1: none */
	int err;		/* the recorded errno; -1: null (libfuse answered unseen) */
	uint64_t ns;		/* the daemon's time on it */
};

/* Parse the LEN bytes of LINE into L: 0, or -1 with the reason in WHY (L then holds
 * nothing to free). Only a flat JSON object whose members have the recorder's types is a
 * line: op (a name), path or path_hex (a string), errno (an errno or null) and ns are
 * needed; to/to_hex, target, mode, t_ns, nodeid, pid and result are checked when present. */
int replay_line_parse(const char *line, size_t len, struct replay_line *l, char *why,
		      size_t whylen);
void replay_line_clear(struct replay_line *l);

/* What replay_at makes of a line besides an errno (>= 0). */
enum {
	REPLAY_SKIPPED = -1, /* an operation replay does not make, or a line lacking its argument */
	REPLAY_NOT_BENEATH = -2, /* refused: a recorded path that is not /NAME/NAME... */
	REPLAY_LEAVES = -3,	 /* refused: the kernel saw the walk leave MNT (a race) */
};

/* 0 when this kernel can resolve beneath MNTFD (openat2, Linux 5.6), else a negative errno. */
int replay_at_probe(int mntfd);
/* Make L's request again beneath the directory MNTFD (an O_PATH fd of MNT): every walk is an
 * openat2 from MNTFD with RESOLVE_IN_ROOT (MNT is its "/"), every change an *at call on one
 * name in a directory so opened. Returns the syscall's errno (0: success) or one of the
 * above. */
int replay_at(int mntfd, const struct replay_line *l);

#endif
