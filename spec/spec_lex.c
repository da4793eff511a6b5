/*
 * The spec language's words: messages ("NAME:LINE: message", names quoted as spec words),
 * the line lexer and the attribute parser, and checked paths. Nothing here changes a tree.
 */
#include "spec_int.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Messages */

/* S as a spec word into OUT (room for 4 * LEN + 3 bytes): bare when it reads back unchanged,
 * else quoted with escapes. Returns the length. */
static size_t spec_quote_into(char *out, const char *s, size_t len)
{
	static const char safe[] = "/._-+,:@%~";
	bool bare = len > 0;
	size_t o = 0;

	for (size_t i = 0; i < len && bare; i++)
		bare = g_ascii_isalnum(s[i]) || (s[i] && strchr(safe, s[i]));
	if (bare) {
		memcpy(out, s, len);
		return len;
	}
	out[o++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		const char *esc = ch == '\n'   ? "\\n"
				  : ch == '\t' ? "\\t"
				  : ch == '\r' ? "\\r"
					       : NULL;

		if (esc) {
			memcpy(out + o, esc, 2);
			o += 2;
		} else if (ch == '"' || ch == '\\') {
			out[o++] = '\\';
			out[o++] = (char)ch;
		} else if (ch < 0x20 || ch > 0x7e) {
			o += (size_t)sprintf(out + o, "\\x%02x", ch);
		} else {
			out[o++] = (char)ch;
		}
	}
	out[o++] = '"';
	return o;
}

/* Append S as a spec word (the dump's writer). */
void spec_quote(GString *out, const char *s, size_t len)
{
	char buf[256];
	char *q = len <= (sizeof(buf) - 3) / 4 ? buf : g_malloc(4 * len + 3);

	g_string_append_len(out, q, (gssize)spec_quote_into(q, s, len));
	if (q != buf)
		free(q);
}

/* The same, as a string to put in a message (free()d by the caller), or NULL out of memory:
 * messages must not abort a load that can still fail with ENOMEM. Show it with spec_q(). */
char *spec_quoted(const char *s, size_t len)
{
	enum { SHOWN = 96 }; /* a generator's path may run to megabytes: its two ends say enough */
	if (len > 2 * SHOWN + 5) {
		char *head = spec_quoted(s, SHOWN), *tail = spec_quoted(s + len - SHOWN, SHOWN);
		size_t size = head && tail ? strlen(head) + strlen(tail) + 48 : 0;
		char *q = size ? malloc(size) : NULL;

		if (q)
			snprintf(q, size, "%s[...%zu bytes...]%s", head, len - 2 * SHOWN, tail);
		free(head);
		free(tail);
		return q;
	}
	char *q = malloc(4 * len + 3);

	if (q)
		q[spec_quote_into(q, s, len)] = '\0';
	return q;
}

const char *spec_q(const char *q)
{
	return q ? q : "(a name: out of memory)";
}

/* ---------------------------------------------------------------------------------------- */
/* Lines, words and attributes */

static int spec_vfail(struct spec_ctx *c, int err, const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (!c->err && vasprintf(&msg, fmt, ap) >= 0) {
		if (asprintf(&c->err, "%s:%lu: %s", c->name, c->line, msg) < 0)
			c->err = NULL;
		free(msg);
	}
	return err;
}

