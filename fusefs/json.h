/* The control socket's JSON replies (json.c): the one writer every reply goes through. */
#ifndef CHAINFS_JSON_H
#define CHAINFS_JSON_H

#include <json-glib/json-glib.h>
#include <stdint.h>

/* A reply object begun with "ok": true. */
JsonBuilder *cfs_json_ok(void);
/* The reply {"ok": false, "error": the message}, as text (caller frees). */
char *cfs_json_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* Ends the object B is building and frees B: its text (caller frees), valid JSON whatever
 * bytes the strings in it held. */
char *cfs_json_finish(JsonBuilder *b);
/* The text of the value B built (complete: every object and array ended), escaped as
 * cfs_json_finish() escapes it; frees B. Caller frees the text. */
char *cfs_json_text(JsonBuilder *b);
/* Member KEY of the object B is building: the first LEN bytes of S (-1: up to its NUL) as a
 * string, invalid UTF-8 replaced; or the number V. */
void cfs_json_str(JsonBuilder *b, const char *key, const char *s, gssize len);
void cfs_json_int(JsonBuilder *b, const char *key, int64_t v);
/* The first LEN bytes of TEXT, as the inside of a JSON string (no quotes), onto OUT: a
 * streamed reply's pieces, escaped as cfs_json_finish() escapes a whole reply. */
void cfs_json_append_body(GString *out, const char *text, size_t len);

#endif
