/*
 * What a replayed request showed against what the recording says its caller was shown
 * (replay_int.h): a lookup's or getattr's kind and size, a link's body, a listing's names and
 * kinds. A recording of format 1 says none of it: only its errnos are compared.
 *
 * A listing comes in chunks, a line each, from offset 0 to an empty chunk. Each chunk's
 * entries must be in the listing replay makes (whole, at that line) with the same kind; at
 * the empty chunk, the names replay lists beyond those the chunks held are extra. A chunk
 * recorded without its entries (too many for a line) leaves the listing's end unchecked.
 *
 * Sizes replay cannot make the same are not compared: a write's or a setattr's (replay does
 * not make them: the line lacks the data), wherever a rename then takes the file.
 */
#include "replay_int.h"

#include "record_kind.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

struct replay_memory {
	GHashTable *listings; /* path -> names the chunks held so far (a set) */
	GHashTable *unsized;  /* paths whose size replay cannot know (a set) */
};

struct replay_memory *replay_memory_new(void)
{
	struct replay_memory *m = g_new0(struct replay_memory, 1);

	m->listings = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					    (GDestroyNotify)g_hash_table_destroy);
	m->unsized = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	return m;
}

void replay_memory_free(struct replay_memory *m)
{
	if (!m)
		return;
	g_hash_table_destroy(m->listings);
	g_hash_table_destroy(m->unsized);
	g_free(m);
}

void replay_seen_clear(struct replay_seen *s)
{
	if (s->listing)
		g_hash_table_destroy(s->listing);
	*s = (struct replay_seen){0};
}

static const char *kind_name(char k)
{
	const char *name = cfs_kind_name(k);

	return name ? name : k ? "unknown kind" : "none";
}

/* A name or body as it may be shown on a terminal, quoted (control bytes escaped). */
static char *shown(const char *s)
{
	char *e = g_strescape(s, NULL), *q = g_strdup_printf("\"%s\"", e);

	g_free(e);
	return q;
}

/* ---- sizes replay cannot know ---- */

static bool under(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(p, dir, n) && (p[n] == '/' || (!p[n]));
}

/* A rename takes the unknown sizes at FROM and beneath it to TO. */
static void unsized_move(GHashTable *set, const char *from, const char *to)
{
	GPtrArray *moved = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer key;

	g_hash_table_iter_init(&it, set);
	while (g_hash_table_iter_next(&it, &key, NULL)) {
		if (!under(key, from))
			continue;
		g_ptr_array_add(moved, g_strconcat(to, (const char *)key + strlen(from), NULL));
		g_hash_table_iter_remove(&it);
	}
	for (guint i = 0; i < moved->len; i++)
		g_hash_table_add(set, g_strdup(moved->pdata[i]));
	g_ptr_array_free(moved, TRUE);
}

static void remember_sizes(struct replay_memory *m, const struct replay_line *l)
{
	if (!strcmp(l->op, "write") || !strcmp(l->op, "setattr"))
		g_hash_table_add(m->unsized, g_strdup(l->path));
	else if (!strcmp(l->op, "rename") && l->err == 0 && l->to)
		unsized_move(m->unsized, l->path, l->to);
}

/* ---- what differs ---- */

static char *attr_differs(struct replay_memory *m, const struct replay_line *l,
			  const struct replay_seen *seen)
{
	if (l->kind && seen->kind && l->kind != seen->kind)
		return g_strdup_printf("kind: recorded %s, replayed %s", kind_name(l->kind),
				       kind_name(seen->kind));
	if (l->size >= 0 && seen->kind && l->size != seen->size &&
	    !g_hash_table_contains(m->unsized, l->path))
		return g_strdup_printf("size: recorded %" G_GINT64_FORMAT
				       ", replayed %" G_GINT64_FORMAT,
				       l->size, seen->size);
	return NULL;
}

static char *body_differs(const struct replay_line *l, const struct replay_seen *seen)
{
	if (!l->body || !seen->has_body || !strcmp(l->body, seen->body))
		return NULL;
	char *a = shown(l->body), *b = shown(seen->body);
	char *why = g_strdup_printf("body: recorded %s, replayed %s", a, b);
	g_free(a);
	g_free(b);
	return why;
}

static char *entry_differs(const char *name, char recorded, char replayed)
{
	char *n = shown(name);
	char *why = g_strdup_printf("entry %s: recorded %s, replayed %s", n, kind_name(recorded),
				    kind_name(replayed));
	g_free(n);
	return why;
}

/* The chunk's entries against the listing replay made; each joins the names so far. */
static char *chunk_differs(GHashTable *names, const struct replay_line *l,
			   const struct replay_seen *seen)
{
	char **entries = g_strsplit(l->entries, "/", -1), *why = NULL;

	for (char **e = entries; *e && **e; e++) {
		const char *name = *e + 2; /* "K:NAME": checked by replay_line.c */
		char got = (char)GPOINTER_TO_INT(g_hash_table_lookup(seen->listing, name));
		g_hash_table_add(names, g_strdup(name));
		if (!why && got != **e)
			why = entry_differs(name, **e, got);
	}
	g_strfreev(entries);
	return why;
}

/* At a listing's end: a name replay lists that no chunk held. */
static char *extra_differs(GHashTable *names, const struct replay_seen *seen)
{
	GHashTableIter it;
	gpointer name, kind;

	g_hash_table_iter_init(&it, seen->listing);
	while (g_hash_table_iter_next(&it, &name, &kind))
		if (!g_hash_table_contains(names, name))
			return entry_differs(name, 0, (char)GPOINTER_TO_INT(kind));
	return NULL;
}

static char *listing_differs(struct replay_memory *m, const struct replay_line *l,
			     const struct replay_seen *seen)
{
	GHashTable *names = g_hash_table_lookup(m->listings, l->path);
	char *why = NULL;

	if (!l->entries || !seen->listing) { /* a chunk not recorded: the end is unknown */
		g_hash_table_remove(m->listings, l->path);
		return NULL;
	}
	if (l->offset == 0) {
		names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		g_hash_table_replace(m->listings, g_strdup(l->path), names);
	}
	if (!names) { /* a chunk of a listing whose start is not recorded: its entries only */
		names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		why = chunk_differs(names, l, seen);
		g_hash_table_destroy(names);
		return why;
	}
	why = chunk_differs(names, l, seen);
	if (!l->entries[0]) {
		if (!why)
			why = extra_differs(names, seen);
		g_hash_table_remove(m->listings, l->path);
	}
	return why;
}

char *replay_seen_differs(struct replay_memory *m, const struct replay_line *l, int got,
			  const struct replay_seen *seen)
{
	bool listing = !strcmp(l->op, "readdir") || !strcmp(l->op, "readdirplus");
	char *why = NULL;

	if (got == 0 && l->err == 0 && listing)
		why = listing_differs(m, l, seen);
	else if (listing)
		g_hash_table_remove(m->listings, l->path);
	else if (got == 0 && l->err == 0)
		why = l->body ? body_differs(l, seen) : attr_differs(m, l, seen);
	remember_sizes(m, l);
	return why;
}
