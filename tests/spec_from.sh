#!/bin/sh
# chainfs --spec-from DIR: a real tree on a tmpfs (every kind, odd names, holes, a big pattern
# file, hard links of a file and of a symlink, set-id and sticky modes, other owners, old
# times) written as a spec, mounted (kernel mode, raw link targets) and compared with the
# tree name by name: kind, mode, owner, times, size, content, link target, device number,
# link count and which names share an inode; the other two modes serve it too. What cannot be
# read (as uid 65534) is named on stderr and gives status 1, the rest still written; a link as
# DIR is refused. Last, the default tree mounted, read back by --spec-from and mounted again
# answers as the first mount.
# check: long: the default tree converted and compared, over and over
. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

# cmp_trees A B: every entry under A and B the same (python3; the first 20 differences shown)
cat >"$T/cmp.py" <<'EOF'
import os, stat, sys

def walk(root):
    """Relative name -> lstat of every entry under ROOT (and ROOT as "."), depth first."""
    out = {b".": os.lstat(root)}
    stack = [(root, b"")]
    while stack:
        top, rel = stack.pop()
        with os.scandir(top) as it:
            entries = list(it)
        subdirs = []
        for e in entries:
            name = rel + e.name if rel else e.name
            out[name] = e.stat(follow_symlinks=False)
            if e.is_dir(follow_symlinks=False):
                subdirs.append((e.path, name + b"/"))
        stack.extend(reversed(subdirs))
    return out

BUF = 1 << 20
bufa, bufb = bytearray(BUF), bytearray(BUF)

def fill(fd, buf):
    """Read into BUF until it is full or the file ends; the count read."""
    n = 0
    view = memoryview(buf)
    while n < len(buf):
        k = os.readv(fd, [view[n:]])
        if k == 0:
            break
        n += k
    return n

def same_content(p, q):
    f = os.open(p, os.O_RDONLY | os.O_CLOEXEC)
    try:
        g = os.open(q, os.O_RDONLY | os.O_CLOEXEC)
        try:
            while True:
                x, y = fill(f, bufa), fill(g, bufb)
                if x != y:
                    return False
                if x < BUF:
                    return bufa[:x] == bufb[:y]
                if bufa != bufb:
                    return False
        finally:
            os.close(g)
    finally:
        os.close(f)

a, b = (os.fsencode(x) for x in sys.argv[1:3])
ta, tb = walk(a), walk(b)
bad = []
for n in sorted(set(ta) - set(tb)):
    bad.append("only in %s: %r" % (sys.argv[1], n))
for n in sorted(set(tb) - set(ta)):
    bad.append("only in %s: %r" % (sys.argv[2], n))
groups_a, groups_b = {}, {}
for n in sorted(set(ta) & set(tb)):
    x, y = ta[n], tb[n]
    fields = ["st_mode", "st_uid", "st_gid", "st_mtime_ns", "st_ctime_ns", "st_nlink"]
    if not stat.S_ISDIR(x.st_mode):
        fields.append("st_size")
    if stat.S_ISCHR(x.st_mode) or stat.S_ISBLK(x.st_mode):
        fields.append("st_rdev")
    for k in fields:
        if getattr(x, k) != getattr(y, k):
            bad.append("%r: %s %r != %r" % (n, k, getattr(x, k), getattr(y, k)))
    pa, pb = os.path.join(a, n), os.path.join(b, n)
    if stat.S_ISLNK(x.st_mode) and stat.S_ISLNK(y.st_mode) and os.readlink(pa) != os.readlink(pb):
        bad.append("%r: target %r != %r" % (n, os.readlink(pa), os.readlink(pb)))
    if stat.S_ISREG(x.st_mode) and stat.S_ISREG(y.st_mode) and not same_content(pa, pb):
        bad.append("%r: content differs" % n)
    if not stat.S_ISDIR(x.st_mode):
        groups_a.setdefault(x.st_ino, []).append(n)
        groups_b.setdefault(y.st_ino, []).append(n)
ga = sorted(sorted(g) for g in groups_a.values() if len(g) > 1)
gb = sorted(sorted(g) for g in groups_b.values() if len(g) > 1)
if ga != gb:
    bad.append("hard link groups: %r != %r" % (ga, gb))
