/*
 * chainfsctl replay FILE MNT: the requests a recording (record.h) holds, made again as the
 * syscalls that cause them on the paths they named, under another mount MNT; the results
 * and latencies compared per operation. Nothing is made outside MNT: every path is walked
 * with MNT as its root (replay_at.c).
 */
#ifndef CHAINFS_REPLAY_H
#define CHAINFS_REPLAY_H

#include <stdbool.h>

/* Prints the comparison on stdout. A result is its errno and, unless ERRNO_ONLY, what it
 * showed where the recording says (format 2: a kind and size, a link's body, a listing's
 * names and kinds). Returns the exit status: 0 every replayed result equals the recorded
 * one, 1 some differ, 3 some line was refused (a path not beneath MNT), 2 the recording, one
 * of its lines, or MNT could not be used (said on stderr, FILE:LINE: for a line). */
int cfs_replay(const char *file, const char *mnt, bool errno_only);

#endif
