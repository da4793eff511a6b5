/*
 * Fuzz target "spec_line": the input is up to FZ_MAX_LINES runtime lines, given one by one to
 * cfs_spec_apply_line() on a small tree that has every kind of node (an input starting with
 * '!' is instead given whole, as one call, newlines and all).
 *
 * Checked: each call returns 0, or -EINVAL / -ENOMEM with a "line:1: ..." message; a failed
 * call leaves the tree exactly as it was: the canon (inode numbers, generations, times to the
 * nanosecond, content digests, counters) and the dump before and after are identical. When
 * the lines are done, the tree must still dump and load back into the same tree.
 */
#include "fuzz_util.h"
#include "spec.h"
#include "tree.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	FZ_MAX_LINES = 16,
	FZ_LINE_BUDGET = 4 << 20, /* tree bytes: a generator line fails with ENOMEM beyond */
};

/* No file past 128 KiB: the dump of one reads two maximal pattern periods, which is most of
 * the time per input (seeds make such files with lines instead).
 * Every kind the lines can meet: dirs with modes and owners, literal, pattern and
 * hard-linked files, relative and absolute links, generated chains and loops, odd names,
 * fifos, sockets and devices. */
static const char fz_base_spec[] =
    "dir /base mtime=100\n"
    "file /base/f data\n"
    "file /base/p size=3k pattern=xyz\n"
    "hardlink /base/f2 /base/f\n"
    "link /base/l f\n"
    "link /base/abs /base/f\n"
    "dir /other mode=0700 uid=1 gid=2 atime=5.5\n"
    "chain /other/c 3 /base/f\n"
    "loop /other/ring 3\n"
    "file \"/odd name\\t\\xe9\" \"with \\\"quotes\\\"\\n\" mode=0600\n"
    "dir /empty\n"
    "fifo /base/fifo\n"
    "socket /other/sock uid=3\n"
    "dev /base/null c 1 3 mode=0666\n";

static void fz_check_result(const char *line, int rc, const char *err)
{
	if (rc == 0) {
		if (err)
			fz_fail("line succeeded with a message: %s: %s", line, err);
		return;
	}
	if (rc != -EINVAL && rc != -ENOMEM)
		fz_fail("line returned %d (%s): %s: %s", rc, strerror(-rc), line,
			err ? err : "(none)");
	if (!err || strncmp(err, "line:1: ", 8) != 0)
		fz_fail("line failed (%d) with message %s: %s", rc, err ? err : "(none)", line);
}

/* Apply LINE; if it fails, the tree must be as before. False: the tree got too big to go
 * on checking each line. */
static bool fz_apply(struct cfs_tree *t, const char *line)
{
	if (!fz_tree_is_small(t))
		return false;
	char *before = fz_canon(t, FZ_CANON_IDS | FZ_CANON_TIMES), *err = NULL;
	int drc = 0;
	char *dump_before = fz_dump(t, &drc);
	int rc = cfs_spec_apply_line(t, line, &fz_spec_defaults, &err);

	fz_check_result(line, rc, err);
	if (rc) {
		char *after = fz_canon(t, FZ_CANON_IDS | FZ_CANON_TIMES);
		if (strcmp(before, after) != 0) {
			fprintf(stderr, "---- before\n%s---- after\n%s----\n", before, after);
			fz_fail("failed line changed the tree: %s (%s)", line, err);
		}
		if (dump_before) {
			char *dump_after = fz_dump(t, &drc);
			if (!dump_after || strcmp(dump_before, dump_after) != 0)
				fz_fail("failed line changed the dump: %s (%s)", line, err);
			free(dump_after);
		}
		g_free(after);
	}
	free(dump_before);
	free(err);
	g_free(before);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	fz_budget_limit(FZ_LINE_BUDGET);
	struct cfs_tree *t = fz_tree_of(fz_base_spec, sizeof(fz_base_spec) - 1);
	bool going = true;

	if (size > 0 && p[0] == '!') {
		char *line = g_strndup(p + 1, size - 1);
		going = fz_apply(t, line);
		g_free(line);
		p = end;
	}
	for (int i = 0; going && i < FZ_MAX_LINES && p < end; i++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		char *line = g_strndup(p, (size_t)(e - p)); /* a NUL in it ends it early */

		going = fz_apply(t, line);
		g_free(line);
		p = nl ? nl + 1 : end;
	}
	if (fz_tree_is_small(t))
		fz_check_round_trip(t);
	cfs_tree_free(t);
	if (fz_budget_live() != 0)
		fz_fail("the tree kept %zu bytes after cfs_tree_free", fz_budget_live());
	return 0;
}
