#!/bin/sh
# Server mode: a link that resolves shows as its target, and the kernel cannot tell chainfs
# that a call asked not to follow it (SETATTR carries no such flag, and the walk saw a file
# or a directory, not a link). So the "nofollow" calls act on the target: `chown -h`,
# `touch -h` (utimensat AT_SYMLINK_NOFOLLOW), open O_NOFOLLOW; and a name is removed as the
# kind it shows: `rm` removes a link to a file (the file stays), `rmdir` a link to a
# directory whatever the directory holds, `unlink` of a link to a directory is EISDIR. A link
# that does not resolve is a link, and the same calls act on it. What
# README.md and chainfs(1) say of server mode, asserted here; tmpfs alongside for what the
# same calls do there.
. "$(dirname "$0")/lib.sh"

: >"$T/empty.spec"
M=$T/m
R=$T/ref
mount_cfs "$M" -o follow=server "$T/empty.spec" || { fail "mount"; finish; exit 1; }
mount_tmpfs "$R" || { fail "tmpfs"; finish; exit 1; }
for d in "$M" "$R"; do
	echo hi >"$d/t" && mkdir "$d/d" && echo in >"$d/d/f" && ln -s t "$d/l" && ln -s d "$d/ld"
done
owner() { stat -c %u "$1"; }
mtime() { stat -c %Y "$1"; }

for d in "$M" "$R"; do
	chown -h 65534 "$d/l" && touch -h -d 2001-01-01 "$d/l" && chown -h 65534 "$d/ld"
done
check "server: chown -h LINK changes the target's owner" test "$(owner "$M/t")" = 65534
check "server: chown -h LINK_TO_DIR changes the directory's" test "$(owner "$M/d")" = 65534
check "server: touch -h LINK sets the target's mtime" test "$(mtime "$M/t")" = 978307200
check "tmpfs: chown -h changes the link only" test "$(owner "$R/t")$(owner "$R/d")" = 00
check "tmpfs: touch -h changes the link only" test "$(mtime "$R/t")" != 978307200
expect "ok" open "$M/l" r,nofollow
expect "ELOOP" open "$R/l" r,nofollow

# a link that does not resolve is a link: the same calls act on it, as on tmpfs
ln -s nothere "$M/dang"
chown -h 65534 "$M/dang" && touch -h -d 2001-01-01 "$M/dang"
check "server: chown -h of a dangling link changes the link" test "$(owner "$M/dang")" = 65534
check "server: touch -h of a dangling link sets the link's mtime" \
	test "$(mtime "$M/dang")" = 978307200
expect ELOOP open "$M/dang" r,nofollow

expect EISDIR unlink "$M/ld"
expect ok rmdir "$M/ld"
check "server: rmdir LINK_TO_DIR removed the link" test ! -e "$M/ld"
check "... and not the directory's content" test "$(cat "$M/d/f")" = in
expect ENOTDIR rmdir "$R/ld"
expect ok unlink "$M/l"
check "server: rm LINK removed the link" test ! -e "$M/l"
check "... not its target" test "$(cat "$M/t")" = hi
finish
