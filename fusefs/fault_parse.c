/* A fault rule from its text: `fault add`'s words and -o faults='s lines (fault.h). */
#include "fault_int.h"
#include "errname.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	int base; /* mode is octal, as chmod takes it */
	uint64_t max;
} cfs_attr_fields[CFS_A_FIELDS] = {
    [CFS_A_SIZE] = {"size", 10, INT64_MAX},    [CFS_A_MODE] = {"mode", 8, 07777},
    [CFS_A_NLINK] = {"nlink", 10, UINT32_MAX}, [CFS_A_UID] = {"uid", 10, UINT32_MAX - 1},
    [CFS_A_GID] = {"gid", 10, UINT32_MAX - 1}, [CFS_A_ATIME] = {"atime", 10, INT64_MAX},
    [CFS_A_MTIME] = {"mtime", 10, INT64_MAX},  [CFS_A_CTIME] = {"ctime", 10, INT64_MAX},
};

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

/* errno=E or errno=E1|E2|...: each a name or a number the kernel takes in a reply. */
static const char *cfs_fault_errnos(struct cfs_fault *r, const char *val)
{
	static char why[160]; /* names the bad one; the loop thread alone parses rules */
	gchar **list = g_strsplit(val, "|", -1);
	const char *bad = NULL;

	r->nerrs = 0;
	for (gchar **e = list; *e && !bad; e++) {
		int err = cfs_errno_parse(*e, CFS_ERRNO_MAX);
		if (r->nerrs == CFS_FAULT_ERRNOS)
			bad = "errno= takes at most 16 errnos";
		else if (err < 0 && !list[1])
			bad = "errno must be a name the C library knows (EIO) or a number 1..511: "
			      "the kernel refuses a larger one in a reply";
		else if (err < 0) {
			snprintf(why, sizeof(why),
				 "'%.40s' in the list is not an errno: each must be a name the C "
				 "library knows (EIO) or a number 1..511",
				 *e);
			bad = why;
		} else
			r->errs[r->nerrs++] = err;
	}
	g_strfreev(list);
	return bad;
}

/* kill=SIG: a name, with or without SIG (TERM, SIGKILL, sigusr1), or a number; -1: none. */
static int cfs_signal_parse(const char *s)
{
	const char *name = g_ascii_strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
	unsigned long v;

	if (!cfs_fault_number(s, (unsigned long)SIGRTMAX, &v))
		return v ? (int)v : -1;
	for (int sig = 1; sig < SIGRTMIN; sig++) {
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev && g_ascii_strcasecmp(abbrev, name) == 0)
			return sig;
	}
	return -1;
}

/* at=OFF,len=N (or at=OFF and len=N apart): the byte range reads and writes must touch. */
static const char *cfs_fault_range(struct cfs_fault *r, const char *key, const char *val)
{
	const char *comma = strcmp(key, "at") == 0 ? strchr(val, ',') : NULL;
	gchar *off = comma ? g_strndup(val, (gsize)(comma - val)) : g_strdup(val);
	unsigned long long v;
	char *end;
	bool bad;

	errno = 0;
	v = strtoull(off, &end, 10);
	bad = !*off || *end || *off == '-' || errno;
	g_free(off);
	if (strcmp(key, "len") == 0) {
		r->len = v;
	} else {
		r->at = v;
		r->has_range = true;
	}
	if (bad || (strcmp(key, "len") == 0 && !v))
		return "at=OFF,len=N takes a byte offset and a length of 1 or more";
	if (comma && strncmp(comma + 1, "len=", 4) != 0)
		return "at=OFF,len=N: expected len= after the comma";
	return comma ? cfs_fault_range(r, "len", comma + 5) : NULL;
}

/* One FIELD:VALUE of attr= into A; NULL, or what is wrong. */
static const char *cfs_fault_attr_one(struct cfs_fault_attrs *a, const char *item)
{
	const char *colon = strchr(item, ':');
	size_t n = colon ? (size_t)(colon - item) : 0;
	unsigned long long v;
	char *end;

	if (n == 4 && strncmp(item, "kind", 4) == 0)
		return "attr=kind: the kernel takes an inode whose kind changed for a broken one "
		       "(EIO at every later call): not offered";
	for (int i = 0; colon && i < CFS_A_FIELDS; i++) {
		if (strlen(cfs_attr_fields[i].name) != n ||
		    strncmp(item, cfs_attr_fields[i].name, n))
			continue;
		errno = 0;
		v = strtoull(colon + 1, &end, cfs_attr_fields[i].base);
		if (!colon[1] || *end || colon[1] == '-' || errno || v > cfs_attr_fields[i].max)
			return "attr=: a value out of range (mode is octal, 0..7777; the others "
			       "decimal numbers; times in seconds since the epoch)";
		a->set[i] = true;
		a->val[i] = v;
		return NULL;
	}
	return "attr= takes FIELD:VALUE,... with FIELD one of size, mode, nlink, uid, gid, atime, "
	       "mtime, ctime";
}

