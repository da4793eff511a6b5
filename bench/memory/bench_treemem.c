/*
 * bench_treemem SPEC: load SPEC into a tree in this process (as the daemon does before it
 * mounts) and print the tree's own accounting next to what the process holds:
 *
 *   nodes dirs files links tree_bytes data_bytes load_ns rss_before_kb rss_after_kb hwm_kb
 *
 * tree_bytes: cfs_tree_stats().bytes, the memory the tree says it holds (arrays, arenas,
 * hashes, file data). rss_*: VmRSS of this process before and after the load; hwm_kb: VmHWM
 * (the peak, which includes the growth of arrays that are copied when they double).
 *
 * bench_treemem --pages N dense|sparse: memory per written 4 KiB page, written through
 * cfs_tree_write into an empty tree: N pages in one file back to back (dense), or 1 MiB apart
 * (sparse: each page in its own group). One layout per process, so the RSS of one is not
 * memory the other freed. Prints:
 *
 *   layout pages tree_bytes_per_page rss_bytes_per_page write_ns_per_page
 */
#include "spec.h"
#include "tree.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long status_kb(const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int pages_case(const char *layout, long n, uint64_t stride)
{
	static char page[4096];
	struct cfs_new a = {0644, getuid(), getgid()};
	struct cfs_tree_stats s0, s1;
	struct timespec t0, t1;
	struct cfs_tree *t = cfs_tree_new(NULL);
	uint32_t id;
	long rss0;

	if (!t || cfs_tree_mkfile(t, CFS_ROOT, "f", 1, &a, &id)) {
		fprintf(stderr, "bench_treemem: out of memory\n");
		return 1;
	}
	memset(page, 'p', sizeof(page));
	cfs_tree_stats(t, &s0);
	rss0 = status_kb("VmRSS");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		if (cfs_tree_write(t, id, page, sizeof(page), (off_t)((uint64_t)i * stride)) !=
		    (ssize_t)sizeof(page)) {
			fprintf(stderr, "bench_treemem: write %ld failed\n", i);
			cfs_tree_free(t);
			return 1;
		}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cfs_tree_stats(t, &s1);
	printf("%s %ld %.1f %.1f %.0f\n", layout, n, (double)(s1.bytes - s0.bytes) / (double)n,
	       (double)(status_kb("VmRSS") - rss0) * 1024.0 / (double)n,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		   (double)n);
	cfs_tree_free(t);
	return 0;
}

int main(int argc, char **argv)
{
	struct cfs_spec_defaults def = {getuid(), getgid(), true, {CFS_DEFAULT_TREE_TIME, 0}};
	struct cfs_tree_stats st;
	struct timespec t0, t1;
	struct cfs_tree *t;
	char *err = NULL;
	long rss0;
	int rc;

	if (argc == 4 && strcmp(argv[1], "--pages") == 0) {
		long n = strtol(argv[2], NULL, 10);
		bool dense = strcmp(argv[3], "dense") == 0;
		if (n <= 0 || (!dense && strcmp(argv[3], "sparse") != 0))
			return 2;
		return pages_case(argv[3], n, dense ? 4096 : 1 << 20);
	}
	if (argc != 2) {
		fprintf(stderr, "usage: bench_treemem SPEC | --pages N dense|sparse\n");
		return 2;
	}
	rss0 = status_kb("VmRSS");
	t = cfs_tree_new(NULL);
	if (!t) {
		fprintf(stderr, "bench_treemem: out of memory\n");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = cfs_spec_load_file(t, argv[1], &def, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc) {
		fprintf(stderr, "bench_treemem: %s\n", err ? err : "load failed");
		free(err);
		cfs_tree_free(t);
		return 1;
	}
	cfs_tree_stats(t, &st);
	printf("%llu %llu %llu %llu %llu %llu %lld %ld %ld %ld\n", (unsigned long long)st.nodes,
	       (unsigned long long)st.dirs, (unsigned long long)st.files,
	       (unsigned long long)st.links, (unsigned long long)st.bytes,
	       (unsigned long long)st.data_bytes,
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec), rss0,
	       status_kb("VmRSS"), status_kb("VmHWM"));
	cfs_tree_free(t);
	return 0;
}
