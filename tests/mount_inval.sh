#!/bin/sh
# Kernel cache invalidations: none is sent to a nodeid the kernel forgot and got back as
# another kind (libfuse would log "writing device: Not a directory" for each), and the
# control commands that invalidate answer once the kernel's caches were dropped.
# check: long: walks of the default tree under flips
. "$(dirname "$0")/lib.sh"

M=$T/mnt
stat_of() { # stat_of KEY: that number from `stats`
	ctl stats | awk -v k="$1" '$1 == k { print $2 }'
}

# --- stale invalidations are dropped, failures are counted ------------------------------------
# A walk in server mode gives ~190k path nodeids; a namespace change queues an invalidation
# for each, and while they drain a second walk makes the kernel forget nodeids that the daemon
# hands out again (in a slot's reuse a directory's nodeid may come back as a file's).
mount_cfs "$M" -o "follow=server,ctl=$SOCK,opens=answer" || { fail mount; finish; exit 1; }
timeout 120 du -sL "$M" >/dev/null 2>&1
n=$(stat_of path_nodeids)
check "the walk left path nodeids ($n)" test "${n:-0}" -gt 1000
for i in 1 2 3; do
	mkdir "$M/x$i"
	timeout 120 du -sL "$M" >/dev/null 2>&1
done
ctl mode collapse >/dev/null
timeout 120 du -sL "$M" >/dev/null 2>&1
# `mode` answers once every invalidation queued before it was delivered (or dropped)
ctl mode server >/dev/null
check "invalidations were dropped as stale ($(stat_of invalidations_stale))" \
	test "$(stat_of invalidations_stale)" -gt 0
check "no invalidation was lost ($(stat_of invalidations_lost))" \
	test "$(stat_of invalidations_lost)" -eq 0
check "libfuse logged no refused invalidation ($(grep -c 'writing device' "$M.log"))" \
	not_grep "writing device" "$M.log"
unmount_cfs "$M"

# --- mode and limits answer once the kernel's caches were dropped ---------------------------
# With hour-long timeouts the kernel keeps every entry it got; walks in the background keep
# it holding ~100k nodes, each to invalidate at every change, and requests coming while the
# invalidations go out. Right after `mode` answers, lstat of
# a link shows what the new mode shows (kernel: a link; server: the file it leads to), and
# after `limits`, a chain of 42 resolves or not as the new limit says.
mount_cfs "$M" -o "follow=kernel,ctl=$SOCK,entry_timeout=3600,attr_timeout=3600" ||
	{ fail mount; finish; exit 1; }
timeout 120 find "$M" >/dev/null 2>&1
# made last, so its invalidation is among the last queued (they go in handle order)
mkdir "$M/late" && ln -s ../README "$M/late/l" && ln -s ../chains/41 "$M/late/c41"
(while :; do find "$M" >/dev/null 2>&1; done) &
PIDS="$PIDS $!"
# One process makes the requests and syscalls of the flips (each `ctl` a connection of its own
# with its request line, `stat -c %F` a statx of the type, cfs-probe a stat), in their order,
# and prints how many answers were wrong: the mode flips', then the limit flips'.
FLIPS='
import ctypes, errno, os, socket, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_NO_AUTOMOUNT, STATX_TYPE = -100, 0x100, 0x800, 0x1
sock, late = sys.argv[1], sys.argv[2]
buf = ctypes.create_string_buffer(256)

def ctl(req):  # as chainfsctl: connect, the line, one line back
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(sock)
        s.sendall(req.encode() + b"\n")
        got = b""
        while b"\n" not in got:
            more = s.recv(65536)
            if not more:
                raise OSError("%s: connection closed" % req)
            got += more

def kind(p):  # what stat -c %F says
    if libc.statx(AT_FDCWD, p.encode(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, buf):
        return os.strerror(ctypes.get_errno())
    m = int.from_bytes(buf.raw[28:30], "little")  # stx_mode
    return {stat.S_IFREG: "regular file", stat.S_IFLNK: "symbolic link",
            stat.S_IFDIR: "directory"}.get(stat.S_IFMT(m), "other")

def probe(p):  # how cfs-probe stat P begins: ok or the errno
    try:
        os.stat(p)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, "E%d" % e.errno)

bad = [0, 0]
for i in range(1, 21):
    for mode, want in (("server", "regular file"), ("kernel", "symbolic link")):
        ctl("mode " + mode)
        k = kind(late + "/l")
        if k != want:
            bad[0] += 1
            print("  %s #%d: %s" % (mode, i, k), file=sys.stderr)
ctl("mode server")
for i in range(1, 21):
    ctl("limits total=41")  # late/c41 and the 41 of chains/41: 42 links
    bad[1] += probe(late + "/c41") != "ELOOP"
    ctl("limits total=42")
    bad[1] += probe(late + "/c41") != "ok"
print(bad[0], bad[1])
'
bad=$(timeout 600 python3 -c "$FLIPS" "$SOCK" "$M/late") || fail "the flips ran to their end"
bad_limits=${bad#* }
bad=${bad% *}
check "20 mode flips under load: each next lstat saw the new mode ($bad wrong)" test "$bad" -eq 0
check "20 limit flips under load: each next stat saw the new limit ($bad_limits wrong)" \
	test "$bad_limits" -eq 0
unmount_cfs "$M"

finish
