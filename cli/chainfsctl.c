/*
 * chainfsctl [-s SOCKET | MOUNTPOINT] [--json] COMMAND [ARGS...]
 * chainfsctl replay [--errno-only] FILE MOUNTPOINT
 * Sends one request to a chainfs daemon's control socket (MOUNTPOINT: any path on the mount)
 * and prints its answer readably (or as the raw JSON line with --json). Exit status: 0, or 1
 * on an error reply (and when a `resolve` walk fails, as namei does), 2 on a usage or
 * connection problem.
 */
#include "chainfsctl_mount.h"
#include "control_cmds.h"
#include "ctlpath.h"
#include "replay.h"
#include "spec.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

enum { CTL_TIMEOUT_S = 30 }; /* a daemon that does not answer in this long is stuck */

static int ctl_connect(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval tv = {CTL_TIMEOUT_S, 0};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(addr.sun_path))
		goto fail;
	strcpy(addr.sun_path, path);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
		return fd;
fail:
	fprintf(stderr, "chainfsctl: %s: %s\n", path, strerror(errno ? errno : ENAMETOOLONG));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Send REQ and read one reply line (malloc'ed), or NULL. */
static char *ctl_ask(int fd, const char *req)
{
	GString *in = g_string_new(NULL);
	char buf[65536];
	ssize_t n = -1;

	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0 || send(fd, "\n", 1, MSG_NOSIGNAL) < 0)
		goto fail;
	while (!memchr(in->str, '\n', in->len)) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		g_string_append_len(in, buf, n);
	}
	*strchr(in->str, '\n') = '\0';
	return g_string_free(in, FALSE);
fail:
	fprintf(stderr, "chainfsctl: no answer: %s\n",
		n == 0 ? "connection closed" : strerror(errno));
	g_string_free(in, TRUE);
	return NULL;
}

static void print_value(const char *key, JsonNode *v, int indent)
{
	if (JSON_NODE_HOLDS_OBJECT(v)) {
		JsonObject *o = json_node_get_object(v);
		GList *keys = json_object_get_members(o);
		printf("%*s%s:\n", indent, "", key);
		for (GList *k = keys; k; k = k->next)
			print_value(k->data, json_object_get_member(o, k->data), indent + 2);
		g_list_free(keys);
	} else if (JSON_NODE_HOLDS_VALUE(v)) {
		GType t = json_node_get_value_type(v);
		gchar *s = t == G_TYPE_STRING ? g_strdup(json_node_get_string(v))
			   : t == G_TYPE_BOOLEAN
			       ? g_strdup(json_node_get_boolean(v) ? "yes" : "no")
			       : g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(v));
		printf("%*s%-*s %s\n", indent, "", 28 - indent, key, s);
		g_free(s);
	}
}

static const char *str_of(JsonObject *o, const char *key)
{
	return json_object_has_member(o, key) ? json_object_get_string_member(o, key) : NULL;
}

/* MODE as ls -l and namei -l write it ("drwxr-xr-x") into OUT. */
static void mode_string(mode_t mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = S_ISDIR(mode)	  ? 'd'
		 : S_ISLNK(mode)  ? 'l'
		 : S_ISFIFO(mode) ? 'p'
		 : S_ISSOCK(mode) ? 's'
		 : S_ISCHR(mode)  ? 'c'
		 : S_ISBLK(mode)  ? 'b'
				  : '-';
	for (int i = 0; i < 9; i++)
		out[1 + i] = mode & (0400u >> i) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = out[3] == 'x' ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = out[6] == 'x' ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = out[9] == 'x' ? 't' : 'T';
	out[10] = '\0';
}

/* The owner and group names of a walk's steps (resolve -l), the last ones kept: a walk's
 * steps mostly share them, and each lookup may read /etc/passwd again. */
struct id_name {
	gint64 id;
	char name[64];
};
struct walk_owners {
	struct id_name user, group;
	int user_width, group_width;
};

static const char *passwd_name(gint64 uid)
{
	struct passwd *pw = getpwuid((uid_t)uid);
	return pw ? pw->pw_name : NULL;
}

static const char *group_name(gint64 gid)
{
	struct group *gr = getgrgid((gid_t)gid);
	return gr ? gr->gr_name : NULL;
}

