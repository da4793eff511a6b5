/*
 * bench_poll: N pipes, one made ready per iteration (a byte written), one wait, the callback
 * reads the byte. Contenders: pollcore, libev with EVBACKEND_POLL, libev with EVBACKEND_EPOLL,
 * and a naive loop that mallocs and fills a pollfd array on every wait.
 *
 * Time (default): for each N, RUNS rounds; each round measures every contender once, the order
 * rotating from round to round so that no contender always runs first or last on a noisy
 * machine. Time is the thread's CPU time (see measure()). Reported: median, min and max ns per
 * iteration over the rounds, and the paired
 * ratio: the median over rounds of (this contender / pollcore) measured in the same round.
 *
 * Instructions (--instr, under valgrind --tool=callgrind --instr-atstart=no): each contender
 * runs a whole number of rounds over the N pipes with instrumentation on, then dumps its
 * counts under a label that run.sh parses. Setup and warm-up are never counted.
 *
 * The ready pipe is picked by an odd stride modulo N: over N iterations every pipe is made
 * ready once (N is a power of two), scattered over the table as real traffic would be.
 */
#include "pc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <ev.h>
#pragma GCC diagnostic pop

enum {
	MAX_NS = 32,	     /* N values on the command line */
	MAX_RUNS = 101,	     /* rounds */
	CAL_ITERS = 64,	     /* iterations timed to size a measurement */
	MIN_ITERS = 64,	     /* fewest iterations in a measurement */
	MAX_ITERS = 1000000, /* most */
};

static const uint32_t STRIDE = 0x9E3779B1u; /* odd: a permutation of 0..N-1 for N = 2^k */

/* The pipes of one N, shared by the contenders (each watches them only while measured). */
struct bench {
	int n;
	int (*fd)[2];
	uint64_t reads; /* bytes read by callbacks */
};

static void die(const char *what)
{
	fprintf(stderr, "bench_poll: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Every callback of every contender does this and nothing else. */
static void consume(struct bench *b, int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)
		die("read");
	b->reads++;
}

/* ---- pollcore ---- */

struct pc_state {
	struct pc_loop loop;
};

static void pc_read_cb(struct pc_loop *loop, int fd, int revents, void *data)
{
	consume(data, fd);
}

static void *pc_setup(struct bench *b)
{
	struct pc_state *s = malloc(sizeof(*s));

	if (!s || pc_loop_init(&s->loop, NULL) < 0)
		die("pollcore init");
	for (int i = 0; i < b->n; i++)
		if (pc_io_add(&s->loop, b->fd[i][0], POLLIN, pc_read_cb, b) < 0)
			die("pc_io_add");
	return s;
}

static void pc_wait_once(void *state)
{
	struct pc_state *s = state;

	if (pc_run_once(&s->loop, -1) < 0)
		die("pc_run_once");
}

static void pc_teardown(void *state)
{
	struct pc_state *s = state;

	pc_loop_destroy(&s->loop);
	free(s);
}

/* ---- libev ---- */

struct ev_state {
	struct ev_loop *loop;
	ev_io *w;
};

static void ev_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	consume(w->data, w->fd);
}

static void *ev_setup(struct bench *b, unsigned backend)
{
	struct ev_state *s = malloc(sizeof(*s));

	if (!s)
		die("malloc");
	s->loop = ev_loop_new(backend | EVFLAG_NOENV);
	if (!s->loop || ev_backend(s->loop) != backend) {
		fprintf(stderr, "bench_poll: libev backend %#x unavailable\n", backend);
		exit(1);
	}
	s->w = calloc((size_t)b->n, sizeof(*s->w));
	if (!s->w)
		die("calloc");
	for (int i = 0; i < b->n; i++) {
		ev_io_init(&s->w[i], ev_read_cb, b->fd[i][0], EV_READ);
		s->w[i].data = b;
		ev_io_start(s->loop, &s->w[i]);
	}
	ev_run(s->loop, EVRUN_NOWAIT); /* libev applies fd changes lazily: do it now */
	return s;
}

static void *ev_poll_setup(struct bench *b)
{
	return ev_setup(b, EVBACKEND_POLL);
}

static void *ev_epoll_setup(struct bench *b)
{
	return ev_setup(b, EVBACKEND_EPOLL);
}

static void ev_wait_once(void *state)
{
	struct ev_state *s = state;

	ev_run(s->loop, EVRUN_ONCE);
}

static void ev_teardown(void *state)
{
	struct ev_state *s = state;

	ev_loop_destroy(s->loop);
	free(s->w);
	free(s);
}

/* ---- naive: what a loop without a kept table does ---- */

struct naive_watcher {
	int fd;
	void (*cb)(struct bench *b, int fd);
};

struct naive_state {
	struct bench *b;
	struct naive_watcher *w;
};

static void *naive_setup(struct bench *b)
{
	struct naive_state *s = malloc(sizeof(*s));

	if (!s)
		die("malloc");
	s->b = b;
	s->w = calloc((size_t)b->n, sizeof(*s->w));
	if (!s->w)
		die("calloc");
	for (int i = 0; i < b->n; i++)
		s->w[i] = (struct naive_watcher){.fd = b->fd[i][0], .cb = consume};
	return s;
}

