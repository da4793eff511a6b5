#!/bin/sh
# What tmpfs does beyond plain reads and writes, compared outcome by outcome with a tmpfs in
# every follow mode: fallocate in each mode (the ones tmpfs takes, and EOPNOTSUPP for the
# others), then SEEK_DATA/SEEK_HOLE walks of the files it left, ENOSPC from fallocate on a
# mount of 1 MiB as on a tmpfs of 1 MiB; O_TMPFILE and linkat, as root and as uid 65534.
. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
# a python3 any uid may run (the first in PATH may be a root-only shim)
PY_ANY=$(command -v /usr/bin/python3 || command -v python3)

# holes DIR: fallocate and lseek stories on DIR, one outcome a line
holes() {
	timeout 60 python3 - "$1" <<'PY'
import ctypes, errno, hashlib, os, sys
d = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
KEEP, PUNCH, COLLAPSE, ZERO, INSERT, UNSHARE = 1, 2, 8, 0x10, 0x20, 0x40
def falloc(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) == 0:
        return "ok"
    return errno.errorcode[ctypes.get_errno()]
def seek(fd, off, whence):
    try:
        return os.lseek(fd, off, whence)
    except OSError as e:
        return errno.errorcode[e.errno]
def walk(fd):
    """the runs of data SEEK_DATA and SEEK_HOLE find from 0, and the answers past the end"""
    size, runs, at = os.fstat(fd).st_size, [], 0
    while at < size:
        s = seek(fd, at, os.SEEK_DATA)
        if not isinstance(s, int):
            break
        e = seek(fd, s, os.SEEK_HOLE)
        runs.append("%d-%d" % (s, e))
        at = e
    tail = [seek(fd, size + k, w) for k in (0, 1, 4096) for w in (os.SEEK_DATA, os.SEEK_HOLE)]
    return "runs %s past %s" % (" ".join(runs) or "-", tail)
def show(name, fd):
    st = os.fstat(fd)
    data = os.pread(fd, st.st_size, 0) if st.st_size < 1 << 24 else b""
    print(name, "size", st.st_size, "blocks", st.st_blocks,
          "md5", hashlib.md5(data).hexdigest()[:8], walk(fd))
def fresh(name, written=((0, 20000),)):
    fd = os.open(os.path.join(d, name), os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    for off, n in written:
        os.pwrite(fd, bytes(range(256)) * (n // 256) + b"z" * (n % 256), off)
    return fd
# every mode once on a written file, each on a file of its own
modes = (("plain", 0), ("keep", KEEP), ("punch+keep", PUNCH | KEEP), ("punch", PUNCH),
         ("zero", ZERO), ("zero+keep", ZERO | KEEP), ("collapse", COLLAPSE), ("insert", INSERT),
         ("unshare", UNSHARE), ("unknown", 0x1000))
ranges = ((100, 200), (4096, 8192), (1000, 10000), (16384, 40000), (30000, 5000),
          (0, 1 << 20), (1 << 40, 4096))
for mname, mode in modes:
    for off, n in ranges:
        fd = fresh("m")
        print(mname, off, n, falloc(fd, mode, off, n))
        show("  ", fd)
        os.close(fd)
# a story: preallocate, write into it, punch, extend, truncate
fd = fresh("s", ((0, 3000), (50000, 100), (1 << 30, 10)))
show("sparse", fd)
for step in ((KEEP, 200000, 100000), (0, 1 << 30, 1 << 16), (PUNCH | KEEP, 0, 4096),
             (PUNCH | KEEP, 49152, 8192), (0, 0, 12288), (PUNCH | KEEP, 1 << 30, 1 << 20)):
    print("step", step, falloc(fd, *step))
    show("  ", fd)
os.pwrite(fd, b"w", 250000)
show("wrote into the preallocated range", fd)
os.ftruncate(fd, 230000)
show("truncated into it", fd)
for off in (0, 1, 4095, 4096, 49151, 60000, 229999, 230000, -1):
    print("at", off, seek(fd, off, os.SEEK_DATA), seek(fd, off, os.SEEK_HOLE))
os.close(fd)
# the errnos the kernel checks first, and a file held open while another name punches it
fd = fresh("e")
print("bad", falloc(fd, 0, -1, 10), falloc(fd, 0, 0, 0), falloc(fd, 0, 2**63 - 2, 10))
ro = os.open(os.path.join(d, "e"), os.O_RDONLY)
print("read-only fd", falloc(ro, 0, 0, 10))
os.close(ro)
dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
print("directory", falloc(dfd, 0, 0, 10))
os.close(dfd)
os.close(fd)
PY
}

# tmpfile.py DIR: O_TMPFILE, then linkat: by the fd (AT_EMPTY_PATH, root's) and by its
# /proc/self/fd name (AT_SYMLINK_FOLLOW, anyone's; where /proc is another mount, EXDEV on both)
cat >"$T/tmpfile.py" <<'PY'
import ctypes, errno, os, sys
d = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
def call(f, *a):
    try:
        r = f(*a)
        return "ok" if r is None else r
    except OSError as e:
        return errno.errorcode[e.errno]
def linkfd(fd, path):
    if libc.linkat(fd, b"", -100, path.encode(), 0x1000) == 0:  # AT_EMPTY_PATH
        return "ok"
    return errno.errorcode[ctypes.get_errno()]
def show(what, st):
    print(what, "nlink", st.st_nlink, "mode %o" % st.st_mode, "uid", st.st_uid, "gid", st.st_gid,
          "size", st.st_size)
tag = "uid%d" % os.getuid()
mtime = os.stat(d).st_mtime_ns
fd = call(os.open, d, os.O_TMPFILE | os.O_RDWR, 0o640)
print(tag, "open", fd if isinstance(fd, str) else "ok", "dir mtime kept", os.stat(d).st_mtime_ns == mtime)
if not isinstance(fd, str):
    os.write(fd, b"tmp")
    show(tag + " unnamed", os.fstat(fd))
    print(tag, "listed", sorted(os.listdir(d)))
    print(tag, "link by fd", linkfd(fd, os.path.join(d, tag + ".a")))
    print(tag, "link by /proc", call(os.link, "/proc/self/fd/%d" % fd, os.path.join(d, tag + ".b")))
    print(tag, "again", linkfd(fd, os.path.join(d, tag + ".c")))
    for n in ("a", "b", "c"):
        p = os.path.join(d, "%s.%s" % (tag, n))
        if os.path.exists(p):
            show(tag + " named " + n, os.stat(p))
            print(tag, "reads", open(p, "rb").read())
    os.close(fd)
fd = call(os.open, d, os.O_TMPFILE | os.O_RDWR | os.O_EXCL, 0o600)
if not isinstance(fd, str):
    print(tag, "excl link", linkfd(fd, os.path.join(d, tag + ".x")),
          call(os.link, "/proc/self/fd/%d" % fd, os.path.join(d, tag + ".y")))
    os.close(fd)
fd = call(os.open, d, os.O_TMPFILE | os.O_WRONLY, 0o600)
if not isinstance(fd, str):
    os.write(fd, b"gone")
    os.close(fd)
print(tag, "read-only", call(os.open, d, os.O_TMPFILE | os.O_RDONLY, 0o600))
print(tag, "on a file", call(os.open, os.path.join(d, "uid0.a"), os.O_TMPFILE | os.O_RDWR, 0o600))
print(tag, "missing dir", call(os.open, os.path.join(d, "none"), os.O_TMPFILE | os.O_RDWR, 0o600))
print(tag, "listed at the end", sorted(os.listdir(d)))
PY

# full DIR: fallocate against a 1 MiB limit (all or nothing), with statfs's free blocks
full() {
	timeout 60 python3 - "$1" <<'PY'
import ctypes, errno, os, sys
d = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
def falloc(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) == 0:
        return "ok"
    return errno.errorcode[ctypes.get_errno()]
def state(fd):
    st, sv = os.fstat(fd), os.statvfs(d)
    return "size %d blocks %d bfree %d" % (st.st_size, st.st_blocks, sv.f_bfree)
fd = os.open(os.path.join(d, "big"), os.O_CREAT | os.O_RDWR, 0o644)
for mode, off, n in ((0, 0, 2 << 20), (1, 0, 2 << 20), (0, 0, 512 << 10), (0, 512 << 10, 600 << 10),
                     (1, 0, 1 << 20), (3, 0, 256 << 10), (0, 512 << 10, 256 << 10)):
    print(mode, off, n, falloc(fd, mode, off, n), state(fd))
try:
    os.pwrite(fd, b"x" * 8192, 900 << 10)
    print("write after", state(fd))
except OSError as e:
    print("write after", errno.errorcode[e.errno])
PY
}

# tmpfiles DIR: root's in DIR/t (777), then uid 65534's there and in DIR/r (root's, 755)
tmpfiles() {
	mkdir "$1/t" "$1/r" && chmod 777 "$1/t" && chmod 755 "$1/r"
	timeout 60 python3 "$T/tmpfile.py" "$1/t"
	timeout 60 $NOBODY "$PY_ANY" "$T/tmpfile.py" "$1/t"
	timeout 60 $NOBODY "$PY_ANY" "$T/tmpfile.py" "$1/r"
}

R=$T/ref
mount_tmpfs "$R" || { fail "tmpfs"; finish; exit 1; }
holes "$R" >"$T/holes.tmpfs" 2>&1
check "the story ran to its end on tmpfs" grep -q "^directory " "$T/holes.tmpfs"
check "tmpfs takes punch+keep" grep -q "^punch+keep 100 200 ok" "$T/holes.tmpfs"
check "tmpfs refuses zero range" grep -q "^zero 100 200 ENOTSUP" "$T/holes.tmpfs"
tmpfiles "$R" >"$T/tmpfile.tmpfs" 2>&1
check "tmpfs: an O_TMPFILE file linked by its fd" grep -q "^uid0 link by fd ok" "$T/tmpfile.tmpfs"
check "tmpfs: O_TMPFILE leaves its directory's mtime" grep -q "^uid0 open ok dir mtime kept True" \
	"$T/tmpfile.tmpfs"
check "tmpfs: ... and by uid 65534 in its own directory" grep -q "^uid65534 open ok" \
	"$T/tmpfile.tmpfs"
: >"$T/empty.spec"
for mode in kernel collapse server; do
	M=$T/m-$mode
	mount_cfs "$M" -o "follow=$mode,allow_other" "$T/empty.spec" || { fail "mount $mode"; continue; }
	holes "$M" >"$T/holes.$mode" 2>&1
	chmod 755 "$M"
	tmpfiles "$M" >"$T/tmpfile.$mode" 2>&1
	same_output "$mode mode: O_TMPFILE and linkat as on tmpfs, as root and uid 65534" \
		"$T/tmpfile.tmpfs" "$T/tmpfile.$mode"
	same_output "$mode mode: fallocate and SEEK_DATA/SEEK_HOLE as on tmpfs" \
		"$T/holes.tmpfs" "$T/holes.$mode"
	# (apart, so that a failure names it: a file only written, no fallocate)
	check "$mode: SEEK_DATA/SEEK_HOLE walk a written sparse file as on tmpfs" \
		test "$(grep '^sparse ' "$T/holes.$mode")" = "$(grep '^sparse ' "$T/holes.tmpfs")"
	unmount_cfs "$M"
done

# ENOSPC: a 1 MiB chainfs and a 1 MiB tmpfs
R2=$T/refsmall
mkdir -p "$R2" && mount -t tmpfs -o size=1m,mode=755 chainfs-ref "$R2" && MOUNTS="$MOUNTS $R2"
full "$R2" >"$T/full.tmpfs" 2>&1
check "tmpfs: a fallocate past the limit is ENOSPC" grep -q "^0 0 2097152 ENOSPC" "$T/full.tmpfs"
M=$T/small
if mount_cfs "$M" -o max_data=1M "$T/empty.spec"; then
	full "$M" >"$T/full.cfs" 2>&1
	same_output "max_data=1M: fallocate's ENOSPC as a tmpfs of 1 MiB" "$T/full.tmpfs" "$T/full.cfs"
	unmount_cfs "$M"
else
	fail "mount max_data=1M"
fi
finish
