#!/bin/sh
# The node budget (-o max_nodes): a spec, a generator or a control line that would pass it is
# refused with a message naming the option, and the tree is left as it was (dump equal); a
# create through the mount past it gets ENOSPC; a malformed value is refused before mounting.
. "$(dirname "$0")/lib.sh"

printf 'dir /x\nwide /w 5\n' >"$T/small.spec" # 8 nodes with the root
mkdir "$T/nomount"

# A spec past the budget: exit status 2, FILE:LINE and the option named, no mount.
printf 'dir /a\ndeep /d 10\n' >"$T/deep.spec"
out=$("$CHAINFS" -f -o max_nodes=8 "$T/deep.spec" "$T/nomount" 2>&1)
check "a generator past max_nodes exits 2" test $? -eq 2
check "... at its line" has "$out" "deep.spec:2: 11 more nodes would pass the node budget of 8"
check "... naming max_nodes" has "$out" "-o max_nodes=N"
check "... and mounts nothing" not grep -q " $T/nomount " /proc/mounts
out=$("$CHAINFS" -f -o max_nodes=x "$T/small.spec" "$T/nomount" 2>&1)
check "max_nodes=x exits 2" test $? -eq 2
check "... says why" has "$out" "max_nodes=x: expected a number from 0 to 1073741823"

M=$T/m
mount_cfs "$M" -o "max_nodes=10,ctl=$SOCK" "$T/small.spec" ||
	{ fail "mount max_nodes=10"; finish; exit 1; }
before=$(ctl dump)
for line in "wide /v 2" "tree /t depth=2 fanout=3" "dir /a/b/c"; do
	out=$(ctl $line 2>&1)
	check "control line '$line' past max_nodes fails" test $? -ne 0
	check "... naming max_nodes" has "$out" "-o max_nodes=N"
	check "... and the tree is unchanged (dump equal)" test "$(ctl dump)" = "$before"
done
check "two more fit" ctl dir /a/b
check "... and they are there" test -d "$M/a/b"
check "a mkdir past max_nodes is ENOSPC" \
	has "$(mkdir "$M/c" 2>&1)" "No space left on device"
check "... and makes nothing" not test -e "$M/c"
finish
