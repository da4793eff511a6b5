/*
 * bench_resolver: cost per link of resolving serial chains and nestings, for
 *   rs      rs_resolve() over memtree,
 *   ref     the recursive reference resolver (tests/refresolve.c) over the same memtree,
 *   kernel  stat() of the same chain materialized on tmpfs (lengths <= 40, Linux's limit),
 *   synth   rs_resolve() over a synthetic tree computed from the names (no hash table, link
 *           bodies in one array read in order): the walk's own cost, without the cache
 *           misses a big memtree costs per link.
 *
 * Every round runs each contender once per shape, in rotating order; medians over rounds.
 * Time is thread CPU time (user + system): nothing here sleeps, so this is wall time minus
 * what other tenants of the machine took.
 *
 * The whole bench runs on a thread with a large stack so that the recursive reference can go
 * deep; sizes its measured stack use per link says would not fit are reported as "stack
 * overflow" instead of being run.
 *
 * usage: bench_resolver [--quick] [--runs N] [--tmpfs DIR] --csv FILE --md FILE
 *   --quick: measurements of ~2 ms instead of ~30 ms (a smoke run)
 */
#include "memtree.h"
#include "refresolve.h"
#include "rs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

enum {
	MAX_RUNS = 101,
	KERNEL_MAX = 40, /* the kernel follows at most 40 links per walk */
	PAINT = 0x5a,
	PROBE_LINKS = 10000, /* chain the reference's stack use is measured on */
};

static const size_t BENCH_STACK = (size_t)4 << 30; /* reserved, touched only as used */

enum contender { RS, REF, KERNEL, SYNTH, NCONTENDERS };
static const char *const contender_names[] = {"rs_resolve", "reference", "kernel_stat",
					      "rs_resolve_synth"};

struct shape {
	bool nest;
	unsigned n;
	char path[32]; /* "c40/c0" or "n40/n0" from the root */
};

struct result {
	bool done;
	const char *skip; /* why not run */
	double ns_link[MAX_RUNS];
	double median, paired; /* ns per link; median of (this / rs) within a round */
	uint32_t allocs;       /* per walk */
};

/* The synthetic tree: per shape, every body back to back, and where each starts. */
struct synth {
	char *bodies;
	size_t *off; /* n + 1 offsets */
};

struct bench {
	bool quick;
	int runs;
	double target_ns; /* CPU time one measurement should take */
	const char *tmpfs, *csv, *md;
	struct mt_tree *m;
	uint64_t target;
	int kfd;		   /* the tmpfs directory, or -1 */
	double ref_stack_per_link; /* bytes */
	struct shape shapes[16];
	int nshapes;
	struct result res[16][NCONTENDERS];
	struct synth synth[16];
	int exit_code;
};

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* ---- the trees ---- */

static void add_shape(struct bench *b, bool nest, unsigned n)
{
	struct shape *s = &b->shapes[b->nshapes++];

	s->nest = nest;
	s->n = n;
	snprintf(s->path, sizeof(s->path), "%c%u/%c0", nest ? 'n' : 'c', n, nest ? 'n' : 'c');
}

/* Link I of shape S: its name and body. The last one leads to "../target" (relative, so the
 * tmpfs copy stays inside its directory); in a nesting each body goes on with "/.", so the
 * next link cannot take over its frame and every link nests one deeper. */
static void link_of(const struct shape *s, unsigned i, char *name, char *body, size_t size)
{
	char c = s->nest ? 'n' : 'c';

	snprintf(name, size, "%c%u", c, i);
	if (i + 1 == s->n)
		snprintf(body, size, "../target");
	else
		snprintf(body, size, "%c%u%s", c, i + 1, s->nest ? "/." : "");
}

static void build_memtree(struct bench *b)
{
	char name[32], body[32];

	b->m = mt_new();
	b->target = mt_dir(b->m, mt_root(b->m), "target");
	for (int i = 0; i < b->nshapes; i++) {
		const struct shape *s = &b->shapes[i];
		snprintf(name, sizeof(name), "%c%u", s->nest ? 'n' : 'c', s->n);
		uint64_t dir = mt_dir(b->m, mt_root(b->m), name);
		for (unsigned k = 0; k < s->n; k++) {
			link_of(s, k, name, body, sizeof(name));
			mt_link(b->m, dir, name, body);
		}
	}
}