/* ID's name by LOOKUP, or the number when it has none; C keeps the last one. */
static const char *id_name_of(struct id_name *c, const char *(*lookup)(gint64), gint64 id)
{
	const char *name;

	if (id == c->id)
		return c->name;
	c->id = id;
	if ((name = lookup(id)))
		g_strlcpy(c->name, name, sizeof(c->name));
	else
		snprintf(c->name, sizeof(c->name), "%" G_GINT64_FORMAT, id);
	return c->name;
}

/* Whether step S has a line of its own (a link component does not: the link step that
 * follows names it). */
static bool walk_shows(JsonObject *s)
{
	return strcmp(str_of(s, "step"), "component") != 0 ||
	       strcmp(str_of(s, "kind"), "link") != 0;
}

/* What comes before step S's name: its type (" d "), or with OWNERS its mode, owner and group
 * as namei -l shows them ("drwxr-xr-x root root "); then the indent of its nesting depth. */
static void print_step_lead(JsonObject *s, struct walk_owners *owners)
{
	const char *kind = str_of(s, "kind");
	int depth = (int)json_object_get_int_member(s, "depth");
	int indent = strcmp(str_of(s, "step"), "link") == 0 ? depth * 2 - 2 : depth * 2;
	char mode[11];

	if (!owners) {
		printf("%*s %c ", indent, "",
		       kind[0] == 'd'	? 'd'
		       : kind[0] == 'f' ? '-'
		       : kind[0] == 'l' ? 'l'
					: '?');
		return;
	}
	mode_string((mode_t)json_object_get_int_member_with_default(s, "mode", 0), mode);
	printf("%s %-*s ", mode, owners->user_width,
	       id_name_of(&owners->user, passwd_name,
			  json_object_get_int_member_with_default(s, "uid", -1)));
	printf("%-*s %*s", owners->group_width,
	       id_name_of(&owners->group, group_name,
			  json_object_get_int_member_with_default(s, "gid", -1)),
	       indent, "");
}

/* The widths of the owner and group columns, as namei -l aligns them. */
static void walk_owner_widths(JsonArray *steps, struct walk_owners *w)
{
	for (guint i = 0; i < json_array_get_length(steps); i++) {
		JsonObject *s = json_array_get_object_element(steps, i);
		if (!walk_shows(s))
			continue;
		int u = (int)strlen(id_name_of(
		    &w->user, passwd_name, json_object_get_int_member_with_default(s, "uid", -1)));
		int g = (int)strlen(id_name_of(
		    &w->group, group_name, json_object_get_int_member_with_default(s, "gid", -1)));
		w->user_width = MAX(w->user_width, u);
		w->group_width = MAX(w->group_width, g);
	}
}

/* The walk as namei shows it: one line a step, indented by nesting depth; with LONG_LIST
 * (resolve -l) each step's mode, owner and group first, as namei -l. */
static void print_walk(JsonObject *o, bool long_list)
{
	JsonArray *steps = json_object_get_array_member(o, "steps");
	struct walk_owners owners = {.user.id = -2, .group.id = -2};

	if (long_list)
		walk_owner_widths(steps, &owners);
	printf("f: %s\n", str_of(o, "path"));
	for (guint i = 0; i < json_array_get_length(steps); i++) {
		JsonObject *s = json_array_get_object_element(steps, i);
		const char *step = str_of(s, "step");

		if (!walk_shows(s))
			continue;
		print_step_lead(s, long_list ? &owners : NULL);
		if (strcmp(step, "root") == 0)
			printf("/\n");
		else if (strcmp(step, "link") == 0)
			printf("%s -> %s\n", str_of(s, "name"), str_of(s, "target"));
		else
			printf("%s\n", str_of(s, "name"));
	}
	if (json_object_has_member(o, "steps_omitted")) /* the daemon keeps the first ones */
		printf("  ... %" G_GINT64_FORMAT " more steps not shown\n",
		       json_object_get_int_member(o, "steps_omitted"));
	gint64 links = json_object_get_int_member(o, "links");
	const char *unit = links == 1 ? "link" : "links";

	if (str_of(o, "errno") && json_object_has_member(o, "loop"))
		printf(
		    "  %s: a loop, the walk came back to where it had been (after %" G_GINT64_FORMAT
		    " %s)\n",
		    str_of(o, "errno"), links, unit);
	else if (str_of(o, "errno"))
		printf("  %s (after %" G_GINT64_FORMAT " %s)\n", str_of(o, "errno"), links, unit);
	else
		printf("  = node %" G_GINT64_FORMAT " (%s), %" G_GINT64_FORMAT
		       " %s, deepest nesting %" G_GINT64_FORMAT "\n",
		       json_object_get_int_member(o, "node"), str_of(o, "kind"), links, unit,
		       json_object_get_int_member(o, "deepest_nesting"));
	printf("  walked in %" G_GINT64_FORMAT " ns (without the trace)\n",
	       json_object_get_int_member(o, "duration_ns"));
}

