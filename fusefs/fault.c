#include "fault.h"
#include "change.h"
#include "errname.h"
#include "json.h"

#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	CFS_FAULT_MAX_DELAY_MS = 600000,   /* ten minutes: longer would only hang clients */
	CFS_FAULT_ERRNOS = 16,		   /* errno=E1|E2|...: as many as a line reads well */
	CFS_FAULT_MAX_BYTES = 1 << 20,	   /* corrupt's bytes=: a read is at most 1 MiB */
	CFS_FAULT_MAX_WINDOW_MS = 3600000, /* up= and down=: an hour each at most */
};

static const char *const cfs_corrupt_names[] = {"", "zero", "random", "flip"};

/* attr=FIELD:VALUE,...: the fields of a getattr's or lookup's answer a rule may change. Not
 * the kind: the kernel takes an inode whose kind changed for a broken one (EIO from then on). */
enum cfs_attr_field {
	CFS_A_SIZE,
	CFS_A_MODE,
	CFS_A_NLINK,
	CFS_A_UID,
	CFS_A_GID,
	CFS_A_ATIME,
	CFS_A_MTIME,
	CFS_A_CTIME,
	CFS_A_FIELDS
};
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

struct cfs_fault_attrs {
	bool set[CFS_A_FIELDS];
	uint64_t val[CFS_A_FIELDS];
	char *text; /* as given, for the list and the log */
};
struct cfs_fault {
	unsigned id;
	int op; /* enum cfs_op, or CFS_OP_MAX for any */
	char *glob;
	int errs[CFS_FAULT_ERRNOS]; /* errno=: one drawn with the seed when there are more */
	unsigned nerrs;
	int kill_sig;		       /* kill=: the signal sent to the request's pid */
	enum cfs_corrupt corrupt;      /* corrupt=: what becomes of the bytes a read returns */
	uint32_t corrupt_bytes;	       /* ... how many of them (bytes=, 1 unless given) */
	struct cfs_fault_attrs *attrs; /* attr=: the fields a getattr or lookup answers changed */
	bool has_range;		       /* at=OFF,len=N: reads and writes that touch those bytes */
	uint64_t at, len;
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
	uint64_t skip;		 /* after=N: the first N matching requests pass (0: none) */
	unsigned up_ms, down_ms; /* up=MS down=MS: fires up ms, rests down ms, from start_us */
	gint64 start_us;	 /* when added, on F's clock (monotonic) */
	gint64 start_real_us;	 /* ... and on the wall clock, for `fault list` */
	char *to;		 /* to=GLOB: rename's, link's and symlink's new path must match */
};

/* One hit, as `fault log` shows it: enough to tell which draw of which seed fired, who sent
 * the request, and what a change rule did. */
struct cfs_fault_hit {
	unsigned id;
	int op;
	char *path;
	uint32_t pid, uid; /* the request's sender, as the kernel gave them */
	int err;	   /* the errno it was answered with (drawn from a list), or 0 */
	int kill_sig;	   /* the signal sent to its sender, or 0 */
	bool kill_sent;	   /* ... and whether it went (no pid, or ours: not sent) */
	enum cfs_corrupt corrupt;
	bool io; /* a read or a write: the bytes it spanned */
	uint64_t off, size;
	char *attr;	  /* an attr rule's fields */
	char *to;	  /* a rename's, link's or symlink's new path */
	gint64 window_us; /* a window rule's place in its up window at the hit, or -1 */
	char *change;	  /* a change rule's lines, and how they went (NULL: not a change) */
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
	uint64_t kills, kills_unsent, corruptions; /* signals sent and not, reads corrupted */
	uint64_t logged_base;  /* logged at `stats reset`: logged itself numbers the log */
	gint64 (*clock)(void); /* for up= and down= windows: monotonic microseconds */
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
	g_free(r->to);
	if (r->attrs)
		g_free(r->attrs->text);
	g_free(r->attrs);
	cfs_change_free(r->change);
	g_free(r);
}

static void cfs_fault_hit_free(struct cfs_fault_hit *h)
{
	g_free(h->path);
	g_free(h->attr);
	g_free(h->to);
	g_free(h->change);
	g_free(h->result);
}

struct cfs_faults *cfs_faults_new(void)
{
	struct cfs_faults *f = g_new0(struct cfs_faults, 1);