/* The shapes the kernel can walk, as real symlinks under the tmpfs directory. */
static void build_tmpfs(struct bench *b)
{
	char dir[32], name[32], body[32], path[80];

	b->kfd = -1;
	if (!b->tmpfs)
		return;
	b->kfd = open(b->tmpfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (b->kfd < 0)
		die(b->tmpfs);
	if (mkdirat(b->kfd, "target", 0755) && errno != EEXIST)
		die("mkdir target");
	for (int i = 0; i < b->nshapes; i++) {
		const struct shape *s = &b->shapes[i];
		if (s->n > KERNEL_MAX)
			continue;
		snprintf(dir, sizeof(dir), "%c%u", s->nest ? 'n' : 'c', s->n);
		if (mkdirat(b->kfd, dir, 0755) && errno != EEXIST)
			die("mkdir");
		for (unsigned k = 0; k < s->n; k++) {
			link_of(s, k, name, body, sizeof(name));
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			if (symlinkat(body, b->kfd, path) && errno != EEXIST)
				die("symlink");
		}
	}
}

/* ---- the synthetic tree ----
 * Handles: 0 the root, 1 "target", 2 + i the directory of shape i, and (i + 1) << 32 | k the
 * k-th link of shape i. Lookups parse the name; nothing is hashed or chased. The tree
 * pointer is the bench itself. */

enum { SYN_ROOT = 0, SYN_TARGET = 1, SYN_DIRS = 2 };

static bool syn_number(const char *s, size_t len, unsigned *out)
{
	unsigned v = 0;

	if (len == 0 || len > 9)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return true;
}

static int syn_lookup(void *tree, uint64_t dir, const char *name, size_t len, uint64_t *out)
{
	struct bench *b = tree;
	unsigned v;

	if (len < 2 || (name[0] != 'c' && name[0] != 'n'))
		return len == 6 && dir == SYN_ROOT && !memcmp(name, "target", 6)
			   ? (*out = SYN_TARGET, 0)
			   : -ENOENT;
	if (!syn_number(name + 1, len - 1, &v))
		return -ENOENT;
	bool nest = name[0] == 'n';
	if (dir == SYN_ROOT) {
		for (int i = 0; i < b->nshapes; i++)
			if (b->shapes[i].nest == nest && b->shapes[i].n == v)
				return *out = SYN_DIRS + (uint64_t)i, 0;
		return -ENOENT;
	}
	if (dir < SYN_DIRS || dir >= SYN_DIRS + (uint64_t)b->nshapes)
		return -ENOENT;
	const struct shape *s = &b->shapes[dir - SYN_DIRS];
	if (s->nest != nest || v >= s->n)
		return -ENOENT;
	*out = (dir - SYN_DIRS + 1) << 32 | v;
	return 0;
}

static enum rs_kind syn_kind(void *tree, uint64_t node)
{
	return node >> 32 ? RS_LINK : RS_DIR;
}

static int syn_readlink(void *tree, uint64_t link, const char **target, size_t *len)
{
	struct bench *b = tree;
	const struct synth *sy = &b->synth[(link >> 32) - 1];
	uint32_t k = (uint32_t)link;

	*target = sy->bodies + sy->off[k];
	*len = sy->off[k + 1] - sy->off[k];
	return 0;
}

static uint64_t syn_parent(void *tree, uint64_t dir)
{
	return SYN_ROOT;
}

static const struct rs_tree_ops syn_ops = {
    .lookup = syn_lookup,
    .kind = syn_kind,
    .readlink = syn_readlink,
    .parent = syn_parent,
};

static void build_synth(struct bench *b)
{
	char name[32], body[32];

	for (int i = 0; i < b->nshapes; i++) {
		const struct shape *s = &b->shapes[i];
		struct synth *sy = &b->synth[i];
		size_t len = 0;
		sy->off = malloc((s->n + 1) * sizeof(*sy->off));
		sy->bodies = malloc((size_t)s->n * 16);
		if (!sy->off || !sy->bodies)
			die("malloc");
		for (unsigned k = 0; k < s->n; k++) {
			link_of(s, k, name, body, sizeof(name));
			sy->off[k] = len;
			memcpy(sy->bodies + len, body, strlen(body));
			len += strlen(body);
		}
		sy->off[s->n] = len;
	}
}

static void free_synth(struct bench *b)
{
	for (int i = 0; i < b->nshapes; i++) {
		free(b->synth[i].bodies);
		free(b->synth[i].off);
	}
}

/* ---- one walk per contender ---- */

static int walk(struct bench *b, enum contender c, const struct shape *s, struct rs_result *res)
{
	struct rs_ctx ctx = mt_ctx(b->m);
	struct stat st;

	ctx.limits = (struct rs_limits){RS_LIMIT_MAX, RS_LIMIT_MAX};
	switch (c) {
	case RS:
		return rs_resolve(&ctx, mt_root(b->m), s->path, RS_FOLLOW, res);
	case REF:
		return ref_resolve(&ctx, mt_root(b->m), s->path, RS_FOLLOW, res);
	case SYNTH:
		ctx.ops = &syn_ops;
		ctx.tree = b;
		ctx.root = SYN_ROOT;
		return rs_resolve(&ctx, SYN_ROOT, s->path, RS_FOLLOW, res);
	default:
		*res = (struct rs_result){.links = s->n};
		return fstatat(b->kfd, s->path, &st, 0) ? -errno : 0;
	}
}

/* One walk checked: right node, right number of links. */
static void check_walk(struct bench *b, enum contender c, const struct shape *s)
{
	struct rs_result res;
	struct stat st, want;
	int err = walk(b, c, s, &res);

	if (c == KERNEL && !err) {
		fstatat(b->kfd, s->path, &st, 0);
		fstatat(b->kfd, "target", &want, 0);
		if (st.st_ino != want.st_ino)
			err = -EIO;
	} else if (!err &&
		   (res.node != (c == SYNTH ? SYN_TARGET : b->target) || res.links != s->n)) {
		err = -EIO;
	}
	if (err) {
		fprintf(stderr, "bench_resolver: %s on %s: %s\n", contender_names[c], s->path,
			strerror(-err));
		exit(1);
	}
}

/* ---- the reference's stack ---- */

struct probe {
	struct bench *b;
	struct shape s;
};

static void *probe_thread(void *arg)
{
	struct probe *p = arg;

	check_walk(p->b, REF, &p->s);
	return NULL;
}

/* Bytes of C stack per link the recursive reference needs, measured on a painted stack. */
static double measure_ref_stack(struct bench *b)
{
	size_t size = 64 << 20;
	unsigned char *stack = aligned_alloc(4096, size);
	struct probe p = {b, {0}};
	pthread_attr_t attr;
	pthread_t th;
	size_t low = 0;

	for (int i = 0; i < b->nshapes; i++)
		if (!b->shapes[i].nest && b->shapes[i].n == PROBE_LINKS)
			p.s = b->shapes[i];
	if (!stack || p.s.n != PROBE_LINKS)
		return 0;
	memset(stack, PAINT, size);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, size);
	if (pthread_create(&th, &attr, probe_thread, &p))
		die("pthread_create");
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	while (low < size && stack[low] == PAINT)
		low++;
	free(stack);
	return (double)(size - low) / PROBE_LINKS;
}

