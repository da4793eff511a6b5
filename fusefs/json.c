/*
 * The control socket's JSON: replies are built with json-glib through these, by
 * control_cmds.c and by the modules that put their own members in (fault.c, latency.c).
 */
#include "json.h"

#include <stdarg.h>
#include <string.h>

/*
 * The generated text, made valid JSON whatever the builder was given:
 * - json-glib copies strings as given: cfs_json_str makes its own valid, and anything that
 *   reached the builder another way (a member name, a string added straight to it) is made
 *   valid here as cfs_json_str would (outside strings the text is ASCII, and no decoder takes
 *   an ASCII byte into a sequence, so only string contents change);
 * - json-glib (1.6 at least) writes U+001F raw inside a string, which JSON forbids (RFC 8259,
 *   section 7) and strict parsers such as Python's refuse. Without pretty-printing a control
 *   byte can only stand inside a string, so each one left becomes its \u escape.
 */
static char *cfs_json_clean(char *s)
{
	const char *p;
	GString *out;

	if (!g_utf8_validate(s, -1, NULL)) {
		char *valid = g_utf8_make_valid(s, -1);
		g_free(s);
		s = valid;
	}
	for (p = s; *p && (unsigned char)*p >= 0x20; p++)
		;
	if (!*p)
		return s;
	out = g_string_new_len(s, p - s);
	for (; *p; p++) {
		if ((unsigned char)*p < 0x20)
			g_string_append_printf(out, "\\u%04x", (unsigned char)*p);
		else
			g_string_append_c(out, *p);
	}
	g_free(s);
	return g_string_free(out, FALSE);
}

char *cfs_json_text(JsonBuilder *b)
{
	JsonGenerator *g = json_generator_new();
	JsonNode *root;
	char *s;

	root = json_builder_get_root(b);
	json_generator_set_root(g, root);
	s = json_generator_to_data(g, NULL);
	json_node_unref(root);
	g_object_unref(g);
	g_object_unref(b);
	return cfs_json_clean(s);
}

char *cfs_json_finish(JsonBuilder *b)
{
	json_builder_end_object(b);
	return cfs_json_text(b);
}

JsonBuilder *cfs_json_ok(void)
{
	JsonBuilder *b = json_builder_new();

	json_builder_begin_object(b);
	json_builder_set_member_name(b, "ok");
	json_builder_add_boolean_value(b, TRUE);
	return b;
}

/* Text from the tree or the client may hold any bytes; JSON strings must be UTF-8. */
void cfs_json_str(JsonBuilder *b, const char *key, const char *s, gssize len)
{
	gchar *v = g_utf8_make_valid(s, len);

	json_builder_set_member_name(b, key);
	json_builder_add_string_value(b, v);
	g_free(v);
}

void cfs_json_int(JsonBuilder *b, const char *key, int64_t v)
{
	json_builder_set_member_name(b, key);
	json_builder_add_int_value(b, v);
}

char *cfs_json_error(const char *fmt, ...)
{
	JsonBuilder *b = json_builder_new();
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "ok");
	json_builder_add_boolean_value(b, FALSE);
	cfs_json_str(b, "error", msg, -1);
	g_free(msg);
	return cfs_json_finish(b);
}

/* TEXT as the inside of a JSON string, escaped exactly as the builder escapes a whole
 * reply (escapes are per character, and pieces end with a line, so pieces join up). */
void cfs_json_append_body(GString *out, const char *text, size_t len)
{
	JsonNode *n = json_node_alloc();
	JsonGenerator *g = json_generator_new();
	gchar *v = g_utf8_make_valid(text, (gssize)len);
	char *q;

	json_node_init_string(n, v);
	json_generator_set_root(g, n);
	q = cfs_json_clean(json_generator_to_data(g, NULL));
	g_string_append_len(out, q + 1, (gssize)strlen(q) - 2); /* without the quotes */
	g_free(q);
	g_free(v);
	g_object_unref(g);
	json_node_unref(n);
}
