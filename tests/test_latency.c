/*
 * Latency histograms (fusefs/latency.c): every value lands in the bucket of its power of two,
 * and a quantile is never below the true one nor more than twice it.
 */
#include "check_main.h"
#include "latency.h"

#include <check.h>
#include <stdlib.h>

START_TEST(test_buckets_are_powers_of_two)
{
	static const struct {
		uint64_t ns;
		unsigned bucket;
	} cases[] = {{0, 0}, {1, 1},	 {2, 2},     {3, 2},
		     {4, 3}, {1023, 10}, {1024, 11}, {UINT64_MAX, 63}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfs_hist h = {0};
		cfs_hist_add(&h, cases[i].ns);
		ck_assert_uint_eq(h.bucket[cases[i].bucket], 1);
		ck_assert_uint_eq(h.count, 1);
		ck_assert_uint_eq(h.max_ns, cases[i].ns);
	}
}
END_TEST

START_TEST(test_empty_histogram_answers_zero)
{
	struct cfs_hist h = {0};

	ck_assert_uint_eq(cfs_hist_quantile(&h, 0.5), 0);
	ck_assert_uint_eq(cfs_hist_quantile(&h, 1.0), 0);
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

START_TEST(test_quantiles_bound_the_true_value)
{
	enum { N = 10000 };
	static uint64_t v[N];
	static const double qs[] = {0.01, 0.5, 0.9, 0.99, 1.0};
	struct cfs_hist h = {0};
	uint64_t s = 42;

	for (int i = 0; i < N; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = (s >> 33) % (1u << ((s >> 20) % 24)); /* spread over many magnitudes */
		cfs_hist_add(&h, v[i]);
	}
	qsort(v, N, sizeof(v[0]), cmp_u64);
	ck_assert_uint_eq(h.max_ns, v[N - 1]);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		size_t rank = (size_t)(qs[i] * N + 0.999999);
		uint64_t truth = v[(rank ? rank : 1) - 1], got = cfs_hist_quantile(&h, qs[i]);
		ck_assert_msg(got >= truth && got <= (truth ? 2 * truth - 1 : 0),
			      "q=%g: %llu for a true %llu", qs[i], (unsigned long long)got,
			      (unsigned long long)truth);
	}
	ck_assert_uint_eq(cfs_hist_quantile(&h, 1.0), v[N - 1]);
}
END_TEST

static Suite *latency_suite(void)
{
	Suite *s = suite_create("latency");
	TCase *tc = tcase_create("histogram");

	tcase_add_test(tc, test_buckets_are_powers_of_two);
	tcase_add_test(tc, test_empty_histogram_answers_zero);
	tcase_add_test(tc, test_quantiles_bound_the_true_value);
	suite_add_tcase(s, tc);
	return s;
}

void unit_add_suites(SRunner *sr)
{
	srunner_add_suite(sr, latency_suite());
}
