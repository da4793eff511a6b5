/*
 * cfs-mount-diff SEED PATHS MODE REF MNT — the same random tree built through system calls
 * under REF (a tmpfs directory) and MNT (the root of a chainfs mount in follow mode MODE),
 * then PATHS random paths looked up under both, following the last link and not, and the
 * answers compared: the same errno, or the same kind and the same inode-equivalence class.
 *
 * REF is the in-root reference: openat2(RESOLVE_IN_ROOT) from REF, so an absolute link target
 * starts at REF and a ".." at REF stays there. MNT is walked as a user walks it, from the
 * process's root through the mountpoint: chainfs must give the in-root meaning by itself
 * (its answers through the mountpoint). The looked-up paths hold no ".." of their own, since
 * a user's ".." at a mount's root leaves any mount; links' ".." are everywhere in the tree.
 *
 * Differences by design, counted apart and never failing: in server mode a link that resolves
 * shows as what it leads to (a no-follow lookup answers the target's kind and class), and in
 * collapse and server modes chainfs counts links per link walk where the kernel counts per
 * path, so ELOOP against success is allowed there for paths that follow links. Every other
 * difference is printed with its path and fails. Prints the seed; the same SEED replays.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { NAMES = 6, DEPTH = 3, OPS = 400, MAXCLS = 4096 };

static const char *const names[NAMES] = {"a", "b", "c", "d", "e", "f"};
static uint64_t rng;

static unsigned pick(unsigned n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(rng >> 33) % n;
}

/* A random path of 1..DEPTH names under the root, into OUT. */
static void rand_path(char *out, size_t size, int dots)
{
	unsigned n = 1 + pick(DEPTH);
	size_t at = 0;

	for (unsigned i = 0; i < n && at + 8 < size; i++) {
		const char *w = names[pick(NAMES)];
		if (dots && pick(6) == 0)
			w = pick(2) ? "." : "..";
		at += (size_t)snprintf(out + at, size - at, "%s%s", i ? "/" : "", w);
	}
	if (pick(8) == 0 && at + 2 < size)
		out[at++] = '/', out[at] = '\0';
}

/* The directory fd of [P, P+LEN) under ROOTFD, in-root (the reference), or -1 with errno. */
static int inroot_dir(int rootfd, const char *p, size_t len)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY, .resolve = RESOLVE_IN_ROOT};
	char dir[256];
	int fd;

	if (len)
		snprintf(dir, sizeof(dir), "%.*s", (int)len, p);
	else
		strcpy(dir, ".");
	do
		fd = (int)syscall(SYS_openat2, rootfd, dir, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	return fd;
}

/* One tree-building step, the same under either root: under ROOTFD (the reference) its
 * parent is found in-root, under MNT by a plain walk as a user makes one. The errno. */
static int build_step(int rootfd, const char *mnt, uint64_t seed_of_step)
{
	char p[512], rel[256], target[256];
	uint64_t keep = rng;
	int err = 0, dfd = AT_FDCWD;
	const char *at;

	rng = seed_of_step;
	rand_path(rel, sizeof(rel), 0);
	if (rel[strlen(rel) - 1] == '/')
		rel[strlen(rel) - 1] = '\0';
	unsigned kind = pick(4);
	rand_path(target, sizeof(target) - 1, 1);
	if (pick(4) == 0) {
		memmove(target + 1, target, strlen(target) + 1);
		target[0] = '/';
	}
	rng = keep;
	const char *slash = strrchr(rel, '/');
	if (rootfd >= 0) {
		dfd = inroot_dir(rootfd, rel, slash ? (size_t)(slash - rel) : 0);
		if (dfd < 0)
			return errno;
		at = slash ? slash + 1 : rel;
	} else {
		snprintf(p, sizeof(p), "%s/%s", mnt, rel);
		at = p;
	}
	if (kind == 0) {
		err = mkdirat(dfd, at, 0755) ? errno : 0;
	} else if (kind == 1) {
		int fd = openat(dfd, at, O_CREAT | O_EXCL | O_WRONLY, 0644);
		err = fd < 0 ? errno : 0;
		if (fd >= 0)
			close(fd);
	} else { /* links: relative with "..", absolute (in-root), to themselves */
		err = symlinkat(target, dfd, at) ? errno : 0;
	}
	if (dfd >= 0)
		close(dfd);
	return err;
}

struct answer {
	int err;  /* 0, or the errno */
	int kind; /* S_IFMT */
	int cls;  /* the first-seen index of its inode on that side */
};

struct side {
	unsigned long long ino[MAXCLS];
	int n;
};