	f->rules = g_ptr_array_new_with_free_func(cfs_fault_free);
	f->next_id = 1;
	f->clock = g_get_monotonic_time;
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

void cfs_faults_clock(struct cfs_faults *f, gint64 (*now)(void))
{
	f->clock = now;
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
static uint64_t cfs_splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* a uniform double in [0, 1) */
static double cfs_fault_draw(struct cfs_fault *r)
{
	return (double)(cfs_splitmix(&r->rng) >> 11) / (double)(1ull << 53);
}

static void cfs_fault_logged(struct cfs_faults *f, const struct cfs_fault *r, int op,
			     const char *path, const struct cfs_fault_who *who, double draw,
			     int err)
{
	struct cfs_fault_hit *h = &f->log[f->logged++ % CFS_FAULT_LOG_MAX];

	cfs_fault_hit_free(h);
	*h = (struct cfs_fault_hit){.id = r->id,
				    .op = op,
				    .path = g_strdup(path),
				    .pid = who ? who->pid : 0,
				    .uid = who ? who->uid : 0,
				    .err = err,
				    .kill_sig = r->kill_sig,
				    .corrupt = r->corrupt,
				    .attr = r->attrs ? g_strdup(r->attrs->text) : NULL,
				    .to = who && who->to ? g_strdup(who->to) : NULL,
				    .io = who && who->io,
				    .off = who ? who->off : 0,
				    .size = who ? who->size : 0,
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

const char *cfs_fault_attrs_text(const struct cfs_fault_attrs *a)
{
	return a->text;
}

void cfs_fault_attr(const struct cfs_fault_effect *fx, struct stat *st)
{
	const struct cfs_fault_attrs *a = fx->attrs;
	struct timespec *times[] = {[CFS_A_ATIME] = &st->st_atim,
				    [CFS_A_MTIME] = &st->st_mtim,
				    [CFS_A_CTIME] = &st->st_ctim};

	if (a->set[CFS_A_SIZE])
		st->st_size = (off_t)a->val[CFS_A_SIZE];
	if (a->set[CFS_A_MODE]) /* the permissions; the kind stays */
		st->st_mode = (st->st_mode & S_IFMT) | (mode_t)a->val[CFS_A_MODE];
	if (a->set[CFS_A_NLINK])
		st->st_nlink = (nlink_t)a->val[CFS_A_NLINK];
	if (a->set[CFS_A_UID])
		st->st_uid = (uid_t)a->val[CFS_A_UID];
	if (a->set[CFS_A_GID])
		st->st_gid = (gid_t)a->val[CFS_A_GID];
	for (int i = CFS_A_ATIME; i <= CFS_A_CTIME; i++)
		if (a->set[i])
			*times[i] = (struct timespec){.tv_sec = (time_t)a->val[i]};
}

void cfs_fault_killed(struct cfs_faults *f, bool sent)
{
	if (f->logged)
		f->log[(f->logged - 1) % CFS_FAULT_LOG_MAX].kill_sent = sent;
	*(sent ? &f->kills : &f->kills_unsent) += 1;
}

/* Where in BUF's N bytes (a read of offset OFF) FX may corrupt: [*from, *to). */
static void cfs_corrupt_span(const struct cfs_fault_effect *fx, size_t n, uint64_t off,
			     size_t *from, size_t *to)
{
	*from = 0;
	*to = n;
	if (!fx->has_range)
		return;
	*from = fx->at > off ? (size_t)MIN(fx->at - off, n) : 0;
	*to = fx->at + fx->len > off ? (size_t)MIN(fx->at + fx->len - off, n) : 0;
	if (*to < *from)
		*to = *from;
}

void cfs_fault_corrupt(const struct cfs_fault_effect *fx, char *buf, size_t n, uint64_t off)
{
	uint64_t rng = fx->corrupt_seed;
	size_t from, to, left;

	cfs_corrupt_span(fx, n, off, &from, &to);
	left = MIN((size_t)fx->corrupt_bytes, to - from);
	/* selection sampling (Knuth's algorithm S): LEFT distinct places, each as likely */
	for (size_t i = from; i < to && left; i++) {
		uint64_t z = cfs_splitmix(&rng);
		if ((double)(z >> 11) / (double)(1ull << 53) * (double)(to - i) >= (double)left)
			continue;
		left--;
		z = cfs_splitmix(&rng);
		if (fx->corrupt == CFS_CORRUPT_ZERO)
			buf[i] = 0;
		else if (fx->corrupt == CFS_CORRUPT_RANDOM) /* another value, never the same */
			buf[i] = (char)((unsigned char)buf[i] ^ (unsigned char)(1 + z % 255));
		else /* one bit of it */
			buf[i] = (char)((unsigned char)buf[i] ^ (1u << (z % 8)));
	}
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

/* Where in its up window the rule is now (microseconds since the window began), or -1 when it
 * rests in a down window; 0 for a rule without windows. */
static gint64 cfs_fault_window(const struct cfs_fault *r, gint64 now)
{
	gint64 up = (gint64)r->up_ms * 1000, cycle = up + (gint64)r->down_ms * 1000;
	gint64 at;

	if (!r->up_ms)
		return 0;
	at = (now - r->start_us) % cycle;
	return at < up ? at : -1;
}

/* Does the request's new path (rename, link, symlink) match the rule's to=? A request without
 * one (WHO NULL or no to) passes a to= rule by. */
static bool cfs_fault_to_matches(const struct cfs_fault *r, const struct cfs_fault_who *who)
{
	return !r->to || (who && who->to && fnmatch(r->to, who->to, 0) == 0);
}

/* Does the request touch the rule's bytes (a rule with no at= takes every request)? A read
 * or write of 0 bytes touches none. */
static bool cfs_fault_range_matches(const struct cfs_fault *r, const struct cfs_fault_who *who)
{
	if (!r->has_range)
		return true;
	if (!who || !who->io || !who->size)
		return false;
	return who->off < r->at + r->len && r->at < who->off + who->size;
}

static bool cfs_fault_is(const struct cfs_fault *r, enum cfs_fault_kind kind)
{
	switch (kind) {
	case CFS_FAULT_ERRNO:
		return r->nerrs != 0 && !r->kill_sig; /* a kill rule answers its own errno */
	case CFS_FAULT_DELAY:
		return r->delay_ms != 0 || r->hold;
	case CFS_FAULT_SHORT:
		return r->short_len != 0;
	case CFS_FAULT_NOWRITE:
		return r->nowrite;
	case CFS_FAULT_CHANGE:
		return r->change != NULL;
	case CFS_FAULT_KILL:
		return r->kill_sig != 0;
	case CFS_FAULT_CORRUPT:
		return r->corrupt != CFS_CORRUPT_NONE;
	case CFS_FAULT_ATTR:
		return r->attrs != NULL;
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
		gint64 window;
		if (!cfs_fault_is(r, kind) || cfs_fault_spent(r) ||
		    (r->op != CFS_OP_MAX && r->op != (int)op) || fnmatch(r->glob, path, 0) != 0 ||
		    !cfs_fault_to_matches(r, who) || !cfs_fault_who_matches(r, who) ||
		    !cfs_fault_range_matches(r, who))
			continue;
		/* a request in a down window does not match: nth=, count= and after= count
		 * the requests of the up windows */
		if ((window = cfs_fault_window(r, f->clock())) < 0)
			continue;
		r->checks++;
		if ((r->nth && r->checks != r->nth) || r->checks <= r->skip)
			continue;
		if (r->prob < 1.0 && (draw = cfs_fault_draw(r)) >= r->prob)
			continue;
		r->hits++;
		f->corruptions += kind == CFS_FAULT_CORRUPT;
		/* after the draw that decided the hit, so a single-errno rule keeps its sequence */
		int err = r->nerrs > 1 ? r->errs[(size_t)(cfs_fault_draw(r) * r->nerrs)]
			  : r->nerrs   ? r->errs[0]
				       : 0;
		cfs_fault_logged(f, r, op, path, who, draw, err);
		f->log[(f->logged - 1) % CFS_FAULT_LOG_MAX].window_us = r->up_ms ? window : -1;
		*out = (struct cfs_fault_effect){.id = r->id,
						 .err = err,
						 .kill_sig = r->kill_sig,
						 .corrupt = r->corrupt,
						 .corrupt_bytes = r->corrupt_bytes,
						 .corrupt_seed =
						     r->corrupt ? cfs_splitmix(&r->rng) : 0,
						 .attrs = r->attrs,
						 .has_range = r->has_range,
						 .at = r->at,
						 .len = r->len,
						 .delay_ms = r->hold ? r->hold_ms : r->delay_ms,
						 .hold = r->hold,
						 .short_len = r->short_len,
						 .change = r->change,
						 .after = r->after,
						 .check = r->checks,
						 .window_us = r->up_ms ? window : -1};
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

/* "EIO" or "EIO|ENOSPC": the rule's errnos as the list gives them ("" for none) */
static void cfs_fault_errnos_json(const struct cfs_fault *r, JsonBuilder *b)
{
	GString *s = g_string_new("");

	for (unsigned i = 0; i < r->nerrs; i++) {
		const char *name = cfs_errno_name(r->errs[i]);
		g_string_append_printf(s, "%s%s", i ? "|" : "", name ? name : "other");
	}
	cfs_json_str(b, "errno", s->str, -1);
	g_string_free(s, TRUE);
}

const char *cfs_corrupt_name(enum cfs_corrupt c)
{
	return cfs_corrupt_names[c];
}

const char *cfs_signal_name(int sig, char *buf, size_t size)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, size, "SIG%s", abbrev);
	else
		snprintf(buf, size, "%d", sig); /* a real-time signal: SIGRTMIN + n */
	return buf;
}

/* The members of issue 34's effects and selectors, where the rule has them. */
static void cfs_fault_more_json(const struct cfs_fault *r, JsonBuilder *b)
{
	char sig[24];

	if (r->kill_sig)
		cfs_json_str(b, "kill", cfs_signal_name(r->kill_sig, sig, sizeof(sig)), -1);
	if (r->corrupt) {
		cfs_json_str(b, "corrupt", cfs_corrupt_names[r->corrupt], -1);
		cfs_json_int(b, "bytes", r->corrupt_bytes);
	}
	if (r->has_range) {
		cfs_json_int(b, "at", (gint64)r->at);
		cfs_json_int(b, "len", (gint64)r->len);
	}
	if (r->attrs)
		cfs_json_str(b, "attr", r->attrs->text, -1);
	if (r->skip)
		cfs_json_int(b, "after", (gint64)r->skip);
	if (r->to)
		cfs_json_str(b, "to", r->to, -1);
}

/* A window rule's up= and down=, when its first window began (wall clock) and whether it is
 * up or resting NOW. */
static void cfs_fault_window_json(const struct cfs_fault *r, gint64 now, JsonBuilder *b)
{
	if (!r->up_ms)
		return;
	cfs_json_int(b, "up", r->up_ms);
	cfs_json_int(b, "down", r->down_ms);
	cfs_json_int(b, "started_us", r->start_real_us);
	cfs_json_str(b, "window", cfs_fault_window(r, now) < 0 ? "down" : "up", -1);
}

static void cfs_fault_one(const struct cfs_fault *r, gint64 now, JsonBuilder *b)
{
	json_builder_begin_object(b);
	cfs_json_int(b, "id", r->id);
	cfs_json_str(b, "op", cfs_fault_op_name(r->op), -1);
	cfs_json_str(b, "path", r->glob, -1);
	cfs_fault_errnos_json(r, b);
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
	cfs_fault_more_json(r, b);
	cfs_fault_window_json(r, now, b);
	json_builder_set_member_name(b, "spent");
	json_builder_add_boolean_value(b, cfs_fault_spent(r));
	json_builder_end_object(b);
}

void cfs_fault_list(const struct cfs_faults *f, JsonBuilder *b)
{
	json_builder_begin_array(b);
	for (guint i = 0; i < f->rules->len; i++)
		cfs_fault_one(g_ptr_array_index(f->rules, i), f->clock(), b);
	json_builder_end_array(b);
}

/* What issue 34's effects did at a hit: the errno answered, the signal sent, the bytes. */
static void cfs_fault_hit_more_json(const struct cfs_fault_hit *h, JsonBuilder *b)
{
	const char *name = cfs_errno_name(h->err);
	char sig[24];

	if (h->err)
		cfs_json_str(b, "errno", name ? name : "other", -1);
	if (h->kill_sig) {
		cfs_json_str(b, "kill", cfs_signal_name(h->kill_sig, sig, sizeof(sig)), -1);
		json_builder_set_member_name(b, "sent");
		json_builder_add_boolean_value(b, h->kill_sent);
	}
	if (h->corrupt)
		cfs_json_str(b, "corrupt", cfs_corrupt_names[h->corrupt], -1);
	if (h->attr)
		cfs_json_str(b, "attr", h->attr, -1);
	if (h->to)
		cfs_json_str(b, "to", h->to, -1);
	if (h->window_us >= 0) /* where in its up window the hit came */
		cfs_json_int(b, "window_us", h->window_us);
	if (h->io) {
		cfs_json_int(b, "offset", (gint64)h->off);
		cfs_json_int(b, "size", (gint64)h->size);
	}
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
	cfs_fault_hit_more_json(h, b);
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
	uint64_t live = 0, held = 0, resting = 0;
	gint64 now = f->clock();

	for (guint i = 0; i < f->rules->len; i++) {
		const struct cfs_fault *r = g_ptr_array_index(f->rules, i);
		live += !cfs_fault_spent(r);
		held += r->held;
		resting += !cfs_fault_spent(r) && cfs_fault_window(r, now) < 0;
	}
	cfs_json_int(b, "rules", f->rules->len);
	cfs_json_int(b, "rules_standing", (gint64)live);
	cfs_json_int(b, "hits", (gint64)(f->logged - f->logged_base));
	cfs_json_int(b, "changes", (gint64)f->changes);
	cfs_json_int(b, "changes_failed", (gint64)f->changes_failed);
	cfs_json_int(b, "held", (gint64)held);
	cfs_json_int(b, "rules_resting", (gint64)resting); /* standing, in a down window now */
	cfs_json_int(b, "kills", (gint64)f->kills);
	cfs_json_int(b, "kills_unsent", (gint64)f->kills_unsent);
	cfs_json_int(b, "corruptions", (gint64)f->corruptions);
}

void cfs_fault_stats_reset(struct cfs_faults *f)
{
	f->logged_base = f->logged;
	f->changes = f->changes_failed = 0;
	f->kills = f->kills_unsent = f->corruptions = 0;
}
