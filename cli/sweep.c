/*
 * chainfs-sweep — time link resolution over a matrix of chain lengths, nesting depths, follow
 * modes and operations, cold and warm, on chainfs mounts it makes and on the same tree
 * materialized on a kernel filesystem (the kernel's own answer), and write one CSV row per
 * cell: median/p10/p90 ns, ns per link, and the FUSE requests per operation by opcode (from
 * the daemon's stats). Cold means the mount's own kernel caches dropped through the control
 * socket (`drop`), never a global drop_caches. Progress goes to stderr.
 */
#include "ctlpath.h"
#include "errname.h"
#include "follow.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <json-glib/json-glib.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { SW_MAX_VALUES = 32, SW_MAX_REPS = 100000 };

/* The operations a cell times; LINKS says how many links one run follows for a structure of
 * N links (ns per link divides by it). */
enum sw_op { OP_STAT, OP_READ, OP_READLINK, OP_REALPATH, OP_FIND, OP_LS, OP_MAX };
static const char *const sw_op_names[OP_MAX] = {"stat",	    "read", "readlink",
						"realpath", "find", "ls"};
/* The FUSE requests reported per operation, in the CSV's column order. */
static const char *const sw_req_names[] = {"lookup", "getattr", "readlink",   "open",
					   "read",   "readdir", "readdirplus"};
#define SW_NREQ (sizeof(sw_req_names) / sizeof(sw_req_names[0]))

struct sw_opts {
	unsigned long lengths[SW_MAX_VALUES], nests[SW_MAX_VALUES];
	int nlengths, nnests;
	bool modes[CFS_FOLLOW_MODES], ops[OP_MAX], kernel_copy;
	unsigned reps;
	const char *csv, *plot, *chainfs;
	char dir[PATH_MAX]; /* our temp dir: spec, mounts, copy */
};

static volatile sig_atomic_t sw_stop; /* a signal asked us to stop: undo and exit */

/* What to undo on any exit, a failed cell and SIGINT included (atexit). */
static struct {
	char dir[PATH_MAX];   /* our temp dir, removed */
	char mount[PATH_MAX]; /* what is mounted now, unmounted */
} sw_undo;

struct sw_target {
	const char *fs, *mode; /* "chainfs" + its mode, or "copy" + the filesystem's type */
	char root[PATH_MAX];
	char sock[CFS_SUN_PATH_MAX]; /* chainfs: the control socket */
	FILE *csv;
	const struct sw_opts *o;
};

static uint64_t sw_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the control socket ---------------------------------------------------------------- */

/* One request, its JSON reply parsed (NULL on failure, with a message). */
static JsonObject *sw_ask(const char *sock, const char *req, JsonParser **parser)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	GString *in = g_string_new(NULL);
	JsonObject *o = NULL;
	char buf[65536];
	ssize_t n;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req) || write(fd, "\n", 1) != 1)
		goto out;
	while (!strchr(in->str, '\n') && (n = read(fd, buf, sizeof(buf))) > 0)
		g_string_append_len(in, buf, n);
	*parser = json_parser_new();
	if (json_parser_load_from_data(*parser, in->str, -1, NULL) &&
	    JSON_NODE_HOLDS_OBJECT(json_parser_get_root(*parser)))
		o = json_node_get_object(json_parser_get_root(*parser));
out:
	if (!o)
		fprintf(stderr, "chainfs-sweep: %s: no answer to '%s'\n", sock, req);
	if (fd >= 0)
		close(fd);
	g_string_free(in, TRUE);
	return o;
}

