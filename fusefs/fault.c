#include "fault.h"
#include "change.h"
#include "errname.h"
#include "json.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CFS_FAULT_MAX_DELAY_MS = 600000 }; /* ten minutes: longer would only hang clients */

struct cfs_fault {
	unsigned id;
	int op; /* enum cfs_op, or CFS_OP_MAX for any */
	char *glob;
	int err;
	double prob;
	unsigned delay_ms;
	uint32_t short_len;
	bool nowrite;
	bool hold; /* until released, or hold_ms (0: no timeout) */
	unsigned hold_ms;
	unsigned held; /* requests the gate keeps waiting for this rule now (delays too) */
	uint64_t seed; /* as given, for the list and the log */
	uint64_t rng;  /* splitmix64 state: the same seed gives the same sequence of hits */
	uint64_t checks, hits;
	struct cfs_change *change; /* change rules: what they do to the tree */
	bool after;		   /* ... after the matching request's reply, not before it */
	/* how often: at the nth matching request only, or at most count times (0: unbounded);
	 * change rules fire once unless told (how_set) */
	uint64_t nth, count;
	bool every, once, how_set, when_set;
	/* who: only requests of this pid, this uid, this process name (has_: given) */
	bool has_pid, has_uid;
	uint32_t pid, uid;
	char *comm;
};

/* One hit, as `fault log` shows it: enough to tell which draw of which seed fired, who sent
 * the request, and what a change rule did. */
struct cfs_fault_hit {
	unsigned id;
	int op;
	char *path;
	uint32_t pid, uid; /* the request's sender, as the kernel gave them */
	char *change;	   /* a change rule's lines, and how they went (NULL: not a change) */
	char *result;
	double prob, draw; /* draw < 0: the rule always fires, nothing was drawn */
	uint64_t seed, check;
	gint64 time_us;
};

struct cfs_faults {
	GPtrArray *rules;
	unsigned next_id; /* ids are never reused, so a log line names one rule for good */
	const char *unsent[CFS_OP_MAX];		     /* why an op never reaches us, or NULL */
	struct cfs_fault_hit log[CFS_FAULT_LOG_MAX]; /* a ring: hit n at n % MAX */
	uint64_t logged;
	const char *no_change; /* why change rules are refused (a read-only mount), or NULL */
	uint64_t changes, changes_failed;
	uint64_t logged_base; /* logged at `stats reset`: logged itself numbers the log */
};

/* A rule may give an errno's name or number (errname.h), up to what the kernel takes in a
 * reply (transport.h: a larger one would leave the caller waiting for good over /dev/fuse,
 * and give EINVAL over io_uring). */
enum { CFS_ERRNO_MAX = CFS_REPLY_ERRNO_MAX };

static void cfs_fault_free(gpointer p)
{
	struct cfs_fault *r = p;

	g_free(r->glob);
	g_free(r->comm);
	cfs_change_free(r->change);
	g_free(r);
}

static void cfs_fault_hit_free(struct cfs_fault_hit *h)
{
	g_free(h->path);
	g_free(h->change);
	g_free(h->result);
}

struct cfs_faults *cfs_faults_new(void)
{
	struct cfs_faults *f = g_new0(struct cfs_faults, 1);

	f->rules = g_ptr_array_new_with_free_func(cfs_fault_free);
	f->next_id = 1;
	/* rules on these would be accepted and never fire: refused, saying why */
	for (int op = 0; op < CFS_OP_MAX; op++)
		f->unsent[op] = cfs_op_nofault(op);
	return f;
}

void cfs_faults_free(struct cfs_faults *f)
{
	if (!f)
		return;
	g_ptr_array_free(f->rules, TRUE);
	for (size_t i = 0; i < CFS_FAULT_LOG_MAX; i++)
		cfs_fault_hit_free(&f->log[i]);
	g_free(f);
}

void cfs_fault_clear(struct cfs_faults *f)
{
	g_ptr_array_set_size(f->rules, 0);
}

