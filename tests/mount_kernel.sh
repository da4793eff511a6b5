#!/bin/sh
# Kernel follow mode on the default tree: the mount equals its materialized copy on tmpfs,
# and the kernel's own limits apply to the links it follows.
. "$(dirname "$0")/lib.sh"

M=$T/mnt
REF=$T/ref
mount_cfs "$M" || { fail "mount"; finish; exit 1; }
mount_tmpfs "$REF" || { fail "tmpfs"; finish; exit 1; }
check "materialize the default tree" "$CHAINFS" --materialize "$REF"

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

# The kernel follows links here, so its limit of 40 applies.
expect ok stat "$M/chains/40"
expect ELOOP stat "$M/chains/41"
expect ELOOP stat "$M/chains/1000"
expect ok stat "$M/nest/40"
expect ELOOP stat "$M/nest/41"
for l in "$M"/loops/*; do
	expect ELOOP stat "$l"
done
for l in "$M"/dangling/*; do
	expect ENOENT stat "$l"
done
expect "ok $(readlink "$REF/chains/5")" readlink "$M/chains/5"
expect "ok link" lstat "$M/chains/41"

# Absolute targets mean "from the tree's root": each one reaches, inside the mount, what its
# stored target names from the mount's root (a leading "/.." stays at the root).
for l in "$M"/abs/*; do
	stored=$(readlink "$REF/abs/$(basename "$l")")
	inroot=$(printf '%s' "$stored" | sed -e 's#^\(/\.\.\)*##' -e 's#^/*##')
	if [ ! -e "$REF/$inroot" ]; then
		expect ENOENT stat "$l"
		continue
	fi
	check "abs/$(basename "$l") -> $stored stays in the mount" test \
		"$("$PROBE" ino "$l")" = "$("$PROBE" ino "$M/$inroot")"
	case "$(readlink "$l")" in
	/*) fail "abs/$(basename "$l"): readlink still absolute" ;;
	*) pass ;;
	esac
done
name256=$(printf 'n%.0s' $(seq 256))
expect ENAMETOOLONG stat "$M/$name256"
expect ENAMETOOLONG stat "$M/chains/$name256"
name255=$(printf 'n%.0s' $(seq 255))
expect ENOENT stat "$M/$name255"
expect EOPNOTSUPP getxattr "$M/chains/target" user.x

finish
