/*
 * chainfs spec language: one node or generator per line, loaded into a cfs_tree.
 * The grammar is documented in README.md and chainfs-spec(5).
 *
 * Loading is all or nothing for the caller: on error the tree may hold part of the spec, so
 * the daemon builds into a fresh tree and throws it away (nothing half-built is served).
 * cfs_spec_apply_line() is atomic on its own: on error the tree is exactly as before.
 */
#ifndef CHAINFS_SPEC_H
#define CHAINFS_SPEC_H

#include "tree.h"

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

/* Bounds on what one spec may ask for, so hostile input gets a clear error, not an OOM. */
enum {
	/* nodes a tree may hold, whatever the budget: the tree's handle space (2^30 - 1). The
	 * budget that counts is the tree's node limit (cfs_tree_set_node_limit, -o max_nodes):
	 * a line that would pass it is refused before it makes anything */
	CFS_SPEC_MAX_NODES = (1 << 30) - 1,
	CFS_SPEC_MAX_LINE = 65536, /* bytes in one spec line */
};
#define CFS_SPEC_MAX_FILE_SIZE (1ull << 50) /* a pattern file's apparent size (1 PiB) */

/*
 * The keywords, in one list for everything that names them: the parser's table (spec.c),
 * the control socket's commands (control.c) and chainfsctl's usage and completion.
 * X(KEYWORD, HANDLER, MIN_ARGS, MAX_ARGS, ATTRS, USAGE): the handler is spec_run_HANDLER and
 * ATTRS are spec_int.h's SPEC_A_* flags, both seen only where spec.c expands the list.
 */
/* clang-format off */
#define CFS_SPEC_KEYWORDS(X)                                                                \
	X(dir, dir, 1, 1, SPEC_A_NODE, "dir PATH [attrs]")                                  \
	X(file, file, 1, 2, SPEC_A_NODE | SPEC_A_SIZE | SPEC_A_PATTERN,                     \
	  "file PATH [CONTENT | size=N [pattern=P]] [attrs]")                               \
	X(append, append, 2, 2, SPEC_A_AT, "append PATH CONTENT [at=OFFSET]")               \
	X(truncate, truncate, 2, 2, 0, "truncate PATH SIZE")                                \
	X(link, link, 2, 2, SPEC_A_UID | SPEC_A_GID | SPEC_A_TIMES, "link PATH TARGET [attrs]") \
	X(hardlink, hardlink, 2, 2, 0, "hardlink PATH EXISTING")                            \
	X(fifo, special, 1, 1, SPEC_A_NODE, "fifo PATH [attrs]")                            \
	X(socket, special, 1, 1, SPEC_A_NODE, "socket PATH [attrs]")                        \
	X(dev, special, 4, 4, SPEC_A_NODE, "dev PATH c|b MAJOR MINOR [attrs]")              \
	X(xattr, xattr, 3, 3, SPEC_A_AT, "xattr PATH NAME VALUE [at=OFFSET]")                \
	X(chain, chain, 3, 3, 0, "chain PATH LEN TARGET")                                   \
	X(nest, nest, 3, 3, 0, "nest PATH DEPTH TARGET")                                    \
	X(loop, loop, 2, 2, 0, "loop PATH K")                                               \
	X(wide, wide, 2, 2, SPEC_A_PREFIX, "wide PATH COUNT [prefix=P]")                    \
	X(deep, deep, 2, 2, SPEC_A_PREFIX, "deep PATH DEPTH [prefix=P]")                    \
	X(tree, tree, 1, 1, SPEC_A_DEPTH | SPEC_A_FANOUT | SPEC_A_FILES | SPEC_A_LINKS | SPEC_A_SEED, \
	  "tree PATH depth=D fanout=F [files=P%] [links=P%] [seed=S]")
/* clang-format on */

/*
 * The escapes of a quoted part of a word (chainfs-spec(5)), in one list for the lexer
 * (spec_lex.c) and for chainfsctl, which quotes its arguments as words and must leave these
 * meaning what they mean. X(LETTER, BYTE): backslash LETTER stands for BYTE. \xHH, whose
 * two hex digits follow, is CFS_SPEC_ESCAPE_HEX.
 */
#define CFS_SPEC_ESCAPES(X)                                                                        \
	X('n', '\n') X('t', '\t') X('r', '\r') X('0', '\0') X('\\', '\\') X('"', '"')
#define CFS_SPEC_ESCAPE_HEX 'x'

/* Owner and times given to nodes whose line does not say. */
struct cfs_spec_defaults {
	uid_t uid;
	gid_t gid;
	/* Loading a whole spec: when stamp is set, every node without times of its own gets
	 * TIME, so one spec always gives the same tree (cfs_spec_load_file stamps with the
	 * file's mtime unless told otherwise). Runtime lines always get the current time. */
	bool stamp;
	struct timespec time;
};

/* The embedded tree's timestamp: 2002-10-01 00:00 UTC, the season of the two patches. */
#define CFS_DEFAULT_TREE_TIME 1033430400

/*
 * Load spec TEXT (LEN bytes) into T. NAME is used in messages. On error returns a negative
 * errno (-EINVAL for a bad spec) and sets *err to a malloc'ed "NAME:LINE: message" (caller
 * frees); *err is NULL on success.
 */
int cfs_spec_load_text(struct cfs_tree *t, const char *name, const char *text, size_t len,
		       const struct cfs_spec_defaults *def, char **err);
