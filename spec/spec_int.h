/*
 * Internal to the spec module (spec/spec*.c): the types and functions its files share.
 * Nothing else includes it; spec.h is the module's public API. Where things live:
 *   spec_lex.c          messages, the line lexer and attributes, paths
 *   spec_make.c         making nodes and undoing a line (the transaction); the node keywords
 *   spec_gen.c          the generators: chain, nest, loop (links); wide, deep, tree (directories)
 *   spec.c              lines and loading: the keyword table and the public loaders
 *   spec_dump.c         walking a tree in order (shared with materialize); dump
 *   spec_materialize.c  materialize
 *   spec_from.c         a real directory read into a tree (--spec-from)
 */
#ifndef CHAINFS_SPEC_INT_H
#define CHAINFS_SPEC_INT_H

#include "spec.h"

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

enum {
	SPEC_MAX_WORDS = 32,	   /* words on a line: the longest form (tree) has 7 */
	SPEC_TREE_MAX_DEPTH = 256, /* tree depth: deeper paths are the deep generator's job */
	SPEC_POOL = 64,		   /* tree link targets are drawn from a sample this big */
	SPEC_GEN_FILE_MAX = 1024,  /* tree files get 0..1023 bytes of the default pattern */
	SPEC_DUMP_CHUNK = 4096,	   /* literal bytes per dump line: 4x escaped, far below a line */
	SPEC_IO_CHUNK = 65536,	   /* bytes per read/write when scanning or materializing */
	SPEC_HOLE_BLOCK = 4096,	   /* materialize leaves blocks of zeros this big as holes */
	SPEC_PATTERN_WINDOW = 2 * CFS_PATTERN_MAX, /* two periods of the longest pattern */
};

/* Times the tree holds: int64 nanoseconds, so whole seconds up to this either way. */
#define SPEC_TIME_MAX_SEC 9223372035ll

static const char spec_default_pattern[] = "chainfs\n";

/* ---------------------------------------------------------------------------------------- */
/* Messages (spec_lex.c) */

void spec_quote(GString *out, const char *s, size_t len);
char *spec_quoted(const char *s, size_t len);
const char *spec_q(const char *q);

/* ---------------------------------------------------------------------------------------- */
/* Lines, words and attributes (spec_lex.c) */

enum {
	SPEC_A_MODE = 1 << 0,
	SPEC_A_UID = 1 << 1,
	SPEC_A_GID = 1 << 2,
	SPEC_A_ATIME = 1 << 3,
	SPEC_A_MTIME = 1 << 4,
	SPEC_A_CTIME = 1 << 5,
	SPEC_A_SIZE = 1 << 6,
	SPEC_A_PATTERN = 1 << 7,
	SPEC_A_DEPTH = 1 << 8,
	SPEC_A_FANOUT = 1 << 9,
	SPEC_A_FILES = 1 << 10,
	SPEC_A_LINKS = 1 << 11,
	SPEC_A_SEED = 1 << 12,
	SPEC_A_PREFIX = 1 << 13,
	SPEC_A_AT = 1 << 14,
	SPEC_A_TIMES = SPEC_A_ATIME | SPEC_A_MTIME | SPEC_A_CTIME,
	SPEC_A_NODE = SPEC_A_MODE | SPEC_A_UID | SPEC_A_GID | SPEC_A_TIMES,
};

struct spec_word {
	const char *s; /* decoded bytes, NUL-terminated (a \x00 escape may put NULs inside) */
	size_t len;
	size_t keylen;	    /* attribute words: the key's length (4 in mode=0644); 0 otherwise */
	bool slash_escaped; /* a \x2f made a '/': refused in paths, where it would split a name */
};

struct spec_line {
	struct spec_word pos[SPEC_MAX_WORDS]; /* positional words, the keyword first */
	struct spec_word attr[SPEC_MAX_WORDS];
	int npos, nattr;
};

/* Bytes of a word (pattern=, prefix=): S is NULL when the line has none. */
struct spec_bytes {
	const char *s;
	size_t len;
};

/* A line's attributes: each field is named as its key (spec_lex.c's table relies on it). */
struct spec_attrs {
	unsigned set; /* SPEC_A_* given on the line */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	struct timespec atime, mtime, ctime;
	uint64_t size, depth, fanout, files, links, seed, at;
	struct spec_bytes pattern, prefix;
};

/* A line's undo log entry: an entry made in an older directory, or attributes changed. */
struct spec_undo {
	uint32_t id; /* the directory the entry went into, or the node whose attributes moved */
	bool entry;
	size_t name_off; /* entry: its name, in spec_ctx.names */
	size_t name_len;
	struct stat st; /* that directory's or node's attributes before */
};

