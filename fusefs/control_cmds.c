/*
 * The control socket's commands: one request line in, one JSON reply out (json-glib). A
 * dump's reply is streamed in pieces as the client reads (control.c sends them).
 */
#include "control_cmds.h"
#include "control_int.h"
#include "errname.h"
#include "json.h"
#include "fault.h"
#include "gate.h"
#include "notify.h"
#include "paths.h"
#include "transport.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *cfs_kind_name(enum rs_kind k)
{
	return k == RS_DIR ? "dir" : k == RS_FILE ? "file" : k == RS_LINK ? "link" : "other";
}

/* ---- commands ---- */

static char *cmd_ping(struct cfs_control *c, const char *args)
{
	JsonBuilder *b = cfs_json_ok();

	cfs_json_str(b, "version", CFS_VERSION, -1);
	return cfs_json_finish(b);
}

static void cfs_stats_ops(struct cfs_control *c, JsonBuilder *b)
{
	json_builder_set_member_name(b, "requests");
	json_builder_begin_object(b);
	for (int i = 0; i < CFS_OP_MAX; i++)
		if (c->d->ops[i])
			cfs_json_int(b, cfs_op_names[i], (int64_t)c->d->ops[i]);
	json_builder_end_object(b);
}

/* Our time per request (from its arrival in the loop to the reply's write) and the resolver's
 * time per walk, for the ops that came: log2 histograms (latency.h). */
static void cfs_stats_latency(struct cfs_control *c, JsonBuilder *b)
{
	const struct cfs_daemon *d = c->d;

	json_builder_set_member_name(b, "latency");
	json_builder_begin_object(b);
	for (int i = 0; i <= CFS_OP_MAX; i++)
		if (d->op_ns[i].count)
			cfs_hist_json(b, i < CFS_OP_MAX ? cfs_op_names[i] : "other", &d->op_ns[i]);
	if (d->walk_ns.count)
		cfs_hist_json(b, "walk", &d->walk_ns);
	json_builder_end_object(b);
}

static void cfs_stats_resolver(struct cfs_control *c, JsonBuilder *b)
{
	const struct cfs_walk_stats *w = &c->d->walk;

	json_builder_set_member_name(b, "resolver");
	json_builder_begin_object(b);
	cfs_json_int(b, "walks", (int64_t)w->walks);
	cfs_json_int(b, "links_followed", (int64_t)w->links);
	cfs_json_int(b, "deepest_nesting", w->max_depth);
	cfs_json_int(b, "eloop", (int64_t)w->eloop);
	cfs_json_int(b, "loops_found", (int64_t)w->loops);
	cfs_json_int(b, "other_errors", (int64_t)w->errors);
	cfs_json_int(b, "heap_frames", (int64_t)w->heap_frames);
	cfs_json_int(b, "heap_allocs", (int64_t)w->allocs);
	cfs_json_int(b, "private_checks", (int64_t)w->private_checks);
	json_builder_end_object(b);
}

static void cfs_stats_pollcore(struct cfs_control *c, JsonBuilder *b)
{
	struct pc_stats s;
	uint32_t fds = pc_io_count(c->loop);

	pc_loop_stats(c->loop, &s);
	json_builder_set_member_name(b, "pollcore");
	json_builder_begin_object(b);
	cfs_json_int(b, "waits", (int64_t)(s.waits - c->pc_base.waits));
	cfs_json_int(b, "waits_inline", (int64_t)(s.waits_inline - c->pc_base.waits_inline));
	cfs_json_int(b, "waits_heap", (int64_t)(s.waits_heap - c->pc_base.waits_heap));
	cfs_json_int(b, "heap_allocs", (int64_t)(s.heap_allocs - c->pc_base.heap_allocs));
	cfs_json_int(b, "largest_table", s.largest_table);
	cfs_json_int(b, "spin_us", c->d->opts.spin_us);
	/* the CPUs a spin counts as free: affinity mask, capped by a cgroup CPU quota (pc.h) */
	cfs_json_int(b, "spin_cpus", s.spin_cpus);
	cfs_json_int(b, "spins", (int64_t)(s.spins - c->pc_base.spins));
	cfs_json_int(b, "spin_hits", (int64_t)(s.spin_hits - c->pc_base.spin_hits));
	cfs_json_int(b, "spin_polls", (int64_t)(s.spin_polls - c->pc_base.spin_polls));
	cfs_json_int(b, "spin_skips", (int64_t)(s.spin_skips - c->pc_base.spin_skips));
	cfs_json_int(b, "fds", fds);
	/* outside a pass the table is inline exactly when its entries fit (pc.h) */
	cfs_json_str(b, "table", fds <= PC_INLINE_FDS ? "inline" : "heap", -1);
	json_builder_end_object(b);
}

