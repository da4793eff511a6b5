/*
 * Extended attributes (tree/tree_xattr.c, the side table by node, and tree.c's checks):
 * tmpfs's flags, namespaces, limits, listing order, and the table's life with its nodes.
 */
#include "test_tree.h"

#include <sys/xattr.h>

/* the value of NAME on ID as a string ("" for none: the errno is checked apart) */
static const char *val(uint32_t id, const char *name)
{
	static char buf[CFS_XATTR_SIZE_MAX + 1];
	ssize_t n = cfs_tree_getxattr(T, id, name, buf, sizeof(buf) - 1);

	buf[n < 0 ? 0 : n] = 0;
	return buf;
}

static int set(uint32_t id, const char *name, const char *value, int flags)
{
	return cfs_tree_setxattr(T, id, name, value, strlen(value), flags);
}

/* An ACL in its xattr form from "TAG:ID:PERM" entries, tags u, U (named user), g, G, m, o. */
static size_t acl_of(unsigned char *buf, const char *spec)
{
	size_t n = 4;
	char tag;
	unsigned id, perm;
	int used;

	memcpy(buf, "\2\0\0\0", 4);
	while (sscanf(spec, " %c:%u:%o%n", &tag, &id, &perm, &used) == 3) {
		unsigned t = tag == 'u'	  ? 1
			     : tag == 'U' ? 2
			     : tag == 'g' ? 4
			     : tag == 'G' ? 8
			     : tag == 'm' ? 0x10
					  : 0x20;
		buf[n] = (unsigned char)t, buf[n + 1] = 0;
		buf[n + 2] = (unsigned char)perm, buf[n + 3] = 0;
		memcpy(buf + n + 4, &id, 4);
		n += 8;
		spec += used;
	}
	return n;
}

/* ID's ACL NAME back in acl_of's words */
static const char *acl_text(uint32_t id, const char *name)
{
	static char out[256];
	unsigned char buf[256];
	ssize_t n = cfs_tree_getxattr(T, id, name, buf, sizeof(buf));
	size_t at = 0;

	out[0] = 0;
	for (ssize_t i = 4; i + 8 <= n; i += 8) {
		unsigned id32;
		memcpy(&id32, buf + i + 4, 4);
		const char *tags = "?uU?g???G???????m???????????????o";
		at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%c:%u:%o", at ? " " : "",
				       tags[buf[i] < 33 ? buf[i] : 0], id32, buf[i + 2]);
	}
	return n < 0 ? "none" : out;
}

/* listxattr's names joined by ',' */
static const char *names(uint32_t id, bool trusted)
{
	static char buf[4096];
	ssize_t n = cfs_tree_listxattr(T, id, buf, sizeof(buf) - 1, trusted);

	ck_assert_int_ge(n, 0);
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = i + 1 < n ? ',' : 0;
	buf[n] = 0;
	return buf;
}

START_TEST(test_set_get_replace_and_remove)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	char small[2];

	ck_assert_int_eq(cfs_tree_getxattr(T, f, "user.a", NULL, 0), -ENODATA);
	ck_assert(!cfs_tree_has_xattrs(T));
	ck_assert_int_eq(set(f, "user.a", "one", 0), 0);
	ck_assert(cfs_tree_has_xattrs(T)); /* -o xattrs=auto asks this of a spec's tree */
	ck_assert_str_eq(val(f, "user.a"), "one");
	ck_assert_int_eq(cfs_tree_getxattr(T, f, "user.a", NULL, 0), 3); /* size 0: the length */
	ck_assert_int_eq(cfs_tree_getxattr(T, f, "user.a", small, 2), -ERANGE);
	ck_assert_int_eq(set(f, "user.a", "three", 0), 0);
	ck_assert_str_eq(val(f, "user.a"), "three");
	ck_assert_int_eq(set(f, "user.e", "", 0), 0); /* an empty value is kept */
	ck_assert_int_eq(cfs_tree_getxattr(T, f, "user.e", NULL, 0), 0);
	ck_assert_int_eq(cfs_tree_removexattr(T, f, "user.a"), 0);
	ck_assert_int_eq(cfs_tree_removexattr(T, f, "user.a"), -ENODATA);
	ck_assert_int_eq(cfs_tree_getxattr(T, f, "user.a", NULL, 0), -ENODATA);
	ck_assert(cfs_tree_has_xattrs(T)); /* user.e */
	ck_assert_int_eq(cfs_tree_removexattr(T, f, "user.e"), 0);
	ck_assert(!cfs_tree_has_xattrs(T));
}
END_TEST

