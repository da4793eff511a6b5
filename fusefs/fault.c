#include "fault.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

enum { CFS_FAULT_MAX_DELAY_MS = 600000 }; /* ten minutes: longer would only hang clients */

struct cfs_fault {
	int op; /* enum cfs_op, or CFS_OP_MAX for any */
	char *glob;
	int err;
	double prob;
	unsigned delay_ms;
	uint64_t rng; /* splitmix64 state: the same seed gives the same sequence of hits */
	uint64_t checks, hits;
};

struct cfs_faults {
	GPtrArray *rules;
	const char *unsent[CFS_OP_MAX]; /* why an op never reaches us, or NULL */
};

/* The C library knows every errno's name (glibc 2.32: strerrorname_np); a rule may give a
 * name or a number. */
enum { CFS_ERRNO_MAX = 4095 };

const char *cfs_errno_name(int err)
{
	return err > 0 && err <= CFS_ERRNO_MAX ? strerrorname_np(err) : NULL;
}

static int cfs_errno_of(const char *s)
{
	char *end;
	long v;

	for (int e = 1; e < 256; e++) {
		const char *name = strerrorname_np(e);
		if (name && strcmp(name, s) == 0)
			return e;
	}
	v = strtol(s, &end, 10);
	return (*s && !*end && v > 0 && v <= CFS_ERRNO_MAX) ? (int)v : -1;
}

static void cfs_fault_free(gpointer p)
{
	struct cfs_fault *r = p;

	g_free(r->glob);
	g_free(r);
}

struct cfs_faults *cfs_faults_new(void)
{
	struct cfs_faults *f = g_new0(struct cfs_faults, 1);

	f->rules = g_ptr_array_new_with_free_func(cfs_fault_free);
	/* rules on these would be accepted and never fire: refused, saying why */
	for (int op = 0; op < CFS_OP_MAX; op++)
		if (!cfs_op_replies(op))
			f->unsent[op] =
			    "nothing waits for its reply, so it can neither fail nor wait";
	return f;
}

void cfs_faults_free(struct cfs_faults *f)
{
	if (!f)
		return;
	g_ptr_array_free(f->rules, TRUE);
	g_free(f);
}

void cfs_fault_clear(struct cfs_faults *f)
{
	g_ptr_array_set_size(f->rules, 0);
}

bool cfs_faults_active(const struct cfs_faults *f)
{
	return f && f->rules->len > 0;
}

void cfs_faults_unsent(struct cfs_faults *f, enum cfs_op op, const char *why)
{
	if (f)
		f->unsent[op] = why;
}

static int cfs_op_of(const char *s)
{
	if (strcmp(s, "any") == 0 || strcmp(s, "*") == 0)
		return CFS_OP_MAX;
	for (int i = 0; i < CFS_OP_MAX; i++)
		if (strcmp(s, cfs_op_names[i]) == 0)
			return i;
	return -1;
}

/* One key=value word into R; NULL on success, else what is wrong. */
static const char *cfs_fault_word(struct cfs_fault *r, const char *key, const char *val)
{
	char *end;

	if (strcmp(key, "op") == 0)
		return (r->op = cfs_op_of(val)) < 0 ? "unknown op" : NULL;
	if (strcmp(key, "path") == 0) {
		g_free(r->glob);
		r->glob = g_strdup(val);
		return NULL;
	}
	if (strcmp(key, "errno") == 0)
		return (r->err = cfs_errno_of(val)) < 0 ? "unknown errno" : NULL;
	if (strcmp(key, "prob") == 0) {
		r->prob = strtod(val, &end);
		return (*end || !(r->prob >= 0 && r->prob <= 1)) ? "prob must be 0..1" : NULL;
	}
	if (strcmp(key, "seed") == 0) {
		r->rng = strtoull(val, &end, 10);
		return *end ? "seed must be a number" : NULL;
	}
	if (strcmp(key, "delay") == 0) {
		unsigned long v = strtoul(val, &end, 10);
		r->delay_ms = (unsigned)v;
		return (*end || v > CFS_FAULT_MAX_DELAY_MS) ? "delay must be 0..600000 ms" : NULL;
	}
	return "unknown key";
}

int cfs_fault_add(struct cfs_faults *f, const char *args, char **err)
{
	struct cfs_fault *r = g_new0(struct cfs_fault, 1);
	gchar **words = g_strsplit_set(args, " \t", -1);
	const char *bad = NULL, *what = NULL;

	r->op = -1;
	r->prob = 1.0;
	for (gchar **w = words; *w && !bad; w++) {
		char *eq = strchr(*w, '=');
		if (!**w)
			continue;
		if (!eq) {
			bad = "expected key=value";
			what = *w;
			break;
		}
		*eq = '\0';
		what = *w;
		bad = cfs_fault_word(r, *w, eq + 1);
	}
	if (!bad && (r->op < 0 || !r->glob || (!r->err && !r->delay_ms))) {
		bad = "needs op=, path= and errno= or delay=";
		what = "fault add";
	} else if (!bad && r->op != CFS_OP_MAX && f->unsent[r->op]) {
		bad = f->unsent[r->op];
		what = cfs_op_names[r->op];
	}
	if (bad) {
		*err = g_strdup_printf("%s: %s", what, bad);
		g_strfreev(words);
		cfs_fault_free(r);
		return -EINVAL;
	}
	g_strfreev(words);
	g_ptr_array_add(f->rules, r);
	return 0;
}

/* splitmix64: a uniform double in [0, 1) */
static double cfs_fault_draw(struct cfs_fault *r)
{
	uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) / (double)(1ull << 53);
}

bool cfs_fault_match(struct cfs_faults *f, enum cfs_op op, const char *path,
		     enum cfs_fault_kind kind, int *err, unsigned *delay_ms)
{
	*err = 0;
	*delay_ms = 0;
	for (guint i = 0; f && i < f->rules->len; i++) {
		struct cfs_fault *r = g_ptr_array_index(f->rules, i);
		if ((kind == CFS_FAULT_ERRNO ? !r->err : !r->delay_ms) ||
		    (r->op != CFS_OP_MAX && r->op != (int)op) || fnmatch(r->glob, path, 0) != 0)
			continue;
		r->checks++;
		if (r->prob < 1.0 && cfs_fault_draw(r) >= r->prob)
			continue;
		r->hits++;
		*err = r->err;
		*delay_ms = r->delay_ms;
		return true;
	}
	return false;
}

void cfs_fault_list(const struct cfs_faults *f, JsonBuilder *b)
{
	json_builder_begin_array(b);
	for (guint i = 0; i < f->rules->len; i++) {
		const struct cfs_fault *r = g_ptr_array_index(f->rules, i);
		json_builder_begin_object(b);
		json_builder_set_member_name(b, "op");
		json_builder_add_string_value(b, r->op == CFS_OP_MAX ? "any" : cfs_op_names[r->op]);
		json_builder_set_member_name(b, "path");
		json_builder_add_string_value(b, r->glob);
		json_builder_set_member_name(b, "errno");
		json_builder_add_string_value(b, !r->err		  ? ""
						 : cfs_errno_name(r->err) ? cfs_errno_name(r->err)
									  : "other");
		json_builder_set_member_name(b, "prob");
		json_builder_add_double_value(b, r->prob);
		json_builder_set_member_name(b, "delay_ms");
		json_builder_add_int_value(b, r->delay_ms);
		json_builder_set_member_name(b, "checks");
		json_builder_add_int_value(b, (gint64)r->checks);
		json_builder_set_member_name(b, "hits");
		json_builder_add_int_value(b, (gint64)r->hits);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
}
