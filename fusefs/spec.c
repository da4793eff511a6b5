/*
 * The chainfs spec language: a line lexer, one handler per keyword, the generators, and the
 * two ways back out of a tree (a spec dump, a real directory). chainfs-spec(5) is the grammar.
 *
 * Every line runs as a small transaction. Nodes are made only through spec_make(), which
 * notes each entry made in a directory that existed before the line (an undo "root"); when
 * the line fails, those subtrees are removed newest first and the parents' times restored,
 * so the tree is exactly as before. Times given on lines are applied after the whole spec
 * (or line) is in, because adding an entry later would stamp a directory's mtime again.
 *
 * Loading allocates with malloc and reports ENOMEM; dump and materialize use GLib
 * containers (which abort on OOM), as they only read the tree.
 */
#include "spec.h"
#include "inroot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

enum {
	SPEC_MAX_WORDS = 32,	   /* words on a line: the longest form (tree) has 7 */
	SPEC_TREE_MAX_DEPTH = 256, /* tree depth: deeper paths are the deep generator's job */
	SPEC_POOL = 64,		   /* tree link targets are drawn from a sample this big */
	SPEC_GEN_FILE_MAX = 1024,  /* tree files get 0..1023 bytes of the default pattern */
	SPEC_DUMP_CHUNK = 4096,	   /* literal bytes per dump line: 4x escaped, far below a line */
	SPEC_IO_CHUNK = 65536,	   /* bytes per read/write when scanning or materializing */
	SPEC_PATTERN_WINDOW = 2 * CFS_PATTERN_MAX, /* two periods of the longest pattern */
};

/* Times the tree holds: int64 nanoseconds, so whole seconds up to this either way. */
#define SPEC_TIME_MAX_SEC 9223372035ll

/* Materialized trees feed tests and the kernel oracle: 1 GiB of file data is plenty, and a
 * pattern file of a petabyte must not fill the disk by accident. */
#define SPEC_MATERIALIZE_MAX_BYTES (1ull << 30)

static const char spec_default_pattern[] = "chainfs\n";

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
		const char *esc = ch == '\n' ? "\\n" : ch == '\t' ? "\\t" : ch == '\r' ? "\\r" : NULL;

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
static void spec_quote(GString *out, const char *s, size_t len)
{
	char buf[256];
	char *q = len <= (sizeof(buf) - 3) / 4 ? buf : g_malloc(4 * len + 3);

	g_string_append_len(out, q, (gssize)spec_quote_into(q, s, len));
	if (q != buf)
		free(q);
}

/* The same, as a string to put in a message (free()d by the caller), or NULL out of memory:
 * messages must not abort a load that can still fail with ENOMEM. Show it with spec_q(). */
static char *spec_quoted(const char *s, size_t len)
{
	char *q = len < (SIZE_MAX - 3) / 4 ? malloc(4 * len + 3) : NULL;

	if (q)
		q[spec_quote_into(q, s, len)] = '\0';
	return q;
}

static const char *spec_q(const char *q)
{
	return q ? q : "(a name: out of memory)";
}

/* ---------------------------------------------------------------------------------------- */
/* Lines, words and attributes */

enum {
	SPEC_A_MODE = 1 << 0,
	SPEC_A_UID = 1 << 1,
	SPEC_A_GID = 1 << 2,
	SPEC_A_ATIME = 1 << 3,
	SPEC_A_MTIME = 1 << 4,
	SPEC_A_CTIME = 1 << 5,
	SPEC_A_SIZE = 1 << 6,
	SPEC_A_PATTERN = 1 << 7,
	SPEC_A_DEPTH = 1 << 8,
	SPEC_A_FANOUT = 1 << 9,
	SPEC_A_FILES = 1 << 10,
	SPEC_A_LINKS = 1 << 11,
	SPEC_A_SEED = 1 << 12,
	SPEC_A_PREFIX = 1 << 13,
	SPEC_A_AT = 1 << 14,
	SPEC_A_TIMES = SPEC_A_ATIME | SPEC_A_MTIME | SPEC_A_CTIME,
	SPEC_A_NODE = SPEC_A_MODE | SPEC_A_UID | SPEC_A_GID | SPEC_A_TIMES,
};

struct spec_word {
	const char *s; /* decoded bytes, NUL-terminated (a \x00 escape may put NULs inside) */
	size_t len;
	size_t keylen; /* attribute words: the key's length (4 in mode=0644); 0 otherwise */
	bool slash_escaped; /* a \x2f made a '/': refused in paths, where it would split a name */
};

struct spec_line {
	struct spec_word pos[SPEC_MAX_WORDS]; /* positional words, the keyword first */
	struct spec_word attr[SPEC_MAX_WORDS];
	int npos, nattr;
};

struct spec_attrs {
	unsigned set; /* SPEC_A_* given on the line */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	struct timespec atime, mtime, ctime;
	uint64_t size, depth, fanout, files, links, seed, at;
	const char *pattern, *prefix;
	size_t pattern_len, prefix_len;
};

/* A line's undo log entry: an entry made in an older directory, or attributes changed. */
struct spec_undo {
	uint32_t id; /* the directory the entry went into, or the node whose attributes moved */
	bool entry;
	size_t name_off; /* entry: its name, in spec_ctx.names */
	size_t name_len;
	struct stat st; /* that directory's or node's attributes before */
};

/* Times from a line, applied when everything else is in. */
struct spec_times {
	uint32_t id;
	unsigned set;
	unsigned long line;
	struct timespec atime, mtime, ctime;
};

