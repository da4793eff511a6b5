/*
 * Fuzz target "control": the input is control requests, one per line (split on '\n'; the
 * last one may lack its newline), each answered by cfs_control_handle() as a client of the
 * socket would be, by a daemon serving a small tree with every kind of node: the real control
 * code, tree and spec loader, but no socket (cfs_control_start with no path), no FUSE session
 * and no notifier (nothing to invalidate), and a pollcore loop that never runs (`unmount`
 * only stops it). Each request goes in as a buffer of exactly its bytes, no terminator, so
 * a read past the line is an ASan report. Bytes 1..4 expand, so short inputs reach the
 * limits: 1 a 255-byte name, 2 a 256-byte one, 3 2048 x "./" (a path past RS_PATH_MAX),
 * 4 65536 x "x" (a line past CFS_SPEC_MAX_LINE and CFS_CTL_MAX_LINE).
 *
 * Checked for every request:
 * - the reply is one line of UTF-8 JSON (no byte below 0x20) that json-glib parses into an
 *   object whose "ok" is a boolean; "ok":false has exactly one other member, "error", a
 *   non-empty string; "ok":true has no "error";
 * - a failed request ("ok":false) leaves the tree exactly as it was (canon with inode
 *   numbers, generations and times, and the dump) and the daemon too (limits, mode, fault
 *   rules, unmount flag);
 * - only spec lines (the generators) change the tree, even when they succeed;
 * - what a success says is so: ping's version, stats' node count and mode, the limits and
 *   mode now in force, a resolve's node or errno and a trace of at most CFS_CTL_MAX_STEPS
 *   steps (the rest counted as omitted), dump's spec equal to cfs_spec_dump(),
 *   nodes_added equal to the count's change, unmount's flag, a fault log's kept and
 *   dropped hits adding up to its count.
 * At the end the tree is consistent and round-trips through a dump; everything is freed
 * (LSan) and the tree gives back every byte of its budget.
 *
 * Bounds: the tree allocates from a 4 MiB budget (fz_budget_alloc) so a big generator fails
 * with ENOMEM and is rolled back. Once the tree is no longer small (fz_tree_is_small) the
 * rest of the input is dropped: `dump` is quadratic in a deep tree's depth. A `resolve`
 * with the link limits raised past FZ_MAX_WALK_LINKS is not sent: the walk may then follow
 * a loop up to a billion times, by design, which is time and not a bug (its reply is
 * bounded: only its first CFS_CTL_MAX_STEPS steps are kept).
 */
#include "control.h"
#include "fault.h"
#include "json.h"
#include "fuzz_util.h"
#include "paths.h"
#include "spec.h"
#include "tree.h"

#include <errno.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	FZ_MAX_REQUESTS = 32,
	FZ_CTL_BUDGET = 4 << 20,     /* tree bytes: a generator line fails with ENOMEM beyond */
	FZ_MAX_WALK_LINKS = 2100,    /* a self-loop takes 2 steps a link: past CFS_CTL_MAX_STEPS */
	FZ_EXPAND_PATH_PAIRS = 2048, /* "./" x 2048 = 4096 bytes: RS_PATH_MAX */
	FZ_EXPAND_LINE = 65536,
};

/* A little of everything the default tree has, small enough to canon and dump per request
 * (chains past the limits are a request away, or a `limits` with lower ones): chains,
 * nestings, loops, dangling and absolute links, links to directories, hard links, literal
 * and pattern files, odd names, fifos, sockets and devices, generated nodes. */
static const char fz_base_spec[] = "file /README \"chainfs\\n\" mode=0444\n"
				   "dir /chains\n"
				   "file /chains/target \"the end of the chain\\n\"\n"
				   "chain /chains/5 5 target\n"
				   "dir /nest\n"
				   "file /nest/dir/file \"the bottom\\n\"\n"
				   "nest /nest/3 3 dir/file\n"
				   "dir /loops\n"
				   "loop /loops/self 1\n"
				   "loop /loops/ring 3\n"
				   "dir /dangling\n"
				   "link /dangling/missing nothing-here\n"
				   "link /dangling/notdir ../README/inside\n"
				   "dir /abs\n"
				   "link /abs/target /chains/target\n"
				   "link /abs/root /\n"
				   "link /abs/dotdot /..\n"
				   "dir /dirlinks\n"
				   "link /dirlinks/deep ../deep\n"
				   "link /dirlinks/bottom deep/1/2/3\n"
				   "dir /files mode=0750 uid=1 gid=2 mtime=100\n"
				   "file /files/hello \"hello\\n\"\n"
				   "hardlink /files/hello.hard /files/hello\n"
				   "file /files/empty\n"
				   "file /files/zeros size=3k\n"
				   "file /files/abc size=1k pattern=\"abc\\n\"\n"
				   "file \"/files/name with spaces\" \"odd\\n\"\n"
				   "file \"/files/latin1-\\xe9t\\xe9\" \"not UTF-8\\n\" mode=0600\n"
				   "dir /special\n"
				   "fifo /special/fifo mode=0640\n"
				   "socket /special/sock\n"
				   "dev /special/null c 1 3 mode=0666\n"
				   "dev /special/disk b 8 1\n"
				   "wide /wide 5 prefix=f\n"
				   "deep /deep 5\n"
				   "tree /tree depth=2 fanout=3 seed=1\n";

