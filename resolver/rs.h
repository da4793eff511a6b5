/*
 * chainfs resolver: iterative path resolution over an abstract tree.
 *
 * The walk keeps a stack of link_work frames (the unwalked rest of each link body being
 * followed) instead of recursing: RS_INLINE_FRAMES frames live in the walk state itself,
 * deeper nestings spill to one heap array grown geometrically and freed before rs_resolve()
 * returns. A link that is the last component of the body being walked replaces that body's
 * frame, so a serial chain of any length stays at nesting 1. The C stack used is the same for
 * every path.
 *
 * Semantics are Linux path resolution inside a root (openat2 RESOLVE_IN_ROOT): an absolute
 * path or link target restarts at the root, ".." at the root stays there, ".." is physical.
 * No global state; the library allocates only for nestings deeper than the inline frames.
 */
#ifndef CHAINFS_RS_H
#define CHAINFS_RS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Limits, with the reason next to each. */
enum {
	RS_NAME_MAX = 255,	   /* NAME_MAX: a longer component is ENAMETOOLONG */
	RS_PATH_MAX = 4096,	   /* PATH_MAX counts the NUL: paths and targets up to 4095 bytes */
	RS_INLINE_FRAMES = 2,	   /* as Linux's EMBEDDED_LEVELS: most walks nest at most twice */
	RS_DEFAULT_NEST = 40,	   /* today's Linux: MAXSYMLINKS bounds the nesting too */
	RS_DEFAULT_TOTAL = 40,	   /* today's Linux: MAXSYMLINKS links per walk */
	RS_CLASSIC_NEST = 5,	   /* the 2002 kernel's recursion limit (current->link_count) */
	RS_CLASSIC_TOTAL = 40,	   /* the 2002 kernel's total_link_count limit */
	RS_LIMIT_MAX = 1000000000, /* larger max_nest / max_total values count as this */
	/* Components taken in one walk, whatever the limits: past it the walk ends with ELOOP.
	 * A loop is caught as soon as it repeats (see rs_resolve), but a walk that never
	 * repeats (a nesting that deepens on every turn, with raised limits) would run up to
	 * max_total links of up to 2047 components each and hold its caller, the daemon's one
	 * request loop, for minutes and its frames for gigabytes; 2^21 components is about 1 s
	 * of the daemon's time and at most 32 MiB of frames, and lets a chain of a million links
	 * (one component each) through. */
	RS_WALK_BUDGET = 1 << 21,
};

enum rs_kind { RS_DIR = 1, RS_FILE, RS_LINK, RS_OTHER };

/* Flags for rs_resolve(). */
enum {
	RS_FOLLOW = 1 << 0,	 /* follow a link in the last component */
	RS_DIRECTORY = 1 << 1,	 /* the result must be a directory (ENOTDIR) */
	RS_PARENT = 1 << 2,	 /* stop at the parent: result is the parent, last name returned */
	RS_NO_SYMLINKS = 1 << 3, /* any link that would be followed gives ELOOP */
	RS_BENEATH = 1 << 4,	 /* leaving the start directory (absolute, "..") gives EXDEV */
};

/* Who is walking, for the optional permission hook. */
struct rs_cred {
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* supplementary groups, may be NULL */
	int ngroups;
};

/*
 * The tree, as callbacks over integer node handles. "tree" is the opaque first argument.
 * The tree must not change during a walk: link bodies are used in place.
 */
struct rs_tree_ops {
	/* Find NAME (LEN bytes, not NUL-terminated, never "." or "..") in directory DIR.
	 * 0 and *out, or -ENOENT, or another negative errno (passed through). */
	int (*lookup)(void *tree, uint64_t dir, const char *name, size_t len, uint64_t *out);
	enum rs_kind (*kind)(void *tree, uint64_t node);
	/* The body of link LINK: *target points at *len bytes (no NUL needed), valid until the
	 * tree changes. 0 or a negative errno. */
	int (*readlink)(void *tree, uint64_t link, const char **target, size_t *len);
	/* The parent of directory DIR (the root's parent is never asked for). */
	uint64_t (*parent)(void *tree, uint64_t dir);
	/* Optional: 0 if CRED may search directory DIR, else -EACCES. NULL: always allowed. */
	int (*may_search)(void *tree, uint64_t dir, const struct rs_cred *cred);
};

struct rs_limits {
	uint32_t max_nest;  /* link bodies being walked at once; more gives ELOOP */
	uint32_t max_total; /* links followed in one walk; more gives ELOOP */
};