int cfs_spec_load_file(struct cfs_tree *t, const char *path, const struct cfs_spec_defaults *def,
		       char **err);

/* One spec line at runtime (the control socket's generators); atomic. */
int cfs_spec_apply_line(struct cfs_tree *t, const char *line, const struct cfs_spec_defaults *def,
			char **err);

/* Whether LINE's first word (up to a blank) is KEYWORD. */
bool cfs_spec_line_is(const char *line, const char *keyword);

/* Whether LINE is one spec line that parses (a known keyword, its arguments' count, its
 * attributes), without running it: 0, or -EINVAL with *err a malloc'ed message as
 * cfs_spec_apply_line's. What depends on the tree (a path taken, a parent missing) is only
 * known when the line runs. */
int cfs_spec_check_line(const char *line, char **err);

/* The embedded default tree served when no spec is given. */
extern const char cfs_default_spec[];

/* cfs_materialize() flags */
enum {
	/* Owners (when running as root), set-user-ID and set-group-ID bits and device nodes'
	 * modes as the tree has them. Without it a spec cannot hand out set-id programs, files
	 * owned by others or devices others may open (a device gets at most 0600). */
	CFS_MAT_KEEP_IDS = 1 << 0,
};

/* The file data chainfs --materialize writes unless --max-bytes says otherwise: materialized
 * trees feed tests and the kernel oracle, where 1 GiB is plenty, and a pattern file of a
 * petabyte must not fill a disk by accident. */
#define CFS_MATERIALIZE_MAX_BYTES_DEFAULT (1ull << 30)

/* The bytes of file data cfs_materialize(T) may write, each node once: a file's pattern part
 * and the pages written into it, but not its holes, nor a pattern of zeros (left as a hole).
 * What it writes can be less: blocks of zeros in written pages are left as holes too. Callers
 * bound a copy with it (cfs_materialize itself writes whatever T holds). */
uint64_t cfs_materialize_bytes(const struct cfs_tree *t);

/* Write T as real directories, files and symlinks under DIR (which must exist and be empty).
 * A target that could climb above DIR (absolute, or with a ".." too many) is written in its
 * in-root spelling (inroot.h) for the directory of each name, so the copy's links mean what
 * the tree's do and never lead out of DIR; names of a hard-linked link whose spellings differ
 * become links of their own (a g_warning says so). Modes are applied (set-id bits and device
 * modes only with CFS_MAT_KEEP_IDS), owners as root with CFS_MAT_KEEP_IDS, times last.
 * Files are sized first and holes stay holes, as do a pattern of zeros and every aligned
 * 4 KiB block of zeros in the data. Others may write DIR meanwhile: nothing outside it is touched,
 * and a name swapped under us fails the copy (-EBUSY, or the errno of the lookup it broke). 0, or a
 * negative errno with *ERR saying where (free()). */
int cfs_materialize(const struct cfs_tree *t, const char *dir, unsigned flags, char **err);

/*
 * Read the real directory DIR into T (a fresh tree; its root becomes DIR): directories, files
 * with their content (holes left as holes: only SEEK_DATA's runs are read, into T's memory),
 * symlinks with their exact targets, fifos, sockets and devices (never opened), names of one
 * inode as hard links, modes, owners and times; cfs_spec_dump then writes T as a spec.
 * Nothing is followed or done by path (a link as DIR is -ELOOP) and nothing is changed (files
 * and directories are read with O_NOATIME when we may; a link's atime moves, readlink has no
 * such flag). Names are read in byte order, so one tree gives one spec (links' atimes aside).
 * A hard link's count is of the names under DIR.
 * What cannot be read is left out and told to REPORT (with DATA, the entry's path from DIR and
 * why), and the walk goes on: an entry that fails stat, a file that fails open or read (left
 * out), a directory that fails open (kept, empty), a mount point (a directory is kept empty:
 * no other filesystem is entered; anything else is left out), the name ".^" (CFS_UP_NAME,
 * which a tree cannot hold), an entry T refuses (a data limit, a device number past the
 * kernel's); a directory moved away while being read ends the walk there.
 * Returns how many entries were reported (0: all of DIR was read), or a negative errno when
 * DIR itself cannot be read, with *ERR saying why (free()).
 */
int cfs_spec_from_dir(struct cfs_tree *t, const char *dir,
		      void (*report)(void *data, const char *path, const char *why), void *data,
		      char **err);

/* Write T as a spec that reproduces it (names, kinds, modes, owners, times, content). */
int cfs_spec_dump(const struct cfs_tree *t, FILE *out);

/*
 * The same dump a piece at a time (the control socket streams it between other requests).
 * cfs_spec_dumper_next() writes whole lines to OUT until it wrote at least WANT bytes or the
 * dump is done: 1 when more is to come, 0 when done, or a negative errno as cfs_spec_dump.
 * The tree may change between calls: each node is dumped as it is when the walk reaches it;
 * what was added or removed behind the walk is not seen; a directory moved elsewhere is
 * finished under the path it had when the walk entered it; one removed ends there. Without
 * changes the pieces together are exactly cfs_spec_dump()'s output.
 */
struct cfs_spec_dumper;
struct cfs_spec_dumper *cfs_spec_dumper_new(const struct cfs_tree *t);
int cfs_spec_dumper_next(struct cfs_spec_dumper *d, FILE *out, size_t want);
void cfs_spec_dumper_free(struct cfs_spec_dumper *d);

#endif