/* The daemon's request counters, in sw_req_names order (zeros when not a chainfs target). */
static int sw_requests(const struct sw_target *t, uint64_t out[SW_NREQ])
{
	JsonParser *p = NULL;
	JsonObject *o, *req;

	memset(out, 0, SW_NREQ * sizeof(out[0]));
	if (!t->sock[0])
		return 0;
	o = sw_ask(t->sock, "stats", &p);
	if (!o || !json_object_has_member(o, "requests")) {
		if (p)
			g_object_unref(p);
		return -EIO;
	}
	req = json_object_get_object_member(o, "requests");
	for (size_t i = 0; i < SW_NREQ; i++)
		if (json_object_has_member(req, sw_req_names[i]))
			out[i] = (uint64_t)json_object_get_int_member(req, sw_req_names[i]);
	g_object_unref(p);
	return 0;
}

/* Cold: the mount forgets what its kernel caches hold (answered once it is done). */
static int sw_drop(const struct sw_target *t)
{
	JsonParser *p = NULL;
	JsonObject *o;
	int ok;

	if (!t->sock[0])
		return 0;
	o = sw_ask(t->sock, "drop", &p);
	ok = o && json_object_get_boolean_member(o, "ok");
	if (p)
		g_object_unref(p);
	return ok ? 0 : -EIO;
}

/* ---- the operations ---------------------------------------------------------------------- */

static int sw_count_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	return 0; /* nftw's own lstat is what find does */
}

static int sw_ls_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	char buf[PATH_MAX];

	if (flag == FTW_SL && readlink(path, buf, sizeof(buf)) < 0)
		return -1;
	return 0;
}

/* Run OP on PATH once: 0 or the errno it gave. */
static int sw_run(enum sw_op op, const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	int fd;

	switch (op) {
	case OP_STAT:
		return stat(path, &st) == 0 ? 0 : errno;
	case OP_READ:
		if ((fd = open(path, O_RDONLY)) < 0)
			return errno;
		if (read(fd, buf, sizeof(buf)) < 0) {
			int e = errno;
			close(fd);
			return e;
		}
		close(fd);
		return 0;
	case OP_READLINK:
		return readlink(path, buf, sizeof(buf)) >= 0 ? 0 : errno;
	case OP_REALPATH: /* glibc walks the links itself, one readlink at a time */
		return realpath(path, buf) ? 0 : errno;
	case OP_FIND:
		return nftw(path, sw_count_entry, 16, FTW_PHYS) == 0 ? 0 : errno;
	case OP_LS:
		return nftw(path, sw_ls_entry, 16, FTW_PHYS) == 0 ? 0 : errno;
	default:
		return EINVAL;
	}
}

static int sw_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- cells --------------------------------------------------------------------------------- */

struct sw_cell {
	const char *kind; /* "chain" or "nest" */
	unsigned long n;  /* links in the structure */
	enum sw_op op;
	bool cold;
};

/* What a run of the cell's op walks: the structure's head, or for find and ls the hidden
 * directory that holds its links. */
static int sw_path(const struct sw_target *t, const struct sw_cell *c, char *out, size_t size)
{
	const char *dir = c->kind[0] == 'c' ? "c" : "n";
	int n = c->op == OP_FIND || c->op == OP_LS
		    ? snprintf(out, size, "%s/%s/.%lu.%s", t->root, dir, c->n, c->kind)
		    : snprintf(out, size, "%s/%s/%lu", t->root, dir, c->n);
	return n < (int)size ? 0 : -ENAMETOOLONG;
}

/* A walk's result for the CSV: "ok" or the errno's name (errname.c). A number the C library
 * has no name for cannot come from these calls; should one, it reads E<number>. */
