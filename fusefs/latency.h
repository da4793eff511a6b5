/*
 * Latency histograms for `stats`: fixed memory and no allocation, so one can sit on every
 * request's path. Bucket 0 holds 0 ns, bucket i (1..63) durations in [2^(i-1), 2^i) ns.
 */
#ifndef CHAINFS_LATENCY_H
#define CHAINFS_LATENCY_H

#include <json-glib/json-glib.h>
#include <stdint.h>

enum { CFS_HIST_BUCKETS = 64 };

struct cfs_hist {
	uint64_t count, max_ns;
	uint64_t bucket[CFS_HIST_BUCKETS];
};

/* CLOCK_MONOTONIC in ns (a vDSO call: tens of ns). */
uint64_t cfs_now_ns(void);
void cfs_hist_add(struct cfs_hist *h, uint64_t ns);
/* The Q-quantile (0 < Q <= 1) as the upper end of its bucket, at most max_ns: never below
 * the true value, at most twice it. 0 for an empty histogram. */
uint64_t cfs_hist_quantile(const struct cfs_hist *h, double q);
/* {"count", "p50_ns", "p99_ns", "max_ns", "log2_buckets": [...up to the last non-empty]}
 * as member NAME of the object B is building. */
void cfs_hist_json(JsonBuilder *b, const char *name, const struct cfs_hist *h);

#endif
