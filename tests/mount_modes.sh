#!/bin/sh
# chainfs's own link resolution: server and collapse modes past the kernel's limit of 40,
# loops that end, changes seen at once in every mode, and an invalidation path that cannot
# hang the loop.
. "$(dirname "$0")/lib.sh"

BIG="max_total=200000,max_nest=200000"
cat >"$T/long.spec" <<EOF
file /target "the end\n"
chain /c 100000 /target
EOF

# --- server mode ---------------------------------------------------------------------------
S=$T/server
mount_cfs "$S" -o "follow=server,$BIG" || fail "mount server"
tsize=$(stat -c %s "$S/chains/target")
expect "ok $tsize" cat "$S/chains/1000"
expect "ok file" lstat "$S/chains/1000"
expect ok stat "$S/nest/100"
for l in $(cd "$S/loops" 2>/dev/null && ls); do
	expect ELOOP stat "$S/loops/$l"
done
timeout 60 find -L "$S/loops" >"$T/findloops.out" 2>"$T/findloops.err"
check "find -L over loops ends" test $? -le 1
check "find -L over loops reports the loops" grep -q "Too many levels of symbolic links" \
	"$T/findloops.err"
check "find -L over loops: no EIO" not_grep "Input/output error" "$T/findloops.err"
unmount_cfs "$S"

mount_cfs "$S" -o "follow=server,$BIG" "$T/long.spec" || fail "mount long chain"
expect "ok 8" cat "$S/c"
unmount_cfs "$S"
mount_cfs "$S" -o "follow=server,max_total=999,max_nest=999" || fail "mount max_total=999"
expect ELOOP stat "$S/chains/1000"
expect ok stat "$S/chains/41"
unmount_cfs "$S"

# find in server mode sees what find -L sees over the materialized copy: the same paths, and
# the same classes of paths sharing an inode. First over the default /tree itself (its links
# to directories all lead to an ancestor, so following them ends), then over a tree whose
# links lead across into other subtrees, so the walk goes through links.
# A dangling link is a name that cannot be reached in server mode (ENOENT, checked below);
# find -L lists it as the link it is, so those are left out of its listing.
classes() {
	(cd "$1" && timeout 300 find $2 tree ! -type l -printf '%i %p\n' 2>/dev/null) |
		LC_ALL=C sort -k2 >"$3.paths"
	cut -d' ' -f2 "$3.paths" >"$3.names"
	LC_ALL=C sort -n "$3.paths" | awk '$1 != last { if (NR > 1) print line; line = ""; last = $1 }
		{ line = line " " $2 } END { print line }' | LC_ALL=C sort >"$3.classes"
}
# compare_find NAME [SPEC]: mount SPEC (the default tree without one) in server mode and its
# materialized copy on tmpfs, and compare the walks over /tree.
compare_find() {
	name=$1
	shift
	REF=$T/ref
	mount_tmpfs "$REF" || fail "tmpfs"
	"$CHAINFS" --materialize "$@" "$REF" || fail "materialize"
	mount_cfs "$S" -o "follow=server,$BIG" "$@" || fail "mount server for find"
	classes "$S" "" "$T/srv"
	classes "$REF" "-L" "$T/ref"
	check "$name: the walk saw the tree" test "$(wc -l <"$T/srv.names")" -gt 100
	same_output "$name: server find == find -L paths" "$T/srv.names" "$T/ref.names"
	same_output "$name: server find == find -L inode classes" "$T/srv.classes" "$T/ref.classes"
	for l in $(cd "$REF" && find -L tree -type l 2>/dev/null | head -50); do
		expect "$("$PROBE" stat "$REF/$l")" stat "$S/$l"
	done
	ref_names=$(cd "$REF" && find tree | wc -l) # links not followed
	unmount_cfs "$S"
	umount "$REF" && rmdir "$REF"
}
compare_find "default /tree"
check "default /tree: following adds no paths" test "$(wc -l <"$T/srv.names")" -le "$ref_names"
cat >"$T/tree.spec" <<EOF
dir /tree
tree /tree/g depth=3 fanout=7 files=40% links=15% seed=3
dir /tree/x
dir /tree/x/y
file /tree/x/y/f "f\n"
link /tree/x/g ../g
link /tree/side x
link /tree/x/y/across /tree/side
link /tree/up ..
link /tree/abs /tree
EOF
compare_find "links across" "$T/tree.spec"
check "links across: the walk went through links" test "$(wc -l <"$T/srv.names")" -gt "$ref_names"