/* The commands that take a whole spec line: the only ones that may change the tree. From
 * the spec's own keyword list, so a new keyword is known here the day it exists. */
#define FZ_KEYWORD(name, fn, min, max, attrs, usage) #name,
static const char *const fz_generators[] = {CFS_SPEC_KEYWORDS(FZ_KEYWORD)};
#undef FZ_KEYWORD

struct fz_daemon {
	struct cfs_daemon d;
	struct pc_loop loop;
	struct cfs_control *ctl;
};

/* What a failed request must leave as it was, besides the tree. */
struct fz_state {
	struct rs_limits limits;
	enum cfs_follow follow;
	bool unmount_requested;
	char *faults; /* the rule list as JSON */
};

/* The tree as its canon, and as its dump once asked for: a dump costs as much as a canon,
 * and says nothing a canon would not, but it is what a spec line's rollback is checked
 * against too. */
struct fz_tree_view {
	char *canon;
	bool dumped;
	char *dump; /* NULL when the dump fails (-E2BIG: a line too long for a spec) */
};

static void fz_daemon_start(struct fz_daemon *z)
{
	memset(&z->d, 0, sizeof(z->d));
	z->d.opts.follow = CFS_FOLLOW_KERNEL;
	z->d.opts.limits = rs_limits_linux;
	z->d.opts.entry_timeout = -1;
	z->d.opts.attr_timeout = -1;
	z->d.tree = fz_tree_of(fz_base_spec, sizeof(fz_base_spec) - 1);
	z->d.paths = cfs_paths_new();
	z->d.faults = cfs_faults_new();
	if (pc_loop_init(&z->loop, NULL) != 0)
		fz_fail("pc_loop_init failed");
	if (cfs_control_start(&z->ctl, &z->d, &z->loop, -1, NULL) != 0)
		fz_fail("cfs_control_start without a socket failed");
}

static void fz_daemon_stop(struct fz_daemon *z)
{
	cfs_control_stop(z->ctl);
	if (pc_loop_destroy(&z->loop) != 0)
		fz_fail("pc_loop_destroy failed");
	cfs_faults_free(z->d.faults);
	cfs_paths_free(z->d.paths);
	cfs_tree_free(z->d.tree);
}

static char *fz_faults_json(const struct cfs_faults *f)
{
	JsonBuilder *b = json_builder_new();

	cfs_fault_list(f, b);
	return cfs_json_text(b);
}

static void fz_state_take(const struct fz_daemon *z, struct fz_state *s)
{
	s->limits = z->d.opts.limits;
	s->follow = z->d.opts.follow;
	s->unmount_requested = z->d.unmount_requested;
	s->faults = fz_faults_json(z->d.faults);
}

static void fz_state_check_same(const struct fz_state *a, const struct fz_state *b, const char *req)
{
	if (a->limits.max_nest != b->limits.max_nest || a->limits.max_total != b->limits.max_total)
		fz_fail("failed request changed the limits %u/%u to %u/%u: %s", a->limits.max_nest,
			a->limits.max_total, b->limits.max_nest, b->limits.max_total, req);
	if (a->follow != b->follow)
		fz_fail("failed request changed the mode: %s", req);
	if (a->unmount_requested != b->unmount_requested)
		fz_fail("failed request changed the unmount flag: %s", req);
	if (strcmp(a->faults, b->faults) != 0)
		fz_fail("failed request changed the fault rules from %s to %s: %s", a->faults,
			b->faults, req);
}

static void fz_view_take(const struct cfs_tree *t, struct fz_tree_view *v)
{
	*v = (struct fz_tree_view){fz_canon(t, FZ_CANON_IDS | FZ_CANON_TIMES), false, NULL};
}