/* Which transport is live (auto may have fallen back: "fallback" says why) and its queues. */
static void cfs_stats_transport(struct cfs_control *c, JsonBuilder *b)
{
	struct cfs_transport_stats t;

	cfs_transport_stats(c->d->transport, &t);
	json_builder_set_member_name(b, "transport");
	json_builder_begin_object(b);
	cfs_json_str(b, "live", t.live, -1);
	cfs_json_int(b, "queues", t.queues);
	cfs_json_int(b, "entries_per_queue", t.entries);
	/* a delay fault holds a ring request in its entry: at most this many a queue, the
	 * others are served at once (counted), so the queue's other requests keep flowing */
	cfs_json_int(b, "delay_entries_per_queue", t.hold_max);
	cfs_json_int(b, "held_by_delays", t.held);
	cfs_json_int(b, "delays_unheld", (int64_t)t.unheld);
	cfs_json_int(b, "ring_requests", (int64_t)(t.ring_requests - c->ring_base));
	/* replies the kernel would refuse (an errno past 511), answered EIO instead */
	cfs_json_int(b, "replies_fixed", (int64_t)t.replies_fixed);
	if (t.fallback)
		cfs_json_str(b, "fallback", t.fallback, -1);
	/* while rules stand files are opened with direct I/O: mapped shared only with this */
	json_builder_set_member_name(b, "direct_io_mmap");
	json_builder_add_boolean_value(b, c->d->direct_io_mmap);
	json_builder_end_object(b);
}

static void cfs_stats_tree(struct cfs_control *c, JsonBuilder *b)
{
	struct cfs_tree_stats t;
	struct cfs_notify_stats n;
	struct cfs_daemon *d = c->d;

	cfs_tree_stats(d->tree, &t);
	json_builder_set_member_name(b, "tree");
	json_builder_begin_object(b);
	cfs_json_int(b, "nodes", (int64_t)t.nodes);
	cfs_json_int(b, "dirs", (int64_t)t.dirs);
	cfs_json_int(b, "files", (int64_t)t.files);
	cfs_json_int(b, "links", (int64_t)t.links);
	cfs_json_int(b, "bytes", (int64_t)t.bytes);
	cfs_json_int(b, "data_bytes", (int64_t)t.data_bytes);
	cfs_json_int(b, "meta_bytes", (int64_t)t.meta_bytes);
	json_builder_end_object(b);
	json_builder_set_member_name(b, "kernel");
	json_builder_begin_object(b);
	cfs_json_int(b, "path_nodeids", (int64_t)cfs_paths_count(d->paths));
	cfs_json_int(b, "lookups",
		     (int64_t)(cfs_tree_total_refs(d->tree) - cfs_paths_count(d->paths) +
			       cfs_paths_total_lookups(d->paths)));
	cfs_notifier_stats(d->notifier, &n);
	cfs_json_int(b, "invalidations_sent", (int64_t)n.sent);
	/* queued and not yet sent: 0 once the kernel dropped all chainfs asked it to */
	cfs_json_int(b, "invalidations_pending", (int64_t)(n.queued - n.sent - n.stale));
	cfs_json_int(b, "invalidations_lost", (int64_t)n.lost);
	cfs_json_int(b, "invalidations_stale", (int64_t)n.stale);
	json_builder_end_object(b);
}

/* The recording running, or the last one (record.h): lines are counted at the loop, bytes
 * once the writer wrote them. */
