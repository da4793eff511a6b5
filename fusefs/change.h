/*
 * A tree change a fault rule makes when a request matches it (fault.h, `change=`): one or
 * more lines, separated by ';' (outside double quotes), applied in order in the loop, with
 * no request served between them, all or none: a line that fails undoes the lines before it.
 * A line is a spec line (dir, file, link, hardlink, chain, ...: CFS_SPEC_KEYWORDS, run as the
 * control socket runs one) or a namespace change:
 *   rename FROM TO      as rename(2): TO, if there, is replaced (POSIX rules)
 *   exchange A B        as renameat2(RENAME_EXCHANGE): the two names swap what they hold
 *   unlink PATH         a name that is not a directory
 *   rmdir PATH          an empty directory
 *   replace PATH TARGET PATH becomes a link to TARGET in one step, whatever it held (a
 *                       directory goes with all below it); made if it was not there
 * The spec lines that edit a file in place (append, truncate) are refused: an undo keeps no
 * old content. Namespace paths are absolute, name entries as the tree holds them (no link is
 * followed, no "." nor ".." taken) and are words without blanks; spec lines quote as spec
 * files do.
 */
#ifndef CHAINFS_CHANGE_H
#define CHAINFS_CHANGE_H

#include "tree.h"

struct cfs_change;

/* TEXT parsed: a change, or NULL with *err a g_malloc'ed message saying which line is wrong
 * and why (nothing runs: what depends on the tree is known only when the change is applied). */
struct cfs_change *cfs_change_parse(const char *text, char **err);
void cfs_change_free(struct cfs_change *c);
/* The change as given (for lists and logs). */
const char *cfs_change_text(const struct cfs_change *c);

/* Apply C's lines to T in order, all or none: the first line that fails stops the change, and
 * the lines before it are undone (the tree's journal, tree.h), so the tree is as it was,
 * times included. 0, or a negative errno with *err a g_malloc'ed "line N (TEXT): why".
 * New nodes belong to UID:GID. */
int cfs_change_apply(struct cfs_tree *t, const struct cfs_change *c, uid_t uid, gid_t gid,
		     char **err);

#endif
