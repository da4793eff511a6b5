/*
 * One recorded line, checked before anything is made of it (replay_int.h). json-glib's
 * parser recurses once per nesting level, so a line nested a hundred thousand deep would
 * overflow the stack inside it: a recorded line is one flat object, and anything deeper is
 * refused before the parser sees it. Every member the recorder writes is then checked for
 * its type, so that no getter is ever asked for what the node does not hold.
 */
#include "replay_int.h"

#include "record_kind.h"

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum { REPLAY_ERRNO_MAX = 4095 }; /* what a reply can carry (MAX_ERRNO) */
#define REPLAY_MODE_MAX UINT32_MAX

enum replay_kind { K_STR, K_INT, K_INT_OR_NULL, K_RESULT };

/* The recorder's members (record.h) and what each must hold. */
static const struct {
	const char *name;
	enum replay_kind kind;
} replay_members[] = {
    {"op", K_STR},	    {"path", K_STR},   {"path_hex", K_STR},	 {"to", K_STR},
    {"to_hex", K_STR},	    {"target", K_STR}, {"errno", K_INT_OR_NULL}, {"result", K_RESULT},
    {"ns", K_INT},	    {"mode", K_INT},   {"t_ns", K_INT},		 {"nodeid", K_INT},
    {"pid", K_INT},	    {"v", K_INT},      {"kind", K_STR},		 {"size", K_INT},
    {"offset", K_INT},	    {"body", K_STR},   {"body_hex", K_STR},	 {"entries", K_STR},
    {"entries_hex", K_STR},
};

static const char *const replay_kind_names[] = {
    [K_STR] = "a string",
    [K_INT] = "a non-negative integer",
    [K_INT_OR_NULL] = "a non-negative integer or null",
    [K_RESULT] = "0, an errno name or null",
};

/* No object or array inside another (nor a close before its open): the only shape a
 * recorded line has. */
static bool replay_flat(const char *s, size_t n)
{
	bool str = false, esc = false;
	int depth = 0;

	for (size_t i = 0; i < n; i++) {
		if (esc)
			esc = false;
		else if (str && s[i] == '\\')
			esc = true;
		else if (str)
			str = s[i] != '"';
		else if (s[i] == '"')
			str = true;
		else if ((s[i] == '{' || s[i] == '[') && ++depth > 1)
			return false;
		else if ((s[i] == '}' || s[i] == ']') && --depth < 0)
			return false;
	}
	return true;
}

static bool replay_kind_ok(JsonNode *n, enum replay_kind k)
{
	GType t = JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
	bool num = t == G_TYPE_INT64 && json_node_get_int(n) >= 0;

	switch (k) {
	case K_STR:
		return t == G_TYPE_STRING;
	case K_INT:
		return num;
	case K_INT_OR_NULL:
		return num || JSON_NODE_HOLDS_NULL(n);
	case K_RESULT:
		return num || t == G_TYPE_STRING || JSON_NODE_HOLDS_NULL(n);
	}
	return false;
}

/* Every known member present has its kind; the name of the first that does not, or NULL. */
static const char *replay_bad_member(JsonObject *o, enum replay_kind *kind)
{
	for (size_t i = 0; i < G_N_ELEMENTS(replay_members); i++) {
		JsonNode *n = json_object_get_member(o, replay_members[i].name);
		if (n && !replay_kind_ok(n, replay_members[i].kind)) {
			*kind = replay_members[i].kind;
			return replay_members[i].name;
		}
	}
	return NULL;
}

/* "KEY" as it is, or "KEY_hex" decoded; NULL in *OUT when neither; -1: bad hex or a NUL. */
static int replay_string(JsonObject *o, const char *key, char **out)
{
	char hexkey[16];
	const char *hex;
	size_t n;

	*out = NULL;
	if (json_object_has_member(o, key)) {
		*out = g_strdup(json_object_get_string_member(o, key));
		return 0;
	}
	snprintf(hexkey, sizeof(hexkey), "%s_hex", key);
	if (!json_object_has_member(o, hexkey))
		return 0;
	hex = json_object_get_string_member(o, hexkey);
	n = strlen(hex);
	if (n % 2)
		return -1;
	char *s = g_malloc(n / 2 + 1);
	for (size_t i = 0; i < n / 2; i++) {
		int hi = g_ascii_xdigit_value(hex[2 * i]),
		    lo = g_ascii_xdigit_value(hex[2 * i + 1]);
		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			g_free(s);
			return -1;
		}
		s[i] = (char)(hi * 16 + lo);
	}
	s[n / 2] = '\0';
	*out = s;
	return 0;
}