START_TEST(test_create_and_replace_flags)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");

	ck_assert_int_eq(set(f, "user.a", "1", XATTR_REPLACE), -ENODATA);
	ck_assert_int_eq(set(f, "user.a", "1", XATTR_CREATE), 0);
	ck_assert_int_eq(set(f, "user.a", "2", XATTR_CREATE), -EEXIST);
	ck_assert_str_eq(val(f, "user.a"), "1");
	ck_assert_int_eq(set(f, "user.a", "2", XATTR_REPLACE), 0);
	ck_assert_str_eq(val(f, "user.a"), "2");
}
END_TEST

START_TEST(test_namespaces_and_limits_as_tmpfs)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), l = mkl(T, CFS_ROOT, "l", "f"),
		 d = mkd(T, CFS_ROOT, "d");
	uint32_t p = 0;
	char name[CFS_XATTR_NAME_MAX + 2];
	static char big[CFS_XATTR_SIZE_MAX + 1];

	ck_assert_int_eq(cfs_tree_mknod(T, CFS_ROOT, "p", 1, S_IFIFO, 0, &AF, &p), 0);
	ck_assert_int_eq(set(f, "other.a", "1", 0), -EOPNOTSUPP);
	ck_assert_int_eq(set(f, "system.foo", "1", 0), -EOPNOTSUPP);
	ck_assert_int_eq(set(f, "user.", "1", 0), -EINVAL);
	ck_assert_int_eq(set(f, "", "1", 0), -ERANGE);
	ck_assert_int_eq(set(l, "user.a", "1", 0), -EPERM); /* user.*: files and dirs only */
	ck_assert_int_eq(set(p, "user.a", "1", 0), -EPERM);
	ck_assert_int_eq(set(d, "user.a", "1", 0), 0);
	ck_assert_int_eq(set(l, "trusted.a", "1", 0), 0);
	ck_assert_int_eq(set(p, "security.a", "1", 0), 0);
	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	name[CFS_XATTR_NAME_MAX] = 0;
	ck_assert_int_eq(set(f, name, "1", 0), 0);
	name[CFS_XATTR_NAME_MAX] = 'n';
	name[CFS_XATTR_NAME_MAX + 1] = 0;
	ck_assert_int_eq(set(f, name, "1", 0), -ERANGE);
	ck_assert_int_eq(cfs_tree_setxattr(T, f, "user.big", big, CFS_XATTR_SIZE_MAX, 0), 0);
	ck_assert_int_eq(cfs_tree_getxattr(T, f, "user.big", NULL, 0), CFS_XATTR_SIZE_MAX);
	ck_assert_int_eq(cfs_tree_setxattr(T, f, "user.big", big, CFS_XATTR_SIZE_MAX + 1, 0),
			 -E2BIG);
}
END_TEST

START_TEST(test_acls_only_where_the_kernel_keeps_them)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), l = mkl(T, CFS_ROOT, "l", "f"),
		 d = mkd(T, CFS_ROOT, "d");
	/* user::rw- group::r-- other::r-- */
	const unsigned char acl[] = {2,	   0,	 0, 0, 1,    0,	   6,	 0,    0xff, 0xff,
				     0xff, 0xff, 4, 0, 4,    0,	   0xff, 0xff, 0xff, 0xff,
				     0x20, 0,	 4, 0, 0xff, 0xff, 0xff, 0xff};
	const char *a = "system.posix_acl_access", *def = "system.posix_acl_default";

	ck_assert_int_eq(cfs_tree_setxattr(T, f, a, acl, sizeof(acl), 0), 0);
	ck_assert_int_eq(cfs_tree_setxattr(T, f, a, acl, sizeof(acl) - 1, 0), -EINVAL);
	ck_assert_int_eq(cfs_tree_setxattr(T, f, def, acl, sizeof(acl), 0), -EACCES);
	ck_assert_int_eq(cfs_tree_setxattr(T, d, def, acl, sizeof(acl), 0), 0);
	ck_assert_int_eq(cfs_tree_setxattr(T, l, a, acl, sizeof(acl), 0), -EOPNOTSUPP);
	ck_assert_int_eq(cfs_tree_getxattr(T, d, def, NULL, 0), (ssize_t)sizeof(acl));
}
END_TEST

