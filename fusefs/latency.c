#include "latency.h"

#include <time.h>

uint64_t cfs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned cfs_bucket_of(uint64_t ns)
{
	return ns ? 64u - (unsigned)__builtin_clzll(ns) : 0u; /* 1 -> 1, 2..3 -> 2, ... */
}

void cfs_hist_add(struct cfs_hist *h, uint64_t ns)
{
	unsigned i = cfs_bucket_of(ns);

	h->bucket[i < CFS_HIST_BUCKETS ? i : CFS_HIST_BUCKETS - 1]++;
	h->count++;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

uint64_t cfs_hist_quantile(const struct cfs_hist *h, double q)
{
	double rank = q * (double)h->count;
	uint64_t want = (uint64_t)rank, seen = 0;

	if (!h->count)
		return 0;
	if ((double)want < rank || want < 1) /* the rank, rounded up */
		want++;
	for (unsigned i = 0; i < CFS_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= want) {
			uint64_t top = i ? (1ull << i) - 1 : 0;
			return top < h->max_ns ? top : h->max_ns;
		}
	}
	return h->max_ns;
}

void cfs_hist_json(JsonBuilder *b, const char *name, const struct cfs_hist *h)
{
	int last = -1;

	json_builder_set_member_name(b, name);
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "count");
	json_builder_add_int_value(b, (gint64)h->count);
	json_builder_set_member_name(b, "p50_ns");
	json_builder_add_int_value(b, (gint64)cfs_hist_quantile(h, 0.5));
	json_builder_set_member_name(b, "p99_ns");
	json_builder_add_int_value(b, (gint64)cfs_hist_quantile(h, 0.99));
	json_builder_set_member_name(b, "max_ns");
	json_builder_add_int_value(b, (gint64)h->max_ns);
	for (int i = 0; i < CFS_HIST_BUCKETS; i++)
		if (h->bucket[i])
			last = i;
	json_builder_set_member_name(b, "log2_buckets");
	json_builder_begin_array(b);
	for (int i = 0; i <= last; i++)
		json_builder_add_int_value(b, (gint64)h->bucket[i]);
	json_builder_end_array(b);
	json_builder_end_object(b);
}
