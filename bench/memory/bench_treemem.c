/*
 * bench_treemem SPEC: load SPEC into a tree in this process (as the daemon does before it
 * mounts) and print the tree's own accounting next to what the process holds:
 *
 *   nodes dirs files links tree_bytes data_bytes load_ns rss_before_kb rss_after_kb hwm_kb
 *
 * tree_bytes: cfs_tree_stats().bytes, the memory the tree says it holds (arrays, arenas,
 * hashes, file data). rss_*: VmRSS of this process before and after the load; hwm_kb: VmHWM
 * (the peak, which includes the growth of arrays that are copied when they double).
 */
#include "spec.h"
#include "tree.h"

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

int main(int argc, char **argv)
{
	struct cfs_spec_defaults def = {getuid(), getgid(), true, {CFS_DEFAULT_TREE_TIME, 0}};
	struct cfs_tree_stats st;
	struct timespec t0, t1;
	struct cfs_tree *t;
	char *err = NULL;
	long rss0;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: bench_treemem SPEC\n");
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