static void cfs_stats_record(struct cfs_control *c, JsonBuilder *b)
{
	struct cfs_record_stats r;
	const char *file;

	cfs_record_status(c->d, &r, &file);
	json_builder_set_member_name(b, "record");
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "active");
	json_builder_add_boolean_value(b, r.active);
	if (file)
		cfs_json_str(b, "file", file, -1);
	cfs_json_int(b, "lines", (int64_t)r.lines);
	cfs_json_int(b, "dropped", (int64_t)r.dropped);
	cfs_json_int(b, "bytes_written", (int64_t)r.bytes_written);
	cfs_json_int(b, "write_errors", (int64_t)r.write_errors);
	json_builder_end_object(b);
}

/* The members of `stats` that are settings or levels (what is now, or the most ever), not
 * counts of events; a section's name stands for all its members. The reply lists them
 * ("levels"), so whoever subtracts two replies (fuse-mount.sh --stats-out) keeps these as
 * they are instead of knowing them apart. */
static const char *const cfs_stats_levels[] = {
    "resolver.deepest_nesting",
    "pollcore.largest_table",
    "pollcore.spin_us",
    "pollcore.spin_cpus",
    "pollcore.fds",
    "transport.queues",
    "transport.entries_per_queue",
    "transport.delay_entries_per_queue",
    "transport.held_by_delays",
    "tree",
    "kernel.path_nodeids",
    "kernel.lookups",
    "kernel.invalidations_pending",
    "control.clients",
    "faults.rules",
    "faults.rules_standing",
    "faults.held",
};

static void cfs_stats_levels_json(JsonBuilder *b)
{
	json_builder_set_member_name(b, "levels");
	json_builder_begin_array(b);
	for (size_t i = 0; i < sizeof(cfs_stats_levels) / sizeof(cfs_stats_levels[0]); i++)
		json_builder_add_string_value(b, cfs_stats_levels[i]);
	json_builder_end_array(b);
}

static char *cmd_stats(struct cfs_control *c, const char *args)
{
	JsonBuilder *b;

	if (strcmp(args, "reset") == 0) {
		memset(c->d->ops, 0, sizeof(c->d->ops));
		memset(&c->d->walk, 0, sizeof(c->d->walk));
		memset(c->d->op_ns, 0, sizeof(c->d->op_ns));
		memset(&c->d->walk_ns, 0, sizeof(c->d->walk_ns));
		pc_loop_stats(c->loop, &c->pc_base);
		struct cfs_transport_stats t;
		cfs_transport_stats(c->d->transport, &t);
		c->ring_base = t.ring_requests;
		cfs_fault_stats_reset(c->d->faults);
	} else if (*args) {
		return cfs_json_error("usage: stats [reset]");
	}
	b = cfs_json_ok();
	cfs_json_str(b, "mode", cfs_follow_modes[c->d->opts.follow].name, -1);
	cfs_stats_ops(c, b);
	cfs_stats_resolver(c, b);
	cfs_stats_latency(c, b);
	cfs_stats_pollcore(c, b);
	cfs_stats_transport(c, b);
	cfs_stats_tree(c, b);
	cfs_stats_record(c, b);
	json_builder_set_member_name(b, "faults"); /* rules, their hits and tree changes */
	json_builder_begin_object(b);
	cfs_fault_stats(c->d->faults, b);
	json_builder_end_object(b);
	json_builder_set_member_name(b, "control");
	json_builder_begin_object(b);
	cfs_json_int(b, "clients", g_hash_table_size(c->clients));
	cfs_json_int(b, "accepted", (int64_t)c->accepted);
	cfs_json_int(b, "refused", (int64_t)c->refused);
	cfs_json_int(b, "accept_pauses", (int64_t)c->accept_pauses);
	json_builder_end_object(b);
	cfs_stats_levels_json(b);
	return cfs_json_finish(b);
}

static char *cfs_limits_reply(struct cfs_control *c)
{
	JsonBuilder *b = cfs_json_ok();

	const struct cfs_follow_mode *m = &cfs_follow_modes[c->d->opts.follow];

	cfs_json_int(b, "nest", c->d->opts.limits.max_nest);
	cfs_json_int(b, "total", c->d->opts.limits.max_total);
	if (!m->daemon_follows)
		cfs_json_str(b, "note",
			     "kernel mode: the kernel follows links (40 a walk at most); these "
			     "limits act in collapse and server modes, and here only on the "
			     "in-root rewriting of targets",
			     -1);
	return cfs_json_finish(b);
}

