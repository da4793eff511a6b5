/*
 * rtt: the distribution of one FUSE round trip, for bench/transport.
 *
 *   rtt [-n CALLS] [-w WARMUP] [-H HISTFILE] FILE
 *
 * Opens FILE once and times CALLS (default 20000) back-to-back fstat() calls, each on its
 * own with clock_gettime(CLOCK_MONOTONIC), after WARMUP (default 1000) untimed ones. On a
 * chainfs mount made with `-o attr_timeout=0,entry_timeout=0` every fstat() is one GETATTR
 * round trip (the kernel never trusts a cached attribute), so the distribution is the
 * transport's: the wake-up of the daemon, its answer, the wake-up of the caller.
 *
 * stdout, one line, space-separated (ns):
 *
 *   calls  errors  p50  p90  p99  p99.9  max  mean
 *
 * The quantiles are exact (from the sorted samples). -H writes the histogram to HISTFILE:
 * one line per non-empty bucket, "lo_ns hi_ns count", with HIST_PER_DECADE log-spaced
 * buckets per decade from 100 ns to 1 s (samples outside go to the first or last bucket), so
 * that several runs can be summed into one CDF.
 *
 * Exit status: 0, 1 on a failed fstat() (counted in errors; the run goes on) or 2 on bad use.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
	DEFAULT_CALLS = 20000,
	DEFAULT_WARMUP = 1000,
	MAX_CALLS = 100000000,
	/* 50 per decade: steps of 4.7%, fine enough for a smooth CDF on a log axis */
	HIST_PER_DECADE = 50,
	HIST_DECADES = 7, /* 100 ns .. 1 s */
	HIST_BUCKETS = HIST_PER_DECADE * HIST_DECADES,
};
static const double HIST_LO_NS = 100.0;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The q-quantile of n sorted samples (nearest rank). */
static uint64_t quantile(const uint64_t *v, size_t n, double q)
{
	size_t k = (size_t)ceil(q * (double)n);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static double bucket_lo(int i)
{
	return HIST_LO_NS * pow(10.0, (double)i / HIST_PER_DECADE);
}

static int bucket_of(uint64_t ns)
{
	double x = (double)ns;
	int i;

	if (x < HIST_LO_NS)
		return 0;
	i = (int)floor(log10(x / HIST_LO_NS) * HIST_PER_DECADE);
	return i >= HIST_BUCKETS ? HIST_BUCKETS - 1 : i;
}

static int write_hist(const char *path, const uint64_t *v, size_t n)
{
	unsigned long long count[HIST_BUCKETS] = {0};
	FILE *f;
	size_t j;
	int i;

	for (j = 0; j < n; j++)
		count[bucket_of(v[j])]++;
	f = fopen(path, "we");
	if (!f)
		return -errno;
	for (i = 0; i < HIST_BUCKETS; i++) {
		if (count[i])
			fprintf(f, "%.0f %.0f %llu\n", bucket_lo(i), bucket_lo(i + 1), count[i]);
	}
	if (fclose(f) != 0)
		return -errno;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: rtt [-n CALLS] [-w WARMUP] [-H HISTFILE] FILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long calls = DEFAULT_CALLS, warmup = DEFAULT_WARMUP;
	const char *hist = NULL;
	unsigned long errors = 0;
	uint64_t *v, sum = 0;
	struct stat st;
	size_t n, j;
	int opt, fd;

	while ((opt = getopt(argc, argv, "n:w:H:")) != -1) {
		switch (opt) {
		case 'n':
			calls = strtol(optarg, NULL, 10);
			break;
		case 'w':
			warmup = strtol(optarg, NULL, 10);
			break;
		case 'H':
			hist = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || calls < 1 || calls > MAX_CALLS || warmup < 0)
		usage();
	n = (size_t)calls;
	v = malloc(n * sizeof(*v));
	if (!v) {
		fprintf(stderr, "rtt: out of memory for %zu samples\n", n);
		return 2;
	}
	fd = open(argv[optind], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "rtt: %s: %s\n", argv[optind], strerror(errno));
		free(v);
		return 2;
	}
	for (j = 0; j < (size_t)warmup; j++)
		errors += fstat(fd, &st) != 0;
	for (j = 0; j < n; j++) {
		uint64_t t0 = now_ns();

		errors += fstat(fd, &st) != 0;
		v[j] = now_ns() - t0;
		sum += v[j];
	}
	close(fd);

	if (hist) {
		int err = write_hist(hist, v, n);

		if (err) {
			fprintf(stderr, "rtt: %s: %s\n", hist, strerror(-err));
			free(v);
			return 2;
		}
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("%zu %lu %llu %llu %llu %llu %llu %llu\n", n, errors,
	       (unsigned long long)quantile(v, n, 0.50), (unsigned long long)quantile(v, n, 0.90),
	       (unsigned long long)quantile(v, n, 0.99), (unsigned long long)quantile(v, n, 0.999),
	       (unsigned long long)v[n - 1], (unsigned long long)(sum / n));
	free(v);
	return errors ? 1 : 0;
}