int cfs_fault_remove(struct cfs_faults *f, unsigned id)
{
	for (guint i = 0; i < f->rules->len; i++) {
		const struct cfs_fault *r = g_ptr_array_index(f->rules, i);
		if (r->id == id) {
			g_ptr_array_remove_index(f->rules, i); /* keeps the others' order */
			return 0;
		}
	}
	return -ENOENT;
}

static struct cfs_fault *cfs_fault_find(const struct cfs_faults *f, unsigned id)
{
	for (guint i = 0; i < f->rules->len; i++) {
		struct cfs_fault *r = g_ptr_array_index(f->rules, i);
		if (r->id == id)
			return r;
	}
	return NULL;
}

bool cfs_fault_exists(const struct cfs_faults *f, unsigned id)
{
	return cfs_fault_find(f, id) != NULL;
}

void cfs_fault_holding(struct cfs_faults *f, unsigned id, int delta)
{
	struct cfs_fault *r = f ? cfs_fault_find(f, id) : NULL;

	if (r && (delta > 0 || r->held > 0))
		r->held += (unsigned)delta;
}

/* A rule that fired as often as it may stands no more: it is listed, never checked. */
static bool cfs_fault_spent(const struct cfs_fault *r)
{
	return (r->nth && r->checks >= r->nth) || (r->count && r->hits >= r->count);
}

bool cfs_faults_active(const struct cfs_faults *f)
{
	for (guint i = 0; f && i < f->rules->len; i++)
		if (!cfs_fault_spent(g_ptr_array_index(f->rules, i)))
			return true;
	return false;
}