static char *cmd_limits(struct cfs_control *c, const char *args)
{
	struct rs_limits l = c->d->opts.limits;
	gchar **words = g_strsplit_set(args, " \t", -1);
	char *bad = NULL;

	for (gchar **w = words; *w && !bad; w++) {
		char *end;
		unsigned long long v;
		uint32_t *into = g_str_has_prefix(*w, "nest=")	  ? &l.max_nest
				 : g_str_has_prefix(*w, "total=") ? &l.max_total
								  : NULL;
		if (!**w)
			continue;
		const char *num = into ? strchr(*w, '=') + 1 : "";
		errno = 0;
		v = strtoull(num, &end, 10);
		if (!into || !*num || *end || errno || *num == '-' || v > RS_LIMIT_MAX)
			bad = g_strdup_printf("%s: usage: limits [nest=N] [total=N], N up to %d",
					      *w, RS_LIMIT_MAX);
		else
			*into = (uint32_t)v;
	}
	g_strfreev(words);
	if (bad) {
		char *e = cfs_json_error("%s", bad);
		g_free(bad);
		return e;
	}
	if (l.max_nest != c->d->opts.limits.max_nest ||
	    l.max_total != c->d->opts.limits.max_total) {
		c->d->opts.limits = l;
		cfs_coherence_everything(c->d);
	}
	return cfs_limits_reply(c);
}

/* mode NAME switches; a bare `mode` shows the mode, as a bare `limits` shows the limits */
static char *cmd_mode(struct cfs_control *c, const char *args)
{
	int m = *args ? cfs_follow_of_name(args) : (int)c->d->opts.follow;
	char names[CFS_FOLLOW_NAMES_MAX];

	if (m < 0)
		return cfs_json_error("usage: mode %s", cfs_follow_names(names, '|'));
	if (c->d->opts.follow != (enum cfs_follow)m) {
		c->d->opts.follow = (enum cfs_follow)m;
		cfs_coherence_everything(c->d);
	}
	JsonBuilder *b = cfs_json_ok();
	cfs_json_str(b, "mode", cfs_follow_modes[m].name, -1);
	return cfs_json_finish(b);
}

struct cfs_trace_ctx {
	JsonBuilder *b;
	struct cfs_daemon *d;
	uint64_t steps; /* taken, kept or not */
};

static void cfs_trace_step(void *data, const struct rs_step *s)
{
	static const char *const names[] = {"component", "link", "root", "dot", "dotdot"};
	struct cfs_trace_ctx *t = data;
	JsonBuilder *b = t->b;
	struct stat st;

	if (t->steps++ >= CFS_CTL_MAX_STEPS)
		return;
	cfs_tree_stat(t->d->tree, (uint32_t)s->node, &st);
	json_builder_begin_object(b);
	cfs_json_str(b, "step", names[s->kind], -1);
	if (s->name)
		cfs_json_str(b, "name", s->name, (gssize)s->name_len);
	cfs_json_int(b, "node", (int64_t)s->node);
	cfs_json_str(b, "kind", cfs_kind_name(cfs_tree_kind(t->d->tree, (uint32_t)s->node)), -1);
	/* as namei -l shows them: st_mode with its type bits, owner and group */
	cfs_json_int(b, "mode", st.st_mode);
	cfs_json_int(b, "uid", st.st_uid);
	cfs_json_int(b, "gid", st.st_gid);
	cfs_json_int(b, "depth", s->depth);
	if (s->target)
		cfs_json_str(b, "target", s->target, (gssize)s->target_len);
	json_builder_end_object(b);
}

