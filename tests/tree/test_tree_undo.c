/*
 * The tree's journal (tree/tree_undo.c, the notes in tree_entry.c): after any series of
 * changes, an undo leaves the tree exactly as it was, as the canonical dump sees it (handles,
 * generations, readdir order, first names, link counts, times, references, counts); a commit
 * keeps the changes and frees what they removed. Every test ages the tree first, so a stamp
 * left behind shows.
 */
#include "test_tree.h"

/* Every node below DIR (and DIR) gets old times, unlike any a change stamps. */
static void age(struct cfs_tree *t, uint32_t dir)
{
	const struct timespec old = {1000000, 1};
	uint64_t cookie = 0;
	const char *name;
	size_t len;
	uint32_t child;

	ck_assert_int_eq(cfs_tree_set_times(t, dir, &old, &old, &old), 0);
	while (cfs_tree_dir_next(t, dir, &cookie, &name, &len, &child) == 0)
		if (cfs_tree_kind(t, child) == RS_DIR)
			age(t, child);
		else
			ck_assert_int_eq(cfs_tree_set_times(t, child, &old, &old, &old), 0);
}

static char *before;

/* Age the tree, keep its dump, open a journal. */
static void begin(void)
{
	age(T, CFS_ROOT);
	before = dump(T, NULL, 0);
	ck_assert_int_eq(cfs_tree_journal_begin(T), 0);
}

/* Undo: the dump is the one begin kept. */
static void undone(void)
{
	ck_assert_int_eq(cfs_tree_journal_undo(T), 0);
	char *after = dump(T, NULL, 0);
	ck_assert_str_eq(after, before);
	free(after);
	free(before);
	before = NULL;
}

/* /d holding a b c (files, b with data), /e empty, /f a file with a second name /d/h */
static uint32_t fixture(void)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), b, f;

	mkf(T, d, "a");
	b = mkf(T, d, "b");
	ck_assert_int_eq(cfs_tree_set_content(T, b, "bytes", 5), 0);
	mkf(T, d, "c");
	mkd(T, CFS_ROOT, "e");
	f = mkf(T, CFS_ROOT, "f");
	ck_assert_int_eq(lk(T, f, d, "h"), 0);
	return d;
}

START_TEST(test_undo_takes_back_names_made)
{
	uint32_t d = fixture(), x, id;

	begin();
	x = mkd(T, d, "x");
	mkf(T, x, "y");
	mkl(T, d, "l", "/e");
	ck_assert_int_eq(cfs_tree_mknod(T, CFS_ROOT, "p", 1, S_IFIFO, 0, &AF, &id), 0);
	ck_assert_int_eq(lk(T, at(T, d, "a"), CFS_ROOT, "a2"), 0);
	ck_assert_int_eq(lk(T, at(T, CFS_ROOT, "f"), x, "f3"), 0);
	undone();
}
END_TEST

START_TEST(test_undo_puts_a_removed_file_back_at_its_place)
{
	uint32_t d = fixture(), b = at(T, d, "b");

	begin();
	ck_assert_int_eq(rm(T, d, "b"), 0);
	/* kept until the end: a new node does not take its handle */
	ck_assert_uint_ne(mkf(T, d, "b"), b);
	ck_assert_int_eq(rm(T, d, "b"), 0);
	ck_assert_int_eq(rm(T, d, "c"), 0);
	undone();
}
END_TEST

START_TEST(test_undo_puts_a_first_name_back_first)
{
	uint32_t d = fixture(), f = at(T, CFS_ROOT, "f");

	begin();
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	ck_assert_uint_eq(cfs_tree_parent(T, f), d); /* /d/h took over */
	undone();
	ck_assert_uint_eq(cfs_tree_parent(T, f), CFS_ROOT);
}
END_TEST