void cfs_faults_no_change(struct cfs_faults *f, const char *why)
{
	f->no_change = why;
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

/* "unknown op" and the names a rule may use, built once: the loop thread alone asks. */
static const char *cfs_op_list(void)
{
	static char list[CFS_OP_MAX * 16 + 64];

	if (!list[0]) {
		size_t at = (size_t)snprintf(list, sizeof(list), "unknown op; one of: any");
		for (int i = 0; i < CFS_OP_MAX; i++)
			if (!cfs_op_nofault(i) && at < sizeof(list))
				at += (size_t)snprintf(list + at, sizeof(list) - at, " %s",
						       cfs_op_names[i]);
	}
	return list;
}

static const char *cfs_fault_number(const char *val, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(val, &end, 10);
	return (!*val || *end || *val == '-' || errno || *out > max) ? "out of range" : NULL;
}

/* One key=value word into R; NULL on success, else what is wrong. */
static const char *cfs_fault_word(struct cfs_fault *r, const char *key, const char *val)
{
	unsigned long v;
	char *end;

	if (strcmp(key, "op") == 0)
		return (r->op = cfs_op_of(val)) < 0 ? cfs_op_list() : NULL;
	if (strcmp(key, "path") == 0) {
		g_free(r->glob);
		r->glob = g_strdup(val);
		return NULL;
	}
	if (strcmp(key, "errno") == 0)
		return (r->err = cfs_errno_parse(val, CFS_ERRNO_MAX)) < 0
			   ? "errno must be a name the C library knows (EIO) or a number 1..511: "
			     "the kernel refuses a larger one in a reply"
			   : NULL;
	if (strcmp(key, "prob") == 0) {
		r->prob = strtod(val, &end);
		return (*end || !(r->prob >= 0 && r->prob <= 1)) ? "prob must be 0..1" : NULL;
	}
	if (strcmp(key, "seed") == 0) {
		r->seed = r->rng = strtoull(val, &end, 10);
		return (!*val || *end) ? "seed must be a number" : NULL;
	}
	if (strcmp(key, "delay") == 0) {
		const char *bad = cfs_fault_number(val, CFS_FAULT_MAX_DELAY_MS, &v);
		r->delay_ms = (unsigned)v;
		return bad ? "delay must be 0..600000 ms" : NULL;
	}
	if (strcmp(key, "hold") == 0) {
		const char *bad = cfs_fault_number(val, CFS_FAULT_MAX_DELAY_MS, &v);
		r->hold = true;
		r->hold_ms = (unsigned)v;
		return bad || !v ? "hold=MS takes 1..600000 ms (hold alone: until fault release)"
				 : NULL;
	}
	if (strcmp(key, "when") == 0) {
		r->after = strcmp(val, "after") == 0;
		r->when_set = true;
		return r->after || strcmp(val, "before") == 0 ? NULL
							      : "when must be before or after";
	}
	if (strcmp(key, "nth") == 0 || strcmp(key, "count") == 0) {
		const char *bad = cfs_fault_number(val, UINT32_MAX, &v);
		*(key[0] == 'n' ? &r->nth : &r->count) = v;
		r->how_set = true;
		return bad || !v ? "nth= and count= take 1..4294967295" : NULL;
	}
	if (strcmp(key, "pid") == 0 || strcmp(key, "uid") == 0) {
		const char *bad = cfs_fault_number(val, UINT32_MAX, &v);
		*(key[0] == 'p' ? &r->pid : &r->uid) = (uint32_t)v;
		*(key[0] == 'p' ? &r->has_pid : &r->has_uid) = true;
		return bad ? "pid= and uid= take a number" : NULL;
	}
	if (strcmp(key, "comm") == 0) {
		g_free(r->comm);
		r->comm = g_strdup(val);
		/* the kernel keeps 15 bytes of a name (TASK_COMM_LEN): a longer one never matches
		 */
		return !*val || strlen(val) > 15 ? "comm= takes a process name of 1..15 bytes, as "
						   "/proc/PID/comm shows it"
						 : NULL;
	}
	if (strcmp(key, "short") == 0) {
		const char *bad = cfs_fault_number(val, UINT32_MAX, &v);
		r->short_len = (uint32_t)v;
		/* a 0-byte answer would mean the end of the file, or a writer looping for ever */
		return bad || !v ? "short must be 1..4294967295 bytes" : NULL;
	}
	return "unknown key";
}

/* ENOSYS is "not implemented" to the kernel, and for these ops it remembers that for the life
 * of the mount (fs/fuse: no_open, no_opendir, no_flush, no_fsync, no_fsyncdir, no_create,
 * no_rename2, no_link, no_getxattr, no_listxattr, no_setxattr, no_removexattr): one hit would stop
 * it sending the op, so later rules on it would be accepted and never fire. What the kernel does
 * then, op by op: */
#define CFS_ENOSYS_KEPT(then)                                                                      \
	"errno=ENOSYS would stop the kernel sending it on this mount for good (" then              \
	"), and no later rule on it could fire: give another errno (EIO, EPERM, ...)"
static const struct {
	enum cfs_op op;
	const char *why;
} cfs_enosys_kept[] = {
    {CFS_OP_open, CFS_ENOSYS_KEPT("it would open files without asking")},
    {CFS_OP_opendir, CFS_ENOSYS_KEPT("it would open directories without asking")},
    {CFS_OP_flush, CFS_ENOSYS_KEPT("close(2) would return 0 without asking")},
    {CFS_OP_fsync, CFS_ENOSYS_KEPT("fsync(2) would return 0 without asking")},
    {CFS_OP_fsyncdir, CFS_ENOSYS_KEPT("fsync(2) of a directory would return 0 without asking")},
    {CFS_OP_create, CFS_ENOSYS_KEPT("it would create files with mknod, then open")},
    {CFS_OP_rename, CFS_ENOSYS_KEPT("renameat2(2) with flags would fail with EINVAL unasked")},
    {CFS_OP_link, CFS_ENOSYS_KEPT("link(2) would fail with EPERM unasked")},
    {CFS_OP_getxattr, CFS_ENOSYS_KEPT("getxattr(2) would fail with EOPNOTSUPP unasked")},
    {CFS_OP_listxattr, CFS_ENOSYS_KEPT("listxattr(2) would fail with EOPNOTSUPP unasked")},
    {CFS_OP_setxattr, CFS_ENOSYS_KEPT("setxattr(2) would fail with EOPNOTSUPP unasked")},
    {CFS_OP_removexattr, CFS_ENOSYS_KEPT("removexattr(2) would fail with EOPNOTSUPP unasked")},
};

/* Why an ENOSYS rule on OP (CFS_OP_MAX: any) is refused, or NULL. */
static const char *cfs_enosys_refused(int op)
{
	if (op == CFS_OP_MAX)
		return "errno=ENOSYS with op=any would reach open, opendir, flush, fsync, "
		       "fsyncdir, create, rename, link and the xattr ops, which the kernel would "
		       "then stop sending for good: name the op";
	for (size_t i = 0; i < G_N_ELEMENTS(cfs_enosys_kept); i++)
		if (cfs_enosys_kept[i].op == (enum cfs_op)op)
			return cfs_enosys_kept[i].why;
	return NULL;
}

/* What is wrong with the rule as a whole, with *what naming the culprit; NULL if nothing. */
static const char *cfs_fault_check(const struct cfs_faults *f, const struct cfs_fault *r,
				   const char **what)
{
	int effects = (r->err != 0) + (r->short_len != 0) + r->nowrite;

	*what = "add";
	if (r->op < 0 || !r->glob || (!effects && !r->delay_ms && !r->change && !r->hold))
		return "needs op=, path= and errno=, short=, nowrite, delay=, hold or change=";
	if (effects > 1)
		return "errno=, short= and nowrite exclude each other";
	/* a held request is served as usual once released: what else to do with it is the
	 * other rules' */
	if (r->hold && (effects || r->delay_ms || r->change))
		return "hold is a rule of its own: no errno=, short=, nowrite, delay= nor change= "
		       "with it";
	if (r->change && (effects || r->delay_ms))
		return "change= is a rule of its own: no errno=, short=, nowrite nor delay= with "
		       "it";
	if (r->change && f->no_change)
		return f->no_change;
	if ((r->nth != 0) + (r->count != 0) + r->every + r->once > 1)
		return "once, every, nth= and count= exclude each other";
	if (r->nth && r->prob < 1.0)
		return "nth= fires at one request: no prob= with it";
	if (r->op != CFS_OP_MAX && f->unsent[r->op]) {
		*what = cfs_op_names[r->op];
		return f->unsent[r->op];
	}
	if (r->err == ENOSYS && cfs_enosys_refused(r->op)) {
		*what = r->op == CFS_OP_MAX ? "any" : cfs_op_names[r->op];
		return cfs_enosys_refused(r->op);
	}
	if (r->short_len && r->op != CFS_OP_read && r->op != CFS_OP_write)
		return "short= cuts a read or a write: give op=read or op=write";
	if (r->nowrite && r->op != CFS_OP_write)
		return "nowrite drops a write's data: give op=write";
	/* Without an open the kernel reads and writes through its page cache: it would take
	 * a short read for the end of the file, and keep data a nowrite dropped. */
	if ((r->short_len || r->nowrite) && f->unsent[CFS_OP_open])
		return "short= and nowrite need every open answered (-o opens=answer), so that "
		       "reads and writes bypass the kernel's page cache";
	return NULL;
}

/* The words of ARGS into R: NULL, or what is wrong with *what naming the culprit. */
static const char *cfs_fault_parse(struct cfs_fault *r, gchar **words, const char **what)
{
	for (gchar **w = words; *w; w++) {
		char *eq = strchr(*w, '=');
		const char *bad;
		if (!**w)
			continue;
		*what = *w;
		if (strcmp(*w, "nowrite") == 0 || strcmp(*w, "hold") == 0) {
			*(**w == 'n' ? &r->nowrite : &r->hold) = true;
			continue;
		}
		if (strcmp(*w, "every") == 0 || strcmp(*w, "once") == 0) {
			*(**w == 'e' ? &r->every : &r->once) = true;
			r->how_set = true;
			continue;
		}
		if (!eq)
			return "expected key=value";
		*eq = '\0';
		if ((bad = cfs_fault_word(r, *w, eq + 1)))
			return bad;
	}
	return NULL;
}

/* "change=" as a word of ARGS: where it starts, or NULL. The change takes the rest of the
 * line, blanks and all. */
static const char *cfs_fault_change_word(const char *args)
{
	for (const char *p = strstr(args, "change="); p; p = strstr(p + 1, "change="))
		if (p == args || p[-1] == ' ' || p[-1] == '\t')
			return p;
	return NULL;
}

int cfs_fault_add(struct cfs_faults *f, const char *args, char **err)
{
	struct cfs_fault *r = g_new0(struct cfs_fault, 1);
	const char *change = cfs_fault_change_word(args);
	gchar *head = g_strndup(args, change ? (gsize)(change - args) : strlen(args));
	gchar **words = g_strsplit_set(head, " \t", -1);
	const char *bad, *what = "add";
	char *why = NULL;

	r->op = -1;
	r->prob = 1.0;
	r->after = true;
	bad = cfs_fault_parse(r, words, &what);
	if (!bad && change && !(r->change = cfs_change_parse(change + 7, &why)))
		bad = why;
	if (!bad && !change && r->when_set)
		bad = "when= goes with change=";
	if (!bad)
		bad = cfs_fault_check(f, r, &what);
	if (bad && !why) /* WHAT may point into WORDS */
		why = g_strdup_printf("%s: %s", what, bad);
	g_strfreev(words);
	g_free(head);
	if (bad) {
		*err = why;
		cfs_fault_free(r);
		return -EINVAL;
	}
	if (r->once || (r->change && !r->how_set))
		r->count = 1; /* a change happens once unless told otherwise */
	r->id = f->next_id++;
	g_ptr_array_add(f->rules, r);
	return (int)r->id;
}

int cfs_faults_load(struct cfs_faults *f, const char *file, char **err)
{
	enum { MAX_BYTES = 1 << 20 }; /* rules, not data: a bigger file is a mistake */
	gchar *text = NULL, **lines;
	gsize len;
	GError *e = NULL;
	int rc = 0;

	if (!g_file_test(file, G_FILE_TEST_IS_REGULAR)) { /* not a device or a fifo to drain */
		*err = g_strdup_printf("%s: not a regular file", file);
		return -EINVAL;
	}
	if (!g_file_get_contents(file, &text, &len, &e)) {
		*err = g_strdup_printf("%s: %s", file, e->message);
		g_error_free(e);
		return -EINVAL;
	}
	if (len > MAX_BYTES || memchr(text, '\0', len)) {
		*err = g_strdup_printf("%s: not a rules file (a NUL byte, or over 1 MiB)", file);
		g_free(text);
		return -EINVAL;
	}
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i] && !rc; i++) {
		const char *l = lines[i] + strspn(lines[i], " \t");
		char *why = NULL;
		if (!*l || *l == '#')
			continue;
		rc = cfs_fault_add(f, l, &why) < 0 ? -EINVAL : 0;
		if (rc) {
			*err = g_strdup_printf("%s:%u: %s", file, i + 1, why);
			g_free(why);
		}
	}
	g_strfreev(lines);
	g_free(text);
	return rc;
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