START_TEST(test_list_order_and_trusted_for_the_capable)
{
	uint32_t d = mkd(T, CFS_ROOT, "d");
	unsigned char acl[64];
	size_t len = acl_of(acl, "u:0:7 U:5:7 g:0:5 m:0:7 o:0:5");

	ck_assert_str_eq(names(d, true), "");
	ck_assert_int_eq(set(d, "user.b", "1", 0), 0);
	ck_assert_int_eq(set(d, "trusted.t", "1", 0), 0);
	ck_assert_int_eq(set(d, "user.a", "1", 0), 0);
	ck_assert_int_eq(set(d, "security.s", "1", 0), 0);
	ck_assert_int_eq(cfs_tree_setxattr(T, d, "system.posix_acl_default", acl, len, 0), 0);
	ck_assert_int_eq(cfs_tree_setxattr(T, d, "system.posix_acl_access", acl, len, 0), 0);
	ck_assert_str_eq(names(d, true), "system.posix_acl_access,system.posix_acl_default,"
					 "user.b,user.a,trusted.t,security.s");
	ck_assert_str_eq(names(d, false), "system.posix_acl_access,system.posix_acl_default,"
					  "user.b,user.a,security.s");
	ck_assert_int_eq(cfs_tree_listxattr(T, d, NULL, 0, false), 74);
	char buf[73];
	ck_assert_int_eq(cfs_tree_listxattr(T, d, buf, sizeof(buf), false), -ERANGE);
}
END_TEST

START_TEST(test_change_stamps_ctime)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	struct timespec old = {5, 0};

	ck_assert_int_eq(cfs_tree_set_times(T, f, &old, &old, &old), 0);
	ck_assert_int_eq(set(f, "user.a", "1", 0), 0);
	ck_assert_int_gt(st_of(T, f).st_ctim.tv_sec, 5);
	ck_assert_int_eq(st_of(T, f).st_mtim.tv_sec, 5);
	ck_assert_int_eq(cfs_tree_set_times(T, f, &old, &old, &old), 0);
	ck_assert_int_eq(set(f, "user.a", "1", XATTR_CREATE), -EEXIST); /* a refusal: no stamp */
	ck_assert_int_eq(st_of(T, f).st_ctim.tv_sec, 5);
	ck_assert_int_eq(cfs_tree_removexattr(T, f, "user.a"), 0);
	ck_assert_int_gt(st_of(T, f).st_ctim.tv_sec, 5);
}
END_TEST

START_TEST(test_freed_with_the_node_and_not_reused)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), g;
	const char *n;
	const char *v;
	size_t len;

	ck_assert_int_eq(set(f, "user.a", "1", 0), 0);
	ck_assert_int_eq(set(f, "trusted.b", "2", 0), 0);
	cfs_tree_ref(T, f, 1);
	ck_assert_int_eq(rm(T, CFS_ROOT, "f"), 0);
	ck_assert_str_eq(val(f, "user.a"), "1"); /* an orphan keeps them */
	cfs_tree_unref(T, f, 1);
	g = mkf(T, CFS_ROOT, "g");
	ck_assert_uint_eq(g, f); /* the handle is reused ... */
	ck_assert_int_eq(cfs_tree_xattr_at(T, g, 0, &n, &v, &len), 1); /* ... without them */
	ck_assert_str_eq(names(g, true), "");
}
END_TEST