/* Times from a line, applied when everything else is in. */
struct spec_times {
	uint32_t id;
	unsigned set;
	unsigned long line;
	struct timespec atime, mtime, ctime;
};

struct spec_ctx {
	struct cfs_tree *t;
	const char *name; /* for messages */
	unsigned long line;
	uid_t uid;
	gid_t gid;
	char *err;
	char *buf; /* the current line's decoded words */
	struct spec_undo *undo;
	size_t nundo, undo_cap;
	char *names;
	size_t names_len, names_cap;
	struct spec_times *times;
	size_t ntimes, times_cap;
};

int spec_fail(struct spec_ctx *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
int spec_fail_errno(struct spec_ctx *c, int err, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
const char *spec_strerror(int err);
int spec_reserve(void **p, size_t *cap, size_t n, size_t size);
int spec_lex(struct spec_ctx *c, const char *p, const char *end, struct spec_line *l);
int spec_parse_attrs(struct spec_ctx *c, const char *kw, unsigned allowed,
		     const struct spec_line *l, struct spec_attrs *a);
int spec_room(struct spec_ctx *c, uint64_t nodes);
int spec_count(struct spec_ctx *c, const struct spec_word *w, const char *what, uint64_t min,
	       uint64_t max, uint64_t *out);

/* ---------------------------------------------------------------------------------------- */
/* Paths (spec_lex.c) */

/* A checked absolute path word: the directories above the last name, and the last name. */
struct spec_path {
	const struct spec_word *w;
	size_t dir_len;	  /* bytes of w->s before the last name */
	const char *name; /* the last name; NULL for "/" */
	size_t name_len;
};

size_t spec_next_name(const char **pp, const char *end, const char **name);
int spec_check_path(struct spec_ctx *c, const struct spec_word *w, struct spec_path *p);
int spec_lookup_path(const struct cfs_tree *t, const char *s, size_t len, uint32_t *out);
char *spec_path_of(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len);

/* ---------------------------------------------------------------------------------------- */
/* Making nodes, and undoing a line (spec_make.c) */

struct spec_node {
	enum rs_kind kind;
	struct cfs_new a;
	const char *target; /* links */
	size_t target_len;
	mode_t type; /* RS_OTHER: S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK */
	dev_t rdev;
};

int spec_make(struct spec_ctx *c, uint32_t dir, bool dir_new, const char *name, size_t len,
	      const struct spec_node *n, uint32_t *out);
struct spec_node spec_dir_node(const struct spec_ctx *c);
struct spec_node spec_file_node(const struct spec_ctx *c);
struct spec_node spec_link_node(const struct spec_ctx *c, const char *target, size_t len);
int spec_make_parents(struct spec_ctx *c, const struct spec_path *p, uint32_t *dir, bool *dir_new);
int spec_check_free(struct spec_ctx *c, const struct spec_path *p, uint32_t dir);
void spec_rollback(struct spec_ctx *c);
void spec_commit(struct spec_ctx *c);
int spec_apply_times(struct spec_ctx *c, size_t from);

/* ---------------------------------------------------------------------------------------- */
/* Keywords: one handler each, run with the line's attributes parsed (spec.c's table) */

typedef int spec_run_fn(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a);

/* spec_make.c: node keywords */
spec_run_fn spec_run_dir, spec_run_file, spec_run_append, spec_run_truncate, spec_run_link,
    spec_run_special, spec_run_hardlink, spec_run_xattr;
int spec_check_target(struct spec_ctx *c, const char *s, size_t len);

/* spec_gen.c: generators */
spec_run_fn spec_run_chain, spec_run_nest, spec_run_loop, spec_run_wide, spec_run_deep,
    spec_run_tree;

/* ---------------------------------------------------------------------------------------- */
/* Walking a tree in order: shared by dump and materialize (spec_dump.c) */

struct spec_frame {
	uint32_t dir;
	uint32_t gen; /* DIR's generation: a streamed dump checks it is still that directory */
	uint64_t cookie;
	size_t plen;
};

struct spec_walk {
	const struct cfs_tree *t;
	GArray *stack; /* struct spec_frame, the root at the bottom */
	GString *path; /* the current node's path from the root ("" for the root) */
	uint32_t id;   /* the current node */
	const char *name;
	size_t name_len;
};

enum { SPEC_WALK_END, SPEC_WALK_NODE, SPEC_WALK_LEAVE };

void spec_walk_init(struct spec_walk *w, const struct cfs_tree *t);
void spec_walk_free(struct spec_walk *w);
int spec_walk_next(struct spec_walk *w);

#endif
