/*
 * The recording's file kinds (record.h): one letter each, written by the recorder
 * (fusefs/record.c) and read and named by replay (cli/replay*.c). One list, so that the two
 * cannot disagree.
 */
#ifndef CHAINFS_RECORD_KIND_H
#define CHAINFS_RECORD_KIND_H

#include <stddef.h>
#include <sys/stat.h>

/* X(S_IF type, letter, name) */
#define CFS_RECORD_KINDS(X)                                                                        \
	X(S_IFDIR, 'd', "directory")                                                               \
	X(S_IFLNK, 'l', "link")                                                                    \
	X(S_IFREG, 'f', "file")                                                                    \
	X(S_IFIFO, 'p', "fifo")                                                                    \
	X(S_IFSOCK, 's', "socket")                                                                 \
	X(S_IFCHR, 'c', "character device")                                                        \
	X(S_IFBLK, 'b', "block device")

/* MODE's kind as its letter; '?' for none of them. */
static inline char cfs_kind_letter(unsigned mode)
{
	switch (mode & S_IFMT) {
#define CFS_KIND_CASE(type, letter, name)                                                          \
	case type:                                                                                 \
		return letter;
		CFS_RECORD_KINDS(CFS_KIND_CASE)
#undef CFS_KIND_CASE
	default:
		return '?';
	}
}

/* The name of the kind LETTER stands for, or NULL when it stands for none. */
static inline const char *cfs_kind_name(char letter)
{
	switch (letter) {
#define CFS_KIND_CASE(type, letter, name)                                                          \
	case letter:                                                                               \
		return name;
		CFS_RECORD_KINDS(CFS_KIND_CASE)
#undef CFS_KIND_CASE
	default:
		return NULL;
	}
}

#endif