static void cfs_fault_logged(struct cfs_faults *f, const struct cfs_fault *r, int op,
			     const char *path, const struct cfs_fault_who *who, double draw)
{
	struct cfs_fault_hit *h = &f->log[f->logged++ % CFS_FAULT_LOG_MAX];

	cfs_fault_hit_free(h);
	*h = (struct cfs_fault_hit){.id = r->id,
				    .op = op,
				    .path = g_strdup(path),
				    .pid = who ? who->pid : 0,
				    .uid = who ? who->uid : 0,
				    .change =
					r->change ? g_strdup(cfs_change_text(r->change)) : NULL,
				    .prob = r->prob,
				    .draw = draw,
				    .seed = r->seed,
				    .check = r->checks,
				    .time_us = g_get_real_time()};
}

void cfs_fault_changed(struct cfs_faults *f, const char *error)
{
	struct cfs_fault_hit *h;

	if (!f->logged || !(h = &f->log[(f->logged - 1) % CFS_FAULT_LOG_MAX])->change)
		return;
	g_free(h->result);
	h->result = g_strdup(error ? error : "applied");
	f->changes++;
	f->changes_failed += error != NULL;
}

/* The process name of PID, as /proc/PID/comm has it (without its newline), into BUF; false
 * when the process is gone. */
