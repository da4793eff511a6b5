/*
 * fallocate and SEEK_DATA/SEEK_HOLE (tree/tree_data.c): pages held, punched and found as tmpfs
 * holds, frees and finds them, checked against a flat model of bytes and page states.
 */
#include "test_tree.h"

#include <fcntl.h> /* FALLOC_FL_* */

enum { PG = 4096 };
#define KEEP  FALLOC_FL_KEEP_SIZE
#define PUNCH (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)

/* ---- the model: bytes, and each page a hole, written data, or held by fallocate only ---- */

enum { SPAN_PAGES = 64 * 3 + 5, SPAN = SPAN_PAGES * PG };
enum page_state { HOLE, DATA, HELD };

struct model {
	char bytes[SPAN];
	unsigned char page[SPAN_PAGES];
	uint64_t size, pat_end; /* the spec pattern reads as data below pat_end */
};

static uint64_t pages_up(uint64_t b)
{
	return (b + PG - 1) / PG;
}

static bool m_data(const struct model *m, uint64_t p)
{
	return p < pages_up(m->pat_end) || (p < SPAN_PAGES && m->page[p] == DATA);
}

static void m_write(struct model *m, uint64_t off, const char *data, size_t len)
{
	memcpy(m->bytes + off, data, len);
	for (uint64_t p = off / PG; len && p < pages_up(off + len); p++)
		m->page[p] = DATA;
	if (len && off + len > m->size)
		m->size = off + len;
}

static void m_truncate(struct model *m, uint64_t size)
{
	if (size < m->size)
		memset(m->bytes + size, 0, m->size - size);
	for (uint64_t p = pages_up(size); size < m->size && p < SPAN_PAGES; p++)
		m->page[p] = HOLE;
	if (m->pat_end > size)
		m->pat_end = size;
	m->size = size;
}

static void m_allocate(struct model *m, uint64_t off, uint64_t end, bool keep)
{
	for (uint64_t p = off / PG; p < pages_up(end); p++)
		if (m->page[p] == HOLE && !m_data(m, p))
			m->page[p] = HELD;
	if (!keep && end > m->size)
		m->size = end;
}

static void m_punch(struct model *m, uint64_t off, uint64_t end)
{
	uint64_t stop = end < m->size ? end : m->size;
	bool inside = off < m->pat_end && end < m->pat_end; /* held as zero pages */

	if (off < stop)
		memset(m->bytes + off, 0, stop - off);
	if (!inside && off < m->pat_end)
		m->pat_end = off;
	for (uint64_t p = pages_up(off); p < end / PG; p++)
		m->page[p] = inside ? DATA : HOLE;
}

static uint64_t m_blocks(const struct model *m)
{
	uint64_t n = 0;

	for (uint64_t p = 0; p < SPAN_PAGES; p++)
		n += m_data(m, p) || m->page[p] != HOLE;
	return n * (PG / 512);
}

static off_t m_seek(const struct model *m, uint64_t off, bool data)
{
	if (off >= m->size)
		return -ENXIO;
	for (uint64_t p = off / PG; p * PG < m->size; p++)
		if (m_data(m, p) == data)
			return (off_t)(p * PG > off ? (p * PG < m->size ? p * PG : m->size) : off);
	return data ? -ENXIO : (off_t)m->size;
}

static void check_model(uint32_t f, const struct model *m, char *buf, int round)
{
	ck_assert_int_eq(st_of(T, f).st_size, (off_t)m->size);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, SPAN, 0), (ssize_t)m->size);
	ck_assert_msg(!memcmp(buf, m->bytes, m->size), "round %d: content", round);
	ck_assert_msg(st_of(T, f).st_blocks == (blkcnt_t)m_blocks(m), "round %d: blocks %ld, %lu",
		      round, (long)st_of(T, f).st_blocks, (unsigned long)m_blocks(m));
	for (uint64_t off = 0; off <= m->size + PG; off += 1 + (uint64_t)rand() % (2 * PG)) {
		ck_assert_msg(cfs_tree_seek(T, f, (off_t)off, true) == m_seek(m, off, true),
			      "round %d: SEEK_DATA %lu: %ld, %ld", round, (unsigned long)off,
			      (long)cfs_tree_seek(T, f, (off_t)off, true),
			      (long)m_seek(m, off, true));
		ck_assert_msg(cfs_tree_seek(T, f, (off_t)off, false) == m_seek(m, off, false),
			      "round %d: SEEK_HOLE %lu: %ld, %ld", round, (unsigned long)off,
			      (long)cfs_tree_seek(T, f, (off_t)off, false),
			      (long)m_seek(m, off, false));
	}
}

