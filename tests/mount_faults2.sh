#!/bin/sh
# Faults, part 2 (issue 34), in every follow mode (and over io_uring with
# CHAINFS_TRANSPORT=uring): a program that maps a file shared works while a rule stands.
# Mounts take -o opens=answer, so that opens reach the daemon (and, under a rule, come back
# with direct I/O).
. "$(dirname "$0")/lib.sh"

cat >"$T/spec" <<'SPEC'
file /x "hello\n" mode=0644
file /m "mapped\n" mode=0644
dir /d
SPEC

# mapped FILE: map FILE shared, read and write through the map; prints what the map held,
# or the errno's name
mapped() {
	timeout 30 python3 - "$1" <<'PY'
import errno, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
except OSError as e:
    print(errno.errorcode[e.errno])
    sys.exit(0)
print(m[:].decode().strip())
m[:6] = b"MAPPED"
m.flush()
m.close()
os.close(fd)
PY
}
# transport KEY: that member of `stats`' transport
transport() {
	raw stats | python3 -c 'import json, sys; print(json.load(sys.stdin)["transport"].get(sys.argv[1], -1))' "$1"
}

for mode in kernel collapse server; do
	M=$T/m.$mode
	SOCK=$T/$mode.sock
	mount_cfs "$M" -o "ctl=$SOCK,follow=$mode,opens=answer" "$T/spec" ||
		{ fail "$mode: mount"; continue; }

	# --- a shared map while an unrelated rule stands -----------------------------------------
	ctl fault add op=getattr path=/nothing errno=EIO >/dev/null
	check "$mode: the kernel took FUSE_DIRECT_IO_ALLOW_MMAP ($(transport direct_io_mmap))" \
		test "$(transport direct_io_mmap)" = True
	out=$(mapped "$M/m")
	check "$mode: MAP_SHARED works while a rule stands ($out)" test "$out" = mapped
	check "$mode: ... and what was written through the map is stored" \
		test "$(cat "$M/m")" = MAPPED
	ctl fault add op=read path=/x errno=EIO >/dev/null
	check "$mode: ... while reads still reach the rules, one by one" not cat "$M/x" 2>/dev/null
	check "$mode: ... every one" not cat "$M/x" 2>/dev/null
	ctl fault clear >/dev/null

	unmount_cfs "$M"
done
finish
