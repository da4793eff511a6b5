/*
 * errno names, one home for everything that prints or reads them: the daemon's fault rules,
 * `resolve` replies and recordings, chainfsctl replay, chainfs-sweep and bench_chains. Plain
 * C (no GLib), so the benches link it as it is.
 */
#ifndef CHAINFS_ERRNAME_H
#define CHAINFS_ERRNAME_H

/* ERR's name as the C library spells it ("ENOENT"), or NULL for 0, a negative number or one
 * the library has no name for; each caller says what it prints then. */
const char *cfs_errno_name(int err);
/* The errno S names ("EIO") or gives as a decimal number ("5"), from 1 to MAX; -1 otherwise. */
int cfs_errno_parse(const char *s, int max);

#endif
