#!/bin/sh
# How a mount begins and ends: signals, external unmount, a killed daemon, a busy mountpoint,
# bad options, fstab through mount.fuse3, and a leak-checked run whose lookup counts all
# return to zero.
# check: alone: it drops the kernel's caches (drop_caches), which others count on
. "$(dirname "$0")/lib.sh"

M=$T/mnt
mkdir -p "$M"
MOUNTS="$MOUNTS $M"


lookups_of() { # lookups_of MNT | -s SOCKET: the kernel's lookups the daemon counts
	timeout 20 "$CTL" "$@" stats | awk '$1 == "lookups" { print $2 }'
}
no_lookups() { [ "$(lookups_of "$@")" = 0 ]; }

not() {
	! "$@"
}

# start_fg [options]: chainfs -f in the background; sets PID once the mount answers
start_fg() {
	"$CHAINFS" -f "$@" "$M" 2>>"$T/daemon.log" &
	PID=$!
	PIDS="$PIDS $PID"
	wait_for is_mounted "$M" && stat "$M/." >/dev/null
}

# stops_with SIGNAL: the daemon unmounts and exits 0
stops_with() {
	start_fg || { fail "mount for $1"; return; }
	kill "-$1" "$PID"
	wait "$PID"
	st=$?
	check "SIG$1: exit status 0 (got $st)" test "$st" -eq 0
	check "SIG$1: unmounted" not is_mounted "$M"
}
stops_with TERM
stops_with INT

start_fg || fail "mount for fusermount3 -u"
fusermount3 -u "$M"
wait "$PID"
st=$?
check "fusermount3 -u ends the daemon with status 0 (got $st)" test "$st" -eq 0
check "fusermount3 -u: unmounted" not is_mounted "$M"

# A killed daemon leaves a dead mount; fuse-mount.sh -u clears it and a new mount works.
start_fg || fail "mount for SIGKILL"
kill -KILL "$PID"
wait "$PID" 2>/dev/null
expect ENOTCONN stat "$M/chains"
check "fuse-mount.sh -u clears a dead mount" "$FUSE_MOUNT" -u "$M"
check "dead mount gone" not is_mounted "$M"
check "a new mount works after a crash" mount_cfs "$M"
expect ok stat "$M/chains/40"

# Mounting over a live mount is refused, and the first mount keeps serving.
"$CHAINFS" "$M" 2>"$T/busy.err"
st=$?
check "busy mountpoint refused (status $st)" test "$st" -eq 1
check "busy mountpoint message" grep -q "already a mount point" "$T/busy.err"
check "only one mount" test "$(awk -v m="$M" '$2 == m' /proc/mounts | wc -l)" -eq 1
expect ok stat "$M/chains/40"
unmount_cfs "$M"

# A control socket chainfs cannot have: in the background too, a message on the caller's
# terminal, status 1, nothing mounted (the daemon listens before it mounts and forks).
for ctl in "$T/no/such/dir/sock" "$T/busy.err"; do
	"$CHAINFS" -o "ctl=$ctl" "$M" 2>"$T/ctl.err"
	st=$?
	check "-o ctl=$ctl: status 1 (got $st)" test "$st" -eq 1
	check "-o ctl=$ctl: the message names it" grep -q -F "control socket $ctl" "$T/ctl.err"
	check "-o ctl=$ctl: nothing mounted" not is_mounted "$M"
	is_mounted "$M" && fusermount3 -u "$M"
done
check "a file in the way is left alone" grep -q "already a mount point" "$T/busy.err"

# Bad options: a clear message, status 2, nothing mounted.
# bad_option OPTION: -o OPTION is refused and the message names it
bad_option() {
	"$CHAINFS" -o "$1" "$M" 2>"$T/opt.err"
	st=$?
	check "-o $1: status 2 (got $st)" test "$st" -eq 2
	check "-o $1: the message names it" grep -q -F -e "$1" "$T/opt.err"
	check "-o $1: nothing mounted" not is_mounted "$M"
}
bad_option follow=sideways
bad_option max_nest=lots
bad_option max_total=-1
bad_option max_total=10000000000
bad_option entry_timeout=soon
bad_option abslinks=maybe
bad_option spin=fast
bad_option spin=1000001
bad_option no_such_option
check "--help exits 0" "$CHAINFS" --help >/dev/null
check "--version names chainfs" sh -c "'$CHAINFS' --version | grep -q chainfs"

# -o spin: the loop's busy-poll window, shown by `stats`; 0 never spins, the default (50 us)
# spins after requests, or declines to when every CPU has work.
# pc STAT: that pollcore figure from `stats` of the mount at $M
pc() {
	timeout 30 "$BUILD/chainfsctl" -s "$T/ctl.sock" stats |
		awk -v k="$1" '/^pollcore:/ { s = 1; next } /^[a-z]/ { s = 0 } s && $1 == k { print $2 }'
}
for spin in 0 default; do
	opt="ctl=$T/ctl.sock"
	[ $spin = 0 ] && opt="$opt,spin=0"
	check "mount with spin=$spin" mount_cfs "$M" -o "$opt"
	find "$M/tree" -maxdepth 3 >/dev/null
	tried=$(($(pc spins) + $(pc spin_skips)))
	if [ $spin = 0 ]; then
		check "spin=0: stats shows it" test "$(pc spin_us)" = 0
		check "spin=0: never spun ($tried)" test "$tried" -eq 0
	else
		check "default spin is 50 us" test "$(pc spin_us)" = 50
		check "default: a walk spins or declines to ($tried)" test "$tried" -gt 0
		check "spin hits are spins" test "$(pc spin_hits)" -le "$(pc spins)"
	fi
	unmount_cfs "$M"