static void fz_view_dump(const struct cfs_tree *t, struct fz_tree_view *v)
{
	int rc;

	if (v->dumped)
		return;
	v->dump = fz_dump(t, &rc);
	if (!v->dump && rc != -E2BIG)
		fz_fail("cfs_spec_dump: %d", rc);
	v->dumped = true;
}

static void fz_view_free(struct fz_tree_view *v)
{
	g_free(v->canon);
	free(v->dump);
	*v = (struct fz_tree_view){NULL, false, NULL};
}

/* The dumps are compared when both were taken. */
static void fz_view_check_same(const struct fz_tree_view *a, const struct fz_tree_view *b,
			       const char *why, const char *req)
{
	if (strcmp(a->canon, b->canon) != 0) {
		fprintf(stderr, "---- before\n%s---- after\n%s----\n", a->canon, b->canon);
		fz_fail("%s changed the tree: %s", why, req);
	}
	if (a->dumped && b->dumped &&
	    ((a->dump == NULL) != (b->dump == NULL) || (a->dump && strcmp(a->dump, b->dump) != 0)))
		fz_fail("%s changed the dump: %s", why, req);
}

/* The request's command word, as cfs_control_handle finds it. */
static void fz_command(const char *req, size_t len, char *out, size_t size)
{
	while (len && (req[len - 1] == '\r' || req[len - 1] == ' ' || req[len - 1] == '\t'))
		len--;
	size_t i = 0, n;

	while (i < len && (req[i] == ' ' || req[i] == '\t'))
		i++;
	for (n = 0; i + n < len && req[i + n] != ' ' && req[i + n] != '\t'; n++)
		;
	if (n >= size || memchr(req, '\0', len))
		n = 0; /* not a command we check further (a NUL is refused whatever follows) */
	memcpy(out, req + i, n);
	out[n] = '\0';
}

static bool fz_is_generator(const char *cmd)
{
	for (size_t i = 0; i < G_N_ELEMENTS(fz_generators); i++)
		if (strcmp(cmd, fz_generators[i]) == 0)
			return true;
	return false;
}

/* The reply's syntax: one line, one JSON object, "ok" and, on failure, "error" only. */
static JsonObject *fz_parse_reply(JsonParser *p, const char *reply, const char *req, bool *ok)
{
	GError *err = NULL;
	JsonNode *root;
	JsonObject *o;

	if (!reply)
		fz_fail("no reply: %s", req);
	for (const char *c = reply; *c; c++)
		if ((unsigned char)*c < 0x20)
			fz_fail("reply holds byte 0x%02x, not one line: %s", (unsigned char)*c,
				req);
	if (!g_utf8_validate(reply, -1, NULL))
		fz_fail("reply is not UTF-8: %s", req);
	if (!json_parser_load_from_data(p, reply, -1, &err))
		fz_fail("reply is not JSON (%s): %s: %s", err->message, reply, req);
	root = json_parser_get_root(p);
	if (!root || !JSON_NODE_HOLDS_OBJECT(root))
		fz_fail("reply is not a JSON object: %s: %s", reply, req);
	o = json_node_get_object(root);
	JsonNode *okn = json_object_get_member(o, "ok");
	if (!okn || !JSON_NODE_HOLDS_VALUE(okn) || json_node_get_value_type(okn) != G_TYPE_BOOLEAN)
		fz_fail("reply has no boolean \"ok\": %s: %s", reply, req);
	*ok = json_node_get_boolean(okn);
	JsonNode *e = json_object_get_member(o, "error");
	if (*ok && e)
		fz_fail("reply is ok with an error: %s: %s", reply, req);
	if (!*ok &&
	    (!e || !JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING ||
	     !*json_node_get_string(e) || json_object_get_size(o) != 2))
		fz_fail("failed reply is not {\"ok\":false,\"error\":MESSAGE}: %s: %s", reply, req);
	return o;
}

static const char *fz_str(JsonObject *o, const char *key, const char *reply)
{
	JsonNode *n = json_object_get_member(o, key);

	if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
		fz_fail("reply has no string \"%s\": %s", key, reply);
	return json_node_get_string(n);
}

static int64_t fz_int(JsonObject *o, const char *key, const char *reply)
{
	JsonNode *n = json_object_get_member(o, key);

	if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
		fz_fail("reply has no integer \"%s\": %s", key, reply);
	return json_node_get_int(n);
}

