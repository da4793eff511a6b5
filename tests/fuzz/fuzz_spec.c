/*
 * Fuzz target "spec": the input is a whole spec file for cfs_spec_load_text().
 *
 * Checked: no sanitizer report, no assert; the result is 0, or -EINVAL / -ENOMEM with a
 * message "spec:LINE: ..." naming a line the input has (and no message on success); the tree
 * left behind, even by a failed load, is consistent (fz_canon's checks) and gives back every
 * byte it took; a small tree that loaded dumps to a spec that loads back into the same tree
 * (same dump, same canon).
 *
 * Bounds: generator lines may ask for up to 20M nodes, far too many per input. The tree
 * allocates through the budget allocator, so a big line fails with ENOMEM (and is rolled
 * back) after FZ_SPEC_BUDGET bytes, which also exercises every ENOMEM path of the loader.
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
	FZ_SPEC_BUDGET = 4 << 20, /* tree bytes per input: about 35k nodes, 0.5 s at worst */
};

/* Lines in the input, as cfs_spec_load_text counts them. */
static unsigned long fz_lines(const char *text, size_t len)
{
	unsigned long n = 0;

	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	return n + (len > 0 && text[len - 1] != '\n');
}

/* The error contract of cfs_spec_load_text. */
static void fz_check_result(int rc, const char *err, unsigned long lines)
{
	unsigned long line = 0;
	int used = 0;

	if (rc == 0) {
		if (err)
			fz_fail("load succeeded with a message: %s", err);
		return;
	}
	if (rc != -EINVAL && rc != -ENOMEM)
		fz_fail("load returned %d (%s): %s", rc, strerror(-rc), err ? err : "(none)");
	if (!err)
		fz_fail("load failed (%d) without a message", rc);
	if (sscanf(err, "spec:%lu: %n", &line, &used) != 1 || used == 0)
		fz_fail("message not in the form spec:LINE: ...: %s", err);
	if (line < 1 || line > lines)
		fz_fail("message names line %lu of %lu: %s", line, lines, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	char *err = NULL;
	struct fz_size sz;

	fz_budget_limit(FZ_SPEC_BUDGET);
	struct cfs_tree *t = cfs_tree_new(&fz_budget_alloc);
	if (!t)
		fz_fail("cfs_tree_new failed");
	int rc = cfs_spec_load_text(t, "spec", text, size, &fz_spec_defaults, &err);
	fz_check_result(rc, err, fz_lines(text, size));
	if (getenv("FUZZ_VERBOSE")) { /* when replaying an input by hand */
		fz_tree_size(t, &sz);
		fprintf(stderr, "load: %d %s; %llu nodes, %llu file bytes, %llu path bytes\n", rc,
			err ? err : "", (unsigned long long)sz.nodes,
			(unsigned long long)sz.file_bytes, (unsigned long long)sz.path_bytes);
	}
	free(err);
	if (fz_tree_is_small(t)) {
		g_free(fz_canon(t, FZ_CANON_IDS | FZ_CANON_TIMES)); /* consistency checks */
		if (rc == 0)
			fz_check_round_trip(t);
	}
	cfs_tree_free(t);
	if (fz_budget_live() != 0)
		fz_fail("the tree kept %zu bytes after cfs_tree_free", fz_budget_live());
	return 0;
}
