/*
 * chainfs [options] [SPEC] MOUNTPOINT — parse the command line the libfuse way, build the
 * tree (all of it, before anything is mounted), mount, and serve until unmounted or signalled.
 */
#include "daemon.h"
#include "mountflags.h"
#include "pc.h"
#include "ops.h"
#include "session.h"
#include "spec.h"

#include <ctype.h>
#include <errno.h>
#include <glib.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { CFS_EXIT_USAGE = 2 }; /* bad options or a bad spec, as libfuse's tools do */

/* The -o options that take a string ("NAME=%s"): one list for the fields, the option table
 * and their freeing. */
#define CFS_STRING_OPTS(X)                                                                         \
	X(follow)                                                                                  \
	X(abslinks)                                                                                \
	X(loop)                                                                                    \
	X(opens)                                                                                   \
	X(xattrs)                                                                                  \
	X(spin)                                                                                    \
	X(transport)                                                                               \
	X(ctl)                                                                                     \
	X(record)                                                                                  \
	X(faults)                                                                                  \
	X(max_nest)                                                                                \
	X(max_total)                                                                               \
	X(entry_timeout)                                                                           \
	X(attr_timeout)                                                                            \
	X(max_data)                                                                                \
	X(max_meta)                                                                                \
	X(max_nodes)

struct cfs_cmdline {
#define CFS_FIELD(name) char *name;
	CFS_STRING_OPTS(CFS_FIELD)
#undef CFS_FIELD
	int materialize, keep_ids, record_replace, spec_from, read_only;
	char *max_bytes; /* --max-bytes=SIZE, with --materialize */
	char *positional[3];
	int npositional;
};

#define CFS_OPT(t, p)                                                                              \
	{                                                                                          \
		t, offsetof(struct cfs_cmdline, p), 1                                              \
	}
#define CFS_STRING_OPT(name) CFS_OPT(#name "=%s", name),
static const struct fuse_opt cfs_opt_spec[] = {
    CFS_STRING_OPTS(CFS_STRING_OPT)
    /* flags, and the options of the other uses */
    CFS_OPT("record_replace", record_replace),
    CFS_OPT("--materialize", materialize),
    CFS_OPT("--keep-ids", keep_ids),
    CFS_OPT("--max-bytes=%s", max_bytes),
    CFS_OPT("--spec-from", spec_from),
    /* libfuse's: kept for it (the kernel refuses writes), noted for the control socket's
     * spec lines; the last of ro and rw wins, as for mount(8) */
    {"ro", offsetof(struct cfs_cmdline, read_only), 1},
    {"rw", offsetof(struct cfs_cmdline, read_only), 0},
    FUSE_OPT_KEY("ro", FUSE_OPT_KEY_KEEP),
    FUSE_OPT_KEY("rw", FUSE_OPT_KEY_KEEP),
    /* always on (main): accepted, and passed on to libfuse as it is */
    FUSE_OPT_KEY("default_permissions", FUSE_OPT_KEY_KEEP),
    FUSE_OPT_END,
};
#undef CFS_STRING_OPT

static int cfs_opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cfs_cmdline *c = data;

	if (key != FUSE_OPT_KEY_NONOPT)
		return 1;
	if (c->npositional == 3) {
		fprintf(stderr, "chainfs: too many arguments: '%s'\n", arg);
		return -1;
	}
	c->positional[c->npositional++] = strdup(arg);
	return 0;
}

/* Half the RAM, as tmpfs's default size. */
static uint64_t cfs_default_max_data(void)
{
	return (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE) / 2;
}

/* What a node of a generated tree costs the daemon, in bytes of RSS: bench/memory measures
 * 89.5 to 93 from 10^6 to 10^8 nodes (bench/results/memory.md, memory_big.md); rounded up,
 * so the default budget fits in the memory it is taken from. */
#define CFS_NODE_RSS_BYTES 100

/* As many nodes as half the RAM holds (the half tmpfs takes for its default size), within
 * the tree's handle space. */
static uint32_t cfs_default_max_nodes(void)
{
	uint64_t n = cfs_default_max_data() / CFS_NODE_RSS_BYTES;

	return n < CFS_SPEC_MAX_NODES ? (uint32_t)n : CFS_SPEC_MAX_NODES;
}

