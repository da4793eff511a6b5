#!/bin/sh
# dump streams: over a tree of 1.5M nodes the loop keeps serving the mount and other clients
# while the spec goes out, the daemon does not hold the reply (its memory stays put), the
# output is complete, and a client that leaves half way ends the dump.
. "$(dirname "$0")/lib.sh"

M=$T/mnt
NODES=1500000
CTL_TIMEOUT=120 # dumps of the big tree
mount_cfs "$M" -o "ctl=$SOCK" || { fail mount; finish; exit 1; }
DPID=$("$FUSE_MOUNT" --pid "$M")
kib() { # kib FIELD: the daemon's /proc status field, in KiB
	awk -v f="$1:" '$1 == f { print $2 }' "/proc/$DPID/status"
}
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$DPID/stat"
}
ms() {
	echo $(($(date +%s%N) / 1000000))
}

check "a wide directory of $NODES files" sh -c \
	"'$CTL' -s '$SOCK' wide /big $NODES prefix=f | grep -q nodes_added"
stat "$M/big/f1" >/dev/null 2>&1
hwm0=$(kib VmHWM)
t0=$(ms)
timeout 300 socat -t 300 - "UNIX-CONNECT:$SOCK" <<EOF2 >"$T/dump.json" &
dump
EOF2
dumper=$!
PIDS="$PIDS $dumper"
worst=0 worst_ping=0 probes=0
while kill -0 "$dumper" 2>/dev/null; do
	a=$(ms)
	stat "$M/README" "$M/big/f$((probes * 7919 % NODES + 1))" >/dev/null
	b=$(ms)
	ctl ping >/dev/null
	c=$(ms)
	[ $((b - a)) -gt "$worst" ] && worst=$((b - a))
	[ $((c - b)) -gt "$worst_ping" ] && worst_ping=$((c - b))
	probes=$((probes + 1))
	sleep 0.05
done
wait "$dumper"
t1=$(ms)
hwm1=$(kib VmHWM)
echo "  dump of $NODES nodes: $((t1 - t0)) ms, $(stat -c %s "$T/dump.json") bytes;" \
	"$probes probes, slowest stat $worst ms, slowest ping $worst_ping ms;" \
	"peak RSS +$(((hwm1 - hwm0) / 1024)) MiB" >&2
check "the dump took long enough to probe ($probes probes)" test "$probes" -ge 5
check "stat during the dump: slowest $worst ms (< 1000)" test "$worst" -lt 1000
check "ping during the dump: slowest $worst_ping ms (< 1000)" test "$worst_ping" -lt 1000
check "the daemon's peak memory grew $(((hwm1 - hwm0) / 1024)) MiB (< 32)" \
	test $((hwm1 - hwm0)) -lt 32768
check "the streamed reply is one whole JSON line with every node" python3 -c '
import json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
assert len(lines) == 2 and lines[1] == b"", len(lines)
r = json.loads(lines[0])
assert r["ok"] is True
spec = r["spec"].splitlines()
assert spec[0].startswith("#") and sum(1 for l in spec if l.startswith("file /big/f")) == int(sys.argv[2]), len(spec)
' "$T/dump.json" "$NODES"

# a client that reads a little and leaves: the daemon stops dumping (its CPU goes quiet)
perl -MIO::Socket::UNIX -e '$SIG{PIPE} = "IGNORE";
	my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!";
	print $s "dump\n"; my $got = 0;
	while ($got < (1 << 20)) { my $n = sysread($s, my $buf, 65536); last unless $n; $got += $n }
	close $s; print "read $got\n";' "$SOCK" >"$T/leave.out" 2>&1
check "the leaving client read its first MiB ($(cat "$T/leave.out"))" grep -q "read 10" "$T/leave.out"
sleep 0.5
c0=$(cpu_ticks)
sleep 2
c1=$(cpu_ticks)
check "after it left the daemon is idle ($((c1 - c0)) ticks in 2 s)" test $((c1 - c0)) -lt 20
check "the mount still answers" sh -c "stat '$M/big/f1' >/dev/null"
check "the socket still answers" sh -c "'$CTL' -s '$SOCK' ping | grep -q version"
unmount_cfs "$M"

finish