static const char *sw_errname(int e)
{
	static char buf[16];
	const char *name = cfs_errno_name(e);

	if (!e)
		return "ok";
	if (name)
		return name;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

static int sw_cell(const struct sw_target *t, const struct sw_cell *c)
{
	unsigned reps = t->o->reps;
	uint64_t *ns = calloc(reps, sizeof(*ns)), before[SW_NREQ], after[SW_NREQ];
	char path[PATH_MAX];
	int result = 0;

	if (!ns || sw_path(t, c, path, sizeof(path)) != 0) {
		fprintf(stderr, "chainfs-sweep: %s\n", ns ? "path too long" : "out of memory");
		goto fail;
	}
	if (!c->cold)
		sw_run(c->op, path); /* warm: the kernel has seen it once */
	if (sw_requests(t, before) != 0)
		goto fail;
	for (unsigned r = 0; r < reps; r++) {
		if (sw_stop || (c->cold && sw_drop(t) != 0))
			goto fail;
		uint64_t t0 = sw_now();
		int e = sw_run(c->op, path);
		ns[r] = sw_now() - t0;
		if (r == 0)
			result = e;
		else if (e != result)
			result = -1; /* the same walk answered differently */
	}
	if (sw_requests(t, after) != 0)
		goto fail;
	/* the drops themselves are control requests, not FUSE ones: nothing to subtract */
	qsort(ns, reps, sizeof(*ns), sw_cmp);
	uint64_t med = ns[reps / 2], p10 = ns[reps / 10], p90 = ns[(reps * 9) / 10];
	unsigned long links = c->op == OP_READLINK ? 1 : c->n;
	fprintf(t->csv, "%s,%s,%s,%lu,%s,%s,%u,%s,%llu,%llu,%llu,", t->fs, t->mode, c->kind, c->n,
		sw_op_names[c->op], c->cold ? "cold" : "warm", reps,
		result < 0 ? "mixed" : sw_errname(result), (unsigned long long)med,
		(unsigned long long)p10, (unsigned long long)p90);
	/* a walk that failed (ELOOP at the limit) did not follow N links: no ns per link */
	if (result == 0)
		fprintf(t->csv, "%.3f", (double)med / (double)links);
	for (size_t i = 0; i < SW_NREQ; i++)
		fprintf(t->csv, ",%.2f", (double)(after[i] - before[i]) / reps);
	fputc('\n', t->csv);
	fflush(t->csv);
	free(ns);
	return 0;
fail:
	free(ns);
	return -EIO;
}

static int sw_target_run(const struct sw_target *t)
{
	const struct sw_opts *o = t->o;
	static const char *const kinds[2] = {"chain", "nest"};

	for (int k = 0; k < 2; k++) {
		const unsigned long *v = k ? o->nests : o->lengths;
		int nv = k ? o->nnests : o->nlengths;
		for (int i = 0; i < nv; i++)
			for (int op = 0; op < OP_MAX; op++) {
				/* find and ls list a chain's hidden directory of links (a chain of
				 * 1 has none); a nest's links lead into directories, which server
				 * mode shows as such: a walk of them is no longer about links */
				bool listing = op == OP_FIND || op == OP_LS;
				if (!o->ops[op] || (listing && (k || v[i] < 2)))
					continue;
				for (int cold = 1; cold >= 0; cold--) {
					/* a copy has no cache of its own to drop: cold = warm */
					if (cold && !t->sock[0])
						continue;
					struct sw_cell c = {kinds[k], v[i], (enum sw_op)op, cold};
					fprintf(stderr, "chainfs-sweep: %s %s %s %lu %s %s\n",
						t->fs, t->mode, c.kind, c.n, sw_op_names[op],
						cold ? "cold" : "warm");
					if (sw_cell(t, &c) != 0)
						return -EIO;
				}
			}
	}
	return 0;
}

/* ---- mounts ---------------------------------------------------------------------------------- */

static int sw_spawn(char *const argv[])
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "chainfs-sweep: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* Mount the spec in MODE at T->root (chainfs returns once the mount answers). */
static int sw_mount(struct sw_target *t, const char *spec, const char *mode)
{
	char opts[256];

	if (snprintf(t->root, sizeof(t->root), "%s/mnt-%s", t->o->dir, mode) >=
		(int)sizeof(t->root) ||
	    snprintf(t->sock, sizeof(t->sock), "%s/ctl-%s.sock", t->o->dir, mode) >=
		(int)sizeof(t->sock))
		return -ENAMETOOLONG;
	/* the chains pass the default limits on purpose; each walk must be allowed to end */
	snprintf(opts, sizeof(opts), "follow=%s,max_nest=%u,max_total=%u,ctl=%s", mode, 1000000000u,
		 1000000000u, t->sock);
	if (mkdir(t->root, 0755) != 0 && errno != EEXIST)
		return -errno;
	char *argv[] = {(char *)t->o->chainfs, "-o", opts, (char *)spec, t->root, NULL};
	t->fs = "chainfs";
	t->mode = mode;
	int err = sw_spawn(argv);
	if (!err)
		snprintf(sw_undo.mount, sizeof(sw_undo.mount), "%s", t->root);
	/* the daemon answers on its socket once it is listening: wait for that, 10 s at most */
	for (int i = 0; !err && i < 1000 && access(t->sock, F_OK) != 0; i++)
		usleep(10000);
	return err ? err : access(t->sock, F_OK) == 0 ? 0 : -ETIMEDOUT;
}

static void sw_unmount(const char *dir)
{
	char *argv[] = {"fusermount3", "-u", (char *)dir, NULL};

	if (umount2(dir, 0) != 0 && sw_spawn(argv) != 0 && umount2(dir, MNT_DETACH) != 0)
		fprintf(stderr, "chainfs-sweep: cannot unmount %s\n", dir);
	rmdir(dir);
	sw_undo.mount[0] = '\0';
}

static void sw_cleanup(void)
{
	if (sw_undo.mount[0])
		sw_unmount(sw_undo.mount);
	if (sw_undo.dir[0]) {
		char *rm[] = {"rm", "-rf", sw_undo.dir, NULL};
		sw_spawn(rm);
		sw_undo.dir[0] = '\0';
	}
}

static void sw_on_signal(int sig)
{
	sw_stop = sig;
}

/* ---- the command line ------------------------------------------------------------------------ */

static int sw_list(const char *s, unsigned long *out, int *n)
{
	char *end;

	for (*n = 0; *s; s = *end ? end + 1 : end) {
		errno = 0;
		double v = strtod(s, &end); /* 1e6 reads as a million */
		if (errno || end == s || (*end && *end != ',') || v < 1 || v > 1e8 ||
		    v != (double)(unsigned long)v || *n == SW_MAX_VALUES)
			return -EINVAL;
		out[(*n)++] = (unsigned long)v;
	}
	return *n ? 0 : -EINVAL;
}

static int sw_names(const char *s, const char *const *names, int count, bool *on)
{
	gchar **words = g_strsplit(s, ",", -1);
	int err = 0;

	memset(on, 0, (size_t)count * sizeof(*on));
	for (gchar **w = words; *w && !err; w++) {
		int i = 0;
		while (i < count && strcmp(*w, names[i]) != 0)
			i++;
		if (i == count) {
			fprintf(stderr, "chainfs-sweep: unknown name '%s'; expected one of", *w);
			for (i = 0; i < count; i++)
				fprintf(stderr, "%c%s", i ? ',' : ' ', names[i]);
			fputc('\n', stderr);
			err = -EINVAL;
		} else {
			on[i] = true;
		}
	}
	g_strfreev(words);
	return err;
}

static void sw_usage(FILE *f)
{
	char modes[CFS_FOLLOW_NAMES_MAX];

	fprintf(f,
		"usage: chainfs-sweep [options]\n"
		"  --lengths=L,...   chain lengths (default 1,8,40,41,1000,100000; 1e6 works)\n"
		"  --nests=D,...     nesting depths (default 1,8,40,41)\n"
		"  --modes=M,...     %s (default all)\n"
		"  --ops=O,...       stat,read,readlink,realpath,find,ls (default all; find and\n"
		"                    ls list a chain's hidden directory of links: chains of 2+)\n"
		"  --reps=N          timed runs per cell (default 11)\n"
		"  --no-copy         skip the materialized copy on a kernel filesystem (its\n"
		"                    rows are warm only: a copy has no cache of its own to drop)\n"
		"  --csv=FILE        the results (default: stdout)\n"
		"  --plot=FILE.png   ns per link against chain length, by mode (needs gnuplot)\n"
		"  --chainfs=PATH    the daemon (default: chainfs beside this program)\n"
		"  -h, --help        this text\n",
		cfs_follow_names(modes, ','));
}

static int sw_parse(int argc, char **argv, struct sw_opts *o)
{
	static const struct option longs[] = {
	    {"lengths", 1, 0, 'l'}, {"nests", 1, 0, 'n'}, {"modes", 1, 0, 'm'},
	    {"ops", 1, 0, 'o'},	    {"reps", 1, 0, 'r'},  {"no-copy", 0, 0, 'C'},
	    {"csv", 1, 0, 'c'},	    {"plot", 1, 0, 'p'},  {"chainfs", 1, 0, 'b'},
	    {"help", 0, 0, 'h'},    {0, 0, 0, 0},
	};
	const char *mode_names[CFS_FOLLOW_MODES];
	int c, li = -1, err = 0;

	for (int m = 0; m < CFS_FOLLOW_MODES; m++)
		mode_names[m] = cfs_follow_modes[m].name;
	while (!err && (c = getopt_long(argc, argv, "h", longs, &li)) != -1) {
		char *end;
		switch (c) {
		case 'l':
			err = sw_list(optarg, o->lengths, &o->nlengths);
			break;
		case 'n':
			err = sw_list(optarg, o->nests, &o->nnests);
			break;
		case 'm':
			err = sw_names(optarg, mode_names, CFS_FOLLOW_MODES, o->modes);
			break;
		case 'o':
			err = sw_names(optarg, sw_op_names, OP_MAX, o->ops);
			break;
		case 'r':
			o->reps = (unsigned)strtoul(optarg, &end, 10);
			err = (*end || o->reps < 1 || o->reps > SW_MAX_REPS) ? -EINVAL : 0;
			break;
		case 'C':
			o->kernel_copy = false;
			break;
		case 'c': /* the options kept as given: --csv, --plot, --chainfs */
		case 'p':
		case 'b':
			*(c == 'c' ? &o->csv : c == 'p' ? &o->plot : &o->chainfs) = optarg;
			break;
		case 'h':
			sw_usage(stdout);
			exit(0);
		default: /* getopt_long named the unknown option or the missing value */
			err = -EINVAL;
			li = -1;
		}
		/* every option with a value is long: LI names the one the user gave */
		if (err && li >= 0)
			fprintf(stderr, "chainfs-sweep: bad value for --%s: '%s'\n", longs[li].name,
				optarg ? optarg : "");
		li = -1;
	}
	if (!err && optind != argc)
		fprintf(stderr, "chainfs-sweep: unexpected argument '%s'\n", argv[optind]);
	if (err || optind != argc) {
		sw_usage(stderr);
		return -EINVAL;
	}
	return 0;
}

/* ---- the run -----------------------------------------------------------------------------------
 */

static int sw_write_spec(const struct sw_opts *o, const char *path)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -errno;
	fprintf(f, "# chainfs-sweep's tree\nfile /target \"the end\\n\"\ndir /c\ndir /n\n");
	for (int i = 0; i < o->nlengths; i++)
		fprintf(f, "chain /c/%lu %lu /target\n", o->lengths[i], o->lengths[i]);
	for (int i = 0; i < o->nnests; i++)
		fprintf(f, "nest /n/%lu %lu /target\n", o->nests[i], o->nests[i]);
	return fclose(f) == 0 ? 0 : -errno;
}

