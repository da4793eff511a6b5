/*
 * A fault rule's tree change (change.h): parsed when the rule is added, so a line that does
 * not parse refuses the rule; applied by the request gate when the rule fires.
 */
#include "change.h"
#include "spec.h"

#include <errno.h>
#include <glib.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>

enum cfs_change_kind { CH_SPEC, CH_RENAME, CH_EXCHANGE, CH_UNLINK, CH_RMDIR, CH_REPLACE };

static const struct {
	const char *name;
	enum cfs_change_kind kind;
	int args;
	const char *usage;
} cfs_change_words[] = {
    {"rename", CH_RENAME, 2, "rename FROM TO"},	       {"exchange", CH_EXCHANGE, 2, "exchange A B"},
    {"unlink", CH_UNLINK, 1, "unlink PATH"},	       {"rmdir", CH_RMDIR, 1, "rmdir PATH"},
    {"replace", CH_REPLACE, 2, "replace PATH TARGET"},
};

struct cfs_step {
	enum cfs_change_kind kind;
	char *line;   /* as given, trimmed */
	char **words; /* namespace changes: the keyword and its arguments */
};

struct cfs_change {
	char *text;
	GPtrArray *steps; /* struct cfs_step */
};

static void cfs_step_free(gpointer p)
{
	struct cfs_step *s = p;

	g_free(s->line);
	g_strfreev(s->words);
	g_free(s);
}

void cfs_change_free(struct cfs_change *c)
{
	if (!c)
		return;
	g_free(c->text);
	g_ptr_array_free(c->steps, TRUE);
	g_free(c);
}

const char *cfs_change_text(const struct cfs_change *c)
{
	return c->text;
}

/* TEXT cut at each ';' outside double quotes (a backslash escapes the next byte), each piece
 * trimmed. */
static GPtrArray *cfs_change_split(const char *text)
{
	GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
	const char *start = text;
	bool quoted = false;

	for (const char *p = text;; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == '"')
			quoted = !quoted;
		if (*p && (*p != ';' || quoted))
			continue;
		g_ptr_array_add(lines, g_strstrip(g_strndup(start, (gsize)(p - start))));
		if (!*p)
			break;
		start = p + 1;
	}
	return lines;
}

/* An absolute path with a last name, no "." nor "..": NULL, or what is wrong. */
static const char *cfs_change_path_bad(const char *path)
{
	if (path[0] != '/' || !path[strspn(path, "/")])
		return "a path must be absolute and name an entry below /";
	if (strlen(path) >= RS_PATH_MAX)
		return "path too long";
	gchar **names = g_strsplit(path, "/", -1);
	const char *bad = NULL;
	for (gchar **n = names; *n && !bad; n++)
		if (strcmp(*n, ".") == 0 || strcmp(*n, "..") == 0)
			bad = "no \".\" nor \"..\" in a path: name entries as the tree holds them";
		else if (strlen(*n) > RS_NAME_MAX)
			bad = "a name longer than 255 bytes";
	g_strfreev(names);
	return bad;
}

/* A namespace line (its keyword is one of cfs_change_words) into S: NULL, or what is wrong. */
static const char *cfs_step_namespace(struct cfs_step *s, size_t w)
{
	gchar **words = g_strsplit_set(s->line, " \t", -1);
	int n = 0;

	/* drop the empty words runs of blanks leave */
	for (int i = 0; words[i]; i++)
		if (*words[i])
			words[n++] = words[i];
		else
			g_free(words[i]);
	words[n] = NULL;
	s->words = words;
	s->kind = cfs_change_words[w].kind;
	if (n - 1 != cfs_change_words[w].args)
		return cfs_change_words[w].usage;
	for (int i = 1; i <= cfs_change_words[w].args; i++) {
		const char *bad =
		    s->kind == CH_REPLACE && i == 2 ? NULL : cfs_change_path_bad(words[i]);
		if (bad)
			return bad;
	}
	if (s->kind == CH_REPLACE && strlen(words[2]) >= RS_PATH_MAX)
		return "a link target is at most 4095 bytes";
	return NULL;
}

