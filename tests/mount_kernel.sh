#!/bin/sh
# Kernel follow mode on the default tree: the mount equals its materialized copy on tmpfs,
# and the kernel's own limits apply to the links it follows.
. "$(dirname "$0")/lib.sh"

# The copy holds every link as the mount's readlink answers it (absolute targets and a ".."
# past the top rewritten in-root), owners and modes as the tree has them (--keep-ids).
M=$T/mnt
REF=$T/ref
mount_cfs "$M" || { fail "mount"; finish; exit 1; }
mount_tmpfs "$REF" || { fail "tmpfs"; finish; exit 1; }
check "materialize the default tree" "$CHAINFS" --materialize --keep-ids "$REF"

# The same tree, seen through the same syscalls.
listing() {
	(cd "$1" && timeout 300 find . \( -type d -printf '%y %m %U %G %n %p\n' \) -o \
		-printf '%y %m %U %G %n %s %p %l\n' | LC_ALL=C sort)
}
listing "$M" >"$T/l.mnt"
listing "$REF" >"$T/l.ref"
same_output "find -printf listings" "$T/l.mnt" "$T/l.ref"
check "diff -r --no-dereference is empty" timeout 300 diff -r --no-dereference "$M" "$REF"
check "the listing is the whole tree" test "$(wc -l <"$T/l.mnt")" -gt 100000

for d in tree wide; do
	(cd "$M/$d" && timeout 300 ls -lR --time-style=+%s) >"$T/ls.mnt" 2>&1
	(cd "$REF/$d" && timeout 300 ls -lR --time-style=+%s) >"$T/ls.ref" 2>&1
	same_output "ls -lR of /$d" "$T/ls.mnt" "$T/ls.ref"
	check "du -s --apparent-size of /$d" test \
		"$(cd "$M/$d" && du -s --apparent-size -b . | cut -f1)" = \
		"$(cd "$REF/$d" && du -s --apparent-size -b . | cut -f1)"
	check "tar c of /$d has the same size" test \
		"$(cd "$M" && timeout 300 tar c --sort=name "$d" | wc -c)" = \
		"$(cd "$REF" && timeout 300 tar c --sort=name "$d" | wc -c)"
done

unmount_cfs "$M"

# Random specs: every generator with parameters drawn from a seed (printed; CHAINFS_SEED
# replays it), each mount compared with its own materialized copy.
seed=${CHAINFS_SEED:-$(date +%s)}
echo "mount_kernel: random specs from seed $seed"
for k in 1 2 3; do
	r=$(((seed * 7 + k * 7919) % 100003))
	spec=$T/random$k.spec
	cat >"$spec" <<EOF
tree /t depth=$((2 + r % 3)) fanout=$((3 + r % 6)) files=$((r % 60))% links=$((r % 30))% seed=$r
chain /c/a $((1 + r % 60)) /t
nest /n/a $((1 + r % 12)) /c/target
file /c/target "seed $r\n"
loop /l/ring $((1 + r % 5))
file /f/big size=$((r % 100000)) pattern="$r-"
link /abs/x /t
dir /modes mode=0$((r % 8))$((r % 5))$((r % 3)) mtime=$r
EOF
	R=$T/rref$k
	MR=$T/rmnt$k
	mount_tmpfs "$R" && "$CHAINFS" --materialize --keep-ids "$spec" "$R" ||
		fail "materialize random $k"
	mount_cfs "$MR" "$spec" || fail "mount random $k"
	listing "$MR" >"$T/rl.mnt"
	listing "$R" >"$T/rl.ref"
	same_output "random spec $k (r=$r): find -printf listings" "$T/rl.mnt" "$T/rl.ref"
	check "random spec $k (r=$r): diff -r --no-dereference is empty" \
		timeout 300 diff -r --no-dereference "$MR" "$R"
	unmount_cfs "$MR"
done

mount_cfs "$M" || { fail "mount"; finish; exit 1; }

# The kernel follows links here, so its limit of 40 applies: every link of the tree must
# resolve as the kernel resolves it on the copy (absolute targets rewritten the same way).
INR=$T/inroot
mount_tmpfs "$INR" || fail "tmpfs"
cp -a "$REF/." "$INR/" &&
	materialize_inroot "$INR" || fail "inroot copy"
for d in chains nest loops dangling abs dirlinks; do
	for l in $(cd "$INR/$d" && ls -A); do
		check "stat -L $d/$l as on the copy" test \
			"$("$PROBE" stat "$M/$d/$l")" = "$("$PROBE" stat "$INR/$d/$l")"
		check "readlink $d/$l as on the copy" test \
			"$("$PROBE" readlink "$M/$d/$l")" = "$("$PROBE" readlink "$INR/$d/$l")"
	done
done
expect ok stat "$M/chains/40"
expect ELOOP stat "$M/chains/41"
expect ELOOP stat "$M/chains/1000"
expect ok stat "$M/nest/40"
expect ELOOP stat "$M/nest/41"
for l in "$M"/loops/*; do
	expect ELOOP stat "$l"
done
expect ENOENT stat "$M/dangling/missing"
expect "ok $(readlink "$REF/chains/5")" readlink "$M/chains/5"
expect "ok link" lstat "$M/chains/41"
expect "ok ../chains/target" readlink "$M/abs/target"
expect "ok .." readlink "$M/abs/root"
expect "ok .." readlink "$M/abs/dotdot"
check "abs/root is the mount's root" test "$("$PROBE" ino "$M/abs/root")" = "$("$PROBE" ino "$M")"
check "abs/dotdot is the mount's root" test "$("$PROBE" ino "$M/abs/dotdot")" = "$("$PROBE" ino "$M")"
name256=$(printf 'n%.0s' $(seq 256))
expect ENAMETOOLONG stat "$M/$name256"
expect ENAMETOOLONG stat "$M/chains/$name256"
name255=$(printf 'n%.0s' $(seq 255))
expect ENOENT stat "$M/$name255"
expect EOPNOTSUPP getxattr "$M/chains/target" user.x

finish