/* attr=FIELD:VALUE,FIELD:VALUE... */
static const char *cfs_fault_attrs_parse(struct cfs_fault *r, const char *val)
{
	gchar **items = g_strsplit(val, ",", -1);
	const char *bad = NULL;

	if (!r->attrs)
		r->attrs = g_new0(struct cfs_fault_attrs, 1);
	g_free(r->attrs->text);
	r->attrs->text = g_strdup(val);
	for (gchar **i = items; *i && !bad; i++)
		bad = cfs_fault_attr_one(r->attrs, *i);
	if (!*val) /* no field at all: g_strsplit gives no item to refuse */
		bad = cfs_fault_attr_one(r->attrs, "");
	g_strfreev(items);
	return bad;
}

/* after=, up=, down= and to=: NULL on success, else what is wrong; KEY unknown here:
 * "unknown key". */
static const char *cfs_fault_selector(struct cfs_fault *r, const char *key, const char *val)
{
	unsigned long v;
	const char *bad;

	if (strcmp(key, "after") == 0) {
		bad = cfs_fault_number(val, UINT32_MAX, &v);
		r->skip = v;
		/* after=0 would be every match: refused as nth=0 is, so a typo shows */
		return bad || !v ? "after= takes 1..4294967295 (the matching requests that pass "
				   "first)"
				 : NULL;
	}
	if (strcmp(key, "up") == 0 || strcmp(key, "down") == 0) {
		bad = cfs_fault_number(val, CFS_FAULT_MAX_WINDOW_MS, &v);
		*(key[0] == 'u' ? &r->up_ms : &r->down_ms) = (unsigned)v;
		return bad || !v ? "up= and down= take 1..3600000 ms" : NULL;
	}
	if (strcmp(key, "to") == 0) {
		g_free(r->to);
		r->to = g_strdup(val);
		return *val ? NULL : "to= takes a glob of the new path";
	}
	return "unknown key";
}

/* The effects and selectors of issue 34's rules: NULL on success, else what is wrong; KEY
 * unknown here: "unknown key". */
static const char *cfs_fault_word2(struct cfs_fault *r, const char *key, const char *val)
{
	unsigned long v;

	if (strcmp(key, "errno") == 0)
		return cfs_fault_errnos(r, val);
	if (strcmp(key, "kill") == 0)
		return (r->kill_sig = cfs_signal_parse(val)) < 0
			   ? "kill= takes a signal name (TERM, SIGKILL, USR1, ...) or a number "
			     "1..64"
			   : NULL;
	if (strcmp(key, "corrupt") == 0) {
		for (int c = CFS_CORRUPT_ZERO; c <= CFS_CORRUPT_FLIP; c++)
			if (strcmp(val, cfs_corrupt_names[c]) == 0)
				r->corrupt = (enum cfs_corrupt)c;
		return r->corrupt ? NULL : "corrupt= takes zero, random or flip";
	}
	if (strcmp(key, "bytes") == 0) {
		const char *bad = cfs_fault_number(val, CFS_FAULT_MAX_BYTES, &v);
		r->corrupt_bytes = (uint32_t)v;
		return bad || !v ? "bytes= takes 1..1048576" : NULL;
	}
	if (strcmp(key, "at") == 0 || strcmp(key, "len") == 0)
		return cfs_fault_range(r, key, val);
	if (strcmp(key, "attr") == 0)
		return cfs_fault_attrs_parse(r, val);
	return cfs_fault_selector(r, key, val);
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
	return cfs_fault_word2(r, key, val);
}

/* ENOSYS is "not implemented" to the kernel, and for these ops it remembers that for the life
 * of the mount (fs/fuse: no_open, no_opendir, no_flush, no_fsync, no_fsyncdir, no_create,
 * no_rename2, no_link, no_fallocate, no_lseek, no_getxattr, no_listxattr, no_setxattr,
 * no_removexattr): one hit would stop it sending the op, so later rules on it would be
 * accepted and never fire. What the kernel does then, op by op: */
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
    {CFS_OP_fallocate, CFS_ENOSYS_KEPT("fallocate(2) would fail with EOPNOTSUPP unasked")},
    {CFS_OP_lseek, CFS_ENOSYS_KEPT("SEEK_DATA and SEEK_HOLE would see one run of data, unasked")},
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
		       "fsyncdir, create, rename, link, fallocate, lseek and the xattr ops, which "
		       "the "
		       "kernel would then stop sending for good: name the op";
	for (size_t i = 0; i < G_N_ELEMENTS(cfs_enosys_kept); i++)
		if (cfs_enosys_kept[i].op == (enum cfs_op)op)
			return cfs_enosys_kept[i].why;
	return NULL;
}