extern const struct rs_limits rs_limits_linux;	 /* 40 / 40 */
extern const struct rs_limits rs_limits_classic; /* 5 / 40 */

enum rs_step_kind {
	RS_STEP_COMPONENT, /* looked NAME up in the current directory; node = what was found */
	RS_STEP_LINK,	   /* entered link NAME (node) at nesting depth; target = its body */
	RS_STEP_ROOT,	   /* restarted at the root (absolute path or target) */
	RS_STEP_DOT,	   /* "." */
	RS_STEP_DOTDOT,	   /* ".."; node = where it led */
};

struct rs_step {
	enum rs_step_kind kind;
	const char *name; /* component, not NUL-terminated; NULL for ROOT */
	size_t name_len;
	uint64_t node;
	uint32_t depth;	    /* nesting depth after this step */
	const char *target; /* LINK only: the body, not NUL-terminated */
	size_t target_len;
};

typedef void (*rs_trace_fn)(void *data, const struct rs_step *step);

/* Everything a walk needs besides the path. Reusable and shareable across walks. */
struct rs_ctx {
	const struct rs_tree_ops *ops;
	void *tree;
	uint64_t root;
	struct rs_limits limits;
	const struct rs_cred *cred; /* passed to may_search; may be NULL */
	rs_trace_fn trace;	    /* optional */
	void *trace_data;
	/* Optional: components left to the walks that share it (a daemon's request, which may
	 * walk once per entry it lists). A walk may take at most this many, and RS_WALK_BUDGET,
	 * and subtracts what it took; past it, ELOOP. NULL: RS_WALK_BUDGET for this walk. */
	uint32_t *budget;
	/* Optional: another spelling of the root for absolute link bodies (a mount's own path on
	 * the host, so that a link made with it names the place in the tree). A body that begins
	 * with these root_alias_len bytes followed by '/' or its end walks from the root past
	 * them (rs_alias_skip); a path given to rs_resolve() is never rewritten. NULL: none. */
	const char *root_alias;
	size_t root_alias_len;
	/* Optional allocator for spilled frames (tests inject failures). NULL: realloc/free. */
	void *(*realloc_fn)(void *ptr, size_t size);
	void (*free_fn)(void *ptr);
};

struct rs_result {
	uint64_t node;	      /* the node reached; with RS_PARENT the parent directory */
	const char *last;     /* RS_PARENT: last component of PATH (points into PATH); NULL
				 when PATH has none ("/"), and always without RS_PARENT */
	size_t last_len;      /* RS_PARENT: its length */
	int trailing_slash;   /* PATH ended in '/' */
	uint32_t links;	      /* links followed */
	uint32_t max_depth;   /* deepest nesting reached */
	uint32_t heap_frames; /* frames that had to live on the heap at the deepest point */
	uint32_t allocs;      /* heap allocations made by this walk */
	int cycle;	      /* ELOOP because the walk came back to a state it had been in */
};

/*
 * Resolve PATH (NUL-terminated) from directory START (relative paths) or ctx->root
 * (absolute). Returns 0 and fills *res, or a negative errno: -ENOENT, -ENOTDIR, -ELOOP,
 * -ENAMETOOLONG, -EACCES, -EXDEV, -ENOMEM, or an errno passed up from the callbacks.
 * The counters in *res are filled on failure too.
 *
 * -ELOOP comes from the limits (max_nest, max_total), from RS_WALK_BUDGET, or as soon as
 * the walk is certain to loop: when, following a link, it reaches a state it was in before
 * (the same directory, the same rest of the same body and the same pending bodies below it),
 * found within about 2m + 3n links for a loop of n links entered after m (res->cycle is
 * then set, and res->links counts the links followed until then, fewer than a walk to the
 * limit would). The same link with a different rest to walk is not a loop. Any walk that ends
 * otherwise ends exactly as it would without the check; the check costs a few compares per link and
 * no memory.
 */
int rs_resolve(const struct rs_ctx *ctx, uint64_t start, const char *path, unsigned flags,
	       struct rs_result *res);

/* How many leading bytes of the absolute BODY (LEN bytes) the root alias ALIAS (ALIAS_LEN
 * bytes, see rs_ctx.root_alias) stands for: ALIAS_LEN when BODY begins with ALIAS followed by
 * '/' or its end, else 0 (also for a NULL or empty ALIAS). A shared string prefix alone
 * ("/mnt-other" for "/mnt") is not the alias. */
size_t rs_alias_skip(const char *alias, size_t alias_len, const char *body, size_t len);

#endif