/* What a rule does, in one word: "EIO" (or "EIO|ENOSPC"), "short=512", "nowrite",
 * "kill=SIGTERM" (an errno it answers with on the line below), "corrupt=flip", "attr" (its
 * fields below), "change" (its
 * lines follow on a line of their own), "hold" or "hold=MS", or "delay" (a delay only: the
 * request is then served as usual). */
static const char *fault_effect(JsonObject *f, char *buf, size_t size)
{
	if (str_of(f, "change") && *str_of(f, "change"))
		return "change";
	if (str_of(f, "kill")) {
		snprintf(buf, size, "kill=%s", str_of(f, "kill"));
		return buf;
	}
	if (str_of(f, "corrupt")) {
		snprintf(buf, size, "corrupt=%s", str_of(f, "corrupt"));
		return buf;
	}
	if (str_of(f, "attr"))
		return "attr"; /* its fields on the line below */
	if (*str_of(f, "errno"))
		return str_of(f, "errno");
	if (json_object_get_boolean_member_with_default(f, "nowrite", FALSE))
		return "nowrite";
	if (json_object_get_boolean_member_with_default(f, "hold", FALSE)) {
		gint64 ms = json_object_get_int_member_with_default(f, "hold_ms", 0);
		if (!ms)
			return "hold";
		snprintf(buf, size, "hold=%" G_GINT64_FORMAT, ms);
		return buf;
	}
	if (json_object_get_int_member_with_default(f, "short", 0) > 0) {
		snprintf(buf, size, "short=%" G_GINT64_FORMAT,
			 json_object_get_int_member(f, "short"));
		return buf;
	}
	return "delay";
}

/* A rule's when, how often and who, and its change, on a line below it (if it has any). */
static void fault_details(JsonObject *f)
{
	GString *line = g_string_new(NULL);
	static const char *const keys[] = {"when", "nth",    "count", "after", "up",
					   "down", "window", "to",    "pid",   "uid",
					   "comm", "bytes",  "at",    "len",   "attr"};

	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		JsonNode *v = json_object_get_member(f, keys[i]);
		if (!v)
			continue;
		if (json_node_get_value_type(v) == G_TYPE_STRING)
			g_string_append_printf(line, " %s=%s", keys[i], json_node_get_string(v));
		else
			g_string_append_printf(line, " %s=%" G_GINT64_FORMAT, keys[i],
					       json_node_get_int(v));
	}
	/* a kill rule's effect word is the signal: the errno it answers with goes here */
	if (str_of(f, "kill") && *str_of(f, "errno"))
		g_string_append_printf(line, " errno=%s", str_of(f, "errno"));
	/* how many requests it keeps waiting now: always for a hold, else when some */
	gint64 held = json_object_get_int_member_with_default(f, "held", 0);
	if (held || json_object_get_boolean_member_with_default(f, "hold", FALSE))
		g_string_append_printf(line, " held=%" G_GINT64_FORMAT, held);
	if (json_object_get_boolean_member_with_default(f, "spent", FALSE))
		g_string_append(line, " (spent)");
	if (str_of(f, "change") && *str_of(f, "change"))
		g_string_append_printf(line, " change=%s", str_of(f, "change"));
	if (line->len)
		printf("     %s\n", line->str);
	g_string_free(line, TRUE);
}

static void print_faults(JsonObject *o)
{
	JsonArray *a = json_object_get_array_member(o, "faults");
	char buf[32];

	if (json_object_has_member(o, "id"))
		printf("added rule %" G_GINT64_FORMAT "\n", json_object_get_int_member(o, "id"));
	if (json_object_has_member(o, "released"))
		printf("released %" G_GINT64_FORMAT " held requests\n",
		       json_object_get_int_member(o, "released"));
	printf("%4s %-12s %-24s %-12s %6s %8s %10s %10s\n", "id", "op", "path", "effect", "prob",
	       "delay_ms", "checks", "hits");
	for (guint i = 0; i < json_array_get_length(a); i++) {
		JsonObject *f = json_array_get_object_element(a, i);
		printf("%4" G_GINT64_FORMAT " %-12s %-24s %-12s %6.3f %8" G_GINT64_FORMAT
		       " %10" G_GINT64_FORMAT " %10" G_GINT64_FORMAT "\n",
		       json_object_get_int_member(f, "id"), str_of(f, "op"), str_of(f, "path"),
		       fault_effect(f, buf, sizeof(buf)), json_object_get_double_member(f, "prob"),
		       json_object_get_int_member(f, "delay_ms"),
		       json_object_get_int_member(f, "checks"),
		       json_object_get_int_member(f, "hits"));
		fault_details(f);
	}
}

