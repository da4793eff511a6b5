#include "errname.h"

#include <stdlib.h>
#include <string.h>

/* The C library knows every errno's name (glibc 2.32: strerrorname_np): no table of our own
 * to fall behind it. */
const char *cfs_errno_name(int err)
{
	return err > 0 ? strerrorname_np(err) : NULL;
}

int cfs_errno_parse(const char *s, int max)
{
	char *end;
	long v;

	for (int e = 1; e <= max; e++) {
		const char *name = strerrorname_np(e);
		if (name && strcmp(name, s) == 0)
			return e;
	}
	v = strtol(s, &end, 10);
	return (*s && !*end && v > 0 && v <= max) ? (int)v : -1;
}