done

# /etc/fstab style, through mount.fuse3: TYPE#SOURCE with @default for the embedded tree.
check "mount -t fuse chainfs#@default" mount -t fuse "$CHAINFS#@default" "$M" -o follow=kernel
expect ok stat "$M/chains/40"
check "umount of the fstab mount" umount "$M"

# Under valgrind: mount, walk everything, go through every control path (error paths
# included), drop the kernel's caches (it FORGETs what it held), unmount. No leak (definite,
# indirect or possible), no error, and every lookup count is back to zero. A tree with every
# generator, small enough for valgrind's pace. Over the ring too, in the uring stage.
cat >"$T/vg.spec" <<EOF
file /target "end\n"
chain /chains/50 50 /target
nest /nest/12 12 /target
loop /loops/self 1
loop /loops/ring 5
link /dangling ../nowhere
link /abs /target
dir /wide
tree /tree depth=3 fanout=8 files=40% links=20% seed=7
EOF
vctl() { timeout 120 "$CTL" -s "$T/vg.sock" "$@" >>"$T/vg.ctl" 2>&1; }
# Each control command with the status chainfsctl must end with, between walks that meet
# what the commands set: fault rules of every kind and refused ones, a recording and a
# refused one, mode and limit switches, spec lines good and bad, a dump, a client that
# leaves in the middle of a dump and one that sends garbage.
valgrind_control() {
	while read -r want cmd; do
		case $want in
		walk) eval "$cmd" >/dev/null 2>&1 ;;
		*)
			eval "vctl $cmd"
			got=$?
			check "valgrind: chainfsctl $cmd: status $want ($got)" test "$got" -eq "$want"
			;;
		esac
	done <<-EOF
		0 fault add op=read path=/target errno=EIO
		0 fault add op=getattr path=/wide errno=ENOENT prob=0.5 seed=3
		0 fault add op=readlink path=/chains/* delay=20
		1 fault add op=write path=/target short=1
		1 fault add op=bogus path=/x errno=EIO
		1 fault add op=read path=/target short=0
		walk cat "$M/target"; stat "$M/wide" "$M/wide"; readlink "$M/chains/50"
		0 fault list
		0 fault log
		0 fault remove 1
		1 fault remove 99
		0 fault clear
		0 record start "$T/vg.rec"
		walk find "$M/tree"; mkdir "$M/nd"; touch "$M/nd/f"; mv "$M/nd/f" "$M/nd/g"; rm -r "$M/nd"
		0 record stop
		1 record start /nonexistent/dir/rec
		0 mode collapse
		walk stat -L "$M/chains/50"; ls -lR "$M"
		0 mode kernel
		walk find -L "$M/tree"
		0 mode server
		1 mode sideways
		0 limits nest=3 total=10
		1 limits total=nope
		0 limits nest=40 total=100
		1 resolve /loops/ring/x
		0 'file "/x y/new" "hi\\n"'
		0 'chain /c2/30 30 /target'
		1 'link /broken'
		0 dump
	EOF
	# shellcheck disable=SC2016
	timeout 10 perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die;
		print $s "dump\n"; sysread($s, $b, 64)' "$T/vg.sock"
	printf 'garbage \001\n' | timeout 10 socat - "UNIX-CONNECT:$T/vg.sock" >/dev/null
	check "valgrind: serving after a client left mid-dump and one sent garbage" vctl ping
	check "valgrind: the recording has lines" test -s "$T/vg.rec"
	check "valgrind: a spec line through the socket" test "$(cat "$M/x y/new")" = hi
}
if command -v valgrind >/dev/null; then
	# shellcheck disable=SC2086
	G_MESSAGES_DEBUG=chainfs valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
		--errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 "$CHAINFS" -f \
		-o "follow=server,max_total=100,ctl=$T/vg.sock" $TRANSPORT_OPTS "$T/vg.spec" "$M" \
		2>"$T/vg.log" &
	PID=$!
	PIDS="$PIDS $PID"
	wait_s=120
	if wait_for is_mounted "$M"; then
		timeout 300 find "$M" >/dev/null 2>&1
		timeout 300 ls -lR "$M" >/dev/null 2>&1
		timeout 60 cat "$M/chains/50" "$M/nest/12" >/dev/null
		valgrind_control
		sync
		echo 2 >/proc/sys/vm/drop_caches
		# the kernel's forgets follow drop_caches: wait on the daemon's own count
		wait_s=30
		wait_for no_lookups -s "$T/vg.sock" ||
			echo "  lookups left: $(lookups_of -s "$T/vg.sock")" >&2
		fusermount3 -u "$M"
	fi
	wait "$PID"
	st=$?
	check "valgrind: clean exit (status $st)" test "$st" -eq 0
	check "valgrind: lookup counts back to zero" grep -q " 0 lookups outstanding" "$T/vg.log"
	[ "$st" -eq 0 ] || grep -v "debug: ring entry" "$T/vg.log" | tail -60 >&2
else
	fail "valgrind is not installed (make deps installs it)"
fi

finish