/* One line into a step: NULL, or a g_malloc'ed message. */
static char *cfs_step_parse(struct cfs_step *s)
{
	char *msg = NULL;

	for (size_t w = 0; w < G_N_ELEMENTS(cfs_change_words); w++) {
		if (!cfs_spec_line_is(s->line, cfs_change_words[w].name))
			continue;
		const char *bad = cfs_step_namespace(s, w);
		return bad ? g_strdup(bad) : NULL;
	}
	s->kind = CH_SPEC;
	/* the tree's journal keeps no old content or extended attributes, so a change that
	 * edited them could not be undone if a later line failed */
	static const char *const in_place[] = {"append", "truncate", "xattr"};
	for (size_t i = 0; i < G_N_ELEMENTS(in_place); i++)
		if (cfs_spec_line_is(s->line, in_place[i]))
			return g_strdup(
			    "a change does not edit a node in place (it could not be undone if a "
			    "later line failed): make a new one and rename it over the old one");
	if (cfs_spec_check_line(s->line, &msg) == 0)
		return NULL;
	char *e = g_strdup(msg ? msg : "does not parse");
	free(msg);
	return e;
}

struct cfs_change *cfs_change_parse(const char *text, char **err)
{
	struct cfs_change *c = g_new0(struct cfs_change, 1);
	GPtrArray *lines = cfs_change_split(text);

	c->text = g_strstrip(g_strdup(text));
	c->steps = g_ptr_array_new_with_free_func(cfs_step_free);
	*err = NULL;
	for (guint i = 0; i < lines->len && !*err; i++) {
		struct cfs_step *s = g_new0(struct cfs_step, 1);
		s->line = g_strdup(g_ptr_array_index(lines, i));
		g_ptr_array_add(c->steps, s);
		char *why = *s->line ? cfs_step_parse(s) : g_strdup("an empty line");
		if (why)
			*err = g_strdup_printf("change line %u (%s): %s", i + 1, s->line, why);
		g_free(why);
	}
	g_ptr_array_free(lines, TRUE);
	if (*err) {
		cfs_change_free(c);
		return NULL;
	}
	return c;
}

/* The directory holding PATH's last name, and that name: 0 or -errno (no link is followed). */
static int cfs_change_parent(const struct cfs_tree *t, const char *path, uint32_t *dir,
			     const char **name)
{
	const char *p = path;
	uint32_t at = CFS_ROOT;

	for (;;) {
		p += strspn(p, "/");
		size_t len = strcspn(p, "/");
		if (!p[len + strspn(p + len, "/")]) { /* the last name */
			*dir = at;
			*name = p;
			return 0;
		}
		int err = cfs_tree_lookup(t, at, p, len, &at);
		if (err)
			return err;
		if (cfs_tree_kind(t, at) != RS_DIR)
			return -ENOTDIR;
		p += len;
	}
}

/* NAME's length, without the slashes that may end it */
static size_t cfs_name_len(const char *name)
{
	return strcspn(name, "/");
}

/* Remove what (DIR, NAME) holds, a directory with all below it: depth first, iteratively. */
static int cfs_change_remove_all(struct cfs_tree *t, uint32_t dir, const char *name, size_t len)
{
	uint32_t top;
	int err = cfs_tree_lookup(t, dir, name, len, &top);
	GArray *stack;

	if (err || cfs_tree_kind(t, top) != RS_DIR)
		return err ? err : cfs_tree_unlink(t, dir, name, len);
	stack = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	g_array_append_val(stack, top);
	while (!err && stack->len) {
		uint32_t cur = g_array_index(stack, uint32_t, stack->len - 1), child;
		uint64_t cookie = 0;
		const char *n;
		size_t nlen;
		if (cfs_tree_dir_next(t, cur, &cookie, &n, &nlen, &child) != 0) {
			/* CUR is empty now: its own name goes (the top's, below) */
			g_array_set_size(stack, stack->len - 1);
			if (!stack->len)
				break;
			cfs_tree_name(t, cur, &n, &nlen);
			char *copy = g_strndup(n, nlen); /* the name's bytes go with the entry */
			err = cfs_tree_rmdir(t, g_array_index(stack, uint32_t, stack->len - 1),
					     copy, nlen);
			g_free(copy);
		} else if (cfs_tree_kind(t, child) == RS_DIR) {
			g_array_append_val(stack, child);
		} else {
			char *copy = g_strndup(n, nlen);
			err = cfs_tree_unlink(t, cur, copy, nlen);
			g_free(copy);
		}
	}
	g_array_free(stack, TRUE);
	return err ? err : cfs_tree_rmdir(t, dir, name, len);
}

/* replace PATH TARGET: the link is made under a free name beside PATH, swapped in, and what
 * PATH held removed, so a failure leaves the tree as it was and no request sees a gap. */