# --- collapse mode -------------------------------------------------------------------------
C=$T/collapse
mount_cfs "$C" -o "follow=collapse,$BIG" || fail "mount collapse"
expect "ok target" readlink "$C/chains/1000"
expect "ok $tsize" cat "$C/chains/1000"
expect ok stat "$C/nest/100"
expect "ok link" lstat "$C/chains/1000"
for l in chains/1000 chains/5 abs/target dirlinks/deep; do # tools size buffers by st_size
	check "collapse: $l's size is what readlink answers" test "$(stat -c %s "$C/$l")" = \
		"$(readlink "$C/$l" | tr -d '\n' | wc -c)"
done
expect ELOOP open "$C/chains/1000" nofollow,r
unmount_cfs "$C"
mount_cfs "$C" -o "follow=collapse,max_total=999,max_nest=999" || fail "mount collapse 999"
expect ELOOP stat "$C/chains/1000"
expect ELOOP readlink "$C/chains/1000"
expect ENOENT stat "$C/dangling/$(cd "$C/dangling" && ls | head -1)"
unmount_cfs "$C"

# --- nothing leaves the tree: excess ".." and absolute targets stay at its root -------------
# (in kernel mode the kernel walks what readlink answers: a target with a ".." or a leading "/"
# is answered by the path through the mountpoint of where its in-root walk leads, even when a
# link on the way leads to the root, and the answer follows the link when its directory moves;
# tests/mount_escape.sh races changes against reads)
cat >"$T/escape.spec" <<EOF
file /etc/passwd "the tree's own passwd\n"
dir /a/b/c
link /a/b/c/up ../../../../../../../../etc/passwd
link /a/abs /etc/passwd
link /a/root /../../..
link /a/absup /a/../../..
link /a/b/c/r ../../../../..
link /a/b/c/dl ../../..
link /a/b/c/via dl/..
link /a/b/c/viafile dl/../../etc/passwd
link /a/b/c/inside ../../b/c/../../b
EOF
for mode in server collapse kernel; do
	E=$T/esc-$mode
	mount_cfs "$E" -o "follow=$mode" "$T/escape.spec" || { fail "mount escape $mode"; continue; }
	root=$("$PROBE" ino "$E")
	expect "ok 22" cat "$E/a/b/c/up"
	expect "ok 22" cat "$E/a/abs"
	expect "ok 22" cat "$E/a/b/c/viafile"
	for l in a/root a/absup a/b/c/r a/b/c/via; do
		check "$mode: $l is the tree's root" test "$("$PROBE" ino "$E/$l")" = "$root"
	done
	check "$mode: a/b/c/inside is a/b" test "$("$PROBE" ino "$E/a/b/c/inside")" = \
		"$("$PROBE" ino "$E/a/b")"
	if [ "$mode" = kernel ]; then # (answers climb with the up name, never a "..")
		expect "ok .^/.^/.^/etc/passwd" readlink "$E/a/b/c/up"
		expect "ok .^/.^/.^" readlink "$E/a/b/c/r"
		expect "ok .^/.^/b" readlink "$E/a/b/c/inside"
		check "kernel: the size of up is its answer's" \
			test "$(stat -c %s "$E/a/b/c/up")" = "$(printf %s ".^/.^/.^/etc/passwd" | wc -c)"
	fi
	mv "$E/a/b" "$E/b2" # one level up: the same links now need one ".." less
	expect "ok 22" cat "$E/b2/c/up"
	for l in b2/c/r b2/c/via; do
		check "$mode: $l after the move is the tree's root" test "$("$PROBE" ino "$E/$l")" = "$root"
	done
	if [ "$mode" != server ]; then # (server mode shows dl as the directory it leads to)
		ln -sfn ../.. "$E/b2/c/dl" # the root by one ".." less: via must still stay inside
		check "$mode: via after ln -sfn of dl is the root" \
			test "$("$PROBE" ino "$E/b2/c/via")" = "$root"
	fi
	unmount_cfs "$E"
done

# --- every mode: changes are seen by the very next syscall ---------------------------------
# WRITER DIR N: N times `ln -sfn b l`, `ln -sfn a l`, `mv lx ly`, `mv ly lx` in DIR; any
# change that fails ends it with status 1
WRITER='
import ctypes, os, random, string, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_NOREPLACE = -100, 1
d, n = sys.argv[1], int(sys.argv[2])

def renameat2(old, new, flags):
    if libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), old)

