/* The follow modes, one row each (follow.h): their names are written here and nowhere else. */
#include "follow.h"

#include <string.h>

const struct cfs_follow_mode cfs_follow_modes[CFS_FOLLOW_MODES] = {
    /* name, timeout, keeps_links, keeps_listings, lookups_follow, daemon_follows */
    /* names and attributes change only through requests the kernel sees itself or through
     * control commands that invalidate what they touch */
    [CFS_FOLLOW_KERNEL] = {"kernel", 3600.0, true, true, false, false},
    [CFS_FOLLOW_COLLAPSE] = {"collapse", 3600.0, false, true, false, true},
    /* what a name leads to changes with every link on the way */
    [CFS_FOLLOW_SERVER] = {"server", 1.0, false, false, true, true},
};

int cfs_follow_of_name(const char *name)
{
	for (int m = 0; m < CFS_FOLLOW_MODES; m++)
		if (strcmp(name, cfs_follow_modes[m].name) == 0)
			return m;
	return -1;
}

const char *cfs_follow_names(char *out, char sep)
{
	size_t at = 0;

	for (int m = 0; m < CFS_FOLLOW_MODES; m++) {
		size_t len = strlen(cfs_follow_modes[m].name);
		if (at + len + 2 > CFS_FOLLOW_NAMES_MAX)
			break; /* never: the names are short */
		if (m)
			out[at++] = sep;
		memcpy(out + at, cfs_follow_modes[m].name, len);
		at += len;
	}
	out[at] = '\0';
	return out;
}