static bool replay_op_name_ok(const char *op)
{
	size_t n = strlen(op);

	return n > 0 && n < REPLAY_OP_MAX &&
	       strspn(op, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static bool replay_letter_ok(char k)
{
	return k == '?' || cfs_kind_name(k);
}

/* "" or K:NAME/K:NAME..., each NAME not empty (record.h). */
static bool replay_entries_ok(const char *s)
{
	while (*s) {
		size_t n = strcspn(s, "/");
		if (n < 3 || s[1] != ':' || !replay_letter_ok(s[0]))
			return false;
		s += n;
		if (*s && !*++s)
			return false; /* a trailing '/' */
	}
	return true;
}

/* Version 2's members: what the reply showed. NULL or the reason. */
static const char *replay_fill_shown(JsonObject *o, struct replay_line *l)
{
	if (json_object_has_member(o, "v")) {
		gint64 v = json_object_get_int_member(o, "v");
		if (v < 1)
			return "\"v\" is not a format version";
		if (v > REPLAY_VERSION_MAX)
			return "recorded in a newer format (\"v\" above 3) than this replay reads";
		l->version = (int)v;
	}
	if (json_object_has_member(o, "kind")) {
		const char *k = json_object_get_string_member(o, "kind");
		if (strlen(k) != 1 || !replay_letter_ok(k[0]))
			return "\"kind\" is not one of d l f p s c b ?";
		l->kind = k[0];
	}
	if (json_object_has_member(o, "size"))
		l->size = json_object_get_int_member(o, "size");
	if (json_object_has_member(o, "offset"))
		l->offset = json_object_get_int_member(o, "offset");
	if (replay_string(o, "body", &l->body) || replay_string(o, "entries", &l->entries))
		return "a *_hex member is not hex digits of non-NUL bytes";
	if (l->entries && !replay_entries_ok(l->entries))
		return "\"entries\" is not K:NAME/K:NAME...";
	return NULL;
}

/* The members' values into L, once their kinds are known to be right; NULL or the reason. */
static const char *replay_fill(JsonObject *o, struct replay_line *l)
{
	JsonNode *e = json_object_get_member(o, "errno");
	const char *op = json_object_get_string_member(o, "op");

	if (!replay_op_name_ok(op))
		return "\"op\" is not an operation's name";
	snprintf(l->op, sizeof(l->op), "%s", op);
	if (!e || !json_object_has_member(o, "ns"))
		return "a recorded request has \"errno\" and \"ns\"";
	l->err = JSON_NODE_HOLDS_NULL(e) ? -1 : (int)MIN(json_node_get_int(e), INT32_MAX);
	if (l->err > REPLAY_ERRNO_MAX)
		return "\"errno\" is not an errno";
	l->ns = (uint64_t)json_object_get_int_member(o, "ns");
	if (json_object_has_member(o, "mode")) {
		gint64 mode = json_object_get_int_member(o, "mode");
		if (mode > REPLAY_MODE_MAX)
			return "\"mode\" is not a mode";
		l->mode = mode;
	}
	if (replay_string(o, "path", &l->path) || replay_string(o, "to", &l->to))
		return "a *_hex member is not hex digits of non-NUL bytes";
	if (!l->path)
		return "a recorded request has \"path\" or \"path_hex\"";
	if (json_object_has_member(o, "target"))
		l->target = g_strdup(json_object_get_string_member(o, "target"));
	return replay_fill_shown(o, l);
}

/* What replay_trigger answers for a line it takes. */
static const char replay_is_trigger[] = "a trigger";

/* A fault rule's trigger (record.h, version 3): nothing to replay, but its version and rule
 * id are checked as a request's are. replay_is_trigger, or the reason it is not one. */
static const char *replay_trigger(JsonObject *o)
{
	JsonNode *v = json_object_get_member(o, "v"), *id = json_object_get_member(o, "trigger");

	if (!v || !replay_kind_ok(v, K_INT) || json_node_get_int(v) < 3)
		return "a trigger line without \"v\" of 3 or more: not a recorded line";
	if (json_node_get_int(v) > REPLAY_VERSION_MAX)
		return "recorded in a newer format (\"v\" above 3) than this replay reads";
	if (!replay_kind_ok(id, K_INT))
		return "\"trigger\" is not a rule's id";
	return replay_is_trigger;
}

int replay_line_parse(const char *line, size_t len, struct replay_line *l, char *why, size_t whylen)
{
	JsonParser *p = json_parser_new();
	JsonNode *root = NULL;
	const char *bad = NULL, *name;
	enum replay_kind kind;

	*l = (struct replay_line){.mode = -1, .version = 1, .size = -1, .offset = -1};
	if (!replay_flat(line, len))
		bad = "nested objects or arrays: not a recorded request";
	else if (len > G_MAXSSIZE || !json_parser_load_from_data(p, line, (gssize)len, NULL))
		bad = "not JSON";
	else if (!(root = json_parser_get_root(p)) || !JSON_NODE_HOLDS_OBJECT(root))
		bad = "not a JSON object: not a recorded request";
	else if (!json_object_has_member(json_node_get_object(root), "op") &&
		 json_object_has_member(json_node_get_object(root), "trigger"))
		bad = replay_trigger(json_node_get_object(root));
	else if (!json_object_has_member(json_node_get_object(root), "op"))
		bad = "no \"op\": not a recorded request";
	if (bad == replay_is_trigger) {
		g_object_unref(p);
		return REPLAY_TRIGGER;
	}
	if (!bad && (name = replay_bad_member(json_node_get_object(root), &kind))) {
		snprintf(why, whylen, "\"%s\" is not %s", name, replay_kind_names[kind]);
		g_object_unref(p);
		return -1;
	}
	if (!bad)
		bad = replay_fill(json_node_get_object(root), l);
	g_object_unref(p);
	if (!bad)
		return 0;
	replay_line_clear(l);
	snprintf(why, whylen, "%s", bad);
	return -1;
}

void replay_line_clear(struct replay_line *l)
{
	g_free(l->path);
	g_free(l->to);
	g_free(l->target);
	g_free(l->body);
	g_free(l->entries);
	l->path = l->to = l->target = l->body = l->entries = NULL;
}