static JsonObject *fz_obj(JsonObject *o, const char *key, const char *reply)
{
	JsonNode *n = json_object_get_member(o, key);

	if (!n || !JSON_NODE_HOLDS_OBJECT(n))
		fz_fail("reply has no object \"%s\": %s", key, reply);
	return json_node_get_object(n);
}

static guint fz_array_len(JsonObject *o, const char *key, const char *reply)
{
	JsonNode *n = json_object_get_member(o, key);

	if (!n || !JSON_NODE_HOLDS_ARRAY(n))
		fz_fail("reply has no array \"%s\": %s", key, reply);
	return json_array_get_length(json_node_get_array(n));
}

/* `fault log` keeps the latest hits and counts the rest; every other `fault` lists rules. */
static void fz_check_fault(JsonObject *o, const char *reply)
{
	if (!json_object_has_member(o, "log")) {
		fz_array_len(o, "faults", reply);
		return;
	}
	int64_t hits = fz_int(o, "hits", reply), dropped = fz_int(o, "dropped", reply);
	guint kept = fz_array_len(o, "log", reply);
	if (kept > CFS_FAULT_LOG_MAX || dropped < 0 || (int64_t)kept + dropped != hits)
		fz_fail("fault log keeps %u of %lld hits and drops %lld: %s", kept, (long long)hits,
			(long long)dropped, reply);
}

/* What a successful reply says must be what the daemon now holds. */
static void fz_check_success(struct fz_daemon *z, const char *cmd, JsonObject *o, const char *reply,
			     uint64_t nodes_before)
{
	struct cfs_tree_stats st;
	const char *mode = cfs_follow_modes[z->d.opts.follow].name;

	cfs_tree_stats(z->d.tree, &st);
	if (strcmp(cmd, "ping") == 0) {
		if (strcmp(fz_str(o, "version", reply), CFS_VERSION) != 0)
			fz_fail("ping gives another version: %s", reply);
	} else if (strcmp(cmd, "stats") == 0) {
		if (fz_int(fz_obj(o, "tree", reply), "nodes", reply) != (int64_t)st.nodes)
			fz_fail("stats gives another node count than %llu: %s",
				(unsigned long long)st.nodes, reply);
		if (strcmp(fz_str(o, "mode", reply), mode) != 0)
			fz_fail("stats gives another mode than %s: %s", mode, reply);
	} else if (strcmp(cmd, "limits") == 0) {
		if (fz_int(o, "nest", reply) != z->d.opts.limits.max_nest ||
		    fz_int(o, "total", reply) != z->d.opts.limits.max_total)
			fz_fail("limits gives other limits than %u/%u: %s",
				z->d.opts.limits.max_nest, z->d.opts.limits.max_total, reply);
	} else if (strcmp(cmd, "mode") == 0) {
		if (strcmp(fz_str(o, "mode", reply), mode) != 0)
			fz_fail("mode gives another mode than %s: %s", mode, reply);
	} else if (strcmp(cmd, "resolve") == 0) {
		guint steps = fz_array_len(o, "steps", reply);
		fz_str(o, "path", reply);
		if (steps > CFS_CTL_MAX_STEPS ||
		    (json_object_has_member(o, "steps_omitted") &&
		     (steps != CFS_CTL_MAX_STEPS || fz_int(o, "steps_omitted", reply) < 1)))
			fz_fail("resolve keeps %u steps, past %d or short of it with some omitted",
				steps, CFS_CTL_MAX_STEPS);
		if (json_object_has_member(o, "node") == json_object_has_member(o, "errno"))
			fz_fail("resolve gives both or neither of node and errno: %s", reply);
		if (json_object_has_member(o, "node") &&
		    (fz_int(o, "node", reply) < CFS_ROOT || !*fz_str(o, "kind", reply)))
			fz_fail("resolve gives a node that is none: %s", reply);
	} else if (strcmp(cmd, "dump") == 0) {
		int rc;
		char *dump = fz_dump(z->d.tree, &rc);
		/* the reply made invalid UTF-8 valid: compare only when there was none */
		if (dump && g_utf8_validate(dump, -1, NULL) &&
		    strcmp(dump, fz_str(o, "spec", reply)) != 0)
			fz_fail("dump gives another spec than cfs_spec_dump: %s", reply);
		free(dump);
	} else if (strcmp(cmd, "fault") == 0) {
		fz_check_fault(o, reply);
	} else if (strcmp(cmd, "unmount") == 0) {
		if (!z->d.unmount_requested)
			fz_fail("unmount answered ok without asking for it");
	} else if (fz_is_generator(cmd)) {
		if (fz_int(o, "nodes_added", reply) != (int64_t)(st.nodes - nodes_before))
			fz_fail("nodes_added is not %lld: %s", (long long)(st.nodes - nodes_before),
				reply);
	} else {
		fz_fail("unknown command %s answered ok: %s", cmd, reply);
	}
}