START_TEST(test_undo_puts_an_extra_name_back)
{
	uint32_t d = fixture();

	ck_assert_int_eq(lk(T, at(T, CFS_ROOT, "f"), CFS_ROOT, "g"), 0);
	begin();
	ck_assert_int_eq(rm(T, d, "h"), 0);
	ck_assert_int_eq(rm(T, CFS_ROOT, "g"), 0);
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0); /* the node is an orphan now */
	undone();
}
END_TEST

/* ID's first name is NAME */
static void first_name_is(uint32_t id, const char *name)
{
	ck_assert_str_eq(name_of(T, id), name);
}

START_TEST(test_undo_puts_an_extra_name_back_in_its_turn)
{
	uint32_t d = fixture(), f = at(T, CFS_ROOT, "f");

	ck_assert_int_eq(lk(T, f, d, "x2"), 0);
	ck_assert_int_eq(lk(T, f, d, "x3"), 0); /* extra names, oldest first: h x2 x3 */
	begin();
	ck_assert_int_eq(rm(T, d, "x2"), 0);
	ck_assert_int_eq(mv(T, d, "b", d, "h", 0), 0); /* h goes too, replaced */
	undone();
	/* the first name goes to the oldest extra one: h, then x2, then x3, as before */
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	first_name_is(f, "h");
	ck_assert_int_eq(rm(T, d, "h"), 0);
	first_name_is(f, "x2");
	ck_assert_int_eq(rm(T, d, "x2"), 0);
	first_name_is(f, "x3");
}
END_TEST

START_TEST(test_undo_puts_removed_directories_back)
{
	uint32_t d = fixture(), e = at(T, CFS_ROOT, "e");

	mkf(T, mkd(T, e, "sub"), "leaf");
	begin();
	/* the whole of /e, depth first, as a change's replace removes a directory */
	ck_assert_int_eq(rm(T, at(T, e, "sub"), "leaf"), 0);
	ck_assert_int_eq(rmd(T, e, "sub"), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "e"), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "d"), -ENOTEMPTY);
	ck_assert_int_eq(rm(T, d, "a"), 0);
	undone();
}
END_TEST

START_TEST(test_undo_moves_renamed_entries_back)
{
	uint32_t d = fixture(), e = at(T, CFS_ROOT, "e");

	begin();
	ck_assert_int_eq(mv(T, d, "b", e, "z", 0), 0);
	ck_assert_int_eq(mv(T, d, "a", d, "q", 0), 0);
	ck_assert_int_eq(mv(T, CFS_ROOT, "e", d, "e2", RENAME_NOREPLACE), 0);
	ck_assert_int_eq(mv(T, d, "q", d, "a", 0), 0); /* back to its name, at the end */
	undone();
}
END_TEST

START_TEST(test_undo_brings_back_what_a_rename_replaced)
{
	uint32_t d = fixture();

	mkd(T, d, "empty");
	begin();
	ck_assert_int_eq(mv(T, d, "a", d, "c", 0), 0);		  /* a file over a file */
	ck_assert_int_eq(mv(T, CFS_ROOT, "e", d, "empty", 0), 0); /* a directory over one */
	ck_assert_int_eq(mv(T, d, "b", CFS_ROOT, "f", 0), 0);	  /* over a hard-linked file */
	ck_assert_int_eq(mv(T, d, "h", d, "c", 0), 0);		  /* its other name, too */
	undone();
}
END_TEST

START_TEST(test_undo_exchanges_back)
{
	uint32_t d = fixture();

	begin();
	ck_assert_int_eq(mv(T, d, "a", CFS_ROOT, "e", RENAME_EXCHANGE), 0);
	ck_assert_int_eq(mv(T, d, "b", d, "c", RENAME_EXCHANGE), 0);
	undone();
}
END_TEST

START_TEST(test_undo_restores_attributes_and_times)
{
	uint32_t d = fixture(), a = at(T, d, "a");
	const struct timespec ts = {5, 5};

	begin();
	ck_assert_int_eq(cfs_tree_chmod(T, a, 04711), 0);
	ck_assert_int_eq(cfs_tree_chown(T, a, 7, 8), 0);
	ck_assert_int_eq(cfs_tree_set_times(T, d, &ts, &ts, &ts), 0);
	ck_assert_int_eq(cfs_tree_chmod(T, CFS_ROOT, 0700), 0);
	undone();
}
END_TEST

