#!/bin/sh
# The same random tree built through system calls on tmpfs and at the root of a chainfs mount,
# in every follow mode, then random paths looked up on both (tests/mount_diff.c says how, and
# which differences are by design). CHAINFS_SEED replays a run; the seed is printed.
. "$(dirname "$0")/lib.sh"

DIFF=$BUILD/cfs-mount-diff
seed=${CHAINFS_SEED:-$(date +%s)}
echo "mount_diff: seed $seed (CHAINFS_SEED=$seed replays)"
: >"$T/empty.spec"
R=$T/ref
mount_tmpfs "$R" || { fail "tmpfs"; finish; exit 1; }
for mode in kernel collapse server; do
	for caches in short long; do
		opts="follow=$mode"
		[ "$caches" = long ] && opts="$opts,entry_timeout=3600,attr_timeout=3600"
		for s in 0 1; do
			M=$T/m
			rm -rf "${R:?}"/*
			mount_cfs "$M" -o "$opts" "$T/empty.spec" || { fail "mount $opts"; continue; }
			timeout 120 "$DIFF" $((seed + s)) 400 "$mode" "$R" "$M" >"$T/out" 2>&1
			rc=$?
			tail -1 "$T/out"
			check "$mode, $caches caches, seed $((seed + s)): chainfs answers as tmpfs in-root" \
				test $rc -eq 0
			[ $rc -eq 0 ] || grep -m 10 "DIFF\|build step" "$T/out" >&2
			unmount_cfs "$M"
		done
	done
done
finish