/* Writes, truncates, fallocates and punches at random over a pattern file: the bytes, the
 * size, st_blocks and every SEEK_DATA/SEEK_HOLE answer are the model's after each step. */
START_TEST(test_random_fallocate_punch_write_truncate_match_the_model)
{
	enum { ROUNDS = 1500, LEN_MAX = 9000 };
	uint32_t f = mkf(T, CFS_ROOT, "f");
	struct model *m = calloc(1, sizeof(*m));
	char *buf = malloc(SPAN), data[LEN_MAX];

	srand((unsigned)(_i + 11));
	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "0123456789", 10, 50000), 0);
	for (uint64_t i = 0; i < 50000; i++)
		m->bytes[i] = (char)('0' + i % 10);
	m->size = m->pat_end = 50000;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t off = (uint64_t)rand() % (SPAN - 2 * LEN_MAX);
		uint64_t len = 1 + (uint64_t)rand() % (rand() % 4 ? LEN_MAX : SPAN / 4);
		int what = rand() % 8;
		if (off + len > SPAN - PG)
			len = SPAN - PG - off;
		if (what == 0) {
			ck_assert_int_eq(cfs_tree_truncate(T, f, off), 0);
			m_truncate(m, off);
		} else if (what <= 2) {
			ck_assert_int_eq(
			    cfs_tree_fallocate(T, f, what == 1 ? 0 : KEEP, (off_t)off, (off_t)len),
			    0);
			m_allocate(m, off, off + len, what == 2);
		} else if (what <= 4) {
			ck_assert_int_eq(cfs_tree_fallocate(T, f, PUNCH, (off_t)off, (off_t)len),
					 0);
			m_punch(m, off, off + len);
		} else {
			len %= LEN_MAX;
			for (size_t k = 0; k < len; k++)
				data[k] = (char)('a' + rand() % 26);
			ck_assert_int_eq(cfs_tree_write(T, f, data, len, (off_t)off), (ssize_t)len);
			m_write(m, off, data, len);
		}
		if (r % 10 == 0 || r == ROUNDS - 1)
			check_model(f, m, buf, r);
	}
	free(m);
	free(buf);
}
END_TEST

/* ---- each mode, and the errnos ---- */

START_TEST(test_fallocate_holds_zero_pages_that_stay_holes_until_written)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_fallocate(T, f, 0, 100, 3 * PG), 0);
	ck_assert_int_eq(st_of(T, f).st_size, 100 + 3 * PG);
	ck_assert_int_eq(st_of(T, f).st_blocks, 4 * 8);
	ck_assert_int_eq(stats_of(T).data_bytes, 4 * PG);
	assert_content(T, f, (char[100 + 3 * PG]){0}, 100 + 3 * PG);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, true), -ENXIO);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, false), 0);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, PG + 7), 1);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, true), PG);
	ck_assert_int_eq(cfs_tree_seek(T, f, PG, false), 2 * PG);
	ck_assert_int_eq(stats_of(T).data_bytes, 4 * PG); /* the write used the held page */
}
END_TEST

START_TEST(test_fallocate_keep_size_holds_pages_past_the_end)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_set_content(T, f, "abc", 3), 0);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, KEEP, 0, 8 * PG), 0);
	assert_content(T, f, "abc", 3);
	ck_assert_int_eq(st_of(T, f).st_blocks, 8 * 8);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, true), 0);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, false), 3); /* the end is a hole */
	ck_assert_int_eq(cfs_tree_seek(T, f, 3, true), -ENXIO);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 2), 0); /* a shrink frees what is past it */
	ck_assert_int_eq(st_of(T, f).st_blocks, 8);
}
END_TEST