static int class_of(struct side *s, unsigned long long ino)
{
	for (int i = 0; i < s->n; i++)
		if (s->ino[i] == ino)
			return i;
	if (s->n == MAXCLS)
		return -1;
	s->ino[s->n] = ino;
	return s->n++;
}

static struct answer look(struct side *s, int rootfd, const char *mnt, const char *rel, int follow)
{
	struct answer a = {0, 0, -1};
	struct stat st;
	char p[1024];
	int fd;

	if (rootfd >= 0) {
		struct open_how how = {.flags = O_PATH | (follow ? 0 : O_NOFOLLOW),
				       .resolve = RESOLVE_IN_ROOT};
		do /* a rename or mount anywhere races a walk through "..": try again */
			fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
		while (fd < 0 && errno == EAGAIN);
	} else {
		snprintf(p, sizeof(p), "%s/%s", mnt, rel);
		fd = open(p, O_PATH | (follow ? 0 : O_NOFOLLOW));
	}
	if (fd < 0) {
		a.err = errno;
		return a;
	}
	if (fstat(fd, &st) != 0)
		a.err = errno;
	else {
		a.kind = (int)(st.st_mode & S_IFMT);
		a.cls = class_of(s, (unsigned long long)st.st_ino);
	}
	close(fd);
	return a;
}

/* The classes seen so far, paired one to one: the two sides must split inodes alike. */
static int r2m[MAXCLS], m2r[MAXCLS];

static int same(struct answer x, struct answer y)
{
	if (x.err != y.err || x.kind != y.kind)
		return 0;
	if (x.err || x.cls < 0 || y.cls < 0)
		return x.cls == y.cls;
	if (r2m[x.cls] < 0 && m2r[y.cls] < 0) {
		r2m[x.cls] = y.cls;
		m2r[y.cls] = x.cls;
	}
	return r2m[x.cls] == y.cls && m2r[y.cls] == x.cls;
}

int main(int argc, char **argv)
{
	static struct side ref, mnt;
	unsigned long long seed;
	long paths;
	int fails = 0, checked = 0, by_design = 0;

	if (argc != 6) {
		fprintf(stderr, "usage: cfs-mount-diff SEED PATHS MODE REF MNT\n");
		return 2;
	}
	seed = strtoull(argv[1], NULL, 10);
	paths = strtol(argv[2], NULL, 10);
	const char *mode = argv[3], *R = argv[4], *M = argv[5];
	int server = strcmp(mode, "server") == 0, kernel = strcmp(mode, "kernel") == 0;
	int rfd = open(R, O_PATH | O_DIRECTORY);

	if (rfd < 0) {
		perror(R);
		return 2;
	}
	memset(r2m, -1, sizeof(r2m));
	memset(m2r, -1, sizeof(m2r));
	printf("cfs-mount-diff: seed %llu, %s mode\n", seed, mode);
	for (int i = 0; i < OPS; i++) {
		int e1 = build_step(rfd, NULL, seed * 1000003 + (uint64_t)i);
		int e2 = build_step(-1, M, seed * 1000003 + (uint64_t)i);
		if (e1 != e2) {
			printf("build step %d: tmpfs %s, chainfs %s\n", i, strerror(e1),
			       strerror(e2));
			fails++;
		}
	}
	rng = seed;
	for (long i = 0; i < paths; i++) {
		char rel[256];
		rand_path(rel, sizeof(rel), 0);
		for (int follow = 0; follow < 2; follow++) {
			struct answer r = look(&ref, rfd, NULL, rel, follow);
			struct answer m = look(&mnt, -1, M, rel, follow);
			checked++;
			if (same(r, m))
				continue;
			/* server mode: a link that resolves shows as what it leads to */
			if (server && !follow && r.kind == S_IFLNK) {
				struct answer rf = look(&ref, rfd, NULL, rel, 1);
				if (same(rf, m) || (rf.err == ELOOP && !m.err)) {
					by_design++;
					continue;
				}
			}
			/* links counted per link walk, not per path */
			if (!kernel && (r.err == ELOOP) != (m.err == ELOOP)) {
				by_design++;
				continue;
			}
			printf(
			    "DIFF %s%s: tmpfs %s kind %o class %d, chainfs %s kind %o class %d\n",
			    rel, follow ? "" : " (nofollow)", r.err ? strerror(r.err) : "ok",
			    r.kind, r.cls, m.err ? strerror(m.err) : "ok", m.kind, m.cls);
			fails++;
		}
	}
	printf("cfs-mount-diff: %d lookups, %d differences by design, %d failures\n", checked,
	       by_design, fails);
	close(rfd);
	return fails ? 1 : 0;
}
