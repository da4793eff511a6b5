#!/bin/sh
# Crash safety: a client killed while its request is held back by a delay fault, and the
# daemon killed with SIGKILL in the middle of a find.
# check: long: daemons killed under load, one after the other
. "$(dirname "$0")/lib.sh"

M=$T/mnt
SOCK=$T/ctl.sock
pidof_mount() {
	"$FUSE_MOUNT" --pid "$1"
}
has_ping() { "$CTL" -s "$SOCK" ping >/dev/null 2>&1; }

# A reader killed while its request waits 1.5 s in the daemon: the request is answered (or
# dropped) later without harm, and everything else keeps working meanwhile. An OPEN (the
# kernel sends those only with -o opens=answer), then a READ (sent in any case).
held_request() { # OP FILE
	"$CTL" -s "$SOCK" fault add op=$1 path=/$2 delay=1500 >/dev/null
	cat "$M/$2" >/dev/null 2>&1 &
	victim=$!
	check "$1: the request reached the daemon's delay" wait_for held_once
	kill -9 $victim
	expect "ok file" stat "$M/README"
	expect ok cat "$M/README"
	# a request the daemon has read is waited for even by a killed caller: the reader ends
	# when the held request has been answered
	check "$1: the killed reader ends once its held request ran" wait_for gone $victim
	wait $victim 2>/dev/null
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
check "the find is under way" wait_for served "$SOCK" 300
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
unmount_cfs "$M"

# SIGTERM while links are changed in one directory: the notifier may be in the kernel, waiting
# for that directory's lock, held by a caller whose request only the daemon answers. The
# daemon keeps answering until the notifier has left, and exits. 20 rounds, SIGTERM once the
# daemon has served 100 of the changes' requests, 5 s for it to end; the workers stop at a
# flag file and are killed with their children whatever happens.
S=$T/stop
SS=$T/stop.sock
hung=0
wait_s=5
for round in $(seq 20); do
	mkdir -p "$S"
	rm -f "$T/halt"
	# shellcheck disable=SC2086 # lib.sh: "" or two words
	"$CHAINFS" -f $TRANSPORT_OPTS -o "follow=server,ctl=$SS" "$S" 2>>"$T/stop.log" &
	daemon=$!
	PIDS="$PIDS $daemon"
	wait_for mountpoint -q "$S" || fail "round $round: mounted"
	mkdir -p "$S/d/sub"
	(
		while [ ! -e "$T/halt" ]; do
			ln -sfn sub "$S/d/l"; mv "$S/d/l" "$S/d/l2"; touch "$S/d/f"; ls "$S/d"
		done >/dev/null 2>&1
	) &
	workers=$!
	(
		while [ ! -e "$T/halt" ]; do
			stat -L "$S/d/l2"; mkdir "$S/d/x"; rmdir "$S/d/x"
		done >/dev/null 2>&1
	) &
	workers="$workers $!"
	PIDS="$PIDS $workers"
	wait_for served "$SS" 100 || fail "round $round: the changes are served"
	kill -TERM "$daemon"
	wait_for gone "$daemon" || hung=$((hung + 1))
	touch "$T/halt"
	for w in $workers; do
		pkill -9 -P "$w" 2>/dev/null
		kill -9 "$w" 2>/dev/null
	done
	fusermount3 -u -z "$S" 2>/dev/null
	kill -9 "$daemon" 2>/dev/null
	wait "$daemon" $workers 2>/dev/null
done
wait_s=10
check "SIGTERM during changes: the daemon ends every time ($hung of 20 hung)" test "$hung" -eq 0
finish