START_TEST(test_punch_frees_whole_pages_and_zeros_partial_ones)
{
	static char page[4 * PG], want[4 * PG];
	uint32_t f = mkf(T, CFS_ROOT, "f");

	memset(page, 'w', sizeof(page));
	memcpy(want, page, sizeof(want));
	ck_assert_int_eq(cfs_tree_write(T, f, page, sizeof(page), 0), (ssize_t)sizeof(page));
	ck_assert_int_eq(cfs_tree_fallocate(T, f, PUNCH, 100, 2 * PG), 0);
	memset(want + 100, 0, 2 * PG);
	assert_content(T, f, want, sizeof(want));
	ck_assert_int_eq(st_of(T, f).st_blocks, 3 * 8); /* page 1 freed, 0 and 2 zeroed in part */
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, false), PG);
	ck_assert_int_eq(cfs_tree_seek(T, f, PG, true), 2 * PG);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, PUNCH, 0, 1 << 20), 0); /* past the end: kept */
	ck_assert_int_eq(st_of(T, f).st_size, 4 * PG);
	ck_assert_int_eq(st_of(T, f).st_blocks, 0);
	ck_assert_int_eq(stats_of(T).data_bytes, 0);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, true), -ENXIO);
}
END_TEST

START_TEST(test_punch_in_a_small_file_zeros_its_buffer)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_set_content(T, f, "abcdef", 6), 0);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, PUNCH, 1, 2), 0);
	assert_content(T, f, "a\0\0def", 6);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, PUNCH, 0, PG), 0);
	assert_content(T, f, "\0\0\0\0\0\0", 6);
	ck_assert_int_eq(st_of(T, f).st_blocks, 0);
}
END_TEST

START_TEST(test_punch_to_a_patterns_end_cuts_it_and_inside_holds_zero_pages)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), g = mkf(T, CFS_ROOT, "g");
	char buf[16];

	ck_assert_int_eq(cfs_tree_set_pattern(T, f, "ab", 2, 1ull << 40), 0);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, PUNCH, 1 << 20, 1ll << 41), 0);
	ck_assert_int_eq(stats_of(T).data_bytes, 0);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, false), 1 << 20);
	ck_assert_int_eq(cfs_tree_read(T, f, buf, 4, (1 << 20) - 2), 4);
	ck_assert_mem_eq(buf, "ab\0\0", 4);
	ck_assert_int_eq(st_of(T, f).st_blocks, (1 << 20) / 512);
	ck_assert_int_eq(cfs_tree_set_pattern(T, g, "ab", 2, 10 * PG), 0);
	ck_assert_int_eq(cfs_tree_fallocate(T, g, PUNCH, PG, 2 * PG), 0);
	ck_assert_int_eq(stats_of(T).data_bytes, 2 * PG);
	ck_assert_int_eq(cfs_tree_read(T, g, buf, 4, PG - 2), 4);
	ck_assert_mem_eq(buf, "ab\0\0", 4);
	ck_assert_int_eq(cfs_tree_read(T, g, buf, 4, 3 * PG - 2), 4);
	ck_assert_mem_eq(buf, "\0\0ab", 4);
}
END_TEST

START_TEST(test_fallocate_is_all_or_nothing_at_the_data_limit)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	struct cfs_tree_stats before;

	cfs_tree_set_data_limit(T, 10 * PG);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, 5 * PG), 1);
	before = stats_of(T);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, 0, 0, 11 * PG), -ENOSPC);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, KEEP, 0, 11 * PG), -ENOSPC);
	ck_assert_int_eq(stats_of(T).data_bytes, before.data_bytes);
	ck_assert_int_eq(st_of(T, f).st_size, 5 * PG + 1);
	ck_assert_int_eq(st_of(T, f).st_blocks, 8);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, 0, 0, 10 * PG), 0); /* page 5 is there */
	ck_assert_int_eq(stats_of(T).data_bytes, 10 * PG);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, PUNCH, 0, 10 * PG), 0); /* never needs room */
	ck_assert_int_eq(stats_of(T).data_bytes, 0);
}
END_TEST

