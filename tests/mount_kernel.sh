#!/bin/sh
# Kernel follow mode on the default tree: the mount equals its materialized copy on tmpfs,
# and the kernel's own limits apply to the links it follows.
# check: long: the default tree against its copy
. "$(dirname "$0")/lib.sh"

# The copy holds every link with its in-root meaning (absolute targets and a ".." past the
# top rewritten relative), owners and modes as the tree has them (--keep-ids). The mount
# answers such links climbing with its up name instead: links are compared by what they lead
# to (lib.sh's follows) and the mount's answers checked to stay inside it.
M=$T/mnt
REF=$T/ref
mount_cfs "$M" || { fail "mount"; finish; exit 1; }
mount_tmpfs "$REF" || { fail "tmpfs"; finish; exit 1; }
check "materialize the default tree" "$CHAINFS" --materialize --keep-ids "$REF"

# The same tree, seen through the same syscalls (a link's size is its answer's length).
listing() {
	(cd "$1" && timeout 300 find . \( -type d -printf '%y %m %U %G %n %p\n' \) -o \
		\( -type l -printf '%y %m %U %G %n %p\n' \) -o \
		-printf '%y %m %U %G %n %s %p %l\n' | LC_ALL=C sort)
}
# compare NAME MOUNT COPY: names, kinds, modes, owners, sizes, contents, and where links lead
compare() {
	listing "$2" >"$T/l.mnt"
	listing "$3" >"$T/l.ref"
	same_output "$1: find -printf listings" "$T/l.mnt" "$T/l.ref"
	check "$1: every file's content is the copy's" test "$(contents "$2")" = "$(contents "$3")"
	follows "$2" >"$T/f.mnt"
	follows "$3" >"$T/f.ref"
	same_output "$1: what every link leads to" "$T/f.mnt" "$T/f.ref"
	check "$1: every answer stays inside the mount" answers_inside "$2"
}
# file contents: every non-link's bytes (link texts are compared by listing)
contents() {
	(cd "$1" && timeout 300 find . ! -type l ! -type d -print | LC_ALL=C sort |
		timeout 300 tar c --no-recursion -T - -O 2>/dev/null | md5sum)
}
mnt=$(cd "$M" && pwd -P)
compare "default tree" "$M" "$REF"
check "the listing is the whole tree" test "$(wc -l <"$T/l.mnt")" -gt 100000
check "links were followed" test "$(wc -l <"$T/f.mnt")" -gt 1000

for d in tree wide; do
	(cd "$M/$d" && timeout 300 ls -lR --time-style=+%s) 2>&1 | norm_ls >"$T/ls.mnt"
	(cd "$REF/$d" && timeout 300 ls -lR --time-style=+%s) 2>&1 | norm_ls >"$T/ls.ref"
	same_output "ls -lR of /$d" "$T/ls.mnt" "$T/ls.ref"
	# (links left out: their sizes are their answers' lengths, longer through the mountpoint)
	check "du -s --apparent-size of /$d's non-links" test \
		"$(cd "$M/$d" && find . ! -type l -printf '%s\n' | awk '{ s += $1 } END { print s }')" = \
		"$(cd "$REF/$d" && find . ! -type l -printf '%s\n' | awk '{ s += $1 } END { print s }')"
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
	compare "random spec $k (r=$r)" "$MR" "$R"
	unmount_cfs "$MR"
done

mount_cfs "$M" || { fail "mount"; finish; exit 1; }

# The kernel follows links here, so its limit of 40 applies: every link of the tree must
# resolve as the kernel resolves it on the copy (absolute targets rewritten to stay inside).
# readlink shows the stored target, but for one with a ".." or a leading "/": that one is
# answered climbing with the up name, without any ".." or host path.
INR=$REF
for d in chains nest loops dangling abs dirlinks; do
	for l in $(cd "$INR/$d" && ls -A); do
		check "stat -L $d/$l as on the copy" test \
			"$("$PROBE" stat "$M/$d/$l")" = "$("$PROBE" stat "$INR/$d/$l")"
		stored=$(readlink "$REF/$d/$l")
		case "${stored:-.}/" in
		/* | ../* | */../*)
			check "readlink $d/$l climbs with the up name, without '..'" \
				sh -c 'case "$1/" in */../* | ../* | /*) exit 1 ;; esac' \
				- "$(readlink "$M/$d/$l")" ;;
		*)
			check "readlink $d/$l as on the copy" test \
				"$("$PROBE" readlink "$M/$d/$l")" = "$("$PROBE" readlink "$REF/$d/$l")" ;;
		esac
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
expect "ok .^/chains/target" readlink "$M/abs/target"
expect "ok .^" readlink "$M/abs/root"
expect "ok .^" readlink "$M/abs/dotdot"
expect "ok .^/nowhere" readlink "$M/dangling/up"
expect "ok .^/README/inside" readlink "$M/dangling/notdir"
check "abs/root is the mount's root" test "$("$PROBE" ino "$M/abs/root")" = "$("$PROBE" ino "$M")"
check "abs/dotdot is the mount's root" test "$("$PROBE" ino "$M/abs/dotdot")" = "$("$PROBE" ino "$M")"
name256=$(printf 'n%.0s' $(seq 256))
expect ENAMETOOLONG stat "$M/$name256"
expect ENAMETOOLONG stat "$M/chains/$name256"
name255=$(printf 'n%.0s' $(seq 255))
expect ENOENT stat "$M/$name255"
# the default tree holds no xattr, so -o xattrs=auto leaves them off: the kernel answers
expect EOPNOTSUPP getxattr "$M/chains/target" user.x

finish