static char *cmd_resolve(struct cfs_control *c, const char *args)
{
	unsigned flags = RS_FOLLOW;
	struct rs_result res;
	JsonBuilder *b;

	if (g_str_has_prefix(args, "nofollow ")) {
		flags = 0;
		args += strlen("nofollow ");
	}
	if (!*args)
		return cfs_json_error("usage: resolve [nofollow] PATH");
	/* timed without the trace, which costs more than the walk */
	struct rs_ctx plain = {.ops = &cfs_tree_rs_ops,
			       .tree = c->d->tree,
			       .root = CFS_ROOT,
			       .limits = c->d->opts.limits,
			       .root_alias = c->d->root_alias,
			       .root_alias_len = c->d->root_alias_len};
	uint64_t t0 = cfs_now_ns();
	rs_resolve(&plain, CFS_ROOT, args, flags, &res);
	uint64_t ns = cfs_now_ns() - t0;
	b = cfs_json_ok();
	cfs_json_str(b, "path", args, -1);
	cfs_json_int(b, "duration_ns", (int64_t)ns);
	struct cfs_trace_ctx t = {b, c->d, 0};
	struct rs_ctx ctx = plain;
	ctx.trace = cfs_trace_step;
	ctx.trace_data = &t;
	json_builder_set_member_name(b, "steps");
	json_builder_begin_array(b);
	int err = rs_resolve(&ctx, CFS_ROOT, args, flags, &res);
	json_builder_end_array(b);
	if (t.steps > CFS_CTL_MAX_STEPS)
		cfs_json_int(b, "steps_omitted", (int64_t)(t.steps - CFS_CTL_MAX_STEPS));
	if (err) {
		const char *name = cfs_errno_name(-err);
		cfs_json_str(b, "errno", name ? name : strerror(-err), -1);
		if (res.cycle) { /* not the limits: the walk came back to where it had been */
			json_builder_set_member_name(b, "loop");
			json_builder_add_boolean_value(b, TRUE);
		}
	} else {
		cfs_json_int(b, "node", (int64_t)res.node);
		cfs_json_str(b, "kind",
			     cfs_kind_name(cfs_tree_kind(c->d->tree, (uint32_t)res.node)), -1);
	}
	cfs_json_int(b, "links", res.links);
	cfs_json_int(b, "deepest_nesting", res.max_depth);
	cfs_json_int(b, "heap_frames", res.heap_frames);
	return cfs_json_finish(b);
}

/* The next piece of a dump, into the dump's text; 1 more to come, 0 done, or -errno. */
static int cfs_dump_next(struct cfs_spec_dumper *d, GString *into, size_t want)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return -errno;
	rc = cfs_spec_dumper_next(d, f, want);
	fclose(f);
	if (rc >= 0)
		cfs_json_append_body(into, text, len);
	free(text);
	return rc;
}

/* A streamed dump's next piece. A failure past the first piece cannot become an error reply
 * (the client has part of an "ok" one): the line is left unfinished and the client closed,
 * and the log says why. */
void cfs_dump_piece(struct cfs_client *cl)
{
	int rc = cfs_dump_next(cl->dump, cl->out, CFS_CTL_DUMP_PIECE);

	if (rc > 0)
		return;
	cfs_spec_dumper_free(cl->dump);
	cl->dump = NULL;
	if (rc == 0) {
		g_string_append(cl->out, "\"}\n");
		return;
	}
	g_message("control: dump cut short: %s", strerror(-rc));
	cl->closing = true;
}

static char *cmd_dump(struct cfs_control *c, const char *args)
{
	struct cfs_spec_dumper *d = cfs_spec_dumper_new(c->d->tree);
	struct cfs_client *cl = c->asking;
	/* without a client (cfs_control_handle) the whole dump makes one reply */
	size_t want = cl ? CFS_CTL_DUMP_PIECE : SIZE_MAX / 2;
	GString *reply = g_string_new("{\"ok\":true,\"spec\":\"");
	int rc = cfs_dump_next(d, reply, want);

	if (rc < 0) {
		cfs_spec_dumper_free(d);
		g_string_free(reply, TRUE);
		return cfs_json_error("dump: %s", strerror(-rc));
	}
	if (rc == 0) {
		cfs_spec_dumper_free(d);
		g_string_append(reply, "\"}");
		return g_string_free(reply, FALSE);
	}
	/* the rest follows as the socket takes it (cfs_client_flush) */
	g_string_append_len(cl->out, reply->str, (gssize)reply->len);
	g_string_free(reply, TRUE);
	cl->dump = d;
	return NULL;
}

