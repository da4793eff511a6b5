/*
 * In-root link targets. The kernel walks what it is given itself, and a ".." at its root (the
 * mount's, or the copy's directory) takes it out onto the host; an absolute target would start
 * there. In-root, such a ".." stays at the root and "/" means the tree's root. A target with a
 * ".." or a leading "/" is therefore walked here, in-root, up to its last "..", and given as
 * the place that walk reached plus the rest: the mount answers that place through the
 * mountpoint (links.c), a copy by the relative path to it (--materialize).
 */
#include "inroot.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* The next component of [*P, END), skipping slashes: its length (0 at the end). */
static size_t cfs_component(const char **p, const char *end, const char **name)
{
	while (*p < end && **p == '/')
		(*p)++;
	*name = *p;
	while (*p < end && **p != '/')
		(*p)++;
	return (size_t)(*p - *name);
}

static bool cfs_is_dotdot(const char *name, size_t n)
{
	return n == 2 && name[0] == '.' && name[1] == '.';
}

/* Where the last ".." of [P, END) that starts a component ends, or NULL without one. */
static const char *cfs_last_dotdot(const char *p, const char *end)
{
	const char *name, *last = NULL;
	size_t n;

	while ((n = cfs_component(&p, end, &name)) > 0)
		if (cfs_is_dotdot(name, n))
			last = p;
	return last;
}

bool cfs_target_may_climb(const char *target, size_t len)
{
	return (len > 0 && target[0] == '/') || cfs_last_dotdot(target, target + len);
}

/* Walk [P, LAST) in-root from *AT, following links on the way with LIMITS and ALIAS (as
 * rs_ctx.root_alias). *at ends where the walk got to and *stop where it stopped: at LAST, or
 * at the component that failed (missing, under a non-directory, a link that does not
 * resolve), which the answer keeps so that the kernel fails there too. 0, or -ENOMEM. */
static int cfs_climb(const struct cfs_tree *t, struct rs_limits limits, const struct rs_cred *cred,
		     uint32_t *budget, const char *alias, uint32_t *at, const char *p,
		     const char *last, const char **stop, bool *at_root)
{
	uint32_t own = RS_WALK_BUDGET; /* one walk's worth for all of them, without BUDGET */
	struct rs_ctx ctx = {.ops = &cfs_tree_rs_ops,
			     .tree = (void *)t,
			     .root = CFS_ROOT,
			     .limits = limits,
			     .cred = cred,
			     .budget = budget ? budget : &own,
			     .root_alias = alias,
			     .root_alias_len = alias ? strlen(alias) : 0};
	const char *name;
	uint32_t next;
	size_t n;

	for (*stop = p; p < last && (n = cfs_component(&p, last, &name)) > 0; *stop = p) {
		if (cfs_tree_kind(t, *at) != RS_DIR)
			return 0; /* ENOTDIR, even for "." and ".." */
		if (cred && cfs_tree_may(t, *at, cred, X_OK) != 0)
			return 0; /* EACCES, as the kernel's lookup of any name there */
		if (n == 1 && name[0] == '.')
			continue;
		if (cfs_is_dotdot(name, n)) {
			*at_root |= *at == CFS_ROOT;
			*at = cfs_tree_parent(t, *at); /* the root's is the root */
			continue;
		}
		if (cfs_tree_lookup(t, *at, name, n, &next) != 0)
			return 0; /* ENOENT */
		if (cfs_tree_kind(t, next) == RS_LINK) {
			char buf[RS_NAME_MAX + 1];
			struct rs_result res;

			memcpy(buf, name, n);
			buf[n] = '\0';
			int err = rs_resolve(&ctx, *at, buf, RS_FOLLOW, &res);
			if (err)
				return err == -ENOMEM ? err : 0;
			next = (uint32_t)res.node;
		}
		*at = next;
	}
	*stop = last;
	return 0;
}

/* cfs_inroot_walk from DIR, the directory of the name LINK is reached by. */
static int cfs_inroot_walk_in(const struct cfs_tree *t, struct rs_limits limits,
			      const struct rs_cred *cred, uint32_t *budget, const char *alias,
			      uint32_t link, uint32_t dir, uint32_t *at, const char **rest,
			      const char **end, bool *as_stored)
{
	const char *target, *p;
	size_t len;
	bool at_root = false;
	int err = cfs_tree_readlink(t, link, &target, &len);

	if (err)
		return err;
	*end = target + len;
	*at = target[0] == '/' ? CFS_ROOT : dir;
	/* the alias names the root: what follows it is walked from there, as after a "/" */
	p = target[0] == '/' && alias ? target + rs_alias_skip(alias, strlen(alias), target, len)
				      : target;
	const char *last = cfs_last_dotdot(p, *end);
	*rest = p;
	err = last ? cfs_climb(t, limits, cred, budget, alias, at, p, last, rest, &at_root) : 0;
	*as_stored = target[0] != '/' && !at_root && (!last || *rest == last);
	return err;
}