/* What a hit did beyond its rule's one effect, on a line below it: the errno drawn from a
 * list, the signal sent (or not), the corruption, and the bytes a read or write spanned. */
static void fault_hit_details(JsonObject *h)
{
	GString *line = g_string_new(NULL);

	if (str_of(h, "kill"))
		g_string_append_printf(line, " kill=%s (%s)", str_of(h, "kill"),
				       json_object_get_boolean_member_with_default(h, "sent", FALSE)
					   ? "sent"
					   : "not sent: no pid");
	if (str_of(h, "errno"))
		g_string_append_printf(line, " errno=%s", str_of(h, "errno"));
	if (str_of(h, "corrupt"))
		g_string_append_printf(line, " corrupt=%s", str_of(h, "corrupt"));
	if (str_of(h, "attr"))
		g_string_append_printf(line, " attr=%s", str_of(h, "attr"));
	if (str_of(h, "to"))
		g_string_append_printf(line, " to=%s", str_of(h, "to"));
	if (json_object_has_member(h, "window_us"))
		g_string_append_printf(line, " window_us=%" G_GINT64_FORMAT,
				       json_object_get_int_member(h, "window_us"));
	if (json_object_has_member(h, "offset"))
		g_string_append_printf(line, " offset=%" G_GINT64_FORMAT " size=%" G_GINT64_FORMAT,
				       json_object_get_int_member(h, "offset"),
				       json_object_get_int_member(h, "size"));
	if (line->len)
		printf("    %s\n", line->str);
	g_string_free(line, TRUE);
}

/* `fault log`: one hit a line, oldest first; the draw is "-" for rules that always fire. */
static void print_fault_log(JsonObject *o)
{
	JsonArray *a = json_object_get_array_member(o, "log");

	printf("%" G_GINT64_FORMAT " hits, %" G_GINT64_FORMAT " older ones not kept\n",
	       json_object_get_int_member(o, "hits"), json_object_get_int_member(o, "dropped"));
	printf("%-26s %4s %-12s %6s %-20s %8s %-8s %7s %s\n", "time", "id", "op", "prob", "seed",
	       "check", "draw", "pid", "path");
	for (guint i = 0; i < json_array_get_length(a); i++) {
		JsonObject *h = json_array_get_object_element(a, i);
		gint64 us = json_object_get_int_member(h, "time_us");
		char draw[16] = "-";
		if (!json_object_get_null_member(h, "draw"))
			snprintf(draw, sizeof(draw), "%.6f",
				 json_object_get_double_member(h, "draw"));
		/* local time to the microsecond, as ISO 8601 writes it (the JSON has the epoch) */
		GDateTime *t = g_date_time_new_from_unix_local(us / 1000000);
		gchar *when = t ? g_date_time_format(t, "%Y-%m-%dT%H:%M:%S") : NULL;
		printf("%s.%06" G_GINT64_FORMAT " %4" G_GINT64_FORMAT
		       " %-12s %6.3f %-20s %8" G_GINT64_FORMAT " %-8s %7" G_GINT64_FORMAT " %s\n",
		       when ? when : "?", us % 1000000, json_object_get_int_member(h, "id"),
		       str_of(h, "op"), json_object_get_double_member(h, "prob"), str_of(h, "seed"),
		       json_object_get_int_member(h, "check"), draw,
		       json_object_get_int_member_with_default(h, "pid", 0), str_of(h, "path"));
		if (json_object_has_member(h, "change"))
			printf("     change %s: %s\n", str_of(h, "change"), str_of(h, "result"));
		fault_hit_details(h);
		g_free(when);
		if (t)
			g_date_time_unref(t);
	}
}