#define CFS_FAULT_USAGE                                                                            \
	"usage: fault add op=OP path=GLOB [errno=E[|E...]|short=N|nowrite|corrupt=zero|random|"    \
	"flip [bytes=N]|attr=F:V[,F:V...]|kill=SIG [errno=E]] [at=OFF,len=N] [prob=P] [seed=S] "   \
	"[delay=MS] [once|every|nth=N|count=N] [after=N] [up=MS down=MS] [to=GLOB] [pid=N] "       \
	"[uid=N] [comm=NAME] "                                                                     \
	"[when=before|after change=LINE[; LINE...]] | fault add op=OP path=GLOB hold|hold=MS "     \
	"[...] | fault release ID | fault remove ID | fault list | fault log | fault clear"

/* "remove ID" or "release ID" (WHAT): a rule that is not there is an error, and nothing
 * else changes. Both let go of what the rule holds. */
static char *cfs_fault_id_cmd(struct cfs_control *c, const char *what, const char *arg,
			      int *released)
{
	unsigned long id;
	char *end;

	errno = 0;
	id = strtoul(arg, &end, 10);
	if (!*arg || *end || *arg == '-' || errno || id == 0 || id > UINT_MAX)
		return cfs_json_error("fault %s: ID must be a rule's number (fault list)", what);
	if (!cfs_fault_exists(c->d->faults, (unsigned)id))
		return cfs_json_error("fault %s: no rule %lu", what, id);
	*released = cfs_gate_release(c->d->gate, (unsigned)id);
	if (strcmp(what, "remove") == 0)
		cfs_fault_remove(c->d->faults, (unsigned)id);
	return NULL;
}

static char *cmd_fault(struct cfs_control *c, const char *args)
{
	JsonBuilder *b;
	char *msg = NULL;
	int id = 0, released = -1;

	if (g_str_has_prefix(args, "add ")) {
		if ((id = cfs_fault_add(c->d->faults, args + 4, &msg)) < 0) {
			char *e = cfs_json_error("fault %s", msg);
			g_free(msg);
			return e;
		}
		/* the kernel forgets what it holds, so the next syscall on a matching path
		 * asks, and the rule fires then (the reply waits until that was delivered);
		 * while a rule stands, no answer is kept (ops.c, session.c) */
		cfs_coherence_drop(c->d);
	} else if (g_str_has_prefix(args, "remove ") || g_str_has_prefix(args, "release ")) {
		const char *what = args[2] == 'm' ? "remove" : "release";
		if ((msg = cfs_fault_id_cmd(c, what, args + strlen(what) + 1, &released)))
			return msg;
	} else if (strcmp(args, "log") == 0) {
		b = cfs_json_ok();
		cfs_fault_log(c->d->faults, b);
		return cfs_json_finish(b);
	} else if (strcmp(args, "clear") == 0) {
		released = cfs_gate_release(c->d->gate, 0); /* the rules go, and what they held */
		cfs_fault_clear(c->d->faults);
	} else if (strcmp(args, "list") != 0 && *args) {
		return cfs_json_error(CFS_FAULT_USAGE);
	}
	b = cfs_json_ok();
	if (id > 0) {
		json_builder_set_member_name(b, "id");
		json_builder_add_int_value(b, id);
	}
	if (released >= 0) { /* requests let go: served in the loop's next pass */
		json_builder_set_member_name(b, "released");
		json_builder_add_int_value(b, released);
	}
	json_builder_set_member_name(b, "faults");
	cfs_fault_list(c->d->faults, b);
	return cfs_json_finish(b);
}

/* The file is opened by the daemon, as the client's own uid (the socket admits no other):
 * a relative path would mean the daemon's cwd, so only absolute ones are taken
 * (chainfsctl makes them absolute). Start makes a new file, replace may empty an existing
 * one (record.h). Stop answers once the file holds every line. */