for line in bad[:20]:
    print("DIFF " + line, file=sys.stderr)
print("%d entries compared, %d differences" % (len(ta), len(bad)))
sys.exit(1 if bad else 0)
EOF
cmp_trees() {
	timeout 600 python3 "$T/cmp.py" "$1" "$2"
}

# The tree, on a tmpfs of its own (holes as holes, devices allowed).
S=$T/src
mount_tmpfs "$S" || { fail "tmpfs"; finish; exit 1; }
mkdir -p "$S/d/sub/deeper" "$S/sticky" "$S/setgid" "$S/empty dir"
: >"$S/d/empty"
printf 'hello\n' >"$S/d/small"
printf 'two\nlines\n' >"$S/d/lines"
head -c 70000 /dev/urandom >"$S/d/binary" # random: literal content, several lines
printf 'nul\000byte\377\n' >"$S/d/nul"
yes 'chainfs pattern line' | head -c 8388608 >"$S/big"
truncate -s 64M "$S/sparse"
printf 'start' | dd of="$S/sparse" conv=notrunc status=none
printf 'middle' | dd of="$S/sparse" bs=1 seek=5000000 conv=notrunc status=none
printf 'end' | dd of="$S/sparse" bs=1 seek=67108861 conv=notrunc status=none
truncate -s 1G "$S/hole"
for n in "with space" "$(printf 'new\nline')" 'quo"te' "sin'gle" 'back\slash' \
	"$(printf 'tab\there')" "$(printf 'high\377byte')" '-dash' '#hash' '=eq'; do
	printf '%s\n' "$n" >"$S/d/$n"
done
ln -s ../small "$S/d/sub/rel"
ln -s /etc/passwd "$S/abs"
ln -s nowhere/at/all "$S/dangling"
ln -s self "$S/self"
ln -s pair2 "$S/pair1"
ln -s pair1 "$S/pair2"
ln -s d/sub "$S/todir"
ln -s "$(printf 'odd target\nwith "quotes"')" "$S/oddlink"
ln "$S/d/small" "$S/d/sub/small.hard"
ln "$S/d/small" "$S/small.hard2"
ln -P "$S/d/sub/rel" "$S/d/sub/rel.hard" # a hard link of the symlink itself
mkfifo "$S/fifo"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$S/sock"
mknod "$S/null" c 1 3
mknod "$S/blk" b 7 200
chmod 4755 "$S/d/small"
chmod 1777 "$S/sticky"
chmod 2775 "$S/setgid"
chmod 0 "$S/d/lines"
chmod 0500 "$S/d/sub/deeper"
chown 65534:65534 "$S/d/binary" "$S/setgid"
chown -h 65534:1 "$S/abs"
touch -d '1999-12-31 23:59:59.123456789' "$S/d/nul" "$S/d/sub"
touch -h -d '2001-02-03 04:05:06' "$S/self" "$S/fifo" "$S/null"
touch -d '1980-01-01' "$S/d"

"$CHAINFS" --spec-from "$S" >"$T/src.spec" 2>"$T/err"
rc=$?
check "spec-from of the tree exits 0" test $rc -eq 0
check "and says nothing" test ! -s "$T/err"
[ -s "$T/err" ] && head -5 "$T/err" >&2
check "a big file of one repeated line is a pattern" \
	grep -q '^file /big size=8388608 pattern="chainfs pattern line\\n"' "$T/src.spec"
check "holes stay holes (the spec is small)" test "$(wc -c <"$T/src.spec")" -lt 400000
check "a 1 GiB hole is a truncate" grep -q '^truncate /hole 1073741824$' "$T/src.spec"
# reading moves no atime but a link's (readlink has no O_NOATIME)
"$CHAINFS" --spec-from "$S" >"$T/src2.spec" 2>/dev/null
for f in src src2; do
	sed '/^link /s/ atime=[0-9.]*//' "$T/$f.spec" >"$T/$f.noatime"
done
same_output "two readings of one tree" "$T/src.noatime" "$T/src2.noatime"

