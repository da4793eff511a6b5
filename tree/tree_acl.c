/*
 * POSIX ACLs as the kernel keeps them for tmpfs (fs/posix_acl.c), over their xattr form
 * (system.posix_acl_access, system.posix_acl_default: a u32 version 2, then entries of a u16
 * tag, a u16 perm and a u32 id, little-endian). With FUSE_POSIX_ACL the kernel enforces them
 * and leaves to the filesystem what tmpfs does in its own calls: an ACL's check
 * (posix_acl_valid), the mode an access ACL gives (posix_acl_update_mode), a chmod's rewrite of
 * the ACL (posix_acl_chmod) and a new node's ACLs from its directory's default one
 * (posix_acl_create). No time is stamped here: tree.c does.
 */
#include "tree_int.h"

#include <endian.h>
#include <stdlib.h>

enum {
	ACL_VERSION = 2,
	ACL_HEADER = 4,
	ACL_ENTRY = 8,
	ACL_USER_OBJ = 0x01,
	ACL_USER = 0x02,
	ACL_GROUP_OBJ = 0x04,
	ACL_GROUP = 0x08,
	ACL_MASK = 0x10,
	ACL_OTHER = 0x20,
};

static const char acl_access[] = "system.posix_acl_access";
static const char acl_default[] = "system.posix_acl_default";

static uint16_t acl_tag(const unsigned char *e)
{
	uint16_t v;

	memcpy(&v, e, 2);
	return le16toh(v);
}

static uint16_t acl_perm(const unsigned char *e)
{
	uint16_t v;

	memcpy(&v, e + 2, 2);
	return le16toh(v);
}

static uint32_t acl_id(const unsigned char *e)
{
	uint32_t v;

	memcpy(&v, e + 4, 4);
	return le32toh(v);
}

static void acl_set_perm(unsigned char *e, unsigned perm)
{
	uint16_t v = htole16((uint16_t)perm);

	memcpy(e + 2, &v, 2);
}

int tree_acl_valid(const void *value, size_t size)
{
	const unsigned char *p = value;
	unsigned seen = 0, last_tag = 0, n_obj = 0;
	uint32_t version, last_id = 0;

	if (size < ACL_HEADER + ACL_ENTRY || (size - ACL_HEADER) % ACL_ENTRY)
		return -EINVAL;
	memcpy(&version, p, 4);
	if (le32toh(version) != ACL_VERSION)
		return -EINVAL;
	for (size_t off = ACL_HEADER; off < size; off += ACL_ENTRY) {
		unsigned tag = acl_tag(p + off);
		uint32_t id = acl_id(p + off);
		bool named = tag == ACL_USER || tag == ACL_GROUP;
		if (acl_perm(p + off) & ~7u)
			return -EINVAL;
		if (tag < last_tag ||
		    (tag != ACL_USER_OBJ && tag != ACL_USER && tag != ACL_GROUP_OBJ &&
		     tag != ACL_GROUP && tag != ACL_MASK && tag != ACL_OTHER))
			return -EINVAL; /* entries come sorted by tag, as posix_acl_valid wants */
		if (!named && (seen & tag))
			return -EINVAL;
		if (named && tag == last_tag && id <= last_id)
			return -EINVAL; /* and by id within a tag, each id once */
		seen |= tag;
		last_tag = tag;
		last_id = id;
		n_obj += tag == ACL_USER_OBJ || tag == ACL_GROUP_OBJ || tag == ACL_OTHER;
	}
	if (n_obj != 3 || !(seen & ACL_USER_OBJ) || !(seen & ACL_GROUP_OBJ) || !(seen & ACL_OTHER))
		return -EINVAL;
	if ((seen & (ACL_USER | ACL_GROUP)) && !(seen & ACL_MASK))
		return -EINVAL;
	return 0;
}