static char *cmd_record(struct cfs_control *c, const char *args)
{
	bool replace = g_str_has_prefix(args, "replace ");
	const char *file = replace ? args + 8 : g_str_has_prefix(args, "start ") ? args + 6 : NULL;
	int err;
	JsonBuilder *b;

	if (file)
		file += strspn(file, " ");
	if (file && *file == '/') {
		err = cfs_record_start(c->d, file, replace);
		if (err)
			return cfs_json_error("record %s: %s", file,
					      cfs_record_error(-err, replace));
	} else if (strcmp(args, "stop") == 0) {
		err = cfs_record_stop(c->d);
		if (err)
			return cfs_json_error("record stop: no recording runs");
	} else if (*args) {
		return cfs_json_error("usage: record start|replace /ABSOLUTE/FILE | record stop | "
				      "record");
	}
	b = cfs_json_ok();
	cfs_stats_record(c, b);
	return cfs_json_finish(b);
}

static char *cmd_unmount(struct cfs_control *c, const char *args)
{
	/* the loop finishes this pass (the reply is sent), then the session is unmounted */
	c->d->unmount_requested = true;
	pc_stop(c->loop);
	return cfs_json_finish(cfs_json_ok());
}

/* Cold, for experiments: the kernel forgets every name, attribute, link body, listing and
 * page it holds for this mount, and asks again. */
static char *cmd_drop(struct cfs_control *c, const char *args)
{
	struct cfs_daemon *d = c->d;

	if (*args)
		return cfs_json_error("usage: drop");
	cfs_coherence_drop(d);
	return cfs_json_finish(cfs_json_ok());
}

/* A spec line at runtime; the kernel forgets the listings of the directories it touched. */
static char *cmd_generate(struct cfs_control *c, const char *line)
{
	struct cfs_spec_defaults def = {getuid(), getgid(), false, {0, 0}};
	char *msg = NULL;
	JsonBuilder *b;
	struct cfs_tree_stats before, after;

	if (c->d->opts.read_only)
		return cfs_json_error("%s", "the mount is read-only (-o ro): the tree does not "
					    "change (EROFS)");
	if (c->d->opts.xattrs_off && cfs_spec_line_is(line, "xattr"))
		return cfs_json_error("%s", "xattrs are off on this mount (mount with -o "
					    "xattrs=on): no caller would see the attribute");
	cfs_tree_stats(c->d->tree, &before);
	if (cfs_spec_apply_line(c->d->tree, line, &def, &msg) != 0) {
		char *e = cfs_json_error("%s", msg ? msg : "failed");
		free(msg);
		return e;
	}
	cfs_tree_stats(c->d->tree, &after);
	b = cfs_json_ok();
	cfs_json_int(b, "nodes_added", (int64_t)(after.nodes - before.nodes));
	return cfs_json_finish(b);
}

struct cfs_cmd {
	const char *name;
	char *(*fn)(struct cfs_control *c, const char *args);
	bool whole_line; /* gets the whole line (spec generators), not what follows the name */
};

static const struct cfs_cmd cfs_cmds[] = {
#define CFS_CTL_CMD(name, usage) {#name, cmd_##name, false},
    CFS_CTL_COMMANDS(CFS_CTL_CMD) /* control_cmds.h */
#undef CFS_CTL_CMD
#define CFS_CTL_SPEC(name, ...) {#name, cmd_generate, true},
    CFS_SPEC_KEYWORDS(CFS_CTL_SPEC) /* every spec keyword, as a line */
#undef CFS_CTL_SPEC
};

char *cfs_control_handle(struct cfs_control *c, const char *line, size_t len)
{
	char *req, *args, *e;

	if (memchr(line, '\0', len))
		return cfs_json_error("request holds a NUL byte");
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	req = g_strndup(line, len);
	args = req + strspn(req, " \t");
	size_t n = strcspn(args, " \t");
	for (size_t i = 0; i < G_N_ELEMENTS(cfs_cmds); i++) {
		if (strlen(cfs_cmds[i].name) != n || strncmp(args, cfs_cmds[i].name, n) != 0)
			continue;
		const char *rest = args + n + strspn(args + n, " \t");
		char *reply = cfs_cmds[i].fn(c, cfs_cmds[i].whole_line ? args : rest);
		g_free(req);
		return reply;
	}
	e = n ? cfs_json_error("unknown command: %.*s", (int)(n > 64 ? 64 : n), args)
	      : cfs_json_error("empty request");
	g_free(req);
	return e;
}
