/*
 * rtree-materialize SEED DIR: write the random tree of SEED (rtree_defaults, as the kernel
 * differential test builds it) under DIR as real directories, files and symlinks, to poke at
 * by hand or to serve a mount test. DIR must not exist: it is created private (0700 until the
 * tree is in), since the tree is written by paths below it and a directory someone else could
 * write while that runs could redirect them.
 */
#include "rtree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
	char *end;

	if (argc != 3) {
		fprintf(stderr, "usage: %s SEED DIR\n", argv[0]);
		return 2;
	}
	unsigned long long seed = strtoull(argv[1], &end, 0);
	if (*end || !*argv[1]) {
		fprintf(stderr, "%s: SEED must be a number: %s\n", argv[0], argv[1]);
		return 2;
	}
	if (mkdir(argv[2], 0700)) {
		fprintf(stderr, "%s: %s: %s%s\n", argv[0], argv[2], strerror(errno),
			errno == EEXIST ? " (DIR must be new)" : "");
		return 1;
	}
	struct rtree *t = rtree_new(seed, &rtree_defaults);
	int err = rtree_materialize(t, argv[2]);
	if (err)
		fprintf(stderr, "%s: materializing in %s: %s\n", argv[0], argv[2], strerror(-err));
	else
		printf("%zu nodes under %s\n", rtree_count(t), argv[2]);
	rtree_free(t);
	return err ? 1 : 0;
}