START_TEST(test_undo_gives_a_node_the_kernel_holds_its_name_back)
{
	uint32_t d = fixture(), a = at(T, d, "a"), e = at(T, CFS_ROOT, "e");

	cfs_tree_ref(T, a, 1);
	cfs_tree_ref(T, e, 2);
	begin();
	ck_assert_int_eq(rm(T, d, "a"), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "e"), 0);
	undone();
	cfs_tree_unref(T, a, 1);
	cfs_tree_unref(T, e, 2);
}
END_TEST

START_TEST(test_commit_keeps_the_changes_and_frees_what_went)
{
	uint32_t d = fixture(), e = at(T, CFS_ROOT, "e"), a = at(T, d, "a");
	uint64_t nodes;

	mkf(T, mkd(T, e, "sub"), "leaf");
	cfs_tree_ref(T, a, 1);
	nodes = stats_of(T).nodes;
	ck_assert_int_eq(cfs_tree_journal_begin(T), 0);
	ck_assert_int_eq(rm(T, at(T, e, "sub"), "leaf"), 0);
	ck_assert_int_eq(rmd(T, e, "sub"), 0);
	ck_assert_int_eq(rmd(T, CFS_ROOT, "e"), 0);
	ck_assert_int_eq(rm(T, d, "a"), 0);
	ck_assert_int_eq(mv(T, d, "b", d, "c", 0), 0);
	ck_assert_uint_eq(stats_of(T).nodes, nodes); /* kept while the journal is open */
	cfs_tree_journal_commit(T);
	ck_assert_uint_eq(stats_of(T).nodes, nodes - 4); /* a stays: the kernel holds it */
	ck_assert_uint_eq(at(T, CFS_ROOT, "e"), 0);
	ck_assert_uint_eq(at(T, d, "b"), 0);
	ck_assert_uint_ne(at(T, d, "c"), 0);
	ck_assert_uint_eq(st_of(T, a).st_nlink, 0);
	cfs_tree_unref(T, a, 1);
	ck_assert_uint_eq(stats_of(T).nodes, nodes - 5);
}
END_TEST

START_TEST(test_one_journal_at_a_time)
{
	ck_assert_int_eq(cfs_tree_journal_begin(T), 0);
	ck_assert_int_eq(cfs_tree_journal_begin(T), -EBUSY);
	cfs_tree_journal_commit(T);
	ck_assert_int_eq(cfs_tree_journal_undo(T), 0); /* none open: nothing to do */
	ck_assert_int_eq(cfs_tree_journal_begin(T), 0);
	/* the tree freed with a journal open gives its memory back (teardown counts) */
}
END_TEST

START_TEST(test_undo_without_its_notes_leaves_the_changes_and_leaks_nothing)
{
	uint32_t d = fixture();

	ck_assert_int_eq(cfs_tree_journal_begin(T), 0);
	ca_arm(1, true); /* the first note finds no memory; unlink itself needs none */
	ck_assert_int_eq(rm(T, d, "a"), 0);
	ca_arm(0, false);
	ck_assert_int_eq(rm(T, d, "b"), 0);
	ck_assert_int_eq(cfs_tree_journal_undo(T), -ENOMEM);
	ck_assert_uint_eq(at(T, d, "a"), 0);
	ck_assert_uint_eq(at(T, d, "b"), 0);
	ck_assert_uint_eq(stats_of(T).nodes, 5); /* both freed: teardown counts the blocks */
}
END_TEST

/* ---- seeded random changes, then undo ---- */