START_TEST(test_table_grows_and_shrinks_over_many_nodes)
{
	enum { N = 600 };
	uint32_t id[N];
	char name[16];
	uint64_t bare, gone = 0;

	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		id[i] = mkf(T, CFS_ROOT, name);
	}
	bare = stats_of(T).meta_bytes;
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(set(id[i], "user.n", name, 0), 0);
	}
	for (int i = 0; i < N; i += 2)
		ck_assert_int_eq(cfs_tree_removexattr(T, id[i], "user.n"), 0);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_str_eq(val(id[i], "user.n"), i % 2 ? name : "");
	}
	for (int i = 1; i < N; i += 2) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(rm(T, CFS_ROOT, name), 0);
		gone += 128 + strlen(name);
	}
	ck_assert_uint_eq(stats_of(T).meta_bytes, bare - gone); /* their attributes went too */
}
END_TEST

START_TEST(test_meta_limit_counts_xattrs)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	uint64_t base = stats_of(T).meta_bytes, each = 64 + 6 + 1 + 3; /* "user.a", NUL, "abc" */

	cfs_tree_set_meta_limit(T, base + each);
	ck_assert_int_eq(set(f, "user.a", "abc", 0), 0);
	ck_assert_uint_eq(stats_of(T).meta_bytes, base + each);
	ck_assert_int_eq(set(f, "user.b", "abc", 0), -ENOSPC);
	ck_assert_int_eq(set(f, "user.a", "xyz", 0), -ENOSPC); /* as tmpfs: new before old */
	ck_assert_str_eq(val(f, "user.a"), "abc");
	ck_assert_int_eq(cfs_tree_removexattr(T, f, "user.a"), 0);
	ck_assert_uint_eq(stats_of(T).meta_bytes, base);
	ck_assert_int_eq(set(f, "user.b", "abc", 0), 0);
}
END_TEST

/* every allocation of a set, in turn, fails: -ENOMEM and nothing changed, nothing leaked */
START_TEST(test_failed_allocation_changes_nothing)
{
	uint32_t f = mkf(T, CFS_ROOT, "f"), g = mkf(T, CFS_ROOT, "g");
	long k = 1;
	int r;

	ck_assert_int_eq(set(g, "user.z", "1", 0), 0);
	do {
		long live = ca_live;
		ca_arm(k++, false);
		r = set(_i ? g : f, "user.a", "1", 0);
		ca_arm(0, false);
		if (r) {
			ck_assert_int_eq(r, -ENOMEM);
			ck_assert_int_eq(ca_live, live);
			ck_assert_str_eq(names(f, true), "");
			ck_assert_str_eq(names(g, true), "user.z");
		}
	} while (r);
	ck_assert_int_gt(k, 2);
	ck_assert_str_eq(val(_i ? g : f, "user.a"), "1");
}
END_TEST

/* ACLs the kernel would refuse (posix_acl_valid): -EINVAL, nothing kept */
static const char *const bad_acls[] = {
    "",					   /* no entries */
    "u:0:7 g:0:5",			   /* no other */
    "u:0:7 u:0:7 g:0:5 o:0:5",		   /* an owner twice */
    "u:0:7 U:5:7 g:0:5 o:0:5",		   /* a named user without a mask */
    "g:0:5 u:0:7 o:0:5",		   /* out of order */
    "u:0:7 U:5:7 U:5:6 g:0:5 m:0:7 o:0:5", /* one id twice */
    "u:0:17 g:0:5 o:0:5",		   /* a permission past rwx */
};

START_TEST(test_bad_acl_is_einval)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	unsigned char acl[64];
	size_t len = acl_of(acl, bad_acls[_i]);

	ck_assert_int_eq(cfs_tree_setxattr(T, f, "system.posix_acl_access", acl, len, 0), -EINVAL);
	ck_assert_uint_eq(st_of(T, f).st_mode, S_IFREG | 0644);
	ck_assert_str_eq(names(f, true), "");
}
END_TEST