static void sw_header(FILE *csv, const struct sw_opts *o)
{
	struct utsname u;
	time_t now = time(NULL);

	uname(&u);
	fprintf(csv, "# chainfs-sweep, %s", ctime(&now));
	fprintf(csv, "# kernel %s %s; reps %u; the trees are fixed (no seed)\n", u.release,
		u.machine, o->reps);
	fprintf(csv, "# lengths");
	for (int i = 0; i < o->nlengths; i++)
		fprintf(csv, "%c%lu", i ? ',' : ' ', o->lengths[i]);
	fprintf(csv, "; nests");
	for (int i = 0; i < o->nnests; i++)
		fprintf(csv, "%c%lu", i ? ',' : ' ', o->nests[i]);
	fprintf(csv, "; modes");
	for (int i = 0, first = 1; i < CFS_FOLLOW_MODES; i++)
		if (o->modes[i]) {
			fprintf(csv, "%c%s", first ? ' ' : ',', cfs_follow_modes[i].name);
			first = 0;
		}
	fprintf(csv, "; ops");
	for (int i = 0, first = 1; i < OP_MAX; i++)
		if (o->ops[i]) {
			fprintf(csv, "%c%s", first ? ' ' : ',', sw_op_names[i]);
			first = 0;
		}
	fprintf(csv, "; chainfs limits 1000000000; copy %s\n", o->kernel_copy ? "yes" : "no");
	fprintf(csv, "fs,mode,kind,links,op,cache,reps,result,median_ns,p10_ns,p90_ns,ns_per_link");
	for (size_t i = 0; i < SW_NREQ; i++)
		fprintf(csv, ",req_%s", sw_req_names[i]);
	fputc('\n', csv);
}