static bool cfs_fault_comm(uint32_t pid, char *buf, size_t size)
{
	char file[32];
	FILE *in;
	bool ok;

	snprintf(file, sizeof(file), "/proc/%u/comm", pid);
	in = fopen(file, "re");
	if (!in)
		return false;
	ok = fgets(buf, (int)size, in) != NULL;
	fclose(in);
	buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* Is WHO (NULL: unknown) one the rule's filters take? */
static bool cfs_fault_who_matches(const struct cfs_fault *r, const struct cfs_fault_who *who)
{
	char comm[64];

	if (!r->has_pid && !r->has_uid && !r->comm)
		return true;
	if (!who || (r->has_pid && who->pid != r->pid) || (r->has_uid && who->uid != r->uid))
		return false;
	return !r->comm ||
	       (cfs_fault_comm(who->pid, comm, sizeof(comm)) && strcmp(comm, r->comm) == 0);
}

static bool cfs_fault_is(const struct cfs_fault *r, enum cfs_fault_kind kind)
{
	switch (kind) {
	case CFS_FAULT_ERRNO:
		return r->err != 0;
	case CFS_FAULT_DELAY:
		return r->delay_ms != 0 || r->hold;
	case CFS_FAULT_SHORT:
		return r->short_len != 0;
	case CFS_FAULT_NOWRITE:
		return r->nowrite;
	case CFS_FAULT_CHANGE:
		return r->change != NULL;
	}
	return false;
}

bool cfs_fault_match_who(struct cfs_faults *f, enum cfs_op op, const char *path,
			 const struct cfs_fault_who *who, enum cfs_fault_kind kind,
			 struct cfs_fault_effect *out)
{
	*out = (struct cfs_fault_effect){0};
	for (guint i = 0; f && i < f->rules->len; i++) {
		struct cfs_fault *r = g_ptr_array_index(f->rules, i);
		double draw = -1;
		if (!cfs_fault_is(r, kind) || cfs_fault_spent(r) ||
		    (r->op != CFS_OP_MAX && r->op != (int)op) || fnmatch(r->glob, path, 0) != 0 ||
		    !cfs_fault_who_matches(r, who))
			continue;
		r->checks++;
		if (r->nth && r->checks != r->nth)
			continue;
		if (r->prob < 1.0 && (draw = cfs_fault_draw(r)) >= r->prob)
			continue;
		r->hits++;
		cfs_fault_logged(f, r, op, path, who, draw);
		*out = (struct cfs_fault_effect){.id = r->id,
						 .err = r->err,
						 .delay_ms = r->hold ? r->hold_ms : r->delay_ms,
						 .hold = r->hold,
						 .short_len = r->short_len,
						 .change = r->change,
						 .after = r->after};
		return true;
	}
	return false;
}

bool cfs_fault_match(struct cfs_faults *f, enum cfs_op op, const char *path,
		     enum cfs_fault_kind kind, struct cfs_fault_effect *out)
{
	return cfs_fault_match_who(f, op, path, NULL, kind, out);
}

static const char *cfs_fault_op_name(int op)
{
	return op == CFS_OP_MAX ? "any" : cfs_op_names[op];
}

static void cfs_fault_one(const struct cfs_fault *r, JsonBuilder *b)
{
	const char *name = cfs_errno_name(r->err);

	json_builder_begin_object(b);
	cfs_json_int(b, "id", r->id);
	cfs_json_str(b, "op", cfs_fault_op_name(r->op), -1);
	cfs_json_str(b, "path", r->glob, -1);
	cfs_json_str(b, "errno", !r->err ? "" : name ? name : "other", -1);
	cfs_json_int(b, "short", r->short_len);
	json_builder_set_member_name(b, "nowrite");
	json_builder_add_boolean_value(b, r->nowrite);
	json_builder_set_member_name(b, "prob");
	json_builder_add_double_value(b, r->prob);
	/* JSON numbers are doubles to many readers: a 64-bit seed goes as a string */
	char seed[24];
	snprintf(seed, sizeof(seed), "%" G_GUINT64_FORMAT, r->seed);
	cfs_json_str(b, "seed", seed, -1);
	cfs_json_int(b, "delay_ms", r->delay_ms);
	json_builder_set_member_name(b, "hold");
	json_builder_add_boolean_value(b, r->hold);
	cfs_json_int(b, "hold_ms", r->hold_ms); /* 0: until released */
	cfs_json_int(b, "held", r->held);
	cfs_json_int(b, "checks", (gint64)r->checks);
	cfs_json_int(b, "hits", (gint64)r->hits);
	cfs_json_str(b, "change", r->change ? cfs_change_text(r->change) : "", -1);
	if (r->change)
		cfs_json_str(b, "when", r->after ? "after" : "before", -1);
	if (r->nth)
		cfs_json_int(b, "nth", (gint64)r->nth);
	if (r->count)
		cfs_json_int(b, "count", (gint64)r->count);
	if (r->has_pid)
		cfs_json_int(b, "pid", r->pid);
	if (r->has_uid)
		cfs_json_int(b, "uid", r->uid);
	if (r->comm)
		cfs_json_str(b, "comm", r->comm, -1);
	json_builder_set_member_name(b, "spent");
	json_builder_add_boolean_value(b, cfs_fault_spent(r));
	json_builder_end_object(b);
}

void cfs_fault_list(const struct cfs_faults *f, JsonBuilder *b)
{
	json_builder_begin_array(b);
	for (guint i = 0; i < f->rules->len; i++)
		cfs_fault_one(g_ptr_array_index(f->rules, i), b);
	json_builder_end_array(b);
}

static void cfs_fault_hit_json(const struct cfs_fault_hit *h, JsonBuilder *b)
{
	char seed[24];

	json_builder_begin_object(b);
	cfs_json_int(b, "id", h->id);
	cfs_json_str(b, "op", cfs_op_names[h->op], -1);
	cfs_json_str(b, "path", h->path, -1);
	json_builder_set_member_name(b, "prob");
	json_builder_add_double_value(b, h->prob);
	snprintf(seed, sizeof(seed), "%" G_GUINT64_FORMAT, h->seed);
	cfs_json_str(b, "seed", seed, -1);
	cfs_json_int(b, "check", (gint64)h->check); /* the rule's n-th matching request */
	json_builder_set_member_name(b, "draw");
	if (h->draw < 0)
		json_builder_add_null_value(b);
	else
		json_builder_add_double_value(b, h->draw);
	cfs_json_int(b, "time_us", h->time_us);
	cfs_json_int(b, "pid", h->pid);
	cfs_json_int(b, "uid", h->uid);
	if (h->change) {
		cfs_json_str(b, "change", h->change, -1);
		cfs_json_str(b, "result", h->result ? h->result : "not applied", -1);
	}
	json_builder_end_object(b);
}

void cfs_fault_log(const struct cfs_faults *f, JsonBuilder *b)
{
	uint64_t first = f->logged > CFS_FAULT_LOG_MAX ? f->logged - CFS_FAULT_LOG_MAX : 0;

	cfs_json_int(b, "hits", (gint64)(f->logged - f->logged_base));
	cfs_json_int(b, "dropped", (gint64)first);
	json_builder_set_member_name(b, "log");
	json_builder_begin_array(b);
	for (uint64_t n = first; n < f->logged; n++)
		cfs_fault_hit_json(&f->log[n % CFS_FAULT_LOG_MAX], b);
	json_builder_end_array(b);
}

void cfs_fault_stats(const struct cfs_faults *f, JsonBuilder *b)
{
	uint64_t live = 0, held = 0;

	for (guint i = 0; i < f->rules->len; i++) {
		const struct cfs_fault *r = g_ptr_array_index(f->rules, i);
		live += !cfs_fault_spent(r);
		held += r->held;
	}
	cfs_json_int(b, "rules", f->rules->len);
	cfs_json_int(b, "rules_standing", (gint64)live);
	cfs_json_int(b, "hits", (gint64)(f->logged - f->logged_base));
	cfs_json_int(b, "changes", (gint64)f->changes);
	cfs_json_int(b, "changes_failed", (gint64)f->changes_failed);
	cfs_json_int(b, "held", (gint64)held);
}

void cfs_fault_stats_reset(struct cfs_faults *f)
{
	f->logged_base = f->logged;
	f->changes = f->changes_failed = 0;
}