START_TEST(test_access_acl_sets_the_mode_and_goes_when_a_mode_says_it)
{
	uint32_t f = mkf(T, CFS_ROOT, "f");
	unsigned char acl[64];
	size_t len = acl_of(acl, "u:0:6 U:5:7 g:0:4 m:0:5 o:0:0");
	const char *a = "system.posix_acl_access";

	ck_assert_int_eq(cfs_tree_chmod(T, f, 02644), 0);
	ck_assert_int_eq(cfs_tree_setxattr(T, f, a, acl, len, 0), 0);
	ck_assert_uint_eq(st_of(T, f).st_mode, S_IFREG | 02650); /* the group class: the mask */
	ck_assert_str_eq(acl_text(f, a), "u:0:6 U:5:7 g:0:4 m:0:5 o:0:0");
	ck_assert_int_eq(cfs_tree_chmod(T, f, 0741), 0); /* chmod rewrites it */
	ck_assert_str_eq(acl_text(f, a), "u:0:7 U:5:7 g:0:4 m:0:4 o:0:1");
	len = acl_of(acl, "u:0:7 g:0:0 o:0:4");
	ck_assert_int_eq(cfs_tree_setxattr(T, f, a, acl, len, 0), 0);
	ck_assert_uint_eq(st_of(T, f).st_mode, S_IFREG | 0704);
	ck_assert_str_eq(acl_text(f, a), "none"); /* the mode says it all: not kept */
}
END_TEST

START_TEST(test_new_node_inherits_the_default_acl)
{
	uint32_t d = mkd(T, CFS_ROOT, "d"), sub, f, l;
	unsigned char acl[64];
	size_t len = acl_of(acl, "u:0:7 U:5:6 g:0:5 m:0:7 o:0:5");

	ck_assert_int_eq(cfs_tree_setxattr(T, d, "system.posix_acl_default", acl, len, 0), 0);
	f = mkf(T, d, "f"); /* asked 0644: the mask gets the group's r-- */
	ck_assert_int_eq(cfs_tree_acl_create(T, d, f, 077), 0);
	ck_assert_uint_eq(st_of(T, f).st_mode, S_IFREG | 0644); /* no umask with a default */
	ck_assert_str_eq(acl_text(f, "system.posix_acl_access"), "u:0:6 U:5:6 g:0:5 m:0:4 o:0:4");
	ck_assert_str_eq(acl_text(f, "system.posix_acl_default"), "none");
	sub = mkd(T, d, "sub");
	ck_assert_int_eq(cfs_tree_acl_create(T, d, sub, 077), 0);
	ck_assert_uint_eq(st_of(T, sub).st_mode, S_IFDIR | 0755);
	ck_assert_str_eq(acl_text(sub, "system.posix_acl_default"),
			 "u:0:7 U:5:6 g:0:5 m:0:7 o:0:5");
	ck_assert_str_eq(acl_text(sub, "system.posix_acl_access"), "u:0:7 U:5:6 g:0:5 m:0:5 o:0:5");
	l = mkl(T, d, "l", "f");
	ck_assert_int_eq(cfs_tree_acl_create(T, d, l, 077), 0);
	ck_assert_str_eq(names(l, true), "");
	f = mkf(T, CFS_ROOT, "g"); /* no default ACL: the umask */
	ck_assert_int_eq(cfs_tree_acl_create(T, CFS_ROOT, f, 027), 0);
	ck_assert_uint_eq(st_of(T, f).st_mode, S_IFREG | 0640);
	ck_assert_str_eq(names(f, true), "");
}
END_TEST

void tree_tcase_xattr(TCase *tc)
{
	tcase_add_test(tc, test_set_get_replace_and_remove);
	tcase_add_test(tc, test_create_and_replace_flags);
	tcase_add_test(tc, test_namespaces_and_limits_as_tmpfs);
	tcase_add_test(tc, test_acls_only_where_the_kernel_keeps_them);
	tcase_add_test(tc, test_list_order_and_trusted_for_the_capable);
	tcase_add_test(tc, test_change_stamps_ctime);
	tcase_add_test(tc, test_freed_with_the_node_and_not_reused);
	tcase_add_test(tc, test_table_grows_and_shrinks_over_many_nodes);
	tcase_add_test(tc, test_meta_limit_counts_xattrs);
	tcase_add_loop_test(tc, test_failed_allocation_changes_nothing, 0, 2);
	tcase_add_loop_test(tc, test_bad_acl_is_einval, 0, sizeof(bad_acls) / sizeof(bad_acls[0]));
	tcase_add_test(tc, test_access_acl_sets_the_mode_and_goes_when_a_mode_says_it);
	tcase_add_test(tc, test_new_node_inherits_the_default_acl);
}