/* The copy: the same spec written out as real files on a tmpfs of our own (as root), else
 * in our temp dir, whatever filesystem holds it. */
static int sw_copy(struct sw_target *t, const char *spec)
{
	if (snprintf(t->root, sizeof(t->root), "%s/copy", t->o->dir) >= (int)sizeof(t->root))
		return -ENAMETOOLONG;
	t->sock[0] = '\0';
	t->fs = "copy";
	t->mode = "tmpfs";
	if (mkdir(t->root, 0755) != 0)
		return -errno;
	if (mount("chainfs-sweep", t->root, "tmpfs", 0, "mode=755") != 0)
		t->mode = "dir";
	else
		snprintf(sw_undo.mount, sizeof(sw_undo.mount), "%s", t->root);
	char *argv[] = {(char *)t->o->chainfs, "--materialize", (char *)spec, t->root, NULL};
	return sw_spawn(argv);
}

static void sw_plot(const struct sw_opts *o, const char *csv)
{
	FILE *g = popen("gnuplot", "w");
	const char *caches[2] = {"cold", "warm"};
	int first = 1;

	if (!g) {
		fprintf(stderr, "chainfs-sweep: gnuplot: %s\n", strerror(errno));
		return;
	}
	fprintf(g,
		"set terminal pngcairo size 900,560 noenhanced\nset output '%s'\n"
		"set datafile separator ','\nset logscale xy\nset key top right\n"
		"set xlabel 'chain length (links)'\nset ylabel 'ns per link (median)'\n"
		"set title 'stat -L through a chain (ELOOP cells left out)'\nplot ",
		o->plot);
	for (int m = 0; m <= CFS_FOLLOW_MODES; m++) /* the modes, then the copy */
		for (int c = 0; c < 2; c++) {
			bool copy = m == CFS_FOLLOW_MODES;
			const char *fs = copy ? "copy" : "chainfs",
				   *mode = copy ? "" : cfs_follow_modes[m].name;
			if ((!copy && !o->modes[m]) || (copy && (!o->kernel_copy || c == 0)))
				continue;
			fprintf(g,
				"%s'< grep \"^%s,%s[^,]*,chain,[^,]*,stat,%s,[^,]*,ok,\" %s' using "
				"4:12 with linespoints dashtype %d lc %d title '%s %s %s'",
				first ? "" : ", ", fs, mode, caches[c], csv, c ? 2 : 1, m + 1, fs,
				m < 3 ? mode : "(the kernel on tmpfs)", m < 3 ? caches[c] : "");
			first = 0;
		}
	fputc('\n', g);
	if (pclose(g) != 0)
		fprintf(stderr, "chainfs-sweep: gnuplot failed\n");
}

