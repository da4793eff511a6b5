#!/bin/sh
# fuse-mount.sh on a shared host: its pid and log files live in a private state directory
# (ours, mode 0700, not a link), a pid is signalled only when it is still the chainfs daemon
# started for that mountpoint, and a log is never written through a planted link.
. "$(dirname "$0")/lib.sh"

M=$T/mnt
M2=$T/mnt2
ST=$T/state
mkdir -p "$M" "$M2"
mkdir -m 700 "$ST"
MOUNTS="$MOUNTS $M $M2"
export CHAINFS_STATE_DIR=$ST

is_mounted() {
	awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts
}
alive() {
	kill -0 "$1" 2>/dev/null
}
start_time() {
	sed -n 's/.*) //p' "/proc/$1/stat" | cut -d' ' -f20
}
# a process that is not chainfs, to plant in pidfiles
sleep 300 &
VICTIM=$!
PIDS="$PIDS $VICTIM"

# Mount and unmount as ever; the daemon is gone after -u.
check "mount" mount_cfs "$M"
expect ok stat "$M/chains/5"
pid=$("$FUSE_MOUNT" --pid "$M")
check "--pid names the daemon" test "$(readlink "/proc/$pid/exe")" = "$CHAINFS"
check "-u" "$FUSE_MOUNT" -u "$M"
check "unmounted" not is_mounted "$M"
check "the daemon is gone" wait_for gone "$pid"
check "--run" "$FUSE_MOUNT" --run 'test -L "$MNT/chains/5"'

# The old predictable /tmp names are not used: a link planted as the log is not followed, a
# pid planted there is not signalled.
key=$(printf '%s' "$M" | cksum | cut -d' ' -f1)
echo precious >"$T/victim"
ln -sf "$T/victim" "/tmp/chainfs-$key.log"
(unset XDG_RUNTIME_DIR CHAINFS_STATE_DIR CHAINFS_LOG && "$FUSE_MOUNT" "$M")
check "mount with a link planted at the old log name" is_mounted "$M"
echo "$VICTIM" >"/tmp/chainfs-$key.pid"
(unset XDG_RUNTIME_DIR CHAINFS_STATE_DIR && "$FUSE_MOUNT" -u "$M")
check "a planted log link is not followed" test "$(cat "$T/victim")" = precious
check "a planted pid is not signalled" alive "$VICTIM"
rm -f "/tmp/chainfs-$key.log" "/tmp/chainfs-$key.pid"
# that mount kept its log in the default state directory (root, no XDG_RUNTIME_DIR)
rm -f "/run/chainfs/$key.log"

# CHAINFS_LOG as a link: refused, nothing mounted, the file behind it untouched.
ln -s "$T/victim" "$T/log.link"
CHAINFS_LOG=$T/log.link "$FUSE_MOUNT" "$M" 2>"$T/err"
check "CHAINFS_LOG a link: refused" test $? -eq 1
check "CHAINFS_LOG a link: the message says so" grep -q "symbolic link" "$T/err"
check "CHAINFS_LOG a link: nothing mounted" not is_mounted "$M"
check "CHAINFS_LOG a link: untouched" test "$(cat "$T/victim")" = precious

# A state directory others could write to, or a link: refused.
mkdir -m 755 "$T/open"
ln -s "$ST" "$T/st.link"
for d in "$T/open" "$T/st.link"; do
	CHAINFS_STATE_DIR=$d "$FUSE_MOUNT" "$M" 2>"$T/err"
	check "state dir $d: refused" test $? -eq 1
	check "state dir $d: the message says so" grep -q "mode 0700" "$T/err"
	check "state dir $d: nothing mounted" not is_mounted "$M"
done

# A pidfile of ours holding a foreign pid (even with its right start time), or the daemon of
# another mountpoint: -u still clears the stale mount and signals neither.
check "mount a neighbour" mount_cfs "$M2"
other=$("$FUSE_MOUNT" --pid "$M2")
for planted in "$VICTIM $(start_time "$VICTIM")" "$other $(start_time "$other")"; do
	check "mount again" mount_cfs "$M"
	pid=$("$FUSE_MOUNT" --pid "$M")
	kill -9 "$pid"
	check "the killed daemon is gone" wait_for gone "$pid"
	echo "$planted" >"$ST/$key.pid"
	check "-u with pidfile '$planted'" "$FUSE_MOUNT" -u "$M"
	check "-u with pidfile '$planted': unmounted" not is_mounted "$M"
done
check "the foreign process lives" alive "$VICTIM"
check "the neighbour's daemon lives" alive "$other"
check "the neighbour is still mounted" is_mounted "$M2"
expect ok stat "$M2/chains/5"
check "--pid refuses a pidfile that is not the daemon's" not "$FUSE_MOUNT" --pid "$M" 2>/dev/null
unmount_cfs "$M2"
check "the neighbour unmounts" not is_mounted "$M2"
finish