/* ---- measuring ---- */

static const char *why_skip(struct bench *b, enum contender c, const struct shape *s)
{
	if (c == KERNEL && b->kfd < 0)
		return "no tmpfs";
	if (c == KERNEL && s->n > KERNEL_MAX)
		return "over 40 (ELOOP)";
	/* 2x margin over the measured need; the bench thread's stack is BENCH_STACK */
	if (c == REF && (b->ref_stack_per_link == 0 ||
			 2 * b->ref_stack_per_link * s->n > (double)BENCH_STACK / 2))
		return "stack overflow";
	return NULL;
}

static double time_walks(struct bench *b, enum contender c, const struct shape *s, long walks)
{
	struct rs_result res;
	double t0 = cpu_ns();

	for (long i = 0; i < walks; i++)
		walk(b, c, s, &res);
	return cpu_ns() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double tmp[MAX_RUNS];

	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

/* How many walks make one measurement of about target_ns, from a timed batch. */
static long calibrate(struct bench *b, enum contender c, const struct shape *s)
{
	long walks = 1;
	double t;

	while ((t = time_walks(b, c, s, walks)) < 1e6 && walks < (1L << 30))
		walks *= 4;
	double n = b->target_ns * walks / (t > 0 ? t : 1);
	return n < 1 ? 1 : (long)n;
}

static void measure_shape(struct bench *b, int si)
{
	const struct shape *s = &b->shapes[si];
	struct result *r = b->res[si];
	long walks[NCONTENDERS] = {0};

	for (int c = 0; c < NCONTENDERS; c++) {
		r[c].skip = why_skip(b, c, s);
		if (!r[c].skip) {
			struct rs_result res;
			check_walk(b, c, s);
			walk(b, c, s, &res);
			r[c].allocs = res.allocs;
			walks[c] = calibrate(b, c, s);
		}
	}
	for (int run = 0; run < b->runs; run++)
		for (int k = 0; k < NCONTENDERS; k++) {
			int c = (run + k) % NCONTENDERS; /* rotate who goes first */
			if (!r[c].skip)
				r[c].ns_link[run] =
				    time_walks(b, c, s, walks[c]) / ((double)walks[c] * s->n);
		}
	for (int c = 0; c < NCONTENDERS; c++) {
		double ratio[MAX_RUNS];
		if (r[c].skip)
			continue;
		r[c].done = true;
		r[c].median = median(r[c].ns_link, b->runs);
		for (int run = 0; run < b->runs; run++)
			ratio[run] = r[c].ns_link[run] / r[RS].ns_link[run];
		r[c].paired = median(ratio, b->runs);
	}
	fprintf(stderr, "  %-5s %8u: rs %7.2f  ref %7.2f  kernel %7.2f  synth %7.2f ns/link\n",
		s->nest ? "nest" : "chain", s->n, r[RS].median, r[REF].done ? r[REF].median : 0,
		r[KERNEL].done ? r[KERNEL].median : 0, r[SYNTH].median);
}

/* ---- reporting ---- */

static void write_csv(struct bench *b)
{
	FILE *f = fopen(b->csv, "w");

	if (!f)
		die(b->csv);
	fprintf(f, "shape,links,contender,ns_per_link,ns_per_walk,ratio_to_rs,allocs_per_walk,"
		   "runs,note\n");
	for (int i = 0; i < b->nshapes; i++)
		for (int c = 0; c < NCONTENDERS; c++) {
			const struct shape *s = &b->shapes[i];
			const struct result *r = &b->res[i][c];
			if (r->done)
				fprintf(f, "%s,%u,%s,%.3f,%.1f,%.3f,%u,%d,\n",
					s->nest ? "nest" : "chain", s->n, contender_names[c],
					r->median, r->median * s->n, r->paired,
					c == KERNEL ? 0 : r->allocs, b->runs);
			else
				fprintf(f, "%s,%u,%s,,,,,,%s\n", s->nest ? "nest" : "chain", s->n,
					contender_names[c], r->skip);
		}
	fclose(f);
}

static void cell(FILE *f, const struct result *r, const char *fmt, double v)
{
	if (r->done)
		fprintf(f, fmt, v);
	else
		fprintf(f, " %s |", r->skip);
}

/* Contender C's cost per link at the largest size over its cost per link at 40. */
static double flatness(struct bench *b, enum contender c, bool nest, unsigned *largest)
{
	double at40 = 0, at_max = 0;

	*largest = 0;
	for (int i = 0; i < b->nshapes; i++) {
		const struct shape *s = &b->shapes[i];
		if (s->nest != nest)
			continue;
		if (s->n == 40)
			at40 = b->res[i][c].median;
		if (s->n >= *largest) {
			*largest = s->n;
			at_max = b->res[i][c].median;
		}
	}
	return at40 > 0 ? at_max / at40 : 0;
}

static void write_md(struct bench *b)
{
	FILE *f = fopen(b->md, "w");
	struct utsname u;
	char cpu[128] = "?";
	FILE *ci = fopen("/proc/cpuinfo", "r");
	char line[256];

	if (!f)
		die(b->md);
	while (ci && fgets(line, sizeof(line), ci))
		if (strncmp(line, "model name", 10) == 0) {
			snprintf(cpu, sizeof(cpu), "%s", strchr(line, ':') + 2);
			cpu[strcspn(cpu, "\n")] = '\0';
			break;
		}
	if (ci)
		fclose(ci);
	uname(&u);
	fprintf(f, "# bench/resolver: ns per link%s\n\n",
		b->quick ? " (BENCH_QUICK smoke run)" : "");
	fprintf(
	    f,
	    "%ld vCPU %s, %s %s. Thread CPU time (user + system), median of %d rounds, "
	    "contenders interleaved in rotating order. \"x rs\": median over rounds of "
	    "(contender / rs_resolve) in the same round. Kernel: stat() of the same chain "
	    "on tmpfs (%s). Reference: recursive, measured at %.0f bytes of C stack per link.\n\n",
	    sysconf(_SC_NPROCESSORS_ONLN), cpu, u.sysname, u.release, b->runs,
	    b->tmpfs ? b->tmpfs : "not run", b->ref_stack_per_link);
	fprintf(f, "| shape | links | rs_resolve ns/link | reference ns/link | reference x rs | "
		   "kernel stat ns/link | kernel x rs | rs on synthetic tree ns/link | "
		   "rs allocs/walk |\n");
	fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < b->nshapes; i++) {
		const struct shape *s = &b->shapes[i];
		const struct result *r = b->res[i];
		fprintf(f, "| %s | %u |", s->nest ? "nest" : "chain", s->n);
		cell(f, &r[RS], " %.2f |", r[RS].median);
		cell(f, &r[REF], " %.2f |", r[REF].median);
		cell(f, &r[REF], " %.2f |", r[REF].paired);
		cell(f, &r[KERNEL], " %.2f |", r[KERNEL].median);
		cell(f, &r[KERNEL], " %.2f |", r[KERNEL].paired);
		cell(f, &r[SYNTH], " %.2f |", r[SYNTH].median);
		fprintf(f, " %u |\n", r[RS].allocs);
	}
	fprintf(f, "\nGoal 1, cost per link flat from 40 to the largest size (within 1.5x):\n");
	static const enum contender flat[] = {RS, SYNTH};
	for (size_t i = 0; i < sizeof(flat) / sizeof(flat[0]); i++) {
		enum contender c = flat[i];
		unsigned big_chain, big_nest;
		double fc = flatness(b, c, false, &big_chain), fn = flatness(b, c, true, &big_nest);
		fprintf(f,
			"- %s: chain %u / chain 40 = %.2fx (%s), nest %u / nest 40 = %.2fx (%s)\n",
			c == RS ? "rs_resolve on memtree" : "rs_resolve on the synthetic tree",
			big_chain, fc, fc && fc <= 1.5 ? "met" : "NOT met", big_nest, fn,
			fn && fn <= 1.5 ? "met" : "NOT met");
	}
	int faster = 0, compared = 0;
	for (int i = 0; i < b->nshapes; i++)
		if (b->res[i][KERNEL].done) {
			compared++;
			faster += b->res[i][KERNEL].paired > 1;
		}
	fprintf(f,
		"\nGoal 2, faster per link than the kernel's stat() on tmpfs: %d of %d sizes "
		"(%s).\n",
		faster, compared, compared && faster == compared ? "met" : "NOT met");
	fclose(f);
}