static void naive_wait_once(void *state)
{
	struct naive_state *s = state;
	int n = s->b->n, ready;
	struct pollfd *p = malloc((size_t)n * sizeof(*p));

	if (!p)
		die("malloc");
	for (int i = 0; i < n; i++)
		p[i] = (struct pollfd){.fd = s->w[i].fd, .events = POLLIN};
	ready = poll(p, (nfds_t)n, -1);
	if (ready < 0)
		die("poll");
	for (int i = 0; i < n && ready > 0; i++) {
		if (!p[i].revents)
			continue;
		ready--;
		s->w[i].cb(s->b, p[i].fd);
	}
	free(p);
}

static void naive_teardown(void *state)
{
	struct naive_state *s = state;

	free(s->w);
	free(s);
}

/* ---- the driver ---- */

struct contender {
	const char *name;
	void *(*setup)(struct bench *b);
	void (*wait_once)(void *state);
	void (*teardown)(void *state);
};

static const struct contender contenders[] = {
    {"pollcore", pc_setup, pc_wait_once, pc_teardown},
    {"libev-poll", ev_poll_setup, ev_wait_once, ev_teardown},
    {"libev-epoll", ev_epoll_setup, ev_wait_once, ev_teardown},
    {"naive", naive_setup, naive_wait_once, naive_teardown},
};
enum { N_CONTENDERS = sizeof(contenders) / sizeof(contenders[0]) };

/* The measured loop: identical for every contender, one indirect call to its wait. */
static void iterate(const struct contender *c, void *state, struct bench *b, long iters)
{
	uint64_t want = b->reads + (uint64_t)iters;

	for (long k = 0; k < iters; k++) {
		int i = (int)(((uint32_t)k * STRIDE) % (uint32_t)b->n);

		if (write(b->fd[i][1], "x", 1) != 1)
			die("write");
		c->wait_once(state);
	}
	if (b->reads != want) {
		fprintf(stderr, "bench_poll: %s read %llu bytes, expected %llu\n", c->name,
			(unsigned long long)b->reads, (unsigned long long)want);
		exit(1);
	}
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

struct sample {
	double cpu_ns;	/* per iteration: this thread's user + kernel time */
	double wall_ns; /* per iteration: elapsed */
};

/*
 * ITERS iterations after a warm-up; setup and teardown untimed. The loop never sleeps (the
 * byte is written before each wait), so its CPU time is its wall time minus the time other
 * tenants of this shared machine held the CPU: CPU time is what the results use, wall time is
 * kept in the raw rounds.
 */
static struct sample measure(const struct contender *c, struct bench *b, long iters)
{
	void *state = c->setup(b);
	uint64_t cpu0, wall0;
	struct sample s;

	iterate(c, state, b, CAL_ITERS / 4);
	wall0 = now_ns();
	cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	iterate(c, state, b, iters);
	s.cpu_ns = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / (double)iters;
	s.wall_ns = (double)(now_ns() - wall0) / (double)iters;
	c->teardown(state);
	return s;
}

static long iters_for(double ns_per_iter, double target_ms)
{
	double iters = target_ms * 1e6 / (ns_per_iter > 1 ? ns_per_iter : 1);

	if (iters < MIN_ITERS)
		return MIN_ITERS;
	return iters > MAX_ITERS ? MAX_ITERS : (long)iters;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void open_pipes(struct bench *b, int n)
{
	b->n = n;
	b->reads = 0;
	b->fd = calloc((size_t)n, sizeof(*b->fd));
	if (!b->fd)
		die("calloc");
	for (int i = 0; i < n; i++)
		if (pipe2(b->fd[i], O_NONBLOCK | O_CLOEXEC) < 0)
			die("pipe2");
}

static void close_pipes(struct bench *b)
{
	for (int i = 0; i < b->n; i++) {
		close(b->fd[i][0]);
		close(b->fd[i][1]);
	}
	free(b->fd);
}

struct options {
	int ns[MAX_NS];
	int n_ns;
	int runs;
	double target_ms;
	long instr_iters;
	bool instr;
	const char *csv;
	const char *raw;
};

/* One N in time mode: calibrate each contender, then RUNS interleaved rounds. */
static void time_one_n(const struct options *o, int n, FILE *csv, FILE *raw)
{
	static double ns[N_CONTENDERS][MAX_RUNS];
	long iters[N_CONTENDERS];
	struct bench b;
	uint64_t t0 = now_ns();

	open_pipes(&b, n);
	for (int c = 0; c < N_CONTENDERS; c++)
		iters[c] = iters_for(measure(&contenders[c], &b, CAL_ITERS).wall_ns, o->target_ms);
	for (int r = 0; r < o->runs; r++) {
		for (int k = 0; k < N_CONTENDERS; k++) {
			int c = (k + r) % N_CONTENDERS;
			struct sample t = measure(&contenders[c], &b, iters[c]);

			ns[c][r] = t.cpu_ns;
			fprintf(raw, "%d,%s,%d,%ld,%.1f,%.1f\n", n, contenders[c].name, r, iters[c],
				t.cpu_ns, t.wall_ns);
		}
	}
	fprintf(stderr, "poll: N=%-5d", n);
	for (int c = 0; c < N_CONTENDERS; c++) {
		double ratio[MAX_RUNS], lo, hi, med, paired;

		/* Paired: this contender against pollcore within each round, so that a machine
		 * getting slower or faster between rounds cancels out. */
		for (int r = 0; r < o->runs; r++)
			ratio[r] = ns[c][r] / ns[0][r];
		paired = median(ratio, o->runs);
		med = median(ns[c], o->runs); /* sorts: after the ratios */
		lo = ns[c][0];
		hi = ns[c][o->runs - 1];
		fprintf(csv, "%d,%s,%d,%ld,%.1f,%.1f,%.1f,%.3f\n", n, contenders[c].name, o->runs,
			iters[c], med, lo, hi, paired);
		fprintf(stderr, "  %s %.0f ns (x%.2f)", contenders[c].name, med, paired);
	}
	fprintf(stderr, "  (%.1f s)\n", (double)(now_ns() - t0) / 1e9);
	fflush(csv);
	fflush(raw);
	close_pipes(&b);
}

/* One N in instruction mode: whole rounds over the pipes, only they instrumented. */
static void instr_one_n(const struct options *o, int n)
{
	long iters = (o->instr_iters + n - 1) / n * n;
	char label[128];
	struct bench b;

	open_pipes(&b, n);
	for (int c = 0; c < N_CONTENDERS; c++) {
		void *state = contenders[c].setup(&b);

		iterate(&contenders[c], state, &b, n > 64 ? n : 64);
		CALLGRIND_ZERO_STATS;
		CALLGRIND_START_INSTRUMENTATION;
		iterate(&contenders[c], state, &b, iters);
		CALLGRIND_STOP_INSTRUMENTATION;
		snprintf(label, sizeof(label), "pollbench n=%d contender=%s iters=%ld", n,
			 contenders[c].name, iters);
		CALLGRIND_DUMP_STATS_AT(label);
		contenders[c].teardown(state);
	}
	fprintf(stderr, "poll instr: N=%d done\n", n);
	close_pipes(&b);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_poll [--ns 1,2,4,...] [--runs R] [--target-ms T] [--csv FILE]\n"
		"                  [--raw FILE] | --instr [--ns ...] [--instr-iters K]\n");
	exit(2);
}

static void parse_ns(struct options *o, char *list)
{
	o->n_ns = 0;
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		int n = atoi(tok);

		if (n < 1 || (n & (n - 1)) || o->n_ns == MAX_NS)
			usage(); /* powers of two: the stride visits every pipe */
		o->ns[o->n_ns++] = n;
	}
}

