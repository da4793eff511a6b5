#!/bin/sh
# A bad spec mounts nothing: chainfs prints FILE:LINE: what, exits with status 2, and the
# mountpoint stays an empty directory. Each case: the spec text, and the line at fault.
# check: once: a bad spec mounts nothing, over any transport
. "$(dirname "$0")/lib.sh"

M=$T/mnt
mkdir -p "$M"
MOUNTS="$MOUNTS $M" # unmounted by the trap should a case mount after all
n=0
bad() {
	want_line=$1
	shift
	n=$((n + 1))
	f=$T/bad$n.spec
	printf '%b' "$*" >"$f"
	timeout 30 "$CHAINFS" -f "$f" "$M" 2>"$T/err" >/dev/null
	st=$?
	check "case $n: status 2 (got $st)" test "$st" -eq 2
	check "case $n: '$f:$want_line:' message ($(head -c 120 "$T/err"))" \
		grep -q -F -e "$f:$want_line: " "$T/err"
	check "case $n: nothing mounted" sh -c "! grep -q ' $M ' /proc/mounts"
}
bad 1 'frobnicate /x\n'
bad 2 'dir /a\ndir\n'
bad 1 'dir relative/path\n'
bad 2 'file /f "x"\ndir /f/sub\n'
bad 2 'dir /a\ndir /a\n'
bad 1 "dir /$(printf 'n%.0s' $(seq 256))\n"
bad 1 'link /l ""\n'
bad 1 "link /l $(printf 't%.0s' $(seq 4096))\n"
bad 1 'chain /c 1000000000 /t\n'
bad 1 'chain /c abc /t\n'
bad 1 'chain /c 5\n'
bad 1 'nest /n 0 /t\n'
bad 1 'loop /l 0\n'
bad 1 'tree /t depth=1000000000 fanout=10\n'
bad 1 'tree /t depth=3 fanout=10 links=150%\n'
bad 1 'file /f size=1000000000000000000\n'
bad 1 'file /f "unterminated\n'
bad 1 'file /f "bad \\q escape"\n'
bad 1 'dir /d mode=0999\n'
bad 1 'dir /d colour=blue\n'
bad 3 '# a comment\n\nfile /f mtime=yesterday\n'
bad 1 'dir /a/../b\n'
bad 2 'file /f "x"\nhardlink /g /missing\n'
bad 1 "file /f \"$(head -c 70000 /dev/zero | tr '\0' 'x')\"\n"
check "at least 20 malformed specs" test $n -ge 20
timeout 30 "$CHAINFS" -f "$T/no-such.spec" "$M" 2>"$T/err"
check "a missing spec file: status 2" test $? -eq 2
check "a missing spec file: the message names it" grep -q "no-such.spec" "$T/err"
check "the mountpoint is still an empty directory" test -z "$(ls -A "$M")"

# Hostile but valid: a million-line spec of one directory is served, within the documented
# bound (the file is read a chunk at a time, never whole; the tree takes about 100 bytes a
# node; chainfs-spec(5)): peak RSS under 32 MiB plus 100 bytes a node.
{
	echo "dir /d"
	seq -f "file /d/f%.0f" 1 1000000
} >"$T/million.spec"
B=$T/big
if mount_cfs "$B" "$T/million.spec"; then
	pid=$("$FUSE_MOUNT" --pid "$B")
	check "a million entries listed" test "$(ls -f "$B/d" | wc -l)" -eq 1000002
	expect "ok file" stat "$B/d/f1000000"
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
	echo "million-line spec: $(stat -c %s "$T/million.spec") bytes, daemon peak RSS ${hwm} KiB"
	check "peak RSS ${hwm} KiB within 32 MiB + 100 B/node" \
		test "$hwm" -le $((32 * 1024 + 1000002 * 100 / 1024))
	unmount_cfs "$B"
else
	fail "mount a million-line spec"
fi
finish
