#!/bin/sh
# How a mount begins and ends: signals, external unmount, a killed daemon, a busy mountpoint,
# bad options, fstab through mount.fuse3, and a leak-checked run whose lookup counts all
# return to zero.
. "$(dirname "$0")/lib.sh"

M=$T/mnt
mkdir -p "$M"
MOUNTS="$MOUNTS $M"

is_mounted() {
	awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts
}

# wait_for COND...: up to $wait_s seconds (10 unless set)
wait_s=10
wait_for() {
	i=0
	while ! "$@"; do
		i=$((i + 1))
		[ $i -gt $((wait_s * 10)) ] && return 1
		sleep 0.1
	done
}

lookups_of() { # lookups_of MNT: the kernel's lookups the daemon counts
	timeout 20 "$BUILD/chainfsctl" "$1" stats | awk '$1 == "lookups" { print $2 }'
}
no_lookups() { [ "$(lookups_of "$1")" = 0 ]; }

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

# Under valgrind: mount, walk everything, drop the kernel's caches (it FORGETs what it
# held), unmount. No leak, no error, and every lookup count is back to zero. A tree with
# every generator, small enough for valgrind's pace.
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
if command -v valgrind >/dev/null; then
	G_MESSAGES_DEBUG=chainfs valgrind -q --leak-check=full --errors-for-leak-kinds=definite \
		--error-exitcode=99 "$CHAINFS" -f -o follow=server,max_total=100 "$T/vg.spec" "$M" \
		2>"$T/vg.log" &
	PID=$!
	PIDS="$PIDS $PID"
	wait_s=120
	if wait_for is_mounted "$M"; then
		timeout 300 find "$M" >/dev/null 2>&1
		timeout 300 ls -lR "$M" >/dev/null 2>&1
		timeout 60 cat "$M/chains/50" "$M/nest/12" >/dev/null
		sync
		echo 2 >/proc/sys/vm/drop_caches
		# the kernel's forgets follow drop_caches: wait on the daemon's own count
		wait_s=30
		wait_for no_lookups "$M" || echo "  lookups left: $(lookups_of "$M")" >&2
		fusermount3 -u "$M"
	fi
	wait "$PID"
	st=$?
	check "valgrind: clean exit (status $st)" test "$st" -eq 0
	check "valgrind: lookup counts back to zero" grep -q " 0 lookups outstanding" "$T/vg.log"
	[ "$st" -eq 0 ] || tail -30 "$T/vg.log" >&2
else
	fail "valgrind is not installed (make deps installs it)"
fi

finish