static int cfs_change_replace(struct cfs_tree *t, const char *path, const char *target,
			      const struct cfs_new *a)
{
	uint32_t dir, link, old;
	const char *name;
	size_t len;
	char spare[64];
	int err = cfs_change_parent(t, path, &dir, &name);

	if (err)
		return err;
	len = cfs_name_len(name);
	if (cfs_tree_lookup(t, dir, name, len, &old) == -ENOENT)
		return cfs_tree_symlink(t, dir, name, len, target, strlen(target), a, &link);
	for (unsigned i = 0;; i++) {
		snprintf(spare, sizeof(spare), ".chainfs-replaced.%u", i);
		if (cfs_tree_lookup(t, dir, spare, strlen(spare), &old) == -ENOENT)
			break;
	}
	err = cfs_tree_symlink(t, dir, spare, strlen(spare), target, strlen(target), a, &link);
	if (err)
		return err;
	err = cfs_tree_rename(t, dir, spare, strlen(spare), dir, name, len, RENAME_EXCHANGE);
	if (err) {
		cfs_tree_unlink(t, dir, spare, strlen(spare));
		return err;
	}
	return cfs_change_remove_all(t, dir, spare, strlen(spare));
}

/* rename or exchange: both paths' directories first, then one call. */
static int cfs_change_move(struct cfs_tree *t, const char *from, const char *to, unsigned flags)
{
	uint32_t fdir, tdir;
	const char *fname, *tname;
	int err = cfs_change_parent(t, from, &fdir, &fname);

	if (!err)
		err = cfs_change_parent(t, to, &tdir, &tname);
	if (err)
		return err;
	return cfs_tree_rename(t, fdir, fname, cfs_name_len(fname), tdir, tname,
			       cfs_name_len(tname), flags);
}

static int cfs_step_apply(struct cfs_tree *t, const struct cfs_step *s, const struct cfs_new *a,
			  char **why)
{
	uint32_t dir;
	const char *name;
	int err;

	switch (s->kind) {
	case CH_SPEC: {
		struct cfs_spec_defaults def = {a->uid, a->gid, false, {0, 0}};
		char *msg = NULL;
		err = cfs_spec_apply_line(t, s->line, &def, &msg);
		if (err && msg)
			*why = g_strdup(msg);
		free(msg);
		return err;
	}
	case CH_RENAME:
	case CH_EXCHANGE:
		return cfs_change_move(t, s->words[1], s->words[2],
				       s->kind == CH_EXCHANGE ? RENAME_EXCHANGE : 0);
	case CH_REPLACE:
		return cfs_change_replace(t, s->words[1], s->words[2], a);
	case CH_UNLINK:
	case CH_RMDIR:
		err = cfs_change_parent(t, s->words[1], &dir, &name);
		if (err)
			return err;
		return s->kind == CH_UNLINK ? cfs_tree_unlink(t, dir, name, cfs_name_len(name))
					    : cfs_tree_rmdir(t, dir, name, cfs_name_len(name));
	}
	return -EINVAL;
}

/* The lines in order until one fails: 0, or its -errno with *err saying which and why. */
static int cfs_change_run(struct cfs_tree *t, const struct cfs_change *c, const struct cfs_new *a,
			  char **err)
{
	for (guint i = 0; i < c->steps->len; i++) {
		const struct cfs_step *s = g_ptr_array_index(c->steps, i);
		char *why = NULL;
		int rc = cfs_step_apply(t, s, a, &why);
		if (rc) {
			*err = g_strdup_printf("line %u (%s): %s%s", i + 1, s->line,
					       why ? why : g_strerror(-rc),
					       i ? "; the lines before it were undone" : "");
			g_free(why);
			return rc;
		}
	}
	return 0;
}

int cfs_change_apply(struct cfs_tree *t, const struct cfs_change *c, uid_t uid, gid_t gid,
		     char **err)
{
	const struct cfs_new a = {0777, uid, gid};
	int rc = cfs_tree_journal_begin(t);

	*err = NULL;
	if (rc) {
		*err = g_strdup_printf("the change could not start: %s", g_strerror(-rc));
		return rc;
	}
	rc = cfs_change_run(t, c, &a, err);
	if (!rc) {
		cfs_tree_journal_commit(t);
		return 0;
	}
	int undo = cfs_tree_journal_undo(t);
	if (undo) { /* only when memory ran out: say so rather than claim the tree is whole */
		char *more = g_strdup_printf("%s; undoing the lines before it failed (%s): the "
					     "tree may keep part of the change",
					     *err, g_strerror(-undo));
		g_free(*err);
		*err = more;
	}
	return rc;
}