static int print_reply(const char *cmd, JsonObject *o, bool long_list)
{
	if (!json_object_get_boolean_member(o, "ok")) {
		fprintf(stderr, "chainfsctl: %s\n", str_of(o, "error"));
		return 1;
	}
	if (strcmp(cmd, "resolve") == 0) {
		print_walk(o, long_list);
		return str_of(o, "errno") ? 1 : 0;
	}
	if (strcmp(cmd, "dump") == 0) {
		fputs(str_of(o, "spec"), stdout);
		return 0;
	}
	if (strcmp(cmd, "fault") == 0) {
		if (json_object_has_member(o, "log"))
			print_fault_log(o);
		else
			print_faults(o);
		return 0;
	}
	GList *keys = json_object_get_members(o);
	for (GList *k = keys; k; k = k->next)
		if (strcmp(k->data, "ok") != 0)
			print_value(k->data, json_object_get_member(o, k->data), 0);
	if (!keys->next)
		printf("ok\n");
	g_list_free(keys);
	return 0;
}

/* The commands, for the usage text and for completion (--commands): the daemon's table. */
#define CFS_CTL_COMMAND(name, usage) {#name, usage},
static const char *const cfs_commands[][2] = {CFS_CTL_COMMANDS(CFS_CTL_COMMAND)};
#undef CFS_CTL_COMMAND
/* spec lines run at runtime (chainfs-spec(5)) */
#define CFS_SPEC_WORD(name, ...) #name,
static const char *const cfs_spec_words[] = {CFS_SPEC_KEYWORDS(CFS_SPEC_WORD)};
#undef CFS_SPEC_WORD

/* Whether WORD is a spec keyword, whose line the spec lexer reads (chainfs-spec(5)). */
static bool is_spec_word(const char *word)
{
	for (size_t i = 0; i < G_N_ELEMENTS(cfs_spec_words); i++)
		if (strcmp(word, cfs_spec_words[i]) == 0)
			return true;
	return false;
}

/* The letters a backslash makes an escape of in a quoted spec word (spec.h). */
#define CFS_SPEC_ESCAPE_LETTER(letter, byte) letter,
static const char cfs_spec_escape_letters[] = {
    CFS_SPEC_ESCAPES(CFS_SPEC_ESCAPE_LETTER) CFS_SPEC_ESCAPE_HEX, '\0'};
#undef CFS_SPEC_ESCAPE_LETTER

/* V as one quoted word of the spec lexer: its escapes (\n \t \xHH ..., spec.h) keep their
 * meaning, a lone backslash and a quote are escaped, and control bytes, which would end or
 * break the line, are written as \xHH. */
static void put_quoted(GString *line, const char *v)
{
	g_string_append_c(line, '"');
	for (const char *p = v; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '\\' && p[1] && strchr(cfs_spec_escape_letters, p[1]))
			g_string_append_c(g_string_append_c(line, '\\'), *++p);
		else if (ch == '\\' || ch == '"')
			g_string_append_c(g_string_append_c(line, '\\'), (char)ch);
		else if (ch < 0x20 || ch == 0x7f)
			g_string_append_printf(line, "\\x%02x", ch);
		else
			g_string_append_c(line, (char)ch);
	}
	g_string_append_c(line, '"');
}

/* Whether W must be quoted to stay one word with its bytes: empty, or holding a blank, a
 * quote, a backslash, a '#' or a control byte. */
static bool needs_quotes(const char *w)
{
	if (!*w)
		return true;
	for (const unsigned char *p = (const unsigned char *)w; *p; p++)
		if (*p <= ' ' || *p == 0x7f || strchr("\"\\#", *p))
			return true;
	return false;
}

/* Whether W is written as one quoted word already ("..." with no bare quote inside), as a
 * shell user types '"more\n"' for a spec line's content. A backslash takes the next byte
 * with it, as in the lexer's quoted part, whatever it is: a wrong escape is the lexer's to
 * name (spec.h keeps the list). */
static bool is_quoted_word(const char *w)
{
	size_t n = strlen(w);

	if (n < 2 || w[0] != '"' || w[n - 1] != '"')
		return false;
	for (size_t i = 1; i < n - 1; i++) {
		if (w[i] == '\\' && i + 1 < n - 1)
			i++;
		else if (w[i] == '"' || w[i] == '\\')
			return false;
	}
	return true;
}

/* One argument of a spec line, a word of its own whatever it holds: as it is when it needs
 * no quotes or is quoted already, else quoted; an attribute (KEY=VALUE) keeps its key bare
 * and quotes its value. */