int cfs_inroot_walk(const struct cfs_tree *t, struct rs_limits limits, const struct rs_cred *cred,
		    uint32_t *budget, const char *alias, uint32_t link, uint32_t *at,
		    const char **rest, const char **end, bool *as_stored)
{
	return cfs_inroot_walk_in(t, limits, cred, budget, alias, link, cfs_tree_parent(t, link),
				  at, rest, end, as_stored);
}

ssize_t cfs_inroot_append(char *out, size_t n, const char *p, const char *end, const char *up)
{
	bool slash = p < end && end[-1] == '/', any = false;
	const char *name;
	size_t len;

	while ((len = cfs_component(&p, end, &name)) > 0) {
		bool dotdot = cfs_is_dotdot(name, len);
		size_t put = dotdot ? strlen(up) : len;

		if (n + 2 + put >= RS_PATH_MAX)
			return -ENAMETOOLONG;
		if (n > 0 && out[n - 1] != '/')
			out[n++] = '/';
		memcpy(out + n, dotdot ? up : name, put);
		n += put;
		any = true;
	}
	if (any && slash)
		out[n++] = '/'; /* still asks for a directory (room kept above) */
	out[n] = '\0';
	return (ssize_t)n;
}

ssize_t cfs_inroot_target(const struct cfs_tree *t, struct rs_limits limits, uint32_t link,
			  uint32_t dir, char *out)
{
	const char *target, *rest, *end;
	size_t len;
	uint32_t at;
	int err = cfs_tree_readlink(t, link, &target, &len);

	if (err)
		return err;
	if (!cfs_target_may_climb(target, len)) {
		memcpy(out, target, len);
		out[len] = '\0';
		return (ssize_t)len;
	}
	bool as_stored;
	/* a copy has no mount point: no alias */
	err = cfs_inroot_walk_in(t, limits, NULL, NULL, NULL, link, dir, &at, &rest, &end,
				 &as_stored);
	if (err)
		return err;
	if (as_stored) { /* on a copy that nobody changes, the kernel's walk is the same */
		memcpy(out, target, len);
		out[len] = '\0';
		return (ssize_t)len;
	}
	ssize_t n = cfs_relative_path(t, dir, at, out);
	if (n < 0)
		return n;
	if (n == 1 && out[0] == '.' && rest + strspn(rest, "/") < end)
		n = 0; /* "x", not "./x" */
	return cfs_inroot_append(out, (size_t)n, rest, end, ".");
}

/* ID's ancestors from the root down to ID itself, into CHAIN (at most MAX); the count, or
 * -ENAMETOOLONG when deeper than a path can be (every level costs at least 2 bytes). */
static int cfs_chain(const struct cfs_tree *t, uint32_t id, uint32_t *chain, int max)
{
	int n = 0;

	for (uint32_t x = id;; x = cfs_tree_parent(t, x)) {
		if (n == max)
			return -ENAMETOOLONG;
		chain[n++] = x;
		if (x == CFS_ROOT)
			break;
	}
	for (int i = 0; i < n / 2; i++) { /* root first */
		uint32_t tmp = chain[i];
		chain[i] = chain[n - 1 - i];
		chain[n - 1 - i] = tmp;
	}
	return n;
}

ssize_t cfs_relative_path(const struct cfs_tree *t, uint32_t from, uint32_t to, char *out)
{
	enum { MAX_DEPTH = RS_PATH_MAX / 2 + 1 };
	uint32_t a[MAX_DEPTH], b[MAX_DEPTH]; /* 16 KiB of stack: no state between calls */
	int na = cfs_chain(t, from, a, MAX_DEPTH), nb = cfs_chain(t, to, b, MAX_DEPTH), common = 0;
	size_t n = 0;

	if (na < 0 || nb < 0)
		return -ENAMETOOLONG;
	while (common < na && common < nb && a[common] == b[common])
		common++;
	for (int i = common; i < na; i++) {
		if (n + 3 >= RS_PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(out + n, "../", 3);
		n += 3;
	}
	for (int i = common; i < nb; i++) {
		const char *name;
		size_t len;
		cfs_tree_name(t, b[i], &name, &len);
		if (n + len + 1 >= RS_PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(out + n, name, len);
		n += len;
		out[n++] = '/';
	}
	if (n == 0)
		out[n++] = '.';
	else
		n--; /* the last '/' */
	out[n] = '\0';
	return (ssize_t)n;
}
