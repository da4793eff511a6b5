#!/bin/sh
# Sparse files as large as tmpfs takes them: writes at 2^31, 2^40 and next to the largest
# offset (the kernel's MAX_LFS_FILESIZE, 2^63 - 1) read back with holes as zeros, with the
# sizes and st_blocks a tmpfs gives; -o max_data gives ENOSPC as a tmpfs of that size does,
# leaves what is written intact, and statfs counts it the same way.
. "$(dirname "$0")/lib.sh"

M=$T/mnt
REF=$T/ref
SPEC=$T/empty.spec
echo "dir / mode=0755" >"$SPEC"
mount_cfs "$M" "$SPEC" || { fail "mount"; finish; exit 1; }
mount_tmpfs "$REF" || { fail "tmpfs"; finish; exit 1; }

# Print what a program sees on directory $1: pwrite results, sizes, blocks and read-backs.
sparse_story() {
	timeout 60 python3 - "$1" <<'PY'
import errno, os, sys
d = sys.argv[1]
top = 2**63 - 1
def attempt(f, *a):
    try:
        return f(*a)
    except OSError as e:
        return errno.errorcode[e.errno]
for name, off, data in (("a31", 2**31 + 1, b"a"), ("a40", 2**40, b"forty"),
                        ("top", top - 3, b"xyz"), ("over", top - 1, b"cut"),
                        ("past", top, b"p"), ("mid", 5000, b"m" * 9000)):
    p = os.path.join(d, name)
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    print(name, "pwrite", attempt(os.pwrite, fd, data, off))
    st = os.fstat(fd)
    print(name, "size", st.st_size, "blocks", st.st_blocks)
    for at in (0, 4096, off - 4, off, st.st_size // 2):
        if 0 <= at < st.st_size:
            print(name, "read", at, attempt(os.pread, fd, min(12, st.st_size - at), at))
    os.close(fd)
# truncate: shrink into a page, grow past it, write again
p = os.path.join(d, "mid")
os.truncate(p, 6000)
os.truncate(p, 2**40)
st = os.stat(p)
print("mid truncated size", st.st_size, "blocks", st.st_blocks)
with open(p, "rb") as f:
    f.seek(5990)
    print("mid tail", f.read(20))
PY
}
sparse_story "$M" >"$T/story.mnt" 2>&1
sparse_story "$REF" >"$T/story.ref" 2>&1
same_output "writes, sizes, blocks and holes against tmpfs" "$T/story.mnt" "$T/story.ref"
check "the story covers every case" test "$(grep -c . "$T/story.mnt")" -ge 30
check "a write at 2^31 succeeds (no 1 GiB cap)" grep -q "^a31 pwrite 1$" "$T/story.mnt"
# the kernel itself refuses a write whose end passes 2^63 - 1 (pos + count overflows)
check "a write across the largest offset is EINVAL" grep -q "^past pwrite EINVAL$" "$T/story.mnt"
check "a write ending at the largest offset works" grep -q "^top size 9223372036854775807 blocks 8$" \
	"$T/story.mnt"
unmount_cfs "$M"

# The data limit: a 1 MiB chainfs and a 1 MiB tmpfs run out at the same byte.
M2=$T/small
REF2=$T/refsmall
mount_cfs "$M2" -o max_data=1M "$SPEC" || { fail "mount max_data=1M"; finish; exit 1; }
mkdir -p "$REF2" && mount -t tmpfs -o size=1m,mode=755 chainfs-ref "$REF2" &&
	MOUNTS="$MOUNTS $REF2"

full_story() {
	timeout 60 python3 - "$1" <<'PY'
import errno, os, sys
d = sys.argv[1]
def attempt(f, *a):
    try:
        return f(*a)
    except OSError as e:
        return errno.errorcode[e.errno]
def statfs():
    s = os.statvfs(d)
    return "bsize %d blocks %d bfree %d bavail %d" % (s.f_bsize, s.f_blocks, s.f_bfree, s.f_bavail)
print("empty", statfs())
with open(os.path.join(d, "keep"), "wb") as f:
    f.write(b"k" * 10000)
print("keep", statfs())
fd = os.open(os.path.join(d, "big"), os.O_CREAT | os.O_WRONLY, 0o644)
print("write 2M", attempt(os.write, fd, b"b" * (2 << 20)))
print("write more", attempt(os.write, fd, b"b"))
print("write far", attempt(os.pwrite, fd, b"b", 2**40))
os.close(fd)
print("full", statfs())
st = os.stat(os.path.join(d, "big"))
print("big size", st.st_size, "blocks", st.st_blocks)
with open(os.path.join(d, "keep"), "rb") as f:
    print("keep intact", f.read() == b"k" * 10000)
with open(os.path.join(d, "big"), "rb") as f:
    data = f.read()
    print("big intact", data == b"b" * len(data))
os.unlink(os.path.join(d, "big"))
# a FUSE daemon frees an unlinked file when the kernel forgets it, just after the unlink
import time
for _ in range(100):
    if os.statvfs(d).f_bfree > 0:
        break
    time.sleep(0.05)
print("freed", statfs())
with open(os.path.join(d, "again"), "wb") as f:
    print("write after unlink", f.write(b"a" * 8192))
PY
}
full_story "$M2" >"$T/full.mnt" 2>&1
full_story "$REF2" >"$T/full.ref" 2>&1
same_output "ENOSPC and statfs against a tmpfs of the same size" "$T/full.mnt" "$T/full.ref"
# 1 MiB less the 3 pages of "keep"
check "the 2 MiB write stops at the limit" grep -q "^write 2M 1036288$" "$T/full.mnt"
check "then ENOSPC" grep -q "^write more ENOSPC$" "$T/full.mnt"
unmount_cfs "$M2"

# A malformed max_data is refused with a message, and nothing is mounted.
M3=$T/bad
mkdir -p "$M3"
out=$("$CHAINFS" -o max_data=12Q "$SPEC" "$M3" 2>&1)
rc=$?
check "max_data=12Q exits 2" test "$rc" -eq 2
check "max_data=12Q says why" test -n "$(echo "$out" | grep 'max_data=12Q: expected a size')"
check "max_data=12Q mounts nothing" not grep -q " $M3 " /proc/mounts

finish