int tree_acl_mode(const void *value, size_t size, mode_t *mode)
{
	const unsigned char *p = value;
	mode_t m = 0;
	int not_equiv = 0;

	for (size_t off = ACL_HEADER; off + ACL_ENTRY <= size; off += ACL_ENTRY) {
		unsigned perm = acl_perm(p + off) & 7;
		switch (acl_tag(p + off)) {
		case ACL_USER_OBJ:
			m |= perm << 6;
			break;
		case ACL_GROUP_OBJ:
			m |= perm << 3;
			break;
		case ACL_OTHER:
			m |= perm;
			break;
		case ACL_MASK: /* comes after GROUP_OBJ: the group class is the mask */
			m = (m & ~(mode_t)S_IRWXG) | (perm << 3);
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
		}
	}
	*mode = (*mode & ~(mode_t)0777) | m;
	return not_equiv;
}

/* Rewrite ACL (SIZE bytes) for the permission bits of MODE (__posix_acl_chmod): the owner,
 * the group class (the mask if any, else the owning group) and others. */
static void acl_chmod(unsigned char *acl, size_t size, mode_t mode)
{
	unsigned char *group_obj = NULL, *mask = NULL;

	for (size_t off = ACL_HEADER; off + ACL_ENTRY <= size; off += ACL_ENTRY) {
		unsigned char *e = acl + off;
		switch (acl_tag(e)) {
		case ACL_USER_OBJ:
			acl_set_perm(e, (mode >> 6) & 7);
			break;
		case ACL_GROUP_OBJ:
			group_obj = e;
			break;
		case ACL_MASK:
			mask = e;
			break;
		case ACL_OTHER:
			acl_set_perm(e, mode & 7);
			break;
		}
	}
	if (mask || group_obj)
		acl_set_perm(mask ? mask : group_obj, (mode >> 3) & 7);
}

void tree_acl_chmod(struct cfs_tree *t, uint32_t id, mode_t mode)
{
	size_t len;
	char *acl = tree_xattr_value(t, id, acl_access, &len);

	if (acl)
		acl_chmod((unsigned char *)acl, len, mode);
}

/* A new node's access ACL from its directory's default one, ACL (posix_acl_create_masq):
 * each class gets at most what MODE asks, and MODE at most what the ACL grants. 1 if the
 * ACL says more than the mode can, 0 if the mode says it all. */
static int acl_create_masq(unsigned char *acl, size_t size, mode_t *mode)
{
	unsigned char *group_obj = NULL, *mask = NULL;
	mode_t m = *mode;
	int not_equiv = 0;

	for (size_t off = ACL_HEADER; off + ACL_ENTRY <= size; off += ACL_ENTRY) {
		unsigned char *e = acl + off;
		unsigned perm = acl_perm(e);
		switch (acl_tag(e)) {
		case ACL_USER_OBJ:
			perm &= (m >> 6) | ~7u;
			acl_set_perm(e, perm);
			m &= (perm << 6) | ~(mode_t)S_IRWXU;
			break;
		case ACL_GROUP_OBJ:
			group_obj = e;
			break;
		case ACL_OTHER:
			perm &= m | ~7u;
			acl_set_perm(e, perm);
			m &= perm | ~(mode_t)S_IRWXO;
			break;
		case ACL_MASK:
			mask = e;
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
		}
	}
	unsigned char *g = mask ? mask : group_obj;
	if (g) {
		unsigned perm = acl_perm(g) & ((m >> 3) | ~7u);
		acl_set_perm(g, perm);
		m &= (perm << 3) | ~(mode_t)S_IRWXG;
	}
	*mode = m;
	return not_equiv;
}

int tree_acl_inherit(struct cfs_tree *t, uint32_t dir, uint32_t id, mode_t *mode)
{
	size_t len;
	const char *def = tree_xattr_value(t, dir, acl_default, &len);
	unsigned char *acl;
	int r = 0;

	if (!def)
		return 1;
	acl = t->realloc_fn(NULL, len);
	if (!acl)
		return -ENOMEM;
	memcpy(acl, def, len);
	if (is_dir(nd(t, id)))
		r = tree_xattr_set(t, id, acl_default, acl, len, 0);
	if (!r && acl_create_masq(acl, len, mode))
		r = tree_xattr_set(t, id, acl_access, acl, len, 0);
	t->free_fn(acl);
	if (r)
		tree_xattr_drop(t, id);
	return r;
}
