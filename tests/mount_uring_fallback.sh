#!/bin/sh
# -o transport=auto falls back to /dev/fuse, with one log line saying why, when FUSE's
# enable_uring module parameter is off; -o transport=uring then mounts nothing and says why
# (a clear error rather than a silent /dev/fuse mount: who asks for the ring wants to know).
# The parameter is put back as it was by lib.sh's cleanup, even on failure.
# check: once: it picks its transports itself
# check: alone: it turns the enable_uring module parameter off
. "$(dirname "$0")/lib.sh"

if [ ! -e "$URING_PARAM" ]; then
	echo "$TEST_NAME: skipped: this kernel has no FUSE over io_uring ($URING_PARAM)"
	exit 0
fi
M=$T/mnt
S=$T/ctl.sock
says() { # says PATTERN: the transport section of `stats` has a line matching it
	timeout 30 "$CTL" -s "$S" stats | sed -n '/^transport:/,/^[^ ]/p' | grep -q "$1"
}
fallbacks() { grep -c "transport auto: serving over /dev/fuse" "$M.log"; }

uring_param N || { fail "cannot set $URING_PARAM"; finish; exit 1; }
mount_cfs "$M" -o "transport=auto,ctl=$S" || { fail "auto mount with the parameter off"; finish; exit 1; }
expect "ok file" stat "$M/chains/40"
check "auto with the parameter off: stats says dev" says 'live  *dev$'
check "... and why" says 'fallback .*enable_uring is N'
check "one log line says why ($(fallbacks))" test "$(fallbacks)" -eq 1
unmount_cfs "$M"

mkdir -p "$T/u"
timeout 30 "$CHAINFS" -f -o transport=uring,ctl=none "$T/u" >"$T/u.err" 2>&1
st=$?
check "transport=uring with the parameter off: no mount (status $st)" test $st -eq 1
check "... and says why" grep -q "transport=uring: .*enable_uring is N" "$T/u.err"
check "... nothing mounted" not mountpoint -q "$T/u"

uring_param Y
rm -f "$M.log"
mount_cfs "$M" -o "transport=auto,ctl=$S" || { fail "auto mount with the parameter on"; finish; exit 1; }
expect "ok file" stat "$M/chains/40"
check "auto with the parameter on: stats says uring" says 'live  *uring$'
check "... and no fallback line" test "$(fallbacks)" -eq 0
unmount_cfs "$M"
rm -f "$M.log"
mount_cfs "$M" -o "transport=auto,loop=libfuse" || { fail "auto mount, libfuse's loop"; finish; exit 1; }
expect "ok file" stat "$M/chains/40"
check "auto with libfuse's loop: one line says it serves /dev/fuse" test "$(fallbacks)" -eq 1
check "... and why" grep -q "only -o loop=pollcore serves a ring" "$M.log"
unmount_cfs "$M"
finish