static bool cfs_fault_has_errno(const struct cfs_fault *r, int err)
{
	for (unsigned i = 0; i < r->nerrs; i++)
		if (r->errs[i] == err)
			return true;
	return false;
}

/* What is wrong with the kill=, corrupt= and at= of a rule; NULL if nothing. */
static const char *cfs_fault_check2(const struct cfs_fault *r)
{
	bool io = r->op == CFS_OP_read || r->op == CFS_OP_write;

	if (r->kill_sig && (r->short_len || r->nowrite || r->corrupt || r->attrs || r->delay_ms))
		return "kill= goes alone (the request is then served as usual) or with errno= "
		       "(answered with it)";
	if (r->corrupt && r->op != CFS_OP_read)
		return "corrupt= changes what a read returns: give op=read";
	if (r->corrupt_bytes && !r->corrupt)
		return "bytes= goes with corrupt=";
	if (r->attrs && r->op != CFS_OP_getattr && r->op != CFS_OP_lookup)
		return "attr= changes what getattr and lookup answer: give op=getattr or op=lookup "
		       "(a rule each for both)";
	if (r->len && !r->has_range)
		return "len= goes with at=: at=OFF,len=N";
	if (r->has_range && !r->len)
		return "at=OFF needs a length: at=OFF,len=N";
	if (r->has_range && !io)
		return "at=OFF,len=N takes the reads and writes that touch those bytes: give "
		       "op=read or op=write";
	if (r->has_range && r->at > UINT64_MAX - r->len)
		return "at=OFF,len=N: the range ends past the largest offset";
	return NULL;
}

/* What is wrong with the rule's after=, up=, down= and to=; NULL if nothing. */
static const char *cfs_fault_check3(const struct cfs_fault *r)
{
	if (r->skip && r->nth)
		return "after= and nth= contradict each other: nth=N fires at the Nth match only "
		       "(after=M nth=N would be nth=M+N)";
	if (!r->up_ms != !r->down_ms)
		return "up= and down= go together: the rule fires for up= ms, then rests for "
		       "down= ms, and again";
	if (r->to && r->op != CFS_OP_rename && r->op != CFS_OP_link && r->op != CFS_OP_symlink)
		return "to= matches the new path of a rename, link or symlink: give op=rename, "
		       "op=link or op=symlink (no other op has one)";
	return NULL;
}

/* What is wrong with the rule as a whole, with *what naming the culprit; NULL if nothing. */
static const char *cfs_fault_check(const struct cfs_faults *f, const struct cfs_fault *r,
				   const char **what)
{
	int effects = (r->nerrs != 0) + (r->short_len != 0) + r->nowrite + (r->corrupt != 0) +
		      (r->attrs != NULL);
	const char *bad;

	*what = "add";
	if (r->op < 0 || !r->glob ||
	    (!effects && !r->delay_ms && !r->change && !r->hold && !r->kill_sig))
		return "needs op=, path= and errno=, short=, nowrite, corrupt=, attr=, kill=, "
		       "delay=, hold or change=";
	if (effects > 1)
		return "errno=, short=, nowrite, corrupt= and attr= exclude each other";
	/* a held request is served as usual once released: what else to do with it is the
	 * other rules' */
	if (r->hold && (effects || r->delay_ms || r->change || r->kill_sig))
		return "hold is a rule of its own: no errno=, short=, nowrite, corrupt=, kill=, "
		       "delay= nor change= with it";
	if (r->change && (effects || r->delay_ms || r->kill_sig))
		return "change= is a rule of its own: no errno=, short=, nowrite, corrupt=, kill= "
		       "nor delay= with it";
	if ((bad = cfs_fault_check2(r)) || (bad = cfs_fault_check3(r)))
		return bad;
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
	if (cfs_fault_has_errno(r, ENOSYS) && cfs_enosys_refused(r->op)) {
		*what = r->op == CFS_OP_MAX ? "any" : cfs_op_names[r->op];
		return cfs_enosys_refused(r->op);
	}
	if (r->short_len && r->op != CFS_OP_read && r->op != CFS_OP_write)
		return "short= cuts a read or a write: give op=read or op=write";
	if (r->nowrite && r->op != CFS_OP_write)
		return "nowrite drops a write's data: give op=write";
	/* Without an open the kernel reads and writes through its page cache: it would take
	 * a short read for the end of the file, and keep data a nowrite dropped. */
	if ((r->short_len || r->nowrite || r->corrupt) && f->unsent[CFS_OP_open])
		return "short=, nowrite and corrupt= need every open answered (-o opens=answer), "
		       "so that reads and writes bypass the kernel's page cache";
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
	if (r->corrupt && !r->corrupt_bytes)
		r->corrupt_bytes = 1;
	r->start_us = f->clock(); /* the first up window starts now */
	r->start_real_us = g_get_real_time();
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

/* splitmix64: the next number of the sequence *STATE seeds */