static void put_word(GString *line, const char *w)
{
	size_t key = strspn(w, "abcdefghijklmnopqrstuvwxyz_");

	if (!needs_quotes(w) || is_quoted_word(w)) {
		g_string_append(line, w);
	} else if (key && w[key] == '=') {
		g_string_append_len(line, w, (gssize)key + 1);
		put_quoted(line, w + key + 1);
	} else {
		put_quoted(line, w);
	}
}

/* The request for ARGV (N words): a spec line's arguments each quoted as one word, unless the
 * keyword's argument holds the whole line already (`chainfsctl M 'file /f "x"'`); other
 * commands' words joined with spaces. */
static gchar *request_of(char **argv, int n)
{
	if (n == 1 || !is_spec_word(argv[0]))
		return g_strjoinv(" ", argv);
	GString *line = g_string_new(argv[0]);
	for (int k = 1; k < n; k++) {
		g_string_append_c(line, ' ');
		put_word(line, argv[k]);
	}
	return g_string_free(line, FALSE);
}

/* `resolve [-l] [nofollow] PATH`, as chainfsctl reads it before the daemon does. */
struct resolve_args {
	bool long_list;	  /* -l: each step's mode, owner and group, as namei -l */
	gchar *path;	  /* as sent: a host path on the mount made its path in the tree */
	gchar *host_part; /* PATH is not on the mount: the longest part of it the host has */
};

/* The request for resolve ARGV (N words). ROOT is the mount point (NULL with -s): an absolute
 * PATH that leads onto the mount is sent as its path in the tree; any other PATH is one in
 * the tree already (from its root). -l is chainfsctl's: every reply has what it shows. */
static gchar *resolve_request(char **argv, int n, const char *root, struct resolve_args *r)
{
	GString *req = g_string_new("resolve");
	gchar *tree;
	int k = 1;

	for (; k < n && (strcmp(argv[k], "-l") == 0 || strcmp(argv[k], "nofollow") == 0); k++)
		if (argv[k][0] == '-')
			r->long_list = true;
		else
			g_string_append(req, " nofollow");
	r->path = g_strjoinv(" ", argv + k);
	if (root && r->path[0] == '/' && cfs_tree_path_of(root, r->path, &tree, &r->host_part)) {
		g_free(r->path);
		r->path = tree;
		g_clear_pointer(&r->host_part, g_free);
	}
	if (*r->path)
		g_string_append_printf(req, " %s", r->path);
	return g_string_free(req, FALSE);
}

/* The walk of R's path in the tree failed with ERR, and the path names a place on the host
 * off the mount at ROOT: that is what the user meant, so say where it is instead of showing
 * a walk of the tree. */
static void say_elsewhere(const struct resolve_args *r, const char *root, const char *err)
{
	char *mnt = NULL, type[CFS_FSTYPE_MAX] = "another filesystem";

	cfs_mount_of(r->host_part, &mnt, type, sizeof(type));
	fprintf(stderr,
		"chainfsctl: %s: on %s at %s, not on the chainfs mount at %s (nor a path in "
		"its tree: %s)\n",
		r->path, type, mnt ? mnt : "?", root, err);
	g_free(mnt);
}

/* Print the reply LINE to command CMD: raw with JSON, else readably. The exit status. */
static int answer(const char *line, const char *cmd, bool json, const struct resolve_args *r,
		  const char *root)
{
	JsonParser *p = json_parser_new();
	JsonObject *o = NULL;
	int rc = 2;

	if (json_parser_load_from_data(p, line, -1, NULL) &&
	    JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p)))
		o = json_node_get_object(json_parser_get_root(p));
	if (o && r->host_part && str_of(o, "errno")) {
		say_elsewhere(r, root, str_of(o, "errno"));
	} else if (json) {
		puts(line);
		rc = strstr(line, "\"ok\":false") ? 1 : 0;
	} else if (o) {
		rc = print_reply(cmd, o, r->long_list);
	} else {
		fprintf(stderr, "chainfsctl: not a JSON object: %s\n", line);
	}
	g_object_unref(p);
	return rc;
}