static const char *sw_self_dir_chainfs(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 16);

	if (n <= 0)
		return "chainfs";
	path[n] = '\0';
	strcpy(strrchr(path, '/') + 1, "chainfs");
	return path;
}

int main(int argc, char **argv)
{
	struct sw_opts o = {.lengths = {1, 8, 40, 41, 1000, 100000},
			    .nlengths = 6,
			    .nests = {1, 8, 40, 41},
			    .nnests = 4,
			    .ops = {1, 1, 1, 1, 1, 1},
			    .kernel_copy = true,
			    .reps = 11};
	char spec[PATH_MAX + 16];
	int rc = 1;

	for (int m = 0; m < CFS_FOLLOW_MODES; m++)
		o.modes[m] = true; /* every mode, unless --modes */

	if (sw_parse(argc, argv, &o) != 0)
		return 2;
	if (!o.chainfs)
		o.chainfs = sw_self_dir_chainfs();
	/* short enough for the control sockets' addresses */
	const char *tmp =
	    getenv("TMPDIR") && strlen(getenv("TMPDIR")) < 48 ? getenv("TMPDIR") : "/tmp";
	snprintf(o.dir, sizeof(o.dir), "%s/chainfs-sweep.XXXXXX", tmp);
	if (!mkdtemp(o.dir) || chmod(o.dir, 0755) != 0) {
		fprintf(stderr, "chainfs-sweep: temp dir: %s\n", strerror(errno));
		return 1;
	}
	snprintf(sw_undo.dir, sizeof(sw_undo.dir), "%s", o.dir);
	atexit(sw_cleanup);
	signal(SIGINT, sw_on_signal);
	signal(SIGTERM, sw_on_signal);
	signal(SIGHUP, sw_on_signal);
	snprintf(spec, sizeof(spec), "%s/sweep.spec", o.dir);
	FILE *csv = o.csv ? fopen(o.csv, "we") : stdout;
	if (!csv || sw_write_spec(&o, spec) != 0) {
		fprintf(stderr, "chainfs-sweep: %s: %s\n", csv ? spec : o.csv, strerror(errno));
		goto out;
	}
	sw_header(csv, &o);
	for (int m = 0; m < CFS_FOLLOW_MODES; m++) {
		struct sw_target t = {.csv = csv, .o = &o};
		if (!o.modes[m])
			continue;
		if (sw_mount(&t, spec, cfs_follow_modes[m].name) != 0) {
			fprintf(stderr, "chainfs-sweep: cannot mount %s with %s\n", t.root,
				o.chainfs);
			rmdir(t.root);
			goto out;
		}
		int err = sw_target_run(&t);
		sw_unmount(t.root);
		if (err)
			goto out;
	}
	if (o.kernel_copy) {
		struct sw_target t = {.csv = csv, .o = &o};
		int err = sw_copy(&t, spec);
		if (err)
			fprintf(stderr, "chainfs-sweep: cannot materialize the copy\n");
		else
			err = sw_target_run(&t);
		if (sw_undo.mount[0])
			sw_unmount(t.root);
		if (err)
			goto out;
	}
	rc = 0;
	if (o.plot && o.csv) {
		fflush(csv);
		sw_plot(&o, o.csv);
	}
out:
	if (csv && csv != stdout)
		fclose(csv);
	if (sw_stop) {
		fprintf(stderr, "chainfs-sweep: %s: stopped\n", strsignal(sw_stop));
		rc = 128 + sw_stop;
	}
	return rc; /* sw_cleanup unmounts and removes the temp dir */
}