/* The request for messages: its first 200 bytes, printable, so a log stays text. */
static char *fz_show(const char *req, size_t len)
{
	GString *s = g_string_new(NULL);

	for (size_t i = 0; i < len && i < 200; i++) {
		unsigned char ch = (unsigned char)req[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			g_string_append_c(s, (char)ch);
		else
			g_string_append_printf(s, "\\x%02x", ch);
	}
	if (len > 200)
		g_string_append_printf(s, "... (%zu bytes)", len);
	return g_string_free(s, FALSE);
}

/* Send one request; false once the tree is too big to go on. *VIEW is the tree before, and
 * is kept up to date. */
static bool fz_request(struct fz_daemon *z, const char *req, size_t len, struct fz_tree_view *view)
{
	struct fz_state before, after;
	struct cfs_tree_stats st;
	char cmd[16], *shown;
	bool ok, generator;

	fz_command(req, len, cmd, sizeof(cmd));
	if (strcmp(cmd, "resolve") == 0 && z->d.opts.limits.max_total > FZ_MAX_WALK_LINKS)
		return true;
	/* `record start FILE` creates FILE wherever it says (`record replace` empties one): not
	 * for a fuzzer running as root (tests/record.sh and test_record cover the command) */
	if (strcmp(cmd, "record") == 0)
		return true;
	generator = fz_is_generator(cmd);
	if (generator)
		fz_view_dump(z->d.tree, view);
	fz_state_take(z, &before);
	cfs_tree_stats(z->d.tree, &st);
	shown = fz_show(req, len);

	char *reply = cfs_control_handle(z->ctl, req, len);
	JsonParser *p = json_parser_new();
	JsonObject *o = fz_parse_reply(p, reply, shown, &ok);

	fz_state_take(z, &after);
	if (!ok)
		fz_state_check_same(&before, &after, shown);
	else
		fz_check_success(z, cmd, o, reply, st.nodes);
	g_object_unref(p);
	g_free(reply);

	bool small = fz_tree_is_small(z->d.tree);
	if (small) {
		struct fz_tree_view now;
		fz_view_take(z->d.tree, &now);
		if (!ok && generator)
			fz_view_dump(z->d.tree, &now);
		if (!ok || !generator)
			fz_view_check_same(view, &now,
					   ok ? "a request not a spec line" : "a failed request",
					   shown);
		fz_view_free(view);
		*view = now;
	}
	g_free(before.faults);
	g_free(after.faults);
	g_free(shown);
	return small;
}

/* The request [P, END) with bytes 1..4 expanded, into a buffer of exactly its length. */
static char *fz_expand(const char *p, const char *end, size_t *len)
{
	GString *s = g_string_sized_new((gsize)(end - p));

	for (; p < end; p++) {
		switch (*p) {
		case 1:
		case 2:
			for (int i = 0; i < RS_NAME_MAX + (*p == 2); i++)
				g_string_append_c(s, 'n');
			break;
		case 3:
			for (int i = 0; i < FZ_EXPAND_PATH_PAIRS; i++)
				g_string_append(s, "./");
			break;
		case 4:
			for (int i = 0; i < FZ_EXPAND_LINE; i++)
				g_string_append_c(s, 'x');
			break;
		default:
			g_string_append_c(s, *p);
		}
	}
	*len = s->len;
	char *req = g_malloc(s->len ? s->len : 1);
	memcpy(req, s->str, s->len);
	g_string_free(s, TRUE);
	return req;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct fz_daemon z;
	struct fz_tree_view view;
	bool going = true;

	fz_budget_limit(FZ_CTL_BUDGET);
	fz_daemon_start(&z);
	fz_view_take(z.d.tree, &view);
	for (int i = 0; going && i < FZ_MAX_REQUESTS && p < end; i++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len;
		char *req = fz_expand(p, nl ? nl : end, &len);

		going = fz_request(&z, req, len, &view);
		g_free(req);
		p = nl ? nl + 1 : end;
	}
	fz_view_free(&view);
	if (fz_tree_is_small(z.d.tree))
		fz_check_round_trip(z.d.tree);
	fz_daemon_stop(&z);
	if (fz_budget_live() != 0)
		fz_fail("the tree kept %zu bytes after cfs_tree_free", fz_budget_live());
	return 0;
}