START_TEST(test_fallocate_modes_tmpfs_refuses_are_eopnotsupp)
{
	static const int modes[] = {FALLOC_FL_PUNCH_HOLE,	 FALLOC_FL_ZERO_RANGE,
				    FALLOC_FL_ZERO_RANGE | KEEP, FALLOC_FL_COLLAPSE_RANGE,
				    FALLOC_FL_INSERT_RANGE,	 FALLOC_FL_UNSHARE_RANGE};
	uint32_t f = mkf(T, CFS_ROOT, "f"), d = mkd(T, CFS_ROOT, "d"),
		 l = mkl(T, CFS_ROOT, "l", "f");

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		ck_assert_int_eq(cfs_tree_fallocate(T, f, modes[i], 0, PG), -EOPNOTSUPP);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, 0, -1, PG), -EINVAL);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(cfs_tree_fallocate(T, f, 0, INT64_MAX, 1), -EFBIG);
	ck_assert_int_eq(cfs_tree_fallocate(T, d, 0, 0, 1), -EISDIR);
	ck_assert_int_eq(cfs_tree_fallocate(T, l, 0, 0, 1), -EINVAL);
	ck_assert_int_eq(cfs_tree_seek(T, d, 0, true), -EISDIR);
	ck_assert_int_eq(st_of(T, f).st_size, 0);
}
END_TEST

START_TEST(test_seek_past_the_end_or_before_the_start_is_enxio)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(cfs_tree_seek(T, f, 0, true), -ENXIO); /* empty */
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, false), -ENXIO);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, 1ll << 40), 1);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, true), 1ll << 40);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, false), 0);
	ck_assert_int_eq(cfs_tree_seek(T, f, 1ll << 40, false), (1ll << 40) + 1);
	ck_assert_int_eq(cfs_tree_seek(T, f, (1ll << 40) + 1, true), -ENXIO);
	ck_assert_int_eq(cfs_tree_seek(T, f, (1ll << 40) + 1, false), -ENXIO);
	ck_assert_int_eq(cfs_tree_seek(T, f, -1, true), -ENXIO);
	ck_assert_int_eq(cfs_tree_truncate(T, f, 1ll << 30), 0);
	ck_assert_int_eq(cfs_tree_seek(T, f, 0, true), -ENXIO);
}
END_TEST

/* A dump writes what was written: pages fallocate only holds stay holes there. */
START_TEST(test_written_runs_leave_out_pages_only_held)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	uint64_t s, e;

	ck_assert_int_eq(cfs_tree_fallocate(T, f, 0, 0, 8 * PG), 0);
	ck_assert_int_eq(cfs_tree_write(T, f, "x", 1, 3 * PG), 1);
	ck_assert_int_eq(cfs_tree_next_written(T, f, 0, &s, &e), 0);
	ck_assert_uint_eq(s, 3 * PG);
	ck_assert_uint_eq(e, 4 * PG);
	ck_assert_int_eq(cfs_tree_next_written(T, f, e, &s, &e), 1);
}
END_TEST

/* ---- the test cases ---- */

void tree_tcase_holes(TCase *tc)
{
	tcase_add_loop_test(tc, test_random_fallocate_punch_write_truncate_match_the_model, 0, 4);
	tcase_add_test(tc, test_fallocate_holds_zero_pages_that_stay_holes_until_written);
	tcase_add_test(tc, test_fallocate_keep_size_holds_pages_past_the_end);
	tcase_add_test(tc, test_punch_frees_whole_pages_and_zeros_partial_ones);
	tcase_add_test(tc, test_punch_in_a_small_file_zeros_its_buffer);
	tcase_add_test(tc, test_punch_to_a_patterns_end_cuts_it_and_inside_holds_zero_pages);
	tcase_add_test(tc, test_fallocate_is_all_or_nothing_at_the_data_limit);
	tcase_add_test(tc, test_fallocate_modes_tmpfs_refuses_are_eopnotsupp);
	tcase_add_test(tc, test_seek_past_the_end_or_before_the_start_is_enxio);
	tcase_add_test(tc, test_written_runs_leave_out_pages_only_held);
}