mount_cfs "$T/m" -o abslinks=raw "$T/src.spec" || fail "mount the spec"
cmp_trees "$S" "$T/m" >"$T/out"
rc=$?
cat "$T/out"
check "kernel mode: the mount answers as the tree" test $rc -eq 0
unmount_cfs "$T/m"
for mode in collapse server; do
	mount_cfs "$T/m" -o follow=$mode "$T/src.spec" || fail "mount the spec, $mode"
	check "$mode mode: a file through a link" \
		test "$(cat "$T/m/d/sub/rel")" = hello
	check "$mode mode: the sparse file's end" test "$(tail -c 3 "$T/m/sparse")" = end
	unmount_cfs "$T/m"
done

# What cannot be read, as uid 65534: named, status 1, the rest written.
U=$T/src-u
mkdir -m 755 "$U"
mount_tmpfs "$U/mnt" || fail "inner tmpfs"
mkdir -m 755 "$U/a" "$U/locked" "$U/rdonly" "$U/zz"
printf 'x\n' >"$U/locked/inside"
printf 'secret\n' >"$U/secret"
printf 'ok\n' >"$U/ok"
printf 'x\n' >"$U/rdonly/x"
printf 'later\n' >"$U/zz/later"
: >"$U/.^"
chmod 600 "$U/secret"
chmod 000 "$U/locked"
chmod 444 "$U/rdonly" # listed, not searchable: its entries fail, the walk goes back up
$NOBODY "$CHAINFS" --spec-from "$U" >"$T/u.spec" 2>"$T/uerr"
rc=$?
check "unreadable entries: exit 1" test $rc -eq 1
for what in "$U/locked: open" "$U/secret: open" "$U/rdonly/x: stat" "$U/mnt: a mount point" \
	"$U/.^: left out"; do
	check "named on stderr: $what" grep -qF "chainfs: spec-from: $what" "$T/uerr"
done
check "every message is one of those five" test "$(wc -l <"$T/uerr")" -eq 5
check "the rest is written" grep -q '^file /ok "ok\\n"' "$T/u.spec"
check "after a directory not searchable" grep -q '^file /zz/later "later\\n"' "$T/u.spec"
check "an unreadable directory is kept, empty" grep -q '^dir /locked mode=0000' "$T/u.spec"
check "a mount point is kept, empty" grep -q '^dir /mnt ' "$T/u.spec"
check "an unreadable file is left out" not_grep '/secret' "$T/u.spec"
mount_cfs "$T/m" "$T/u.spec" || fail "the partial spec mounts"
check "the partial spec mounts" test -f "$T/m/zz/later"
unmount_cfs "$T/m"

# DIR itself a link: refused, nothing written.
ln -s "$S" "$T/srclink"
"$CHAINFS" --spec-from "$T/srclink" >"$T/l.spec" 2>"$T/lerr"
rc=$?
check "a link as DIR: exit 1" test $rc -eq 1
check "a link as DIR: said" grep -q "srclink: a symbolic link" "$T/lerr"
check "a link as DIR: no spec" test ! -s "$T/l.spec"
"$CHAINFS" --spec-from "$T/nosuch" >/dev/null 2>&1
check "a missing DIR: exit 1" test $? -eq 1
"$CHAINFS" --spec-from >/dev/null 2>&1
check "no DIR: usage, exit 2" test $? -eq 2

# The default tree, read back from its own mount, mounts as itself.
mount_cfs "$T/d1" -o abslinks=raw || fail "mount the default tree"
timeout 600 "$CHAINFS" --spec-from "$T/d1" >"$T/d.spec" 2>"$T/derr"
rc=$?
check "spec-from of the default tree's mount exits 0" test $rc -eq 0
check "and says nothing" test ! -s "$T/derr"
mount_cfs "$T/d2" -o abslinks=raw "$T/d.spec" || fail "mount its spec"
cmp_trees "$T/d1" "$T/d2" >"$T/out"
rc=$?
cat "$T/out"
check "the default tree round-trips" test $rc -eq 0
unmount_cfs "$T/d2"
unmount_cfs "$T/d1"
finish