/* Every directory below (and with) DIR into DIRS, every other node into NODES. */
static void collect(uint32_t dir, uint32_t *dirs, int *nd, uint32_t *nodes, int *nn)
{
	uint64_t cookie = 0;
	const char *name;
	size_t len;
	uint32_t child;

	dirs[(*nd)++] = dir;
	while (cfs_tree_dir_next(T, dir, &cookie, &name, &len, &child) == 0 && *nd < 200 &&
	       *nn < 200)
		if (cfs_tree_kind(T, child) == RS_DIR)
			collect(child, dirs, nd, nodes, nn);
		else
			nodes[(*nn)++] = child;
}

/* One random call on the tree; its result does not matter, only that undo takes it back. */
static void random_change(unsigned *seed)
{
	static const char *const names[] = {"a", "b", "c", "d", "e", "f"};
	static const unsigned flags[] = {0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE};
	uint32_t dirs[200], nodes[200], id;
	int nd = 0, nn = 0;
	const struct timespec ts = {7, 7};

	collect(CFS_ROOT, dirs, &nd, nodes, &nn);
	uint32_t dir = dirs[rand_r(seed) % nd], dir2 = dirs[rand_r(seed) % nd];
	const char *n = names[rand_r(seed) % 6], *n2 = names[rand_r(seed) % 6];
	uint32_t node = nn ? nodes[rand_r(seed) % nn] : dir;

	switch (rand_r(seed) % 9) {
	case 0:
		cfs_tree_mkdir(T, dir, n, 1, &A, &id);
		break;
	case 1:
		cfs_tree_mkfile(T, dir, n, 1, &AF, &id);
		break;
	case 2:
		cfs_tree_symlink(T, dir, n, 1, "t", 1, &A, &id);
		break;
	case 3:
		cfs_tree_link(T, node, dir, n, 1);
		break;
	case 4:
		cfs_tree_unlink(T, dir, n, 1);
		break;
	case 5:
		cfs_tree_rmdir(T, dir, n, 1);
		break;
	case 6:
	case 7:
		cfs_tree_rename(T, dir, n, 1, dir2, n2, 1, flags[rand_r(seed) % 4]);
		break;
	default:
		if (rand_r(seed) % 2)
			cfs_tree_chmod(T, node, 0600);
		else
			cfs_tree_set_times(T, dir, &ts, NULL, NULL);
	}
}

START_TEST(test_undo_of_random_changes_leaves_the_tree_as_it_was)
{
	for (unsigned s = 1; s <= 40; s++) {
		unsigned seed = s;
		/* a tree of its own each round, made by random calls too, then one journal */
		cfs_tree_free(T);
		T = cfs_tree_new(&CA);
		ck_assert_ptr_nonnull(T);
		for (int i = 0; i < 60; i++)
			random_change(&seed);
		begin();
		for (int i = 0; i < 60; i++)
			random_change(&seed);
		undone();
	}
}
END_TEST

void tree_tcase_journal(TCase *tc)
{
	tcase_add_test(tc, test_undo_takes_back_names_made);
	tcase_add_test(tc, test_undo_puts_a_removed_file_back_at_its_place);
	tcase_add_test(tc, test_undo_puts_a_first_name_back_first);
	tcase_add_test(tc, test_undo_puts_an_extra_name_back);
	tcase_add_test(tc, test_undo_puts_an_extra_name_back_in_its_turn);
	tcase_add_test(tc, test_undo_puts_removed_directories_back);
	tcase_add_test(tc, test_undo_moves_renamed_entries_back);
	tcase_add_test(tc, test_undo_brings_back_what_a_rename_replaced);
	tcase_add_test(tc, test_undo_exchanges_back);
	tcase_add_test(tc, test_undo_restores_attributes_and_times);
	tcase_add_test(tc, test_undo_gives_a_node_the_kernel_holds_its_name_back);
	tcase_add_test(tc, test_commit_keeps_the_changes_and_frees_what_went);
	tcase_add_test(tc, test_one_journal_at_a_time);
	tcase_add_test(tc, test_undo_without_its_notes_leaves_the_changes_and_leaks_nothing);
	tcase_add_test(tc, test_undo_of_random_changes_leaves_the_tree_as_it_was);
}