static void cfs_usage(const char *prog)
{
	char modes[CFS_FOLLOW_NAMES_MAX];

	printf("usage: %s [options] [SPEC] MOUNTPOINT\n"
	       "       %s --materialize [--keep-ids] [--max-bytes=SIZE] [SPEC] DIR\n"
	       "       %s --spec-from DIR > SPEC\n\n"
	       "Serve the tree described by SPEC (default: the embedded tree) at MOUNTPOINT.\n\n"
	       "chainfs options:\n"
	       "    -o follow=%s  who follows symlinks (default %s)\n"
	       "    -o max_nest=N          links nested at once in our resolver (default 40)\n"
	       "    -o max_total=N         links followed per walk in our resolver (default 40)\n"
	       "    -o entry_timeout=SEC   kernel's name cache timeout (default: per mode)\n"
	       "    -o attr_timeout=SEC    kernel's attribute cache timeout (default: per mode)\n"
	       "    -o abslinks=inroot|raw kernel mode: absolute targets rewritten to stay\n"
	       "                           in the mount (inroot, default) or as stored (raw)\n"
	       "    -o max_data=SIZE       file data the tree may hold, then ENOSPC: bytes\n"
	       "                           with K, M, G or T, or N%% of RAM (default 50%%)\n"
	       "    -o max_meta=SIZE       names, link targets and nodes (128 bytes each)\n"
	       "                           the tree may hold, then ENOSPC (default: max_data)\n"
	       "    -o max_nodes=N         nodes the tree may hold: a spec or control line\n"
	       "                           past it is refused, a create gets ENOSPC\n"
	       "                           (default: half the RAM at 100 bytes a node)\n"
	       "    -o ctl=PATH            control socket path\n"
	       "    -o record=FILE         one JSON line per request to FILE, for\n"
	       "                           chainfsctl replay (pollcore loop only); made\n"
	       "                           new, mode 0600: an existing FILE is refused\n"
	       "    -o faults=FILE         fault rules from the first request on: one a\n"
	       "                           line, as chainfsctl fault add takes them\n"
	       "    -o record_replace      with record=FILE: empty an existing FILE (a\n"
	       "                           regular file of ours with one name) instead\n"
	       "    -o opens=skip|answer   skip: the kernel opens files and directories\n"
	       "                           itself and keeps listings (default); answer:\n"
	       "                           every open reaches chainfs (to fault opens)\n"
	       "    -o xattrs=auto|on|off  xattrs and ACLs as on tmpfs, or none (so\n"
	       "                           long listings ask two requests a name less);\n"
	       "                           auto (default): on if the tree holds one\n"
	       "    -o loop=pollcore|libfuse|libfuse_mt  request loop (default pollcore)\n"
	       "    -o spin=USEC           pollcore: after a request, poll without sleeping\n"
	       "                           this long for the next (default %d; 0: never)\n"
	       "    -o transport=dev|uring|auto  /dev/fuse (default), FUSE over io_uring\n"
	       "                           (or no mount), or the ring when the kernel allows\n"
	       "    -o ro                  read-only: the kernel refuses writes, and the\n"
	       "                           control socket's spec lines too (EROFS)\n"
	       "    -o fsname=NAME         the mount's source in /proc/mounts (default chainfs)\n"
	       "    -o suid, -o dev        honour set-id bits, open device nodes (default:\n"
	       "                           nosuid,nodev, whoever mounts; mount.fuse3's own\n"
	       "                           dev,suid do not count)\n"
	       "    --materialize          write SPEC's tree to DIR as real files and exit\n"
	       "    --keep-ids             with --materialize: owners (as root), set-id\n"
	       "                           bits and device modes as SPEC gives them\n"
	       "                           (default: dropped, devices at most 0600)\n"
	       "    --max-bytes=SIZE       with --materialize: the most file data to\n"
	       "                           write (holes and zeros left out), bytes with\n"
	       "                           K, M, G or T; 0: no limit (default 1G)\n"
	       "    --spec-from DIR        write the real tree DIR as a spec to stdout and\n"
	       "                           exit: content (holes kept), link targets, hard\n"
	       "                           links, special files, modes, owners, times; all\n"
	       "                           file data is held in memory meanwhile. Follows\n"
	       "                           no link, stays on DIR's filesystem; what cannot\n"
	       "                           be read is left out, named on stderr, and the\n"
	       "                           exit status is 1\n\n",
	       prog, prog, prog, cfs_follow_names(modes, '|'),
	       cfs_follow_modes[CFS_FOLLOW_KERNEL].name, CFS_SPIN_DEFAULT_US);
	printf("libfuse's options follow. Of them, clone_fd, max_idle_threads and max_threads\n"
	       "act only with -o loop=libfuse_mt; chainfs's own loop (the default) is one\n"
	       "thread and ignores them. default_permissions is always on.\n");
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

static int cfs_parse_uint(const char *name, const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (!s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		fprintf(stderr, "chainfs: %s=%s: expected a number from 0 to %u\n", name, s, max);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

static int cfs_parse_timeout(const char *name, const char *s, double *out)
{
	char *end;
	double v;

	if (!s)
		return 0;
	v = strtod(s, &end);
	if (end == s || *end || !(v >= 0) || v > 1e9) {
		fprintf(stderr, "chainfs: %s=%s: expected seconds (0 or more)\n", name, s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* S as bytes with an optional K, M, G or T (powers of 1024): END is where the number
 * stopped, for a caller that takes more (a %). */
static int cfs_size_bytes(const char *s, char **end, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u;
	unsigned long long v;

	*end = (char *)s;
	*out = 0;
	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, end, 10);
	if (errno)
		return -EINVAL;
	*out = v;
	if (!(*end)[0])
		return 0;
	if ((*end)[1] || !(u = strchr(units, toupper((unsigned char)(*end)[0]))) || !*u)
		return -EINVAL;
	int shift = 10 * (int)(u - units + 1);
	if (v > UINT64_MAX >> shift)
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* SIZE: bytes with an optional K, M, G or T (powers of 1024), or N% of the RAM, as tmpfs's
 * size=. At least a page, so that the limit says something. */
static int cfs_parse_size(const char *name, const char *s, uint64_t *out)
{
	char *end;
	uint64_t v;
	uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);

	if (!s)
		return 0;
	if (cfs_size_bytes(s, &end, &v) == 0 && v >= 4096) {
		*out = v;
		return 0;
	}
	if (end != s && end[0] == '%' && !end[1] && v >= 1 && v <= 100) {
		*out = ram / 100 * v;
		return 0;
	}
	fprintf(stderr,
		"chainfs: %s=%s: expected a size of at least 4096 bytes (K, M, G, T suffixes) "
		"or 1%% to 100%% of RAM\n",
		name, s);
	return -EINVAL;
}

static int cfs_pick(const char *name, const char *s, const char *const *words, int *out)
{
	if (!s)
		return 0;
	for (int i = 0; words[i]; i++)
		if (strcmp(s, words[i]) == 0) {
			*out = i;
			return 0;
		}
	fprintf(stderr, "chainfs: %s=%s: expected one of", name, s);
	for (int i = 0; words[i]; i++)
		fprintf(stderr, " %s", words[i]);
	fprintf(stderr, "\n");
	return -EINVAL;
}

/* -o follow=: a mode of the table (follow.c), refused as cfs_pick refuses. */
static int cfs_pick_follow(const char *s, int *out)
{
	char names[CFS_FOLLOW_NAMES_MAX];
	int m = s ? cfs_follow_of_name(s) : *out;

	if (m < 0) {
		fprintf(stderr, "chainfs: follow=%s: expected one of %s\n", s,
			cfs_follow_names(names, ' '));
		return -EINVAL;
	}
	*out = m;
	return 0;
}

static int cfs_apply_cmdline(const struct cfs_cmdline *c, struct cfs_opts *o)
{
	static const char *const loops[] = {"pollcore", "libfuse", "libfuse_mt", NULL};
	static const char *const abslinks[] = {"inroot", "raw", NULL};
	static const char *const opens[] = {"skip", "answer", NULL};
	static const char *const xattrs[] = {"auto", "on", "off", NULL};
	enum { XATTRS_AUTO, XATTRS_ON, XATTRS_OFF }; /* xattrs[]'s order */
	static const char *const transports[] = {"dev", "uring", "auto", NULL};
	int transport = CFS_TRANSPORT_DEV;
	int follow = CFS_FOLLOW_KERNEL, loop = CFS_LOOP_POLLCORE, raw = 0, how = CFS_OPENS_SKIP;
	int xattrs_how = XATTRS_AUTO;

	if (cfs_pick_follow(c->follow, &follow) || cfs_pick("loop", c->loop, loops, &loop) ||
	    cfs_pick("abslinks", c->abslinks, abslinks, &raw) ||
	    cfs_pick("opens", c->opens, opens, &how) ||
	    cfs_pick("xattrs", c->xattrs, xattrs, &xattrs_how) ||
	    cfs_pick("transport", c->transport, transports, &transport) ||
	    cfs_parse_uint("max_nest", c->max_nest, RS_LIMIT_MAX, &o->limits.max_nest) ||
	    cfs_parse_uint("max_total", c->max_total, RS_LIMIT_MAX, &o->limits.max_total) ||
	    cfs_parse_uint("spin", c->spin, PC_MAX_SPIN_US, &o->spin_us) ||
	    cfs_parse_timeout("entry_timeout", c->entry_timeout, &o->entry_timeout) ||
	    cfs_parse_timeout("attr_timeout", c->attr_timeout, &o->attr_timeout) ||
	    cfs_parse_size("max_data", c->max_data, &o->max_data))
		return -EINVAL;
	o->max_meta = o->max_data; /* a tree as big again in names and nodes, unless told */
	if (cfs_parse_size("max_meta", c->max_meta, &o->max_meta) ||
	    cfs_parse_uint("max_nodes", c->max_nodes, CFS_SPEC_MAX_NODES, &o->max_nodes))
		return -EINVAL;
	if (c->record_replace && !c->record) {
		fprintf(stderr, "chainfs: -o record_replace needs -o record=FILE\n");
		return -EINVAL;
	}
	o->follow = (enum cfs_follow)follow;
	o->loop = (enum cfs_loop_kind)loop;
	o->abslinks_raw = raw;
	o->ctl_path = c->ctl;
	o->record = c->record;
	o->faults = c->faults;
	o->record_replace = c->record_replace;
	o->read_only = c->read_only;
	o->opens = (enum cfs_opens)how;
	o->xattrs_auto = xattrs_how == XATTRS_AUTO;
	o->xattrs_off = xattrs_how == XATTRS_OFF;
	o->transport = (enum cfs_transport_kind)transport;
	return 0;
}

/* Build the whole tree before mounting: a bad spec mounts nothing. SPEC NULL or "@default"
 * (for mount.fuse3, which always passes a source) is the embedded tree. */
static struct cfs_tree *cfs_build_tree(const char *spec, const struct cfs_opts *o)
{
	struct cfs_spec_defaults def = {getuid(), getgid(), true, {CFS_DEFAULT_TREE_TIME, 0}};
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;
	int rc;

	if (!t) {
		fprintf(stderr, "chainfs: out of memory\n");
		return NULL;
	}
	cfs_tree_set_data_limit(t, o->max_data); /* the spec's own data and names count too */
	cfs_tree_set_meta_limit(t, o->max_meta);
	cfs_tree_set_node_limit(t, o->max_nodes);
	if (spec && strcmp(spec, "@default") != 0) {
		def.stamp = false; /* the spec file's own mtime */
		rc = cfs_spec_load_file(t, spec, &def, &err);
	} else
		rc = cfs_spec_load_text(t, "<default>", cfs_default_spec, strlen(cfs_default_spec),
					&def, &err);
	if (rc) {
		fprintf(stderr, "%s\n", err ? err : strerror(-rc));
		free(err);
		cfs_tree_free(t);
		return NULL;
	}
	return t;
}

/* --max-bytes=SIZE: bytes with K, M, G or T; 0 for no limit. */
static int cfs_parse_max_bytes(const char *s, uint64_t *out)
{
	char *end;

	if (!s)
		return 0;
	if (cfs_size_bytes(s, &end, out) == 0)
		return 0;
	fprintf(stderr,
		"chainfs: --max-bytes=%s: expected bytes (K, M, G, T suffixes), 0 for no limit\n",
		s);
	return -EINVAL;
}

static int cfs_materialize_main(const struct cfs_cmdline *c)
{
	const char *spec = c->npositional == 2 ? c->positional[0] : NULL;
	const char *dir = c->positional[c->npositional - 1];
	uint64_t max = CFS_MATERIALIZE_MAX_BYTES_DEFAULT, bytes;
	struct cfs_tree *t;
	char *err = NULL;
	int rc;

	if (cfs_parse_max_bytes(c->max_bytes, &max))
		return CFS_EXIT_USAGE;
	/* no limits but the handle space: --max-bytes bounds what is written */
	t = cfs_build_tree(spec, &(struct cfs_opts){.max_data = UINT64_MAX,
						    .max_meta = UINT64_MAX,
						    .max_nodes = CFS_SPEC_MAX_NODES});
	if (!t)
		return CFS_EXIT_USAGE;
	bytes = cfs_materialize_bytes(t);
	if (max && bytes > max) {
		fprintf(stderr,
			"chainfs: %s: the tree holds %llu bytes of file data to write (holes and "
			"zeros left out), more than --max-bytes=%llu%s allows; a larger "
			"--max-bytes raises the limit, --max-bytes=0 lifts it\n",
			dir, (unsigned long long)bytes, (unsigned long long)max,
			c->max_bytes ? "" : " (the default)");
		cfs_tree_free(t);
		return 1;
	}
	rc = cfs_materialize(t, dir, c->keep_ids ? CFS_MAT_KEEP_IDS : 0, &err);
	if (rc)
		fprintf(stderr, "chainfs: %s\n", err ? err : strerror(-rc));
	free(err);
	cfs_tree_free(t);
	return rc ? 1 : 0;
}

static void cfs_spec_from_report(void *data, const char *path, const char *why)
{
	fprintf(stderr, "chainfs: spec-from: %s: %s\n", path, why);
}

/* DIR as a spec on stdout: 0 only when all of it was read and written. */
static int cfs_spec_from_main(const struct cfs_cmdline *c)
{
	struct cfs_tree *t = cfs_tree_new(NULL);
	char *err = NULL;
	int rc, wrc = 0;

	if (!t) {
		fprintf(stderr, "chainfs: out of memory\n");
		return 1;
	}
	/* the whole tree is held while the spec is written: no limit but the memory */
	cfs_tree_set_data_limit(t, UINT64_MAX);
	cfs_tree_set_meta_limit(t, UINT64_MAX);
	rc = cfs_spec_from_dir(t, c->positional[0], cfs_spec_from_report, NULL, &err);
	if (rc < 0)
		fprintf(stderr, "chainfs: spec-from: %s\n", err ? err : strerror(-rc));
	else
		wrc = cfs_spec_dump(t, stdout);
	if (wrc)
		fprintf(stderr, "chainfs: spec-from: writing the spec: %s\n", strerror(-wrc));
	free(err);
	cfs_tree_free(t);
	return rc || wrc ? 1 : 0;
}

/* One log line to stderr, "chainfs: level: message"; debug only when G_MESSAGES_DEBUG names
 * chainfs (GLib's convention). GLib's default would send messages to stdout. */
static void cfs_log(const gchar *domain, GLogLevelFlags level, const gchar *msg, gpointer data)
{
	const char *dbg = g_getenv("G_MESSAGES_DEBUG");
	const char *what = (level & G_LOG_LEVEL_ERROR)	    ? "error"
			   : (level & G_LOG_LEVEL_CRITICAL) ? "critical"
			   : (level & G_LOG_LEVEL_WARNING)  ? "warning"
			   : (level & G_LOG_LEVEL_DEBUG)    ? "debug"
							    : "info";

	if ((level & (G_LOG_LEVEL_DEBUG | G_LOG_LEVEL_INFO)) &&
	    !(dbg && (strstr(dbg, "chainfs") || strcmp(dbg, "all") == 0)))
		return;
	fprintf(stderr, "chainfs: %s: %s\n", what, msg);
}

/* FUSE could mount on a file, but chainfs serves a directory: `chainfs SPEC` (no mountpoint)
 * would hide the spec file under a tree that answers EIO. Checked before the tree is built. */
static int cfs_check_mountpoint(const char *mnt, const char *prog)
{
	struct stat st;

	if (stat(mnt, &st) != 0) {
		fprintf(stderr, "chainfs: %s: %s\n", mnt, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"chainfs: %s: not a directory; chainfs mounts only on a directory "
			"(usage: %s [options] [SPEC] MOUNTPOINT)\n",
			mnt, prog);
		return -1;
	}
	return 0;
}

static void cfs_free_cmdline(struct cfs_cmdline *c)
{
#define CFS_FREE(name) free(c->name);
	CFS_STRING_OPTS(CFS_FREE)
#undef CFS_FREE
	free(c->max_bytes);
	for (int i = 0; i < c->npositional; i++)
		free(c->positional[i]);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts fo = {0};
	struct cfs_cmdline c = {0};
	struct cfs_daemon d = {.ctl_fd = -1,
			       .opts = {.limits = {RS_DEFAULT_NEST, RS_DEFAULT_TOTAL},
					.entry_timeout = -1,
					.attr_timeout = -1,
					.spin_us = CFS_SPIN_DEFAULT_US,
					.max_data = cfs_default_max_data(),
					.max_nodes = cfs_default_max_nodes()}};
	int rc = CFS_EXIT_USAGE;

	g_log_set_handler("chainfs", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL | G_LOG_FLAG_RECURSION,
			  cfs_log, NULL);
	/* The kernel checks permissions on every mount (default_permissions): it runs the same
	 * generic_permission that tmpfs does, so owners, groups, the sticky bit, setattr rules
	 * and killing set-id bits on write answer as on tmpfs. Without it a mount with
	 * allow_other would let any user read and change anything; no option turns it off. */
	if (fuse_opt_parse(&args, &c, cfs_opt_spec, cfs_opt_proc) == -1 ||
	    fuse_opt_add_arg(&args, "-odefault_permissions") != 0 ||
	    cfs_mount_flags(&args, argc, argv) != 0)
		goto out;
	if (c.materialize && c.spec_from) {
		fprintf(stderr, "chainfs: --materialize and --spec-from go one at a time\n");
		goto out;
	}
	if (c.materialize) {
		if (c.npositional < 1 || c.npositional > 2) {
			fprintf(stderr, "chainfs: usage: chainfs --materialize [--keep-ids] "
					"[--max-bytes=SIZE] [SPEC] DIR\n");
			goto out;
		}
		rc = cfs_materialize_main(&c);
		goto out;
	}
	if (c.spec_from) {
		if (c.npositional != 1 || c.keep_ids || c.max_bytes) {
			fprintf(stderr, "chainfs: usage: chainfs --spec-from DIR > SPEC\n");
			goto out;
		}
		rc = cfs_spec_from_main(&c);
		goto out;
	}
	if (c.keep_ids || c.max_bytes) {
		fprintf(stderr, "chainfs: %s goes with --materialize\n",
			c.keep_ids ? "--keep-ids" : "--max-bytes");
		goto out;
	}
	if (c.npositional > 0 && fuse_opt_add_arg(&args, c.positional[c.npositional - 1]))
		goto out;
	if (fuse_parse_cmdline(&args, &fo) != 0)
		goto out;
	if (fo.show_help) {
		cfs_usage(argv[0]);
		rc = 0;
		goto out;
	}
	if (fo.show_version) {
		printf("chainfs %s (libfuse %s)\n", CFS_VERSION, fuse_pkgversion());
		rc = 0;
		goto out;
	}
	if (!fo.mountpoint || c.npositional > 2) {
		fprintf(stderr, "chainfs: usage: %s [options] [SPEC] MOUNTPOINT (see --help)\n",
			argv[0]);
		goto out;
	}
	if (cfs_apply_cmdline(&c, &d.opts))
		goto out;
	if (cfs_check_mountpoint(fo.mountpoint, argv[0])) {
		rc = 1; /* mounting failed, as for a mountpoint already mounted */
		goto out;
	}
	d.opts.spec = c.npositional == 2 ? c.positional[0] : NULL;
	d.opts.mountpoint = fo.mountpoint;
	if (fo.mountpoint[0] == '/' && fo.mountpoint[1] != '\0') {
		d.root_alias = fo.mountpoint;
		d.root_alias_len = strlen(fo.mountpoint);
	}
	d.tree = cfs_build_tree(d.opts.spec, &d.opts);
	if (d.tree) /* every change from now on, for the kernel's caches (coherence.c) */
		cfs_tree_record(d.tree, &d.changes);
	if (!d.tree)
		goto out;
	if (d.opts.xattrs_auto) /* a tree without xattrs pays nothing for them (daemon.h) */
		d.opts.xattrs_off = !cfs_tree_has_xattrs(d.tree);
	d.walk_left = RS_WALK_BUDGET;
	d.walk_budget = &d.walk_left; /* each request's walks share one budget (ops.c) */
	rc = cfs_serve(&d, &args, fo.foreground);
	cfs_tree_free(d.tree);
out:
	free(fo.mountpoint);
	fuse_opt_free_args(&args);
	cfs_free_cmdline(&c);
	return rc;
}