/* Record "NAME:LINE: message" (the first one wins) and return -EINVAL. */
int G_GNUC_PRINTF(2, 3) spec_fail(struct spec_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	spec_vfail(c, -EINVAL, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int G_GNUC_PRINTF(3, 4) spec_fail_errno(struct spec_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	spec_vfail(c, err, fmt, ap);
	va_end(ap);
	return err;
}

/* ERR (negative) in a message: the loader's callers look for "out of memory". A full tree
 * names the limits that made it full. */
const char *spec_strerror(int err)
{
	if (err == -ENOSPC)
		return "no space left: the tree is full (-o max_data bounds file data, -o max_meta "
		       "names, link targets and nodes, -o max_nodes the nodes)";
	return err == -ENOMEM ? "out of memory" : strerror(-err);
}

/* "W: message": W quoted only now that it is needed. Returns -EINVAL. */
static int G_GNUC_PRINTF(3, 4)
    spec_fail_word(struct spec_ctx *c, const struct spec_word *w, const char *fmt, ...)
{
	char *q = spec_quoted(w->s, w->len), *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	spec_fail(c, "%s: %s", spec_q(q), msg ? msg : "out of memory");
	free(msg);
	free(q);
	return -EINVAL;
}

/* Make room for one more element in a malloc'ed array. */
int spec_reserve(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 16;
	void *np = realloc(*p, ncap * size);

	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static bool spec_is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

static int spec_hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* One case of the escapes' switch (spec.h): backslash LETTER makes BYTE. */
#define SPEC_ESCAPE_CASE(letter, byte)                                                             \
	case letter:                                                                               \
		*o++ = byte;                                                                       \
		break;

/* Decode a quoted part; *pp is just past the opening quote and ends past the closing one.
 * *slash is set when an escape makes a '/'. */
static int spec_lex_quoted(struct spec_ctx *c, const char **pp, const char *end, char **op,
			   bool *slash)
{
	const char *p = *pp;
	char *o = *op;

	for (; p < end && *p != '"'; p++) {
		if (*p != '\\') {
			*o++ = *p;
			continue;
		}
		if (++p == end)
			break;
		switch (*p) {
			CFS_SPEC_ESCAPES(SPEC_ESCAPE_CASE)
		case CFS_SPEC_ESCAPE_HEX:
			if (end - p < 3 || spec_hex(p[1]) < 0 || spec_hex(p[2]) < 0)
				return spec_fail(
				    c, "bad escape '\\x%.*s' (\\xHH takes two hex digits)",
				    end - p > 2 ? 2 : (int)(end - p - 1), p + 1);
			*o = (char)(spec_hex(p[1]) << 4 | spec_hex(p[2]));
			*slash |= *o++ == '/';
			p += 2;
			break;
		default:
			if (g_ascii_isprint(*p))
				return spec_fail(c, "bad escape '\\%c'", *p);
			return spec_fail(c, "bad escape (byte 0x%02x after '\\')",
					 (unsigned char)*p);
		}
	}
	if (p == end)
		return spec_fail(c, "unterminated quote");
	*pp = p + 1;
	*op = o;
	return 0;
}

/* An attribute word starts with a lowercase key and an unquoted '='. */
static bool spec_is_key(const char *s, const char *e)
{
	if (s == e)
		return false;
	for (; s < e; s++)
		if (*s < 'a' || *s > 'z')
			return false;
	return true;
}

/* Split [P, END) into words in c->buf (decoded words never outgrow the raw line). */
int spec_lex(struct spec_ctx *c, const char *p, const char *end, struct spec_line *l)
{
	char *o = c->buf;

	l->npos = l->nattr = 0;
	for (;;) {
		while (p < end && spec_is_blank(*p))
			p++;
		if (p == end || *p == '#')
			return 0;
		if (l->npos + l->nattr == SPEC_MAX_WORDS)
			return spec_fail(c, "too many words (at most %d)", SPEC_MAX_WORDS);

		struct spec_word w = {.s = o};
		bool quoted = false;

		while (p < end && !spec_is_blank(*p)) {
			if (*p == '"') {
				p++;
				quoted = true;
				int err = spec_lex_quoted(c, &p, end, &o, &w.slash_escaped);
				if (err)
					return err;
				continue;
			}
			if (*p == '=' && !quoted && !w.keylen && spec_is_key(w.s, o))
				w.keylen = (size_t)(o - w.s);
			*o++ = *p++;
		}
		w.len = (size_t)(o - w.s);
		*o++ = '\0';
		if (w.keylen)
			l->attr[l->nattr++] = w;
		else
			l->pos[l->npos++] = w;
	}
}

/* Decimal digits only. Too big saturates to UINT64_MAX, so range checks can say so. */
static bool spec_digits(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
	}
	*out = v;
	return true;
}

/* Digits with an optional binary suffix: k/K, M, G, T, P (1024-based). */
static bool spec_scaled(const char *s, size_t len, uint64_t *out)
{
	static const char suffixes[] = "kKMGTP";
	unsigned shift = 0;

	if (len > 1) {
		const char *x = strchr(suffixes, s[len - 1]);
		if (x && s[len - 1]) {
			long i = x - suffixes;
			shift = 10 * (unsigned)(i < 2 ? 1 : i);
			len--;
		}
	}
	if (!spec_digits(s, len, out))
		return false;
	if (*out > (UINT64_MAX >> shift))
		*out = UINT64_MAX;
	else
		*out <<= shift;
	return true;
}

/* SECONDS[.NSEC]: SECONDS is tv_sec (may be negative), the fraction tv_nsec. */
static bool spec_time(const char *s, size_t len, struct timespec *ts)
{
	const char *dot = memchr(s, '.', len);
	size_t ilen = dot ? (size_t)(dot - s) : len;
	bool neg = ilen > 0 && s[0] == '-';
	uint64_t sec, frac = 0;

	if (!spec_digits(s + neg, ilen - neg, &sec) || sec > SPEC_TIME_MAX_SEC)
		return false;
	if (dot) {
		size_t flen = len - ilen - 1;
		if (flen == 0 || flen > 9 || !spec_digits(dot + 1, flen, &frac))
			return false;
		for (; flen < 9; flen++)
			frac *= 10;
	}
	ts->tv_sec = neg ? -(time_t)sec : (time_t)sec;
	ts->tv_nsec = (long)frac;
	return true;
}

static bool spec_percent(const char *s, size_t len, uint64_t *out)
{
	if (len > 0 && s[len - 1] == '%')
		len--;
	return spec_digits(s, len, out);
}

/* Up to five octal digits (mode= has no other form). */
static bool spec_octal(const char *s, size_t len, uint64_t *out)
{
	if (len == 0 || len > 5 || strspn(s, "01234567") != len)
		return false;
	*out = strtoul(s, NULL, 8);
	return true;
}

/* How an attribute's value is written. */
enum spec_attr_kind {
	SPEC_K_OCTAL,	  /* spec_octal */
	SPEC_K_DIGITS,	  /* spec_digits */
	SPEC_K_SCALED,	  /* spec_scaled: digits and a binary suffix */
	SPEC_K_PERCENT,	  /* spec_percent: digits and an optional '%' */
	SPEC_K_TIME,	  /* spec_time, into a struct timespec */
	SPEC_K_BYTES,	  /* any bytes, at least one, into a struct spec_bytes */
	SPEC_K_NAME_PART, /* bytes that can stand in a name (no '/', no NUL): the same */
};

struct spec_attr_def {
	const char *key;
	unsigned bit;
	enum spec_attr_kind kind;
	uint64_t max;	  /* numbers: the largest value taken (the range is 0..MAX) */
	bool says_limit;  /* a number past MAX is "too big (limit MAX)", not a bad value */
	size_t off, size; /* where in struct spec_attrs the value goes, and its size */
};

/* Numbers land in 32- or 64-bit fields (spec_store); mode, uid and gid are the 32-bit ones. */
_Static_assert(sizeof(mode_t) == 4 && sizeof(uid_t) == 4 && sizeof(gid_t) == 4,
	       "mode_t, uid_t and gid_t are stored as uint32_t");

/* Every attribute key names its field in struct spec_attrs. */
/* clang-format off */
#define SPEC_ATTR(field, bit, kind, max, says_limit)                                               \
	{#field, SPEC_A_##bit, SPEC_K_##kind, max, says_limit, offsetof(struct spec_attrs, field), \
	 sizeof(((struct spec_attrs *)NULL)->field)}
/* clang-format on */

static const struct spec_attr_def spec_attr_defs[] = {
    SPEC_ATTR(mode, MODE, OCTAL, 07777, false),
    /* (uid_t)-1 means "leave as is" to chown: not a real owner */
    SPEC_ATTR(uid, UID, DIGITS, UINT32_MAX - 1, false),
    SPEC_ATTR(gid, GID, DIGITS, UINT32_MAX - 1, false),
    SPEC_ATTR(atime, ATIME, TIME, 0, false),
    SPEC_ATTR(mtime, MTIME, TIME, 0, false),
    SPEC_ATTR(ctime, CTIME, TIME, 0, false),
    SPEC_ATTR(size, SIZE, SCALED, CFS_SPEC_MAX_FILE_SIZE, true),
    SPEC_ATTR(pattern, PATTERN, BYTES, 0, false),
    SPEC_ATTR(depth, DEPTH, SCALED, UINT64_MAX, false),
    SPEC_ATTR(fanout, FANOUT, SCALED, UINT64_MAX, false),
    SPEC_ATTR(files, FILES, PERCENT, 100, false),
    SPEC_ATTR(links, LINKS, PERCENT, 100, false),
    SPEC_ATTR(seed, SEED, DIGITS, UINT64_MAX, false),
    SPEC_ATTR(prefix, PREFIX, NAME_PART, 0, false),
    SPEC_ATTR(at, AT, SCALED, (uint64_t)INT64_MAX - 1, false),
};
#undef SPEC_ATTR

/* The number kinds' parsers (the others are parsed in spec_parse_value). */
static bool (*const spec_numbers[])(const char *s, size_t len, uint64_t *out) = {
    [SPEC_K_OCTAL] = spec_octal,
    [SPEC_K_DIGITS] = spec_digits,
    [SPEC_K_SCALED] = spec_scaled,
    [SPEC_K_PERCENT] = spec_percent,
};

/* A number into its field, 32 or 64 bits wide. */
static void spec_store(void *field, size_t size, uint64_t v)
{
	if (size == sizeof(uint32_t)) {
		uint32_t v32 = (uint32_t)v;
		memcpy(field, &v32, sizeof(v32));
	} else {
		memcpy(field, &v, sizeof(v));
	}
}

/* Parse one attribute's value into A; the key is known to be allowed. */
static int spec_parse_value(struct spec_ctx *c, const struct spec_attr_def *d, const char *v,
			    size_t len, struct spec_attrs *a)
{
	void *field = (char *)a + d->off;
	uint64_t n = 0;
	bool ok;

	switch (d->kind) {
	case SPEC_K_TIME:
		ok = spec_time(v, len, field);
		break;
	case SPEC_K_BYTES:
		if (len == 0)
			return spec_fail(c, "empty %s", d->key);
		*(struct spec_bytes *)field = (struct spec_bytes){v, len};
		return 0;
	case SPEC_K_NAME_PART:
		if (memchr(v, '/', len) || memchr(v, '\0', len))
			return spec_fail(c, "bad %s (no '/' or NUL in names)", d->key);
		*(struct spec_bytes *)field = (struct spec_bytes){v, len};
		return 0;
	default:
		ok = spec_numbers[d->kind](v, len, &n);
		if (ok && n > d->max && d->says_limit)
			return spec_fail(c, "%s %s too big (limit %llu)", d->key, v,
					 (unsigned long long)d->max);
		ok = ok && n <= d->max;
		spec_store(field, d->size, n);
		break;
	}
	if (!ok) {
		char *q = spec_quoted(v, len);
		spec_fail(c, "bad value %s for %s", spec_q(q), d->key);
		free(q);
		return -EINVAL;
	}
	return 0;
}

/* Parse the line's attribute words; ALLOWED are the keyword's. */
int spec_parse_attrs(struct spec_ctx *c, const char *kw, unsigned allowed,
		     const struct spec_line *l, struct spec_attrs *a)
{
	for (int i = 0; i < l->nattr; i++) {
		const struct spec_word *w = &l->attr[i];
		const struct spec_attr_def *d = NULL;

		for (size_t k = 0; k < G_N_ELEMENTS(spec_attr_defs); k++)
			if (strlen(spec_attr_defs[k].key) == w->keylen &&
			    memcmp(spec_attr_defs[k].key, w->s, w->keylen) == 0)
				d = &spec_attr_defs[k];
		if (!d)
			return spec_fail(c, "unknown attribute '%.*s'", (int)w->keylen, w->s);
		if (!(allowed & d->bit))
			return spec_fail(c, "attribute '%s' not allowed with %s", d->key, kw);
		if (a->set & d->bit)
			return spec_fail(c, "duplicate attribute '%s'", d->key);
		a->set |= d->bit;
		int err = spec_parse_value(c, d, w->s + w->keylen + 1, w->len - w->keylen - 1, a);
		if (err)
			return err;
	}
	return 0;
}

/* A count word (LEN, DEPTH, K, COUNT) in [MIN, MAX]. */
int spec_count(struct spec_ctx *c, const struct spec_word *w, const char *what, uint64_t min,
	       uint64_t max, uint64_t *out)
{
	if (!spec_scaled(w->s, w->len, out)) {
		char *q = spec_quoted(w->s, w->len);
		spec_fail(c, "bad number %s for %s", spec_q(q), what);
		free(q);
		return -EINVAL;
	}
	if (*out < min || *out > max)
		return spec_fail(c, "%s %s out of range %" PRIu64 "..%" PRIu64, what, w->s, min,
				 max);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Paths */

/* The next name of [*pp, end) ("" at the end); "//" counts as "/". */
size_t spec_next_name(const char **pp, const char *end, const char **name)
{
	const char *p = *pp;

	while (p < end && *p == '/')
		p++;
	*name = p;
	while (p < end && *p != '/')
		p++;
	*pp = p;
	return (size_t)(p - *name);
}

int spec_check_path(struct spec_ctx *c, const struct spec_word *w, struct spec_path *p)
{
	const char *s = w->s, *end = w->s + w->len, *name;
	size_t len;
	int err = 0;

	*p = (struct spec_path){.w = w};
	if (w->len == 0 || s[0] != '/')
		err = spec_fail_word(c, w, "path not absolute");
	else if (memchr(s, '\0', w->len))
		err = spec_fail_word(c, w, "NUL byte in path");
	else if (w->slash_escaped)
		err = spec_fail_word(c, w, "'\\x2f' in a path: a name cannot hold '/'");
	while (!err && (len = spec_next_name(&s, end, &name)) > 0) {
		if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
			err = spec_fail_word(c, w, "'.' and '..' are not allowed in paths");
		else if (len > RS_NAME_MAX)
			err = spec_fail_word(c, w, "name too long (%zu bytes, limit %d)", len,
					     RS_NAME_MAX);
		p->dir_len = (size_t)(name - w->s);
		p->name = name;
		p->name_len = len;
	}
	return err;
}

/* Find name NAME in the tree path [S, S+LEN) without following links: 0 and *out, or
 * -ENOENT, -ENOTDIR (a component above is not a directory). */
int spec_lookup_path(const struct cfs_tree *t, const char *s, size_t len, uint32_t *out)
{
	const char *end = s + len, *name;
	size_t nlen;
	uint32_t cur = CFS_ROOT;

	while ((nlen = spec_next_name(&s, end, &name)) > 0) {
		if (cfs_tree_kind(t, cur) != RS_DIR)
			return -ENOTDIR;
		int err = cfs_tree_lookup(t, cur, name, nlen, &cur);
		if (err)
			return err;
	}
	*out = cur;
	return 0;
}

/* The path of directory DIR followed by NAME, for messages.
 * Measured first, then filled from its end: prepending name by name moved the whole path
 * each time, quadratic in the depth, and a deep line failing 135k levels down spent minutes
 * building its message (found by tests/fuzz). */
char *spec_path_of(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	size_t total = name ? len + 1 : 0, o;
	const char *n;
	size_t nl;

	for (uint32_t d = dir; d != CFS_ROOT; d = cfs_tree_parent(t, d)) {
		cfs_tree_name(t, d, &n, &nl);
		total += nl + 1;
	}
	if (total == 0)
		return spec_quoted("/", 1);
	char *raw = malloc(total);

	if (!raw)
		return NULL;
	o = total;
	if (name) {
		o -= len;
		memcpy(raw + o, name, len);
		raw[--o] = '/';
	}
	for (uint32_t d = dir; d != CFS_ROOT; d = cfs_tree_parent(t, d)) {
		cfs_tree_name(t, d, &n, &nl);
		o -= nl;
		memcpy(raw + o, n, nl);
		raw[--o] = '/';
	}
	char *q = spec_quoted(raw, total);
	free(raw);
	return q;
}
