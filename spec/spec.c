/*
 * The chainfs spec language: a line lexer, one handler per keyword, the generators, and the
 * two ways back out of a tree (a spec dump, a real directory). chainfs-spec(5) is the grammar.
 * This file runs lines and loads specs (the keyword table and the public loaders); spec_int.h
 * says where the rest lives, and spec_make.c how a failed line is undone.
 *
 * Loading allocates with malloc and reports ENOMEM; dump and materialize use GLib
 * containers (which abort on OOM), as they only read the tree.
 */
#include "spec_int.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* Lines and loading */

struct spec_keyword {
	const char *name;
	spec_run_fn *run;
	int min_args, max_args; /* positional words after the keyword */
	unsigned attrs;
	const char *usage;
};

#define SPEC_KEYWORD(name, handler, min, max, attrs, usage)                                        \
	{#name, spec_run_##handler, min, max, attrs, usage},
static const struct spec_keyword spec_keywords[] = {CFS_SPEC_KEYWORDS(SPEC_KEYWORD)};
#undef SPEC_KEYWORD

/* The words of line [P, END) into L, its keyword into *KW and its attributes into A: 0, or
 * -EINVAL with the message in C (*KW NULL: a blank line). Nothing is run. */
static int spec_parse_line(struct spec_ctx *c, const char *p, const char *end, struct spec_line *l,
			   const struct spec_keyword **out, struct spec_attrs *a)
{
	const struct spec_keyword *kw = NULL;
	int err = spec_lex(c, p, end, l);

	*out = NULL;
	if (err || l->npos + l->nattr == 0)
		return err;
	if (l->npos == 0)
		return spec_fail(c, "missing keyword");
	for (size_t i = 0; i < G_N_ELEMENTS(spec_keywords); i++)
		if (strlen(spec_keywords[i].name) == l->pos[0].len &&
		    memcmp(spec_keywords[i].name, l->pos[0].s, l->pos[0].len) == 0)
			kw = &spec_keywords[i];
	if (!kw) {
		char *q = spec_quoted(l->pos[0].s, l->pos[0].len);
		spec_fail(c, "unknown keyword %s", spec_q(q));
		free(q);
		return -EINVAL;
	}
	if (l->npos - 1 < kw->min_args)
		return spec_fail(c, "%s: missing argument (%s)", kw->name, kw->usage);
	if (l->npos - 1 > kw->max_args)
		return spec_fail(c, "%s: too many arguments (%s)", kw->name, kw->usage);
	*out = kw;
	return spec_parse_attrs(c, kw->name, kw->attrs, l, a);
}

/* Run one line [P, END) against the tree, leaving its undo log for the caller to commit or
 * roll back. */
static int spec_run_line(struct spec_ctx *c, const char *p, const char *end)
{
	struct spec_line l;
	struct spec_attrs a = {0};
	const struct spec_keyword *kw;
	int err = spec_parse_line(c, p, end, &l, &kw, &a);

	return err || !kw ? err : kw->run(c, &l, &a);
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

bool cfs_spec_line_is(const char *line, const char *keyword)
{
	size_t n = strcspn(line, " \t");

	return strlen(keyword) == n && strncmp(line, keyword, n) == 0;
}

int cfs_spec_check_line(const char *line, char **err)
{
	struct spec_ctx c;
	struct spec_line l;
	struct spec_attrs a = {0};
	const struct spec_keyword *kw = NULL;
	size_t len = strlen(line);
	int rc = spec_ctx_init(&c, NULL, "line", NULL);

	*err = NULL;
	c.line = 1;
	if (!rc && (len > CFS_SPEC_MAX_LINE || memchr(line, '\n', len)))
		rc = spec_fail(&c, "one line of at most %d bytes expected", CFS_SPEC_MAX_LINE);
	if (!rc)
		rc = spec_parse_line(&c, line, line + len, &l, &kw, &a);
	if (!rc && !kw)
		rc = spec_fail(&c, "an empty line");
	if (rc && !c.err)
		spec_fail_errno(&c, rc, "%s", spec_strerror(rc));
	*err = c.err;
	spec_ctx_free(&c);
	return rc;
}