/* ---- main ---- */

static void *bench_main(void *arg)
{
	struct bench *b = arg;
	static const unsigned chains[] = {1, 8, 40, 1000, 10000, 100000, 1000000};
	static const unsigned nests[] = {2, 8, 40, 1000, 10000};

	for (size_t i = 0; i < sizeof(chains) / sizeof(chains[0]); i++)
		add_shape(b, false, chains[i]);
	for (size_t i = 0; i < sizeof(nests) / sizeof(nests[0]); i++)
		add_shape(b, true, nests[i]);
	build_memtree(b);
	build_synth(b);
	build_tmpfs(b);
	b->ref_stack_per_link = measure_ref_stack(b);
	fprintf(stderr,
		"bench_resolver: %d rounds of ~%.0f ms per contender and shape; reference "
		"uses %.0f B of stack per link\n",
		b->runs, b->target_ns / 1e6, b->ref_stack_per_link);
	for (int i = 0; i < b->nshapes; i++)
		measure_shape(b, i);
	write_csv(b);
	write_md(b);
	if (b->kfd >= 0)
		close(b->kfd);
	mt_free(b->m);
	free_synth(b);
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench b = {.runs = 11, .target_ns = 30e6};
	pthread_attr_t attr;
	pthread_t th;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			b.quick = true;
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			b.runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--tmpfs") && i + 1 < argc)
			b.tmpfs = argv[++i];
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			b.csv = argv[++i];
		else if (!strcmp(argv[i], "--md") && i + 1 < argc)
			b.md = argv[++i];
		else {
			fprintf(stderr,
				"usage: %s [--quick] [--runs N] [--tmpfs DIR] --csv FILE "
				"--md FILE\n",
				argv[0]);
			return 2;
		}
	}
	if (!b.csv || !b.md || b.runs < 1 || b.runs > MAX_RUNS)
		return fprintf(stderr, "%s: need --csv and --md, 1..%d runs\n", argv[0], MAX_RUNS),
		       2;
	if (b.quick)
		b.target_ns = 2e6;
	pthread_attr_init(&attr);
	if (pthread_attr_setstacksize(&attr, BENCH_STACK))
		die("pthread_attr_setstacksize");
	if (pthread_create(&th, &attr, bench_main, &b))
		die("pthread_create (a 4 GiB stack)");
	pthread_join(th, NULL);
	return b.exit_code;
}