static void parse(struct options *o, int argc, char **argv)
{
	static char default_ns[] = "1,2,4,8,16,32,64,256,1024,4096";

	*o = (struct options){.runs = 7, .target_ms = 20, .instr_iters = 1000};
	parse_ns(o, default_ns);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--instr")) {
			o->instr = true;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--ns"))
			parse_ns(o, v);
		else if (!strcmp(a, "--runs"))
			o->runs = atoi(v);
		else if (!strcmp(a, "--target-ms"))
			o->target_ms = atof(v);
		else if (!strcmp(a, "--instr-iters"))
			o->instr_iters = atol(v);
		else if (!strcmp(a, "--csv"))
			o->csv = v;
		else if (!strcmp(a, "--raw"))
			o->raw = v;
		else
			usage();
	}
	if (o->runs < 1 || o->runs > MAX_RUNS || o->target_ms <= 0 || o->instr_iters < 1)
		usage();
}

/* Two fds per pipe plus a few: raise the soft limit as far as the hard one allows. */
static int fd_budget(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("getrlimit");
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	return rl.rlim_cur > 1 << 20 ? 1 << 20 : (int)rl.rlim_cur;
}

static FILE *open_out(const char *path, const char *header)
{
	FILE *f = path ? fopen(path, "w") : fopen("/dev/null", "w");

	if (!f)
		die(path ? path : "/dev/null");
	fputs(header, f);
	return f;
}

int main(int argc, char **argv)
{
	struct options o;
	int budget = fd_budget();
	FILE *csv, *raw;

	parse(&o, argc, argv);
	if (o.instr) {
		for (int i = 0; i < o.n_ns; i++)
			if (2 * o.ns[i] + 16 <= budget)
				instr_one_n(&o, o.ns[i]);
		return 0;
	}
	csv = open_out(o.csv, "n,contender,runs,iters,median_ns,min_ns,max_ns,paired_ratio\n");
	raw = open_out(o.raw, "n,contender,run,iters,cpu_ns_per_iter,wall_ns_per_iter\n");
	for (int i = 0; i < o.n_ns; i++) {
		if (2 * o.ns[i] + 16 > budget) {
			fprintf(stderr, "poll: N=%d skipped: RLIMIT_NOFILE %d\n", o.ns[i], budget);
			continue;
		}
		time_one_n(&o, o.ns[i], csv, raw);
	}
	fclose(csv);
	fclose(raw);
	return 0;
}
