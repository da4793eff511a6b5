/* What the rules and their hits look like from outside: `fault list`, `fault log` and the
 * `faults` object of `stats` (fault.h). */
#include "fault_int.h"
#include "errname.h"
#include "json.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

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