def ln_sfn(target, link):
    try:  # the link exists: ln looks at it, then makes a new one and renames it over
        os.symlink(target, link)
        return
    except FileExistsError:
        pass
    try:
        os.open(link, os.O_RDONLY | os.O_NOFOLLOW | os.O_PATH | os.O_DIRECTORY)
        raise OSError("%s: a directory, not a link" % link)
    except NotADirectoryError:
        pass
    os.lstat(link)  # (then ln stats the target from its cwd, off the mount)
    tmp = os.path.join(d, "".join(random.choices(string.ascii_letters, k=8)))
    os.symlink(target, tmp)
    renameat2(tmp, link, 0)

l, lx, ly = (os.path.join(d, x) for x in ("l", "lx", "ly"))
try:
    for i in range(n):
        ln_sfn("b", l)
        ln_sfn("a", l)
        renameat2(lx, ly, RENAME_NOREPLACE)
        renameat2(ly, lx, RENAME_NOREPLACE)
except OSError as e:
    sys.exit("change %d: %s" % (i, e))
'
# READER DIR N STARTED DONE: rounds of `stat -L DIR/l1 DIR/lx` and `ls DIR` (failures are
# expected while lx is moved), N at least and until the file DONE exists; STARTED is made
# after the first round
READER='
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_NO_AUTOMOUNT, STATX_MODE, STATX_ALL = -100, 0x800, 0x2, 0xFFF
d, n, started, done = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
buf = ctypes.create_string_buffer(256)
l1, lx = (os.path.join(d, x).encode() for x in ("l1", "lx"))
i = 0
while i < n or not os.path.exists(done):
    libc.statx(AT_FDCWD, l1, AT_NO_AUTOMOUNT, STATX_ALL, buf)
    libc.statx(AT_FDCWD, lx, AT_NO_AUTOMOUNT, STATX_ALL, buf)
    libc.statx(AT_FDCWD, d.encode(), AT_NO_AUTOMOUNT, STATX_MODE, buf)
    try:
        os.listdir(d)
    except OSError:
        pass
    i += 1
    if i == 1:
        open(started, "w").close()
'
for mode in kernel collapse server; do
	M=$T/m-$mode
	mount_cfs "$M" -o "follow=$mode,entry_timeout=3600,attr_timeout=3600,$BIG" ||
		{ fail "mount $mode"; continue; }
	mkdir "$M/t"
	printf A >"$M/t/a"
	printf BB >"$M/t/b"
	ln -s a "$M/t/l"
	ln -s l "$M/t/l1" # a chain: l1 -> l -> a
	expect "ok file 0644 1" stat "$M/t/l1"
	expect "ok 1" cat "$M/t/l1"
	ln -sfn b "$M/t/l"
	expect "ok 2" cat "$M/t/l1"
	expect "ok 2" cat "$M/t/l"
	mv "$M/t/l" "$M/t/l2"
	expect ENOENT stat "$M/t/l1"
	expect "ok 2" cat "$M/t/l2"
	mv "$M/t/l2" "$M/t/l"
	expect "ok 2" cat "$M/t/l1"
	rm "$M/t/l"
	expect ENOENT stat "$M/t/l1"
	ln -s a "$M/t/l"
	expect "ok 1" cat "$M/t/l1"
	# a directory moved under a link's path
	mkdir -p "$M/t/d1/x"
	ln -s d1/x "$M/t/lx"
	expect "ok dir" stat "$M/t/lx"
	mv "$M/t/d1" "$M/t/d2"
	expect ENOENT stat "$M/t/lx"
	mkdir -p "$M/t/d1/x"
	printf C >"$M/t/d1/x/c"
	expect "ok 1" cat "$M/t/lx/c"

	# Invalidations while lookups hammer the same directory: must neither hang nor fail. One
	# process each makes the syscalls `ln -sfn`, `mv`, `stat -L` and `ls` make (coreutils 9.1,
	# checked with strace), in the same order, without a fork per change; one watchdog bounds
	# the whole (a change that hangs still fails the check). The reader goes on until the
	# writer is done, and does its 300 rounds at least.
	rm -f "$T/reading" "$T/written"
	python3 -c "$READER" "$M/t" 300 "$T/reading" "$T/written" &
	reader=$!
	PIDS="$PIDS $reader"
	wait_for test -e "$T/reading" || fail "$mode: the reader started"
	ok=1
	timeout 120 python3 -c "$WRITER" "$M/t" 300 || ok=0
	touch "$T/written"
	check "$mode: 1200 link changes under concurrent lookups never hang" test $ok -eq 1
	check "$mode: readers finish" timeout 60 sh -c "while kill -0 $reader 2>/dev/null; do sleep 0.1; done"
	expect "ok 1" cat "$M/t/l1"
	unmount_cfs "$M"
done

finish