struct spec_ctx {
	struct cfs_tree *t;
	const char *name; /* for messages */
	unsigned long line;
	uid_t uid;
	gid_t gid;
	char *err;
	uint64_t nodes; /* made by this load, against CFS_SPEC_MAX_NODES */
	char *buf;	/* the current line's decoded words */
	struct spec_undo *undo;
	size_t nundo, undo_cap;
	char *names;
	size_t names_len, names_cap;
	struct spec_times *times;
	size_t ntimes, times_cap;
};

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
static int G_GNUC_PRINTF(2, 3) spec_fail(struct spec_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	spec_vfail(c, -EINVAL, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int G_GNUC_PRINTF(3, 4) spec_fail_errno(struct spec_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	spec_vfail(c, err, fmt, ap);
	va_end(ap);
	return err;
}

/* ERR (negative) in a message: the loader's callers look for "out of memory". */
static const char *spec_strerror(int err)
{
	return err == -ENOMEM ? "out of memory" : strerror(-err);
}

/* "W: message": W quoted only now that it is needed. Returns -EINVAL. */
static int G_GNUC_PRINTF(3, 4) spec_fail_word(struct spec_ctx *c, const struct spec_word *w,
					     const char *fmt, ...)
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
static int spec_reserve(void **p, size_t *cap, size_t n, size_t size)
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
		case 'n':
			*o++ = '\n';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case '0':
			*o++ = '\0';
			break;
		case '\\':
			*o++ = '\\';
			break;
		case '"':
			*o++ = '"';
			break;
		case 'x':
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
static int spec_lex(struct spec_ctx *c, const char *p, const char *end, struct spec_line *l)
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
	return spec_digits(s, len, out) && *out <= 100;
}

struct spec_attr_def {
	const char *key;
	unsigned bit;
};

static const struct spec_attr_def spec_attr_defs[] = {
    {"mode", SPEC_A_MODE},     {"uid", SPEC_A_UID},	    {"gid", SPEC_A_GID},
    {"atime", SPEC_A_ATIME},   {"mtime", SPEC_A_MTIME},	    {"ctime", SPEC_A_CTIME},
    {"size", SPEC_A_SIZE},     {"pattern", SPEC_A_PATTERN}, {"depth", SPEC_A_DEPTH},
    {"fanout", SPEC_A_FANOUT}, {"files", SPEC_A_FILES},	    {"links", SPEC_A_LINKS},
    {"seed", SPEC_A_SEED},     {"prefix", SPEC_A_PREFIX},   {"at", SPEC_A_AT},
};

/* Parse one attribute's value into A; the key is known to be allowed. */
static int spec_parse_value(struct spec_ctx *c, const struct spec_attr_def *d, const char *v,
			    size_t len, struct spec_attrs *a)
{
	uint64_t n = 0;
	bool ok = true;

	switch (d->bit) {
	case SPEC_A_MODE:
		ok = len > 0 && len <= 5 && strspn(v, "01234567") == len;
		if (ok)
			a->mode = (mode_t)strtoul(v, NULL, 8);
		ok = ok && a->mode <= 07777;
		break;
	case SPEC_A_UID:
	case SPEC_A_GID:
		/* (uid_t)-1 means "leave as is" to chown: not a real owner */
		ok = spec_digits(v, len, &n) && n < UINT32_MAX;
		if (d->bit == SPEC_A_UID)
			a->uid = (uid_t)n;
		else
			a->gid = (gid_t)n;
		break;
	case SPEC_A_ATIME:
		ok = spec_time(v, len, &a->atime);
		break;
	case SPEC_A_MTIME:
		ok = spec_time(v, len, &a->mtime);
		break;
	case SPEC_A_CTIME:
		ok = spec_time(v, len, &a->ctime);
		break;
	case SPEC_A_SIZE:
		ok = spec_scaled(v, len, &a->size);
		if (ok && a->size > CFS_SPEC_MAX_FILE_SIZE)
			return spec_fail(c, "size %s too big (limit %llu)", v,
					 (unsigned long long)CFS_SPEC_MAX_FILE_SIZE);
		break;
	case SPEC_A_PATTERN:
		if (len == 0)
			return spec_fail(c, "empty pattern");
		a->pattern = v;
		a->pattern_len = len;
		break;
	case SPEC_A_DEPTH:
		ok = spec_scaled(v, len, &a->depth);
		break;
	case SPEC_A_FANOUT:
		ok = spec_scaled(v, len, &a->fanout);
		break;
	case SPEC_A_FILES:
		ok = spec_percent(v, len, &a->files);
		break;
	case SPEC_A_LINKS:
		ok = spec_percent(v, len, &a->links);
		break;
	case SPEC_A_SEED:
		ok = spec_digits(v, len, &a->seed);
		break;
	case SPEC_A_AT:
		ok = spec_scaled(v, len, &a->at) && a->at < (uint64_t)INT64_MAX;
		break;
	case SPEC_A_PREFIX:
		if (memchr(v, '/', len) || memchr(v, '\0', len))
			return spec_fail(c, "bad prefix (no '/' or NUL in names)");
		a->prefix = v;
		a->prefix_len = len;
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
static int spec_parse_attrs(struct spec_ctx *c, const char *kw, unsigned allowed,
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
static int spec_count(struct spec_ctx *c, const struct spec_word *w, const char *what, uint64_t min,
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

/* A checked absolute path word: the directories above the last name, and the last name. */
struct spec_path {
	const struct spec_word *w;
	size_t dir_len;	  /* bytes of w->s before the last name */
	const char *name; /* the last name; NULL for "/" */
	size_t name_len;
};

/* The next name of [*pp, end) ("" at the end); "//" counts as "/". */
static size_t spec_next_name(const char **pp, const char *end, const char **name)
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

static int spec_check_path(struct spec_ctx *c, const struct spec_word *w, struct spec_path *p)
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
static int spec_lookup_path(const struct cfs_tree *t, const char *s, size_t len, uint32_t *out)
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
static char *spec_path_of(const struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
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

/* ---------------------------------------------------------------------------------------- */
/* Making nodes, and undoing a line */

/* Note that NAME is about to be made in DIR, which existed before this line. */
static int spec_note_entry(struct spec_ctx *c, uint32_t dir, const char *name, size_t len)
{
	if (spec_reserve((void **)&c->undo, &c->undo_cap, c->nundo, sizeof(*c->undo)))
		return -ENOMEM;
	while (c->names_len + len > c->names_cap) {
		size_t cap = c->names_cap ? c->names_cap * 2 : 1024;
		char *n = realloc(c->names, cap);
		if (!n)
			return -ENOMEM;
		c->names = n;
		c->names_cap = cap;
	}
	struct spec_undo *u = &c->undo[c->nundo++];

	*u =
	    (struct spec_undo){.id = dir, .entry = true, .name_off = c->names_len, .name_len = len};
	memcpy(c->names + c->names_len, name, len);
	c->names_len += len;
	cfs_tree_stat(c->t, dir, &u->st);
	return 0;
}

static void spec_drop_note(struct spec_ctx *c)
{
	c->nundo--;
	c->names_len = c->undo[c->nundo].name_off;
}

/* Note ID's attributes before this line changes them. */
static int spec_note_attrs(struct spec_ctx *c, uint32_t id)
{
	if (spec_reserve((void **)&c->undo, &c->undo_cap, c->nundo, sizeof(*c->undo)))
		return -ENOMEM;
	struct spec_undo *u = &c->undo[c->nundo++];

	*u = (struct spec_undo){.id = id};
	cfs_tree_stat(c->t, id, &u->st);
	return 0;
}

/* What a failed tree call means, as a message about DIR/NAME. */
static int spec_fail_make(struct spec_ctx *c, int err, uint32_t dir, const char *name, size_t len)
{
	char *p = spec_path_of(c->t, dir, name, len);

	switch (err) {
	case -EEXIST:
		spec_fail(c, "%s: name exists", spec_q(p));
		break;
	case -ENOTDIR:
		spec_fail(c, "%s: parent is not a directory", spec_q(p));
		break;
	case -ENAMETOOLONG:
		spec_fail(c, "%s: name too long", spec_q(p));
		break;
	default:
		spec_fail_errno(c, err, "%s: %s", spec_q(p),
				spec_strerror(err));
		break;
	}
	free(p);
	return err == -ENOMEM ? -ENOMEM : -EINVAL;
}

struct spec_node {
	enum rs_kind kind;
	struct cfs_new a;
	const char *target; /* links */
	size_t target_len;
	mode_t type; /* RS_OTHER: S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK */
	dev_t rdev;
};

/* Every node a line makes comes through here: counted, noted for undo, made. DIR_NEW says
 * DIR was made by this line (its entries go away with it). */
static int spec_make(struct spec_ctx *c, uint32_t dir, bool dir_new, const char *name, size_t len,
		     const struct spec_node *n, uint32_t *out)
{
	int err;

	if (c->nodes >= CFS_SPEC_MAX_NODES)
		return spec_fail(c, "too many nodes (limit %d)", CFS_SPEC_MAX_NODES);
	if (!dir_new && spec_note_entry(c, dir, name, len))
		return spec_fail_errno(c, -ENOMEM, "out of memory");
	switch (n->kind) {
	case RS_DIR:
		err = cfs_tree_mkdir(c->t, dir, name, len, &n->a, out);
		break;
	case RS_FILE:
		err = cfs_tree_mkfile(c->t, dir, name, len, &n->a, out);
		break;
	case RS_OTHER:
		err = cfs_tree_mknod(c->t, dir, name, len, n->type, n->rdev, &n->a, out);
		break;
	default:
		err = cfs_tree_symlink(c->t, dir, name, len, n->target, n->target_len, &n->a, out);
		break;
	}
	if (err) {
		if (!dir_new)
			spec_drop_note(c);
		return spec_fail_make(c, err, dir, name, len);
	}
	c->nodes++;
	return 0;
}

static struct spec_node spec_dir_node(const struct spec_ctx *c)
{
	return (struct spec_node){RS_DIR, {0755, c->uid, c->gid}, NULL, 0, 0, 0};
}

static struct spec_node spec_file_node(const struct spec_ctx *c)
{
	return (struct spec_node){RS_FILE, {0644, c->uid, c->gid}, NULL, 0, 0, 0};
}

static struct spec_node spec_link_node(const struct spec_ctx *c, const char *target, size_t len)
{
	return (struct spec_node){RS_LINK, {0777, c->uid, c->gid}, target, len, 0, 0};
}

/* The line's mode, uid and gid over the kind's defaults. */
static void spec_apply_owner(struct spec_node *n, const struct spec_attrs *a)
{
	if (a->set & SPEC_A_MODE)
		n->a.mode = a->mode;
	if (a->set & SPEC_A_UID)
		n->a.uid = a->uid;
	if (a->set & SPEC_A_GID)
		n->a.gid = a->gid;
}

/* Find the directory that will hold P's last name, making missing ones (0755). */
static int spec_make_parents(struct spec_ctx *c, const struct spec_path *p, uint32_t *dir,
			     bool *dir_new)
{
	const char *s = p->w->s, *end = p->w->s + p->dir_len, *name;
	size_t len;
	struct spec_node n = spec_dir_node(c);

	*dir = CFS_ROOT;
	*dir_new = false;
	while ((len = spec_next_name(&s, end, &name)) > 0) {
		uint32_t next;

		if (cfs_tree_lookup(c->t, *dir, name, len, &next) == 0) {
			if (cfs_tree_kind(c->t, next) != RS_DIR) {
				char *q = spec_quoted(p->w->s, (size_t)(s - p->w->s));
				char *pq = spec_quoted(p->w->s, p->w->len);
				spec_fail(c, "%s: parent %s is not a directory", spec_q(pq), spec_q(q));
				free(q);
				free(pq);
				return -EINVAL;
			}
			*dir = next;
			continue;
		}
		int err = spec_make(c, *dir, *dir_new, name, len, &n, &next);
		if (err)
			return err;
		*dir = next;
		*dir_new = true;
	}
	return 0;
}

/* Fail with "PATH: name exists" unless P's last name is free in DIR. */
static int spec_check_free(struct spec_ctx *c, const struct spec_path *p, uint32_t dir)
{
	uint32_t id;

	if (p->name && cfs_tree_lookup(c->t, dir, p->name, p->name_len, &id) != 0)
		return 0;
	char *q = spec_quoted(p->w->s, p->w->len);
	spec_fail(c, "%s: name exists", spec_q(q));
	free(q);
	return -EINVAL;
}

/* Remove NAME in DIR and everything below it, without recursion: always take the first
 * entry of the current directory; descend while it is a non-empty directory.
 * "First" is found from a running cookie, not from the start of the listing: removed entries
 * stay as tombstones until the directory compacts (up to half of it), so restarting at 0
 * after each removal rescanned them and made rolling back a big wide or tree line quadratic
 * (80k entries took 20 s; found by tests/fuzz). Only after climbing back up does the listing
 * restart at 0, which costs at most the entries that directory had. */
static int spec_remove_tree(struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	uint32_t top, cur, child;
	char buf[RS_NAME_MAX + 1];
	const char *n;
	size_t nl;
	uint64_t cookie = 0, at;
	int err = cfs_tree_lookup(t, dir, name, len, &top);

	if (err)
		return err;
	if (cfs_tree_kind(t, top) != RS_DIR)
		return cfs_tree_unlink(t, dir, name, len);
	for (cur = top;;) {
		at = cookie;
		if (cfs_tree_dir_next(t, cur, &at, &n, &nl, &child) == 0) {
			bool is_dir = cfs_tree_kind(t, child) == RS_DIR;

			if (is_dir && cfs_tree_dir_count(t, child) > 0) {
				cur = child;
				cookie = 0;
				continue;
			}
			memcpy(buf, n, nl); /* the name lives in the tree: copy it before removal */
			err = is_dir ? cfs_tree_rmdir(t, cur, buf, nl)
				     : cfs_tree_unlink(t, cur, buf, nl);
			cookie = at; /* a removed entry's cookie still resumes after it */
		} else if (cur == top) {
			return cfs_tree_rmdir(t, dir, name, len);
		} else {
			/* CUR is empty; it is its parent's first entry, since we only ever descend
			 * into the first one */
			uint32_t up = cfs_tree_parent(t, cur);
			cookie = 0;
			err = cfs_tree_dir_next(t, up, &cookie, &n, &nl, &child);
			if (err == 0) {
				memcpy(buf, n, nl);
				err = cfs_tree_rmdir(t, up, buf, nl);
			}
			cur = up;
		}
		if (err)
			return err;
	}
}

static void spec_restore_attrs(struct cfs_tree *t, uint32_t id, const struct stat *st)
{
	if (!S_ISLNK(st->st_mode)) /* a link's mode is always 0777 */
		cfs_tree_chmod(t, id, st->st_mode & 07777);
	cfs_tree_chown(t, id, st->st_uid, st->st_gid);
	cfs_tree_set_times(t, id, &st->st_atim, &st->st_mtim, &st->st_ctim);
}

/* Undo the current line, newest change first. Removal does not allocate, so it succeeds. */
static void spec_rollback(struct spec_ctx *c)
{
	while (c->nundo > 0) {
		struct spec_undo *u = &c->undo[--c->nundo];

		if (u->entry) {
			spec_remove_tree(c->t, u->id, c->names + u->name_off, u->name_len);
			cfs_tree_set_times(c->t, u->id, &u->st.st_atim, &u->st.st_mtim,
					   &u->st.st_ctim);
		} else {
			spec_restore_attrs(c->t, u->id, &u->st);
		}
	}
	c->names_len = 0;
}

static void spec_commit(struct spec_ctx *c)
{
	c->nundo = 0;
	c->names_len = 0;
}

/* Keep the line's times for ID, to be set when the spec is in. */
static int spec_defer_times(struct spec_ctx *c, uint32_t id, const struct spec_attrs *a)
{
	if (!(a->set & SPEC_A_TIMES))
		return 0;
	if (spec_reserve((void **)&c->times, &c->times_cap, c->ntimes, sizeof(*c->times)))
		return spec_fail_errno(c, -ENOMEM, "out of memory");
	c->times[c->ntimes++] = (struct spec_times){
	    .id = id,
	    .set = a->set & SPEC_A_TIMES,
	    .line = c->line,
	    .atime = a->atime,
	    .mtime = a->mtime,
	    .ctime = a->ctime,
	};
	return 0;
}

static int spec_apply_times(struct spec_ctx *c, size_t from)
{
	for (size_t i = from; i < c->ntimes; i++) {
		const struct spec_times *m = &c->times[i];
		int err = cfs_tree_set_times(c->t, m->id, m->set & SPEC_A_ATIME ? &m->atime : NULL,
					     m->set & SPEC_A_MTIME ? &m->mtime : NULL,
					     m->set & SPEC_A_CTIME ? &m->ctime : NULL);
		if (err) {
			c->line = m->line;
			return spec_fail_errno(c, err, "setting times: %s", spec_strerror(err));
		}
	}
	c->ntimes = from;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Node keywords: dir, file, append, link, hardlink */

static int spec_run_dir(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_path p;
	struct spec_node n = spec_dir_node(c);
	uint32_t dir, id;
	bool dir_new;
	int err = spec_check_path(c, &l->pos[1], &p);

	if (err)
		return err;
	if (!p.name) {
		/* "dir /": the root always exists, the line sets its attributes */
		if ((a->set & (SPEC_A_MODE | SPEC_A_UID | SPEC_A_GID)) &&
		    spec_note_attrs(c, CFS_ROOT))
			return spec_fail_errno(c, -ENOMEM, "out of memory");
		if (a->set & SPEC_A_MODE)
			err = cfs_tree_chmod(c->t, CFS_ROOT, a->mode);
		if (!err && (a->set & (SPEC_A_UID | SPEC_A_GID)))
			err =
			    cfs_tree_chown(c->t, CFS_ROOT, a->set & SPEC_A_UID ? a->uid : (uid_t)-1,
					   a->set & SPEC_A_GID ? a->gid : (gid_t)-1);
		if (err)
			return spec_fail_errno(c, err, "/: %s", spec_strerror(err));
		return spec_defer_times(c, CFS_ROOT, a);
	}
	spec_apply_owner(&n, a);
	err = spec_make_parents(c, &p, &dir, &dir_new);
	if (!err)
		err = spec_make(c, dir, dir_new, p.name, p.name_len, &n, &id);
	if (!err)
		err = spec_defer_times(c, id, a);
	return err;
}

static int spec_run_file(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_path p;
	struct spec_node n = spec_file_node(c);
	uint32_t dir, id;
	bool dir_new;
	int err = spec_check_path(c, &l->pos[1], &p);

	if (err)
		return err;
	if (l->npos > 2 && (a->set & SPEC_A_SIZE))
		return spec_fail(c, "file: content and size= exclude each other");
	if ((a->set & SPEC_A_PATTERN) && !(a->set & SPEC_A_SIZE))
		return spec_fail(c, "file: pattern= needs size=");
	spec_apply_owner(&n, a);
	err = spec_make_parents(c, &p, &dir, &dir_new);
	if (!err && !p.name)
		err = spec_check_free(c, &p, dir);
	if (!err)
		err = spec_make(c, dir, dir_new, p.name, p.name_len, &n, &id);
	if (err)
		return err;
	if (l->npos > 2)
		err = cfs_tree_set_content(c->t, id, l->pos[2].s, l->pos[2].len);
	else if (a->set & SPEC_A_SIZE)
		err = a->pattern
			  ? cfs_tree_set_pattern(c->t, id, a->pattern, a->pattern_len, a->size)
			  : cfs_tree_set_pattern(c->t, id, spec_default_pattern,
						 sizeof(spec_default_pattern) - 1, a->size);
	if (err)
		return spec_fail_make(c, err, dir, p.name, p.name_len);
	return spec_defer_times(c, id, a);
}

/* The named existing node, not following links. */
static int spec_find(struct spec_ctx *c, const struct spec_word *w, uint32_t *id)
{
	struct spec_path p;
	int err = spec_check_path(c, w, &p);

	if (err)
		return err;
	err = spec_lookup_path(c->t, w->s, w->len, id);
	if (err) {
		char *q = spec_quoted(w->s, w->len);
		spec_fail(c, "%s: no such node", spec_q(q));
		free(q);
		return -EINVAL;
	}
	return 0;
}

/* The existing regular file named by W. */
static int spec_find_file(struct spec_ctx *c, const struct spec_word *w, uint32_t *id)
{
	int err = spec_find(c, w, id);

	if (err)
		return err;
	if (cfs_tree_kind(c->t, *id) != RS_FILE) {
		char *q = spec_quoted(w->s, w->len);
		spec_fail(c, "%s: not a regular file", spec_q(q));
		free(q);
		return -EINVAL;
	}
	return 0;
}

static int spec_fail_file(struct spec_ctx *c, const struct spec_word *w, int err)
{
	char *q = spec_quoted(w->s, w->len);

	spec_fail_errno(c, err, "%s: %s", spec_q(q), spec_strerror(err));
	free(q);
	return err == -ENOMEM ? -ENOMEM : -EINVAL;
}

/* Bytes at the end of a file, or at= (a hole between the old end and OFFSET reads zeros). */
static int spec_run_append(struct spec_ctx *c, const struct spec_line *l,
			   const struct spec_attrs *a)
{
	const struct spec_word *data = &l->pos[2];
	struct cfs_tree_stats ts;
	uint32_t id;
	struct stat st;
	int err = spec_find_file(c, &l->pos[1], &id);

	if (err)
		return err;
	cfs_tree_stat(c->t, id, &st);
	uint64_t off = a->set & SPEC_A_AT ? a->at : (uint64_t)st.st_size;
	if (off + data->len > (uint64_t)INT64_MAX)
		return spec_fail(c, "append: file would exceed %lld bytes", (long long)INT64_MAX);
	/* one tree call, which must fit whole: a write cut short at the data limit could not be
	 * undone, so ask for room for every page it may touch, plus the one a small file's bytes
	 * move to */
	cfs_tree_stats(c->t, &ts);
	if (ts.data_bytes > ts.data_limit ||
	    ts.data_limit - ts.data_bytes < (data->len / 4096 + 3) * 4096)
		return spec_fail_file(c, &l->pos[1], -ENOSPC);
	ssize_t n = cfs_tree_write(c->t, id, data->s, data->len, (off_t)off);
	if (n < 0)
		return spec_fail_file(c, &l->pos[1], (int)n);
	return 0;
}

/* A new size: a longer file reads zeros past its old end and holds nothing for them. */
static int spec_run_truncate(struct spec_ctx *c, const struct spec_line *l,
			     const struct spec_attrs *a)
{
	uint64_t size;
	uint32_t id;
	int err = spec_find_file(c, &l->pos[1], &id);

	if (!err)
		err = spec_count(c, &l->pos[2], "size", 0, (uint64_t)INT64_MAX, &size);
	if (err)
		return err;
	err = cfs_tree_truncate(c->t, id, size);
	return err ? spec_fail_file(c, &l->pos[1], err) : 0;
}

/* A link target as the kernel would take it: 1..4095 bytes, no NUL. */
static int spec_check_target(struct spec_ctx *c, const char *s, size_t len)
{
	if (len == 0)
		return spec_fail(c, "empty target");
	if (len >= RS_PATH_MAX)
		return spec_fail(c, "target too long (%zu bytes, limit %d)", len, RS_PATH_MAX - 1);
	if (memchr(s, '\0', len))
		return spec_fail(c, "NUL byte in target");
	return 0;
}

/* Make the node N at P (its missing parents too), with A's owner, mode and times. */
static int spec_make_at(struct spec_ctx *c, const struct spec_path *p, struct spec_node *n,
			const struct spec_attrs *a)
{
	uint32_t dir, id;
	bool dir_new;
	int err;

	spec_apply_owner(n, a);
	err = spec_make_parents(c, p, &dir, &dir_new);
	if (!err && !p->name)
		err = spec_check_free(c, p, dir);
	if (!err)
		err = spec_make(c, dir, dir_new, p->name, p->name_len, n, &id);
	if (!err)
		err = spec_defer_times(c, id, a);
	return err;
}

static int spec_run_link(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	const struct spec_word *target = &l->pos[2];
	struct spec_path p;
	struct spec_node n = spec_link_node(c, target->s, target->len);
	int err = spec_check_path(c, &l->pos[1], &p);

	if (!err)
		err = spec_check_target(c, target->s, target->len);
	if (err)
		return err;
	return spec_make_at(c, &p, &n, a);
}

/* fifo PATH, socket PATH, dev PATH c|b MAJOR MINOR: nodes the kernel does the I/O of. */
static int spec_run_special(struct spec_ctx *c, const struct spec_line *l,
			    const struct spec_attrs *a)
{
	struct spec_node n = spec_file_node(c);
	struct spec_path p;
	uint64_t maj = 0, min = 0;
	int err = spec_check_path(c, &l->pos[1], &p);

	n.kind = RS_OTHER;
	n.type = l->pos[0].s[0] == 'f' ? S_IFIFO : l->pos[0].s[0] == 's' ? S_IFSOCK : 0;
	if (!err && !n.type) {
		const struct spec_word *cb = &l->pos[2];
		if (cb->len != 1 || (cb->s[0] != 'c' && cb->s[0] != 'b'))
			return spec_fail(c, "dev: the kind is c or b (a character or block device)");
		n.type = cb->s[0] == 'c' ? S_IFCHR : S_IFBLK;
		err = spec_count(c, &l->pos[3], "major", 0, 0xfff, &maj);
		if (!err)
			err = spec_count(c, &l->pos[4], "minor", 0, 0xfffff, &min);
		n.rdev = makedev((unsigned)maj, (unsigned)min);
	}
	if (err)
		return err;
	return spec_make_at(c, &p, &n, a);
}

static int spec_run_hardlink(struct spec_ctx *c, const struct spec_line *l,
			     const struct spec_attrs *a)
{
	struct spec_path p;
	uint32_t dir, id;
	bool dir_new;
	int err = spec_check_path(c, &l->pos[1], &p);

	if (!err)
		err = spec_find(c, &l->pos[2], &id);
	if (err)
		return err;
	if (cfs_tree_kind(c->t, id) == RS_DIR) {
		char *q = spec_quoted(l->pos[2].s, l->pos[2].len);
		spec_fail(c, "%s: is a directory (no hard links to directories)", spec_q(q));
		free(q);
		return -EINVAL;
	}
	err = spec_make_parents(c, &p, &dir, &dir_new);
	if (!err && !p.name)
		err = spec_check_free(c, &p, dir);
	if (err)
		return err;
	/* the node's link count and ctime change: note them first, then the new entry */
	if (spec_note_attrs(c, id) || (!dir_new && spec_note_entry(c, dir, p.name, p.name_len)))
		return spec_fail_errno(c, -ENOMEM, "out of memory");
	err = cfs_tree_link(c->t, id, dir, p.name, p.name_len);
	if (err) {
		if (!dir_new)
			spec_drop_note(c);
		return spec_fail_make(c, err, dir, p.name, p.name_len);
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Link generators: chain, nest, loop */

/* Where a generator puts its links: PATH's directory and a hidden ".NAME.SUFFIX" in it. */
struct spec_gen_dir {
	struct spec_path p;
	uint32_t dir; /* PATH's directory */
	bool dir_new;
	char hidden[RS_NAME_MAX + 1];
	size_t hidden_len;
	uint32_t hid; /* the hidden directory, once made */
};

static int spec_gen_prepare(struct spec_ctx *c, const struct spec_word *w, const char *suffix,
			    uint64_t nodes, struct spec_gen_dir *g)
{
	int err = spec_check_path(c, w, &g->p);

	if (err)
		return err;
	if (nodes > CFS_SPEC_MAX_NODES - c->nodes)
		return spec_fail(c, "too many nodes (limit %d)", CFS_SPEC_MAX_NODES);
	if (g->p.name) {
		int n = snprintf(g->hidden, sizeof(g->hidden), ".%.*s.%s", (int)g->p.name_len,
				 g->p.name, suffix);
		if (n < 0 || (size_t)n > RS_NAME_MAX) {
			char *q = spec_quoted(w->s, w->len);
			spec_fail(c, "%s: name too long for the hidden .NAME.%s directory", spec_q(q),
				  suffix);
			free(q);
			return -EINVAL;
		}
		g->hidden_len = (size_t)n;
	}
	err = spec_make_parents(c, &g->p, &g->dir, &g->dir_new);
	if (!err)
		err = spec_check_free(c, &g->p, g->dir);
	return err;
}

static int spec_gen_link(struct spec_ctx *c, uint32_t dir, bool dir_new, const char *name,
			 size_t len, const char *target, size_t tlen)
{
	struct spec_node n = spec_link_node(c, target, tlen);
	uint32_t id;

	return spec_make(c, dir, dir_new, name, len, &n, &id);
}

static int spec_gen_hidden(struct spec_ctx *c, struct spec_gen_dir *g)
{
	struct spec_node n = spec_dir_node(c);

	return spec_make(c, g->dir, g->dir_new, g->hidden, g->hidden_len, &n, &g->hid);
}

/* Links NAME/k -> FMT(k-1) for k = FROM..TO, in the hidden directory. */
static int spec_gen_run(struct spec_ctx *c, struct spec_gen_dir *g, uint64_t from, uint64_t to,
			const char *fmt)
{
	char name[24], target[32];

	for (uint64_t k = from; k <= to; k++) {
		int nl = snprintf(name, sizeof(name), "%" PRIu64, k);
		int tl = snprintf(target, sizeof(target), fmt, k - 1);
		int err = spec_gen_link(c, g->hid, true, name, (size_t)nl, target, (size_t)tl);
		if (err)
			return err;
	}
	return 0;
}

/* TARGET seen from inside the hidden directory: one level further down. */
static int spec_down(struct spec_ctx *c, const char *s, size_t len, char *out, size_t *olen)
{
	if (s[0] == '/') {
		memcpy(out, s, len);
		*olen = len;
	} else if (len == 1 && s[0] == '.') {
		memcpy(out, "..", 2);
		*olen = 2;
	} else {
		if (len + 3 >= RS_PATH_MAX)
			return spec_fail(c,
					 "target too long (%zu bytes with the ../ the hidden "
					 "directory needs, limit %d)",
					 len + 3, RS_PATH_MAX - 1);
		memcpy(out, "../", 3);
		memcpy(out + 3, s, len);
		*olen = len + 3;
	}
	return 0;
}

static int spec_run_chain(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	const struct spec_word *t = &l->pos[3];
	struct spec_gen_dir g;
	char body[RS_PATH_MAX];
	size_t blen;
	uint64_t len;
	int err = spec_count(c, &l->pos[2], "chain length", 1, CFS_SPEC_MAX_NODES - 1, &len);

	if (!err)
		err = spec_check_target(c, t->s, t->len);
	if (!err && len > 1)
		err = spec_down(c, t->s, t->len, body, &blen);
	if (!err)
		err = spec_gen_prepare(c, &l->pos[1], "chain", len + 1, &g);
	if (err)
		return err;
	if (len == 1)
		return spec_gen_link(c, g.dir, g.dir_new, g.p.name, g.p.name_len, t->s, t->len);
	/* PATH -> .NAME.chain/LEN-1 -> ... -> .NAME.chain/1 -> TARGET: every link is the last
	 * component of the previous body, so the walk stays at one nesting level */
	err = spec_gen_hidden(c, &g);
	if (!err)
		err = spec_gen_link(c, g.hid, true, "1", 1, body, blen);
	if (!err)
		err = spec_gen_run(c, &g, 2, len - 1, "%" PRIu64);
	if (err)
		return err;
	blen = (size_t)snprintf(body, sizeof(body), "%s/%" PRIu64, g.hidden, len - 1);
	return spec_gen_link(c, g.dir, g.dir_new, g.p.name, g.p.name_len, body, blen);
}

/* Split a nest TARGET into the directory its first link names and what follows it: "a/b"
 * is "a" + "b", "b" is "." + "b", "/b" is "/" + "b", "a/b/" is "a" + "b/", "/" is "/" + ".". */
static void spec_split_target(const char *s, size_t len, size_t *dlen, const char **base,
			      size_t *blen)
{
	size_t e = len, slash;

	while (e > 0 && s[e - 1] == '/')
		e--;
	if (e == 0) {
		*dlen = 1;
		*base = ".";
		*blen = 1;
		return;
	}
	for (slash = e; slash > 0 && s[slash - 1] != '/'; slash--)
		;
	*base = s + slash;
	*blen = len - slash;
	if (slash == 0) {
		*dlen = 0; /* "." */
		return;
	}
	for (e = slash; e > 1 && s[e - 1] == '/'; e--)
		;
	*dlen = e; /* "/" stays "/" */
}

static int spec_run_nest(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	const struct spec_word *t = &l->pos[3];
	struct spec_gen_dir g;
	char body[RS_PATH_MAX];
	const char *base;
	size_t dlen, blen, len;
	uint64_t depth;
	int err = spec_count(c, &l->pos[2], "nest depth", 1, CFS_SPEC_MAX_NODES - 1, &depth);

	if (!err)
		err = spec_check_target(c, t->s, t->len);
	if (err)
		return err;
	spec_split_target(t->s, t->len, &dlen, &base, &blen);
	if (depth > 1)
		err =
		    dlen ? spec_down(c, t->s, dlen, body, &len) : spec_down(c, ".", 1, body, &len);
	if (!err)
		err = spec_gen_prepare(c, &l->pos[1], "nest", depth + 1, &g);
	if (!err && depth > 1 &&
	    g.hidden_len + (size_t)g_snprintf(NULL, 0, "/%" PRIu64 "/", depth - 1) + blen >=
		RS_PATH_MAX)
		err = spec_fail(c,
				"target too long (the last name of TARGET after "
				"%s/%" PRIu64 "/)",
				g.hidden, depth - 1);
	if (err)
		return err;
	if (depth == 1)
		return spec_gen_link(c, g.dir, g.dir_new, g.p.name, g.p.name_len, t->s, t->len);
	/* .NAME.nest/1 -> TARGET's directory; k -> "k-1/.", so the walk must come back out of
	 * k-1 to finish k's body; PATH -> .NAME.nest/DEPTH-1/BASE. Each link is entered while
	 * the one before is still being walked: DEPTH links, DEPTH levels deep. */
	err = spec_gen_hidden(c, &g);
	if (!err)
		err = spec_gen_link(c, g.hid, true, "1", 1, body, len);
	if (!err)
		err = spec_gen_run(c, &g, 2, depth - 1, "%" PRIu64 "/.");
	if (err)
		return err;
	len = (size_t)snprintf(body, sizeof(body), "%s/%" PRIu64 "/%.*s", g.hidden, depth - 1,
			       (int)blen, base);
	return spec_gen_link(c, g.dir, g.dir_new, g.p.name, g.p.name_len, body, len);
}

static int spec_run_loop(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_gen_dir g;
	char name[RS_NAME_MAX + 32], target[RS_NAME_MAX + 32];
	uint64_t k;
	int err = spec_count(c, &l->pos[2], "loop size", 1, CFS_SPEC_MAX_NODES, &k);

	if (!err)
		err = spec_check_path(c, &l->pos[1], &g.p);
	if (!err && g.p.name && g.p.name_len + 1 + g_snprintf(NULL, 0, "%" PRIu64, k) > RS_NAME_MAX)
		err = spec_fail(c, "loop: name too long for NAME.%" PRIu64, k - 1);
	if (!err)
		err = spec_gen_prepare(c, &l->pos[1], "loop", k, &g);
	if (err)
		return err;
	/* NAME -> NAME.1 -> ... -> NAME.K-1 -> NAME, all in PATH's directory */
	for (uint64_t i = 0; i < k && !err; i++) {
		uint64_t next = i + 1 == k ? 0 : i + 1;
		int nl = i ? snprintf(name, sizeof(name), "%.*s.%" PRIu64, (int)g.p.name_len,
				      g.p.name, i)
			   : snprintf(name, sizeof(name), "%.*s", (int)g.p.name_len, g.p.name);
		int tl =
		    next ? snprintf(target, sizeof(target), "%.*s.%" PRIu64, (int)g.p.name_len,
				    g.p.name, next)
			 : snprintf(target, sizeof(target), "%.*s", (int)g.p.name_len, g.p.name);
		err = spec_gen_link(c, g.dir, g.dir_new, name, (size_t)nl, target, (size_t)tl);
	}
	return err;
}

/* ---------------------------------------------------------------------------------------- */
/* Directory generators: wide, deep, tree */

/* Make PATH itself as a new directory, for the generators that fill one. */
static int spec_gen_top(struct spec_ctx *c, const struct spec_word *w, uint64_t nodes,
			uint32_t *top)
{
	struct spec_gen_dir g;
	struct spec_node n = spec_dir_node(c);
	int err = spec_check_path(c, w, &g.p);

	if (!err && nodes > CFS_SPEC_MAX_NODES - c->nodes)
		err = spec_fail(c, "%" PRIu64 " nodes: too many (limit %d)", nodes,
				CFS_SPEC_MAX_NODES);
	if (!err)
		err = spec_make_parents(c, &g.p, &g.dir, &g.dir_new);
	if (!err)
		err = spec_check_free(c, &g.p, g.dir);
	if (!err)
		err = spec_make(c, g.dir, g.dir_new, g.p.name, g.p.name_len, &n, top);
	return err;
}

static int spec_check_prefix(struct spec_ctx *c, const struct spec_attrs *a)
{
	/* PREFIX plus up to 8 digits of a count */
	if (a->prefix_len + 8 > RS_NAME_MAX)
		return spec_fail(c, "prefix too long (limit %d bytes)", RS_NAME_MAX - 8);
	return 0;
}

/* wide and deep: COUNT numbered entries PREFIX1 .. PREFIXCOUNT under PATH, side by side
 * (files) or each inside the one before (directories). */
static int spec_run_numbered(struct spec_ctx *c, const struct spec_line *l,
			     const struct spec_attrs *a, bool nested)
{
	struct spec_node n = nested ? spec_dir_node(c) : spec_file_node(c);
	char name[RS_NAME_MAX + 1];
	uint32_t top = 0, cur, id = 0;
	uint64_t count;
	int err = spec_count(c, &l->pos[2], nested ? "deep depth" : "wide count", 1,
			     CFS_SPEC_MAX_NODES - 1, &count);

	if (!err)
		err = spec_check_prefix(c, a);
	if (!err)
		err = spec_gen_top(c, &l->pos[1], count + 1, &top);
	cur = top;
	for (uint64_t i = 1; i <= count && !err; i++) {
		int nl = snprintf(name, sizeof(name), "%.*s%" PRIu64, (int)a->prefix_len,
				  a->prefix ? a->prefix : "", i);
		err = spec_make(c, cur, true, name, (size_t)nl, &n, &id);
		if (nested)
			cur = id;
	}
	return err;
}

static int spec_run_wide(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	return spec_run_numbered(c, l, a, false);
}

static int spec_run_deep(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	return spec_run_numbered(c, l, a, true);
}

/* splitmix64: small, fast, and the same sequence everywhere for a seed. */
static uint64_t spec_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t spec_below(uint64_t *s, uint64_t n)
{
	return spec_rand(s) % n;
}

/* A file or a link that resolves to no directory, by its path below the tree's top. */
struct spec_sample {
	char *path;
	size_t len;
};

/* A reservoir sample of the nodes made so far (Algorithm R): uniform, bounded memory. */
struct spec_pool {
	struct spec_sample s[SPEC_POOL];
	size_t n;
	uint64_t seen;
};

/* A directory being filled; frames[0] is the top, frames[k] its level-k descendant. */
struct spec_tree_frame {
	uint32_t dir;
	uint32_t next;	       /* index of the next entry to make */
	uint32_t files, links; /* still to make among the remaining entries */
	uint32_t dirlink;      /* 1 + index of the newest link here to a directory, or 0 */
	uint32_t dirlink_to;   /* the level of that link's target */
	size_t plen;	       /* length of this directory's path */
};

struct spec_tree_gen {
	struct spec_ctx *c;
	uint64_t rng;
	uint64_t fanout;
	const char *top; /* the tree's absolute path, for absolute targets */
	size_t top_len;
	struct spec_pool nodes;
	struct spec_tree_frame frames[SPEC_TREE_MAX_DEPTH + 1];
	char path[SPEC_TREE_MAX_DEPTH * 12 + 16]; /* the entry being made, below the top */
};

static int spec_pool_add(struct spec_tree_gen *g, const char *path, size_t len)
{
	struct spec_pool *p = &g->nodes;
	uint64_t slot = p->seen++ < SPEC_POOL ? p->n : spec_below(&g->rng, p->seen);

	if (slot >= SPEC_POOL)
		return 0;
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, path, len);
	copy[len] = '\0';
	if (slot == p->n)
		p->n++;
	else
		free(p->s[slot].path);
	p->s[slot] = (struct spec_sample){copy, len};
	return 0;
}

static void spec_pool_free(struct spec_pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->s[i].path);
}

/* The relative path from directory FROM to TO (both below the top); 0 if it does not fit. */
static size_t spec_relpath(const char *from, size_t flen, const char *to, size_t tlen, char *out,
			   size_t cap)
{
	size_t common = 0, i = 0, o = 0;

	/* the longest shared run of whole names */
	for (;; i++) {
		bool fend = i == flen || from[i] == '/', tend = i == tlen || to[i] == '/';
		if (fend && tend)
			common = i;
		if (i == flen || i == tlen || from[i] != to[i])
			break;
	}
	for (size_t j = common; j < flen; j++)
		if (j == common || from[j] == '/') {
			if (o + 3 > cap)
				return 0;
			memcpy(out + o, "../", 3);
			o += 3;
		}
	const char *rest = to + common + (common < tlen && to[common] == '/');
	size_t rlen = tlen - (size_t)(rest - to);

	if (flen == 0 && common == 0)
		rest = to, rlen = tlen;
	if (o + rlen + 1 > cap)
		return 0;
	memcpy(out + o, rest, rlen);
	o += rlen;
	if (o > 0 && out[o - 1] == '/')
		o--;
	if (o == 0)
		out[o++] = '.';
	return o;
}

/* TO (LEN bytes below the top) as an absolute path; 0 if it does not fit. */
static size_t spec_abspath(const struct spec_tree_gen *g, const char *to, size_t len, char *out)
{
	int n = g_snprintf(out, RS_PATH_MAX, "%.*s%s%.*s", (int)g->top_len, g->top,
			   len ? "/" : "", (int)len, to);
	return n > 0 && n < RS_PATH_MAX ? (size_t)n : 0;
}

/* Pick a target for a link in the directory of level LEVEL: a file or a link to one, by a
 * relative or an absolute path; a dangling name; or a directory, which is always an
 * ancestor-or-self of the link (directly, or through an earlier such link as lN/. or lN/..).
 * Walkers that follow links then stop at every directory link, as at any loop, so following
 * adds nothing to the tree's size: find -L over it ends, and so does find in server mode.
 * *to_level is the target's level when it is a directory, else -1. */
static size_t spec_tree_target(struct spec_tree_gen *g, unsigned level, char *out, int *to_level)
{
	const struct spec_tree_frame *f = g->frames;
	uint64_t roll = spec_below(&g->rng, 100);
	unsigned k = (unsigned)spec_below(&g->rng, level + 1), j = level;
	size_t dlen = f[level].plen, n;

	*to_level = -1;
	if (roll < 50 && g->nodes.n > 0) {
		const struct spec_sample *s = &g->nodes.s[spec_below(&g->rng, g->nodes.n)];
		return roll < 30 ? spec_relpath(g->path, dlen, s->path, s->len, out, RS_PATH_MAX - 1)
				 : spec_abspath(g, s->path, s->len, out);
	}
	if (roll < 62) { /* below an ancestor (ENOENT) or below a file (ENOTDIR) */
		const struct spec_sample *s = g->nodes.n ? &g->nodes.s[k % g->nodes.n] : NULL;
		n = roll & 1 && s ? spec_relpath(g->path, dlen, s->path, s->len, out, RS_PATH_MAX - 10)
				  : spec_relpath(g->path, dlen, g->path, f[k].plen, out, RS_PATH_MAX - 10);
		if (n)
			n += (size_t)sprintf(out + n, "/nowhere");
		return n;
	}
	while (roll >= 85 && j > 0 && !f[j].dirlink)
		j = (unsigned)spec_below(&g->rng, j);
	if (roll < 85 || !f[j].dirlink) {
		*to_level = (int)k;
		return roll & 1 ? spec_abspath(g, g->path, f[k].plen, out)
				: spec_relpath(g->path, dlen, g->path, f[k].plen, out, RS_PATH_MAX - 1);
	}
	/* through the link as a directory component */
	bool up = (roll & 1) && f[j].dirlink_to > 0;
	n = spec_relpath(g->path, dlen, g->path, f[j].plen, out, RS_PATH_MAX - 20);
	if (!n)
		return 0;
	n += (size_t)sprintf(out + n, "/l%" PRIu32 "%s", f[j].dirlink - 1, up ? "/.." : "/.");
	*to_level = (int)f[j].dirlink_to - up;
	return n;
}

/* Make entry F->next of the directory at LEVEL: its kind drawn so each directory gets exactly
 * its quota of files and links in a random order. A new directory to fill goes in *child. */
static int spec_tree_entry(struct spec_tree_gen *g, unsigned level, unsigned depth,
			   struct spec_tree_frame *child)
{
	struct spec_ctx *c = g->c;
	struct spec_tree_frame *f = &g->frames[level];
	uint32_t i = f->next++, left = (uint32_t)g->fanout - i, id;
	uint64_t r = spec_below(&g->rng, left);
	char kind = r < f->files ? 'f' : r < (uint64_t)f->files + f->links ? 'l' : 'd';
	char *name = g->path + f->plen + (f->plen > 0);
	size_t nlen = (size_t)sprintf(name, "%c%" PRIu32, kind, i);
	size_t plen = (size_t)(name - g->path) + nlen;
	int err;

	child->dir = 0;
	if (f->plen > 0)
		g->path[f->plen] = '/';
	if (kind == 'f') {
		struct spec_node n = spec_file_node(c);
		uint64_t size = spec_below(&g->rng, SPEC_GEN_FILE_MAX);
		f->files--;
		err = spec_make(c, f->dir, true, name, nlen, &n, &id);
		if (!err && size)
			err = cfs_tree_set_pattern(c->t, id, spec_default_pattern,
						   sizeof(spec_default_pattern) - 1, size);
		if (err == -ENOMEM)
			return spec_fail_errno(c, err, "out of memory");
		return err ? err : spec_pool_add(g, g->path, plen);
	}
	if (kind == 'l') {
		char target[RS_PATH_MAX];
		int to_level;
		size_t tlen = spec_tree_target(g, level, target, &to_level);

		f->links--;
		if (tlen == 0) { /* too long for a target: let it dangle instead */
			tlen = (size_t)sprintf(target, "nowhere");
			to_level = -1;
		}
		err = spec_gen_link(c, f->dir, true, name, nlen, target, tlen);
		if (err || to_level < 0)
			return err ? err : spec_pool_add(g, g->path, plen);
		f->dirlink = i + 1;
		f->dirlink_to = (uint32_t)to_level;
		return 0;
	}
	struct spec_node n = spec_dir_node(c);
	err = spec_make(c, f->dir, true, name, nlen, &n, &id);
	if (!err && level + 1 < depth)
		*child = (struct spec_tree_frame){.dir = id, .plen = plen};
	return err;
}

/* How many nodes a tree line makes (its top included), or UINT64_MAX past the limit. */
static uint64_t spec_tree_count(uint64_t depth, uint64_t fanout, uint64_t dirs)
{
	uint64_t total = 1, level = fanout;

	for (uint64_t i = 0; i < depth; i++) {
		total += level;
		if (total > CFS_SPEC_MAX_NODES)
			return UINT64_MAX;
		if (dirs == 0)
			break;
		if (i + 1 < depth && level > CFS_SPEC_MAX_NODES / dirs)
			return UINT64_MAX;
		level *= dirs;
	}
	return total;
}

static int spec_run_tree(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a)
{
	struct spec_tree_gen *g;
	uint64_t files = a->set & SPEC_A_FILES ? a->files : 40;
	uint64_t links = a->set & SPEC_A_LINKS ? a->links : 10;
	uint64_t nf, nl, count;
	uint32_t top;
	unsigned n = 1;
	int err = 0;

	if ((a->set & (SPEC_A_DEPTH | SPEC_A_FANOUT)) != (SPEC_A_DEPTH | SPEC_A_FANOUT))
		return spec_fail(c, "tree: depth= and fanout= are required");
	if (a->depth < 1 || a->depth > SPEC_TREE_MAX_DEPTH)
		return spec_fail(c, "tree depth %" PRIu64 " out of range 1..%d", a->depth,
				 SPEC_TREE_MAX_DEPTH);
	if (a->fanout < 1 || a->fanout >= CFS_SPEC_MAX_NODES)
		return spec_fail(c, "tree fanout %" PRIu64 " out of range 1..%d", a->fanout,
				 CFS_SPEC_MAX_NODES - 1);
	if (files + links > 100)
		return spec_fail(c, "tree: files + links exceed 100%%");
	nf = (a->fanout * files + 50) / 100;
	nl = (a->fanout * links + 50) / 100;
	if (nf + nl > a->fanout)
		nl = a->fanout - nf;
	count = spec_tree_count(a->depth, a->fanout, a->fanout - nf - nl);
	if (count > CFS_SPEC_MAX_NODES)
		return spec_fail(c, "tree too big: more than %d nodes", CFS_SPEC_MAX_NODES);
	err = spec_gen_top(c, &l->pos[1], count, &top);
	if (err)
		return err;
	g = calloc(1, sizeof(*g));
	if (!g)
		return spec_fail_errno(c, -ENOMEM, "out of memory");
	*g = (struct spec_tree_gen){
	    .c = c,
	    .rng = a->set & SPEC_A_SEED ? a->seed : 1,
	    .fanout = a->fanout,
	    .top = l->pos[1].s,
	    .top_len = l->pos[1].len,
	};
	while (g->top_len > 1 && g->top[g->top_len - 1] == '/')
		g->top_len--;
	g->frames[0] = (struct spec_tree_frame){.dir = top, .files = (uint32_t)nf, .links = (uint32_t)nl};
	/* depth-first with an explicit stack: entries of a directory are made in order, each
	 * new directory filled before its next sibling */
	while (!err && n > 0) {
		struct spec_tree_frame child;

		if (g->frames[n - 1].next == a->fanout) {
			n--;
			continue;
		}
		err = spec_tree_entry(g, n - 1, (unsigned)a->depth, &child);
		if (!err && child.dir) {
			child.files = (uint32_t)nf;
			child.links = (uint32_t)nl;
			g->frames[n++] = child;
		}
	}
	if (err == -ENOMEM && !c->err)
		spec_fail_errno(c, err, "out of memory");
	spec_pool_free(&g->nodes);
	free(g);
	return err;
}

/* ---------------------------------------------------------------------------------------- */
/* Lines and loading */

struct spec_keyword {
	const char *name;
	int (*run)(struct spec_ctx *c, const struct spec_line *l, const struct spec_attrs *a);
	int min_args, max_args; /* positional words after the keyword */
	unsigned attrs;
	const char *usage;
};

static const struct spec_keyword spec_keywords[] = {
    {"dir", spec_run_dir, 1, 1, SPEC_A_NODE, "dir PATH [attrs]"},
    {"file", spec_run_file, 1, 2, SPEC_A_NODE | SPEC_A_SIZE | SPEC_A_PATTERN,
     "file PATH [CONTENT | size=N [pattern=P]] [attrs]"},
    {"append", spec_run_append, 2, 2, SPEC_A_AT, "append PATH CONTENT [at=OFFSET]"},
    {"truncate", spec_run_truncate, 2, 2, 0, "truncate PATH SIZE"},
    {"link", spec_run_link, 2, 2, SPEC_A_UID | SPEC_A_GID | SPEC_A_TIMES,
     "link PATH TARGET [attrs]"},
    {"hardlink", spec_run_hardlink, 2, 2, 0, "hardlink PATH EXISTING"},
    {"fifo", spec_run_special, 1, 1, SPEC_A_NODE, "fifo PATH [attrs]"},
    {"socket", spec_run_special, 1, 1, SPEC_A_NODE, "socket PATH [attrs]"},
    {"dev", spec_run_special, 4, 4, SPEC_A_NODE, "dev PATH c|b MAJOR MINOR [attrs]"},
    {"chain", spec_run_chain, 3, 3, 0, "chain PATH LEN TARGET"},
    {"nest", spec_run_nest, 3, 3, 0, "nest PATH DEPTH TARGET"},
    {"loop", spec_run_loop, 2, 2, 0, "loop PATH K"},
    {"wide", spec_run_wide, 2, 2, SPEC_A_PREFIX, "wide PATH COUNT [prefix=P]"},
    {"deep", spec_run_deep, 2, 2, SPEC_A_PREFIX, "deep PATH DEPTH [prefix=P]"},
    {"tree", spec_run_tree, 1, 1,
     SPEC_A_DEPTH | SPEC_A_FANOUT | SPEC_A_FILES | SPEC_A_LINKS | SPEC_A_SEED,
     "tree PATH depth=D fanout=F [files=P%] [links=P%] [seed=S]"},
};

/* Run one line [P, END) against the tree, leaving its undo log for the caller to commit or
 * roll back. */
static int spec_run_line(struct spec_ctx *c, const char *p, const char *end)
{
	struct spec_line l;
	struct spec_attrs a = {0};
	const struct spec_keyword *kw = NULL;
	int err = spec_lex(c, p, end, &l);

	if (err || l.npos + l.nattr == 0)
		return err;
	if (l.npos == 0)
		return spec_fail(c, "missing keyword");
	for (size_t i = 0; i < G_N_ELEMENTS(spec_keywords); i++)
		if (strlen(spec_keywords[i].name) == l.pos[0].len &&
		    memcmp(spec_keywords[i].name, l.pos[0].s, l.pos[0].len) == 0)
			kw = &spec_keywords[i];
	if (!kw) {
		char *q = spec_quoted(l.pos[0].s, l.pos[0].len);
		spec_fail(c, "unknown keyword %s", spec_q(q));
		free(q);
		return -EINVAL;
	}
	if (l.npos - 1 < kw->min_args)
		return spec_fail(c, "%s: missing argument (%s)", kw->name, kw->usage);
	if (l.npos - 1 > kw->max_args)
		return spec_fail(c, "%s: too many arguments (%s)", kw->name, kw->usage);
	err = spec_parse_attrs(c, kw->name, kw->attrs, &l, &a);
	if (!err)
		err = kw->run(c, &l, &a);
	return err;
}

static int spec_ctx_init(struct spec_ctx *c, struct cfs_tree *t, const char *name,
			 const struct cfs_spec_defaults *def)
{
	*c = (struct spec_ctx){
	    .t = t,
	    .name = name,
	    .uid = def ? def->uid : getuid(),
	    .gid = def ? def->gid : getgid(),
	    .buf = malloc(CFS_SPEC_MAX_LINE + 1),
	};
	return c->buf ? 0 : -ENOMEM;
}

static void spec_ctx_free(struct spec_ctx *c)
{
	free(c->buf);
	free(c->undo);
	free(c->names);
	free(c->times);
}

/* Run one line as a transaction: all of it, or nothing. */
static int spec_do_line(struct spec_ctx *c, const char *p, const char *end, bool times_now)
{
	size_t mark = c->ntimes;
	int err;

	if ((size_t)(end - p) > CFS_SPEC_MAX_LINE)
		err = spec_fail(c, "line too long (%zu bytes, limit %d)", (size_t)(end - p),
				CFS_SPEC_MAX_LINE);
	else if (memchr(p, '\0', (size_t)(end - p)))
		err = spec_fail(c, "NUL byte in file");
	else
		err = spec_run_line(c, p, end);
	if (!err && times_now)
		err = spec_apply_times(c, mark);
	if (err) {
		spec_rollback(c);
		c->ntimes = mark;
	}
	spec_commit(c);
	return err;
}

/* Give every node of the tree TS as its three times (iteratively: trees can be deep). */
static int spec_stamp(struct spec_ctx *c, const struct timespec *ts)
{
	uint32_t *todo = NULL, dir;
	size_t n = 0, cap = 0;
	int err = spec_reserve((void **)&todo, &cap, n, sizeof(*todo));

	if (!err)
		todo[n++] = CFS_ROOT;
	while (!err && n) {
		const char *name;
		size_t len;
		uint32_t child;
		uint64_t cookie = 0;

		dir = todo[--n];
		err = cfs_tree_set_times(c->t, dir, ts, ts, ts);
		while (!err && cfs_tree_dir_next(c->t, dir, &cookie, &name, &len, &child) == 0) {
			if (cfs_tree_kind(c->t, child) != RS_DIR)
				err = cfs_tree_set_times(c->t, child, ts, ts, ts);
			else if (!(err = spec_reserve((void **)&todo, &cap, n, sizeof(*todo))))
				todo[n++] = child;
		}
	}
	free(todo);
	return err ? spec_fail_errno(c, err, "setting times: %s", spec_strerror(err)) : 0;
}

/* The end of a load: default times, then the lines' own, and the message when it failed. */
static int spec_finish(struct spec_ctx *c, int rc, const struct cfs_spec_defaults *def, char **err)
{
	if (!rc && def && def->stamp)
		rc = spec_stamp(c, &def->time);
	if (!rc)
		rc = spec_apply_times(c, 0);
	if (rc && !c->err)
		spec_fail_errno(c, rc, "%s", spec_strerror(rc));
	*err = c->err;
	spec_ctx_free(c);
	return rc;
}

int cfs_spec_load_text(struct cfs_tree *t, const char *name, const char *text, size_t len,
		       const struct cfs_spec_defaults *def, char **err)
{
	struct spec_ctx c;
	const char *p = text, *end = text + len;
	int rc = spec_ctx_init(&c, t, name, def);

	*err = NULL;
	while (!rc && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;

		c.line++;
		rc = spec_do_line(&c, p, e, false);
		p = nl ? nl + 1 : end;
	}
	return spec_finish(&c, rc, def, err);
}

/* Run the lines of FD as they are read: a load holds the tree and at most one line, whatever
 * the file's size. */
static int spec_load_fd(struct spec_ctx *c, int fd)
{
	enum { CAP = CFS_SPEC_MAX_LINE + 1 + SPEC_IO_CHUNK };
	char *buf = malloc(CAP);
	size_t have = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (!rc) {
		ssize_t n = read(fd, buf + have, CAP - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = spec_fail(c, "%s", strerror(errno));
			break;
		}
		char *p = buf, *end = buf + have + n, *nl;
		while (!rc && (nl = memchr(p, '\n', (size_t)(end - p)))) {
			c->line++;
			rc = spec_do_line(c, p, nl, false);
			p = nl + 1;
		}
		have = (size_t)(end - p);
		if (rc || (n == 0 && have == 0))
			break;
		if (n == 0 || have == CAP) { /* the last line, without a newline; or too long */
			c->line++;
			rc = have == CAP ? spec_fail(c, "line too long (more than %d bytes)",
						     CFS_SPEC_MAX_LINE)
					 : spec_do_line(c, p, end, false);
			break;
		}
		memmove(buf, p, have);
	}
	free(buf);
	return rc;
}

int cfs_spec_load_file(struct cfs_tree *t, const char *path, const struct cfs_spec_defaults *def,
		       char **err)
{
	struct stat st;
	struct spec_ctx c;
	/* O_NONBLOCK: a FIFO must be refused, not waited on (regular files ignore the flag) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK), rc = 0;

	*err = NULL;
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		if (asprintf(err, "%s: %s", path, strerror(-rc)) < 0)
			*err = NULL;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		if (asprintf(err, "%s: not a regular file", path) < 0)
			*err = NULL;
		goto out;
	}
	struct cfs_spec_defaults d = {getuid(), getgid(), false, {0, 0}};

	if (def)
		d = *def;
	if (!d.stamp) {
		d.stamp = true;
		d.time = st.st_mtim;
	}
	rc = spec_ctx_init(&c, t, path, &d);
	if (!rc)
		rc = spec_load_fd(&c, fd);
	rc = spec_finish(&c, rc, &d, err);
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

int cfs_spec_apply_line(struct cfs_tree *t, const char *line, const struct cfs_spec_defaults *def,
			char **err)
{
	struct spec_ctx c;
	size_t len = strlen(line);
	int rc = spec_ctx_init(&c, t, "line", def);

	*err = NULL;
	if (len > 0 && line[len - 1] == '\n')
		len--;
	c.line = 1;
	if (!rc && memchr(line, '\n', len))
		rc = spec_fail(&c, "one line expected");
	if (!rc)
		rc = spec_do_line(&c, line, line + len, true);
	if (rc && !c.err)
		spec_fail_errno(&c, rc, "%s", spec_strerror(rc));
	*err = c.err;
	spec_ctx_free(&c);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Walking a tree in order: shared by dump and materialize */

struct spec_frame {
	uint32_t dir;
	uint32_t gen; /* DIR's generation: a streamed dump checks it is still that directory */
	uint64_t cookie;
	size_t plen;
};

struct spec_walk {
	const struct cfs_tree *t;
	GArray *stack; /* struct spec_frame, the root at the bottom */
	GString *path; /* the current node's path from the root ("" for the root) */
	uint32_t id;   /* the current node */
	const char *name;
	size_t name_len;
};

enum { SPEC_WALK_END, SPEC_WALK_NODE, SPEC_WALK_LEAVE };

static void spec_walk_init(struct spec_walk *w, const struct cfs_tree *t)
{
	struct spec_frame root = {CFS_ROOT, cfs_tree_generation(t, CFS_ROOT), 0, 0};

	*w = (struct spec_walk){
	    .t = t, .stack = g_array_new(FALSE, FALSE, sizeof(root)), .path = g_string_new(NULL)};
	g_array_append_val(w->stack, root);
}

static void spec_walk_free(struct spec_walk *w)
{
	g_array_free(w->stack, TRUE);
	g_string_free(w->path, TRUE);
}

/* The next event in pre-order: NODE for each entry (a directory's entries follow it), then
 * LEAVE for the directory when its entries are done (the root last); END after that. */
static int spec_walk_next(struct spec_walk *w)
{
	if (w->stack->len == 0)
		return SPEC_WALK_END;

	struct spec_frame *f = &g_array_index(w->stack, struct spec_frame, w->stack->len - 1);
	uint32_t child;

	g_string_truncate(w->path, f->plen);
	if (cfs_tree_dir_next(w->t, f->dir, &f->cookie, &w->name, &w->name_len, &child) != 0) {
		w->id = f->dir;
		w->name = NULL;
		g_array_set_size(w->stack, w->stack->len - 1);
		return SPEC_WALK_LEAVE;
	}
	g_string_append_c(w->path, '/');
	g_string_append_len(w->path, w->name, (gssize)w->name_len);
	w->id = child;
	if (cfs_tree_kind(w->t, child) == RS_DIR) {
		struct spec_frame sub = {child, cfs_tree_generation(w->t, child), 0, w->path->len};
		g_array_append_val(w->stack, sub);
	}
	return SPEC_WALK_NODE;
}

/* ---------------------------------------------------------------------------------------- */
/* Dump */

static void spec_put_time(GString *s, const char *key, const struct timespec *ts)
{
	g_string_append_printf(s, " %s=%lld.%09ld", key, (long long)ts->tv_sec, ts->tv_nsec);
}

static void spec_put_attrs(GString *s, const struct stat *st)
{
	if (!S_ISLNK(st->st_mode)) /* a link's mode is always 0777 */
		g_string_append_printf(s, " mode=%04o", (unsigned)(st->st_mode & 07777));
	g_string_append_printf(s, " uid=%u gid=%u", (unsigned)st->st_uid, (unsigned)st->st_gid);
	spec_put_time(s, "atime", &st->st_atim);
	spec_put_time(s, "mtime", &st->st_mtim);
	spec_put_time(s, "ctime", &st->st_ctim);
}

/* The shortest period of BUF (KMP failure function): the smallest p with buf[i] == buf[i-p]. */
static size_t spec_period(const char *buf, size_t len, size_t *fail)
{
	size_t k = 0;

	fail[0] = 0;
	for (size_t i = 1; i < len; i++) {
		while (k > 0 && buf[i] != buf[k])
			k = fail[k - 1];
		if (buf[i] == buf[k])
			k++;
		fail[i] = k;
	}
	return len - fail[len - 1];
}

/* Does file ID repeat its first P bytes (PAT) all the way? Reads the whole file. */
static bool spec_repeats(const struct cfs_tree *t, uint32_t id, uint64_t size, const char *pat,
			 size_t p)
{
	g_autofree char *buf = g_malloc(SPEC_IO_CHUNK);

	for (uint64_t off = 0; off < size;) {
		ssize_t n = cfs_tree_read(t, id, buf, SPEC_IO_CHUNK, (off_t)off);
		if (n <= 0)
			return false;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pat[(off + (uint64_t)i) % p])
				return false;
		off += (uint64_t)n;
	}
	return true;
}

/*
 * How to write a dense file ID back: as size=N pattern=P when its whole content repeats P, at
 * most CFS_PATTERN_MAX bytes, at least twice (what a pattern file is, and loads back as one),
 * else as literal content. The content decides, which costs a read of a written file (its
 * bytes are in memory). A file that is a pattern all through (WHOLE) may be huge: a window of
 * two maximal periods shows its pattern.
 */
static bool spec_find_pattern(const struct cfs_tree *t, uint32_t id, uint64_t size, bool whole,
			      char *pat, size_t *plen)
{
	size_t want = size < SPEC_PATTERN_WINDOW ? (size_t)size : SPEC_PATTERN_WINDOW;
	char *buf = g_malloc(want);
	size_t *fail = g_new(size_t, want);
	ssize_t n = cfs_tree_read(t, id, buf, want, 0);
	bool found = false;

	if (n == (ssize_t)want && want > 0) {
		size_t p = spec_period(buf, want, fail);
		if (p <= CFS_PATTERN_MAX && 2 * (uint64_t)p <= size) {
			memcpy(pat, buf, p);
			*plen = p;
			found = size <= want || whole || spec_repeats(t, id, size, pat, p);
		}
	}
	g_free(fail);
	g_free(buf);
	return found;
}

static int spec_put_line(FILE *out, const GString *s)
{
	if (s->len > CFS_SPEC_MAX_LINE)
		return -E2BIG;
	fwrite(s->str, 1, s->len, out);
	return 0;
}

/* Written bytes [OFF, END) of file ID as append at= lines, a page (SPEC_DUMP_CHUNK) each.
 * Past the pattern (PEND) a page reads zeros where not written, so its zeros at either end
 * are left out; an all-zero page keeps one byte, so it loads back as a page held. */
static int spec_dump_run(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			 uint32_t id, uint64_t off, uint64_t end, uint64_t pend)
{
	char buf[SPEC_DUMP_CHUNK];
	int err = 0;

	while (!err && off < end) {
		size_t want = end - off < sizeof(buf) ? (size_t)(end - off) : sizeof(buf), i = 0;
		ssize_t n = cfs_tree_read(t, id, buf, want, (off_t)off);
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		size_t e = (size_t)n;
		if (off >= pend) {
			while (e > 1 && !buf[e - 1])
				e--;
			while (i + 1 < e && !buf[i])
				i++;
		}
		g_string_assign(s, "append ");
		spec_quote(s, path->str, path->len);
		g_string_append_c(s, ' ');
		spec_quote(s, buf + i, e - i);
		g_string_append_printf(s, " at=%" PRIu64 "\n", off + i);
		err = spec_put_line(out, s);
		off += (uint64_t)n;
	}
	return err;
}

/*
 * A file with holes, or written over its pattern: the pattern part as size= pattern=, a
 * truncate line for the size, and the written runs as append at= lines. Holes stay holes
 * (they would be too big to write out: a file may be 2^63 - 1 bytes).
 */
static int spec_dump_sparse(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			    uint32_t id, const struct stat *st)
{
	uint64_t size = (uint64_t)st->st_size, pend, start, end;
	const char *pat;
	size_t plen;
	int err = cfs_tree_file_pattern(t, id, &pat, &plen, &pend);

	g_string_assign(s, "file ");
	spec_quote(s, path->str, path->len);
	if (!err && pend) {
		g_string_append_printf(s, " size=%" PRIu64 " pattern=", pend);
		spec_quote(s, pat, plen);
	}
	spec_put_attrs(s, st);
	g_string_append_c(s, '\n');
	if (!err)
		err = spec_put_line(out, s);
	if (!err && size > pend) {
		g_string_assign(s, "truncate ");
		spec_quote(s, path->str, path->len);
		g_string_append_printf(s, " %" PRIu64 "\n", size);
		err = spec_put_line(out, s);
	}
	for (uint64_t off = 0; !err && cfs_tree_next_written(t, id, off, &start, &end) == 0;
	     off = end)
		err = spec_dump_run(t, out, s, path, id, start, end, pend);
	return err;
}

/* Whether file ID holds its bytes all through: a pattern (*whole) or written bytes. */
static bool spec_dense(const struct cfs_tree *t, uint32_t id, uint64_t size, bool *whole)
{
	uint64_t pend, start, end;
	const char *pat;
	size_t plen;
	bool written = cfs_tree_next_written(t, id, 0, &start, &end) == 0;

	if (cfs_tree_file_pattern(t, id, &pat, &plen, &pend))
		return false;
	*whole = !written && pend == size;
	return size == 0 || *whole || (!pend && written && start == 0 && end == size);
}

static int spec_dump_file(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			  uint32_t id, const struct stat *st)
{
	g_autofree char *pat = NULL;
	char buf[SPEC_DUMP_CHUNK];
	size_t plen;
	uint64_t size = (uint64_t)st->st_size, off = 0;
	bool whole = false;

	if (!spec_dense(t, id, size, &whole))
		return spec_dump_sparse(t, out, s, path, id, st);
	pat = g_malloc(CFS_PATTERN_MAX);
	g_string_assign(s, "file ");
	spec_quote(s, path->str, path->len);
	if (size > 0 && spec_find_pattern(t, id, size, whole, pat, &plen)) {
		g_string_append_printf(s, " size=%" PRIu64 " pattern=", size);
		spec_quote(s, pat, plen);
		off = size;
	} else if (size > 0) {
		ssize_t n = cfs_tree_read(t, id, buf, sizeof(buf), 0);
		if (n < 0)
			return (int)n;
		g_string_append_c(s, ' ');
		spec_quote(s, buf, (size_t)n);
		off = (uint64_t)n;
	}
	spec_put_attrs(s, st);
	g_string_append_c(s, '\n');
	if (s->len > CFS_SPEC_MAX_LINE)
		return -E2BIG;
	fwrite(s->str, 1, s->len, out);
	/* the rest of a literal, a line per chunk, so no line outgrows the limit */
	while (off < size) {
		ssize_t n = cfs_tree_read(t, id, buf, sizeof(buf), (off_t)off);
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		g_string_assign(s, "append ");
		spec_quote(s, path->str, path->len);
		g_string_append_c(s, ' ');
		spec_quote(s, buf, (size_t)n);
		g_string_append_c(s, '\n');
		if (s->len > CFS_SPEC_MAX_LINE)
			return -E2BIG;
		fwrite(s->str, 1, s->len, out);
		off += (uint64_t)n;
	}
	return 0;
}

/* A node with several names, and the path it was dumped under first. */
struct spec_seen {
	uint32_t gen;
	char path[];
};

/* One node's line(s). FIRST maps nodes with several names to the path dumped first. */
static int spec_dump_node(const struct cfs_tree *t, FILE *out, GString *s, const GString *path,
			  uint32_t id, GHashTable *first)
{
	enum rs_kind kind = cfs_tree_kind(t, id);
	struct stat st;
	const char *target;
	size_t tlen;

	cfs_tree_stat(t, id, &st);
	if (kind != RS_DIR && st.st_nlink > 1) {
		/* with the node's generation: a streamed dump may see a handle freed and reused */
		const struct spec_seen *seen = g_hash_table_lookup(first, GUINT_TO_POINTER(id));
		uint32_t gen = cfs_tree_generation(t, id);
		if (seen && seen->gen == gen) {
			g_string_assign(s, "hardlink ");
			spec_quote(s, path->str, path->len);
			g_string_append_c(s, ' ');
			spec_quote(s, seen->path, strlen(seen->path));
			g_string_append_c(s, '\n');
			goto write;
		}
		struct spec_seen *now = g_malloc(sizeof(*now) + path->len + 1);
		now->gen = gen;
		memcpy(now->path, path->str, path->len);
		now->path[path->len] = '\0';
		g_hash_table_insert(first, GUINT_TO_POINTER(id), now);
	}
	if (kind == RS_FILE)
		return spec_dump_file(t, out, s, path, id, &st);
	if (kind == RS_OTHER) {
		g_string_assign(s, S_ISFIFO(st.st_mode) ? "fifo " : S_ISSOCK(st.st_mode) ? "socket " : "dev ");
		spec_quote(s, path->str, path->len);
		if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
			g_string_append_printf(s, " %c %u %u", S_ISCHR(st.st_mode) ? 'c' : 'b',
					       major(st.st_rdev), minor(st.st_rdev));
	} else if (kind == RS_LINK) {
		int err = cfs_tree_readlink(t, id, &target, &tlen);
		if (err)
			return err;
		g_string_assign(s, "link ");
		spec_quote(s, path->str, path->len);
		g_string_append_c(s, ' ');
		spec_quote(s, target, tlen);
	} else {
		g_string_assign(s, "dir ");
		spec_quote(s, path->len ? path->str : "/", path->len ? path->len : 1);
	}
	spec_put_attrs(s, &st);
	g_string_append_c(s, '\n');
write:
	if (s->len > CFS_SPEC_MAX_LINE)
		return -E2BIG;
	fwrite(s->str, 1, s->len, out);
	return 0;
}

struct cfs_spec_dumper {
	struct spec_walk w;
	GString *s;
	GHashTable *first;
	bool started;
};

struct cfs_spec_dumper *cfs_spec_dumper_new(const struct cfs_tree *t)
{
	struct cfs_spec_dumper *d = g_new0(struct cfs_spec_dumper, 1);

	spec_walk_init(&d->w, t);
	d->s = g_string_new(NULL);
	d->first = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	return d;
}

void cfs_spec_dumper_free(struct cfs_spec_dumper *d)
{
	if (!d)
		return;
	spec_walk_free(&d->w);
	g_hash_table_destroy(d->first);
	g_string_free(d->s, TRUE);
	g_free(d);
}

/* Between two pieces the tree may have changed: a directory on the walk's stack that was
 * removed (its handle freed, maybe reused) ends there, with all below it. */
static void spec_walk_revalidate(struct spec_walk *w)
{
	for (guint i = 0; i < w->stack->len; i++) {
		const struct spec_frame *f = &g_array_index(w->stack, struct spec_frame, i);
		if (cfs_tree_kind(w->t, f->dir) != RS_DIR ||
		    cfs_tree_generation(w->t, f->dir) != f->gen) {
			g_array_set_size(w->stack, i);
			return;
		}
	}
}

int cfs_spec_dumper_next(struct cfs_spec_dumper *d, FILE *out, size_t want)
{
	long start = ftell(out);
	int ev, err = 0;

	if (!d->started) {
		d->started = true;
		fputs("# chainfs spec (cfs_spec_dump)\n", out);
		err = spec_dump_node(d->w.t, out, d->s, d->w.path, CFS_ROOT, d->first);
	}
	spec_walk_revalidate(&d->w);
	while (!err && (ev = spec_walk_next(&d->w)) != SPEC_WALK_END) {
		if (ev == SPEC_WALK_NODE)
			err = spec_dump_node(d->w.t, out, d->s, d->w.path, d->w.id, d->first);
		if (!err && start >= 0 && ftell(out) - start >= (long)want)
			break;
	}
	if (!err && (fflush(out) != 0 || ferror(out)))
		err = -EIO;
	return err ? err : d->w.stack->len > 0;
}

int cfs_spec_dump(const struct cfs_tree *t, FILE *out)
{
	struct cfs_spec_dumper *d = cfs_spec_dumper_new(t);
	int rc;

	while ((rc = cfs_spec_dumper_next(d, out, SIZE_MAX / 2)) > 0)
		;
	cfs_spec_dumper_free(d);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Materialize */

struct spec_mat {
	const struct cfs_tree *t;
	const char *top; /* DIR, for messages */
	int topfd;
	int cur;	   /* the directory being filled */
	bool owners;	   /* running as root with CFS_MAT_KEEP_IDS: owners too */
	mode_t modes;	   /* mode bits applied: set-id bits only with CFS_MAT_KEEP_IDS */
	GHashTable *first; /* node with several names -> relative path of its first one */
	char *buf;
	char **err;
};

static int spec_mat_fail(struct spec_mat *m, const char *path, const char *what, int err)
{
	if (!*m->err && asprintf(m->err, "%s%s: %s: %s", m->top, path, what, strerror(-err)) < 0)
		*m->err = NULL;
	return err;
}

/* Bytes of file ID that are not holes: its pattern part and its written runs past it. */
static uint64_t spec_file_bytes(const struct cfs_tree *t, uint32_t id)
{
	uint64_t pend, start, end, total;
	const char *pat;
	size_t plen;

	if (cfs_tree_file_pattern(t, id, &pat, &plen, &pend))
		return 0;
	total = pend;
	for (uint64_t off = pend; cfs_tree_next_written(t, id, off, &start, &end) == 0; off = end)
		total += end - start;
	return total;
}

/* How many bytes of file data (holes left out) T holds, each node counted once. */
static uint64_t spec_data_bytes(const struct cfs_tree *t)
{
	struct spec_walk w;
	GHashTable *seen = g_hash_table_new(NULL, NULL);
	uint64_t total = 0;
	int ev;

	spec_walk_init(&w, t);
	while ((ev = spec_walk_next(&w)) != SPEC_WALK_END) {
		struct stat st;

		if (ev != SPEC_WALK_NODE || cfs_tree_kind(t, w.id) != RS_FILE)
			continue;
		cfs_tree_stat(t, w.id, &st);
		if (st.st_nlink > 1 && !g_hash_table_add(seen, GUINT_TO_POINTER(w.id)))
			continue;
		total += spec_file_bytes(t, w.id);
	}
	spec_walk_free(&w);
	g_hash_table_destroy(seen);
	return total;
}

static int spec_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Owner (as root), mode and times on an open file or directory, in that order: chown
 * clears set-id bits, and anything after the times would move them. */
static int spec_mat_attrs(struct spec_mat *m, int fd, const struct stat *st, const char **what)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	*what = "chown";
	if (m->owners && fchown(fd, st->st_uid, st->st_gid) < 0)
		return -errno;
	*what = "chmod";
	if (fchmod(fd, st->st_mode & m->modes) < 0)
		return -errno;
	*what = "utimens";
	if (futimens(fd, ts) < 0)
		return -errno;
	return 0;
}

/* Bytes [OFF, END) of file ID to FD at the same offsets. */
static int spec_mat_range(struct spec_mat *m, int fd, uint32_t id, uint64_t off, uint64_t end)
{
	int err = 0;

	if (off < end && lseek(fd, (off_t)off, SEEK_SET) < 0)
		return -errno;
	while (!err && off < end) {
		size_t want = end - off < SPEC_IO_CHUNK ? (size_t)(end - off) : SPEC_IO_CHUNK;
		ssize_t n = cfs_tree_read(m->t, id, m->buf, want, (off_t)off);
		if (n <= 0)
			err = n < 0 ? (int)n : -EIO;
		else
			err = spec_write_all(fd, m->buf, (size_t)n);
		off += n > 0 ? (uint64_t)n : 0;
	}
	return err;
}

/* The size first, so holes stay holes; then the pattern part and the written runs past it. */
static int spec_mat_file(struct spec_mat *m, const char *name, const char *path, uint32_t id,
			 const struct stat *st)
{
	const char *what = "open", *pat;
	size_t plen;
	uint64_t pend = 0, start, end;
	int fd = openat(m->cur, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int err = fd < 0 ? -errno : 0;

	if (!err && ftruncate(fd, st->st_size) < 0)
		err = -errno, what = "truncate";
	if (!err)
		err = cfs_tree_file_pattern(m->t, id, &pat, &plen, &pend);
	if (!err)
		err = spec_mat_range(m, fd, id, 0, pend), what = "write";
	for (uint64_t off = pend;
	     !err && cfs_tree_next_written(m->t, id, off, &start, &end) == 0; off = end)
		err = spec_mat_range(m, fd, id, start, end);
	if (!err)
		err = spec_mat_attrs(m, fd, st, &what);
	if (fd >= 0 && close(fd) < 0 && !err)
		err = -errno, what = "close";
	return err ? spec_mat_fail(m, path, what, err) : 0;
}

/* A fifo, socket or device (devices need CAP_MKNOD: the error says so). */
static int spec_mat_special(struct spec_mat *m, const char *name, const char *path,
			    const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	if (mknodat(m->cur, name, (st->st_mode & S_IFMT) | 0600, st->st_rdev) < 0)
		return spec_mat_fail(m, path, "mknod", -errno);
	if (m->owners && fchownat(m->cur, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return spec_mat_fail(m, path, "chown", -errno);
	if (fchmodat(m->cur, name, st->st_mode & m->modes, 0) < 0)
		return spec_mat_fail(m, path, "chmod", -errno);
	if (utimensat(m->cur, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return spec_mat_fail(m, path, "utimensat", -errno);
	return 0;
}

static int spec_mat_link(struct spec_mat *m, const char *name, const char *path, uint32_t id,
			 const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	/* the kernel walks the copy with its own limits */
	ssize_t len = cfs_inroot_target(m->t, rs_limits_linux, id, m->buf);

	if (len < 0)
		return spec_mat_fail(m, path, "readlink", (int)len);
	if (memchr(m->buf, '\0', (size_t)len))
		return spec_mat_fail(m, path, "symlink", -EINVAL);
	if (symlinkat(m->buf, m->cur, name) < 0)
		return spec_mat_fail(m, path, "symlink", -errno);
	if (m->owners && fchownat(m->cur, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return spec_mat_fail(m, path, "lchown", -errno);
	if (utimensat(m->cur, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return spec_mat_fail(m, path, "utimensat", -errno);
	return 0;
}

/* Make directory NAME with private permissions (its own are set when we leave it, so a
 * read-only directory can still be filled) and step into it. */
static int spec_mat_enter(struct spec_mat *m, const char *name, const char *path)
{
	int fd;

	if (mkdirat(m->cur, name, 0700) < 0)
		return spec_mat_fail(m, path, "mkdir", -errno);
	fd = openat(m->cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return spec_mat_fail(m, path, "open", -errno);
	close(m->cur);
	m->cur = fd;
	return 0;
}

/* Done with the directory we are in: set its attributes and step back up. ".." is opened
 * first, while the directory is still searchable. Holding one descriptor at a time keeps a
 * tree of any depth within the fd limit. */
static int spec_mat_leave(struct spec_mat *m, uint32_t id, const char *path, bool top)
{
	struct stat st;
	const char *what;
	int up = -1, err;

	cfs_tree_stat(m->t, id, &st);
	if (!top) {
		up = openat(m->cur, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (up < 0)
			return spec_mat_fail(m, path, "open ..", -errno);
	}
	err = spec_mat_attrs(m, m->cur, &st, &what);
	if (err) {
		if (up >= 0)
			close(up);
		return spec_mat_fail(m, path, what, err);
	}
	if (!top) {
		close(m->cur);
		m->cur = up;
	}
	return 0;
}

static int spec_mat_node(struct spec_mat *m, const struct spec_walk *w)
{
	char name[RS_NAME_MAX + 1];
	const char *path = w->path->str;
	struct stat st;
	enum rs_kind kind = cfs_tree_kind(m->t, w->id);

	if (memchr(w->name, '\0', w->name_len))
		return spec_mat_fail(m, path, "name", -EINVAL);
	memcpy(name, w->name, w->name_len);
	name[w->name_len] = '\0';
	if (kind == RS_DIR)
		return spec_mat_enter(m, name, path);
	cfs_tree_stat(m->t, w->id, &st);
	if (st.st_nlink > 1) {
		const char *seen = g_hash_table_lookup(m->first, GUINT_TO_POINTER(w->id));
		if (seen) {
			if (linkat(m->topfd, seen + 1, m->cur, name, 0) < 0)
				return spec_mat_fail(m, path, "link", -errno);
			return 0;
		}
		g_hash_table_insert(m->first, GUINT_TO_POINTER(w->id), g_strdup(path));
	}
	if (kind == RS_FILE)
		return spec_mat_file(m, name, path, w->id, &st);
	if (kind == RS_LINK)
		return spec_mat_link(m, name, path, w->id, &st);
	return spec_mat_special(m, name, path, &st);
}

/* 0 if FD's directory has nothing but "." and "..". */
static int spec_mat_check_empty(int fd)
{
	int dfd = dup(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;
	int err = 0;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return -errno;
	}
	while (!err && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			err = -ENOTEMPTY;
	closedir(d);
	return err;
}

int cfs_materialize(const struct cfs_tree *t, const char *dir, unsigned flags, char **err)
{
	bool keep = flags & CFS_MAT_KEEP_IDS;
	struct spec_mat m = {.t = t,
			     .top = dir,
			     .owners = keep && geteuid() == 0,
			     .modes = keep ? 07777 : 01777,
			     .err = err};
	struct spec_walk w;
	uint64_t bytes = spec_data_bytes(t);
	int ev, rc;

	*err = NULL;
	if (bytes > SPEC_MATERIALIZE_MAX_BYTES) {
		if (asprintf(err,
			     "%s: the tree holds %" PRIu64 " bytes of file data, more than "
			     "the %llu materialize writes",
			     dir, bytes, (unsigned long long)SPEC_MATERIALIZE_MAX_BYTES) < 0)
			*err = NULL;
		return -EFBIG;
	}
	m.topfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m.topfd < 0)
		return spec_mat_fail(&m, "", "open", -errno);
	rc = spec_mat_check_empty(m.topfd);
	if (rc) {
		close(m.topfd);
		return spec_mat_fail(&m, "", "materialize", rc);
	}
	m.cur = dup(m.topfd);
	if (m.cur < 0) {
		rc = spec_mat_fail(&m, "", "dup", -errno);
		close(m.topfd);
		return rc;
	}
	m.first = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	m.buf = g_malloc(SPEC_IO_CHUNK);
	spec_walk_init(&w, t);
	rc = 0;
	while (!rc && (ev = spec_walk_next(&w)) != SPEC_WALK_END) {
		if (ev == SPEC_WALK_NODE)
			rc = spec_mat_node(&m, &w);
		else
			rc = spec_mat_leave(&m, w.id, w.path->str, w.stack->len == 0);
	}
	spec_walk_free(&w);
	g_hash_table_destroy(m.first);
	g_free(m.buf);
	close(m.cur);
	close(m.topfd);
	return rc;
}
