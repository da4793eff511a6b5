#include "fault_int.h"
#include "errname.h"

#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cfs_corrupt_names[4] = {"", "zero", "random", "flip"};

void cfs_fault_free(gpointer p)
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
bool cfs_fault_spent(const struct cfs_fault *r)
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
gint64 cfs_fault_window(const struct cfs_fault *r, gint64 now)
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
