#!/bin/sh
# Crash safety: a client killed while its request is held back by a delay fault, and the
# daemon killed with SIGKILL in the middle of a find.
. "$(dirname "$0")/lib.sh"

CTL=$BUILD/chainfsctl
M=$T/mnt
SOCK=$T/ctl.sock
pidof_mount() {
	cat "${XDG_RUNTIME_DIR:-/tmp}/chainfs-$(printf '%s' "$1" | cksum | cut -d' ' -f1).pid"
}
has_ping() { "$CTL" -s "$SOCK" ping >/dev/null 2>&1; }

# A reader killed while its request waits 1.5 s in the daemon: the request is answered (or
# dropped) later without harm, and everything else keeps working meanwhile. An OPEN (the
# kernel sends those only with -o opens=answer), then a READ (sent in any case).
held_request() { # OP FILE
	"$CTL" -s "$SOCK" fault add op=$1 path=/$2 delay=1500 >/dev/null
	cat "$M/$2" >/dev/null 2>&1 &
	victim=$!
	sleep 0.3
	kill -9 $victim
	wait $victim 2>/dev/null
	expect "ok file" stat "$M/README"
	expect ok cat "$M/README"
	sleep 1.5
	check "$1: the daemon answers after the held request ran" has_ping
	"$CTL" -s "$SOCK" fault clear >/dev/null
}
mount_cfs "$M" -o "ctl=$SOCK,opens=answer" || { fail mount; finish; exit 1; }
held_request open chains/target
expect "ok 33" cat "$M/chains/target"
unmount_cfs "$M"
mount_cfs "$M" -o "ctl=$SOCK" || { fail mount; finish; exit 1; }
held_request read files/hello
expect "ok 33" cat "$M/chains/target"

# SIGKILL during a find: the find gets ENOTCONN, not a hang; fuse-mount.sh -u clears the
# dead mount and a new mount works.
timeout 60 find "$M/tree" >/dev/null 2>"$T/find.err" &
finder=$!
sleep 1
kill -9 "$(pidof_mount "$M")"
wait $finder
st=$?
check "find ends when the daemon dies (status $st, not a timeout)" test $st -ne 124
check "find reports ENOTCONN" grep -q "Transport endpoint is not connected" "$T/find.err"
# (what the kernel still holds in its caches it may answer itself; a new name cannot be)
expect ENOTCONN stat "$M/wide/f9999"
check "fuse-mount.sh -u clears the dead mount" "$FUSE_MOUNT" -u "$M"
check "a stale socket is left for the next daemon to replace" test -S "$SOCK"
check "a new mount works" mount_cfs "$M" -o "ctl=$SOCK"
expect "ok file" stat "$M/chains/40"
check "its control socket answers" has_ping
finish