static void print_usage(FILE *f)
{
	fprintf(f, "usage: chainfsctl [-s SOCKET | MOUNTPOINT] [--json] COMMAND [ARGS...]\n"
		   "       chainfsctl replay [--errno-only] FILE MOUNTPOINT  (a recording's "
		   "syscalls again)\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(cfs_commands) / sizeof(cfs_commands[0]); i++)
		fprintf(f, "  %s%s%s\n", cfs_commands[i][0], *cfs_commands[i][1] ? " " : "",
			cfs_commands[i][1]);
	fprintf(f, "  spec lines:");
	for (size_t i = 0; i < sizeof(cfs_spec_words) / sizeof(cfs_spec_words[0]); i++)
		fprintf(f, " %s", cfs_spec_words[i]);
	fprintf(f, "\n(see chainfsctl(1) and chainfs-spec(5))\n");
}

static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "chainfsctl: %s\n", why);
	print_usage(stderr);
	return 2;
}

/* replay [--errno-only] FILE MOUNTPOINT */
static int replay_main(int argc, char **argv)
{
	bool errno_only = argc > 0 && strcmp(argv[0], "--errno-only") == 0;

	if (argc - errno_only != 2)
		return usage("usage: chainfsctl replay [--errno-only] FILE MOUNTPOINT");
	return cfs_replay(argv[errno_only], argv[errno_only + 1], errno_only);
}

/* Connect to the socket of the mount ARG is on (its mount point or any path on it), saying
 * what is wrong when it fails. *ROOT gets the mount point (g_free()). */
static int connect_mount(const char *arg, char **root)
{
	char path[CFS_SUN_PATH_MAX], type[CFS_FSTYPE_MAX] = "";
	struct stat st;
	int err = cfs_mount_of(arg, root, type, sizeof(type));

	if (!err)
		err = cfs_ctl_default_path(*root, path, sizeof(path), 0);
	if (err) {
		fprintf(stderr, "chainfsctl: %s: %s\n", arg, strerror(-err));
		return -1;
	}
	if (stat(path, &st) == 0)
		return ctl_connect(path);
	if (strcmp(type, "fuse.chainfs") != 0)
		fprintf(stderr, "chainfsctl: not a chainfs mount: %s\n", arg);
	else
		fprintf(stderr,
			"chainfsctl: %s: no control socket at %s (mounted with -o ctl=...? "
			"then give it with -s)\n",
			*root, path);
	return -1;
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *mnt = NULL;
	int i = 1, rc = 2, fd;
	bool json = false;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			print_usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--commands") == 0) { /* one a line, for completion */
			for (size_t k = 0; k < sizeof(cfs_commands) / sizeof(cfs_commands[0]); k++)
				puts(cfs_commands[k][0]);
			for (size_t k = 0; k < sizeof(cfs_spec_words) / sizeof(cfs_spec_words[0]);
			     k++)
				puts(cfs_spec_words[k]);
			return 0;
		}
		if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			sock = argv[++i];
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else {
			fprintf(stderr, "chainfsctl: unknown option '%s'\n", argv[i]);
			return usage(NULL);
		}
	}
	if (!sock && i >= argc)
		return usage("missing MOUNTPOINT (or -s SOCKET)");
	if (!sock && strcmp(argv[i], "replay") == 0)
		return replay_main(argc - i - 1, argv + i + 1);
	if (!sock)
		mnt = argv[i++];
	for (; i < argc && argv[i][0] == '-'; i++)
		if (strcmp(argv[i], "--json") == 0)
			json = true;
	if (i >= argc)
		return usage("missing COMMAND");
	/* the daemon opens the file and its cwd is not ours: send the path we mean */
	gchar *abs = NULL, *root = NULL, *req = NULL;
	struct resolve_args r = {false, NULL, NULL};
	char *line = NULL;
	if (argc - i == 3 && strcmp(argv[i], "record") == 0 &&
	    (strcmp(argv[i + 1], "start") == 0 || strcmp(argv[i + 1], "replace") == 0))
		argv[i + 2] = abs = g_canonicalize_filename(argv[i + 2], NULL);
	if ((fd = mnt ? connect_mount(mnt, &root) : ctl_connect(sock)) < 0)
		goto out;
	req = strcmp(argv[i], "resolve") == 0 ? resolve_request(argv + i, argc - i, root, &r)
					      : request_of(argv + i, argc - i);
	line = ctl_ask(fd, req);
	close(fd);
	if (line)
		rc = answer(line, argv[i], json, &r, root);
out:
	free(line);
	g_free(req);
	g_free(abs);
	g_free(root);
	g_free(r.path);
	g_free(r.host_part);
	return rc;
}
