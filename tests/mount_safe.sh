#!/bin/sh
# Mounts that cannot hurt the host, however they are made: chainfs mounts only on a directory;
# fuse-mount.sh refuses a second mount on a mountpoint before touching the first one's pid and
# log; every mount is nosuid,nodev (direct, fuse-mount.sh, mount -t fuse through mount.fuse3)
# unless -o suid / -o dev ask otherwise; fuse-mount.sh -u unmounts chainfs mounts only, and
# any name, spaces and newlines included.
. "$(dirname "$0")/lib.sh"

M=$T/m
ST=$T/state
mkdir -m 700 "$ST"
export CHAINFS_STATE_DIR=$ST
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
# mount.fuse3's option list: the suite's transport, no control socket, open to uid 65534
MF_OPTS=allow_other,ctl=none${CHAINFS_TRANSPORT:+,transport=$CHAINFS_TRANSPORT}
# a mountpoint named with a space and a newline; lib.sh's MOUNTS splits on both
NL="$T/a b
c"
trap 'umount -l "$NL" 2>/dev/null; cleanup' EXIT

# mflags MNT: the mount's own flags (mountinfo field 6), e.g. rw,nosuid,nodev,relatime
mflags() {
	awk -v m="$1" '$5 == m { f = $6 } END { print f }' /proc/self/mountinfo
}
is_mounted() {
	awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo
}
has_flag() {
	case ",$(mflags "$1")," in *",$2,"*) return 0 ;; esac
	return 1
}
# daemon_of MNT: the pid of the chainfs whose argument list holds MNT (mount.fuse3's daemons
# run in the background; we wait for them to end)
daemon_of() {
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$CHAINFS" ] || continue
		tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qxF "$1" && echo "${p#/proc/}"
	done
}
gone() {
	! kill -0 "$1" 2>/dev/null || [ "$(sed -n 's/.*) //p' "/proc/$1/stat" | cut -c1)" = Z ]
}
# mf_mount MNT OPTS: through mount(8) and mount.fuse3, as an fstab line does
mf_mount() {
	mkdir -p "$1"
	MOUNTS="$MOUNTS $1"
	mount -t fuse "$CHAINFS#@default" "$1" -o "$2"
}
mf_umount() {
	d=$(daemon_of "$1")
	umount "$1" && { [ -z "$d" ] || wait_for gone "$d"; }
}

# `chainfs SPEC` (no mountpoint) or any file as the mountpoint: refused, the file
# intact, nothing mounted.
printf 'file /f "x"\n' >"$T/spec"
cp "$T/spec" "$T/spec.orig"
MOUNTS="$MOUNTS $T/spec $T/spec.orig" # unmounted at the end should chainfs mount on them
# shellcheck disable=SC2086
timeout 20 "$CHAINFS" $TRANSPORT_OPTS -o ctl=none "$T/spec" 2>"$T/err"
check "chainfs SPEC without a mountpoint: exit non-zero" test $? -ne 0
check "... says the mountpoint is not a directory" grep -q "not a directory" "$T/err"
check "... the spec file is intact" cmp -s "$T/spec" "$T/spec.orig"
check "... nothing mounted on it" not is_mounted "$T/spec"
# shellcheck disable=SC2086
timeout 20 "$CHAINFS" $TRANSPORT_OPTS -o ctl=none "$T/spec" "$T/spec.orig" 2>"$T/err"
check "chainfs SPEC FILE: exit non-zero" test $? -ne 0
check "... the file is intact" cmp -s "$T/spec" "$T/spec.orig"
check "... nothing mounted on it" not is_mounted "$T/spec.orig"

# A second fuse-mount.sh on a mounted mountpoint: refused before starting, the first
# one's pidfile and log untouched, its daemon still serving.
check "mount" mount_cfs "$M"
key=$(printf '%s' "$M" | cksum | cut -d' ' -f1)
pid1=$("$FUSE_MOUNT" --pid "$M")
cp "$ST/$key.pid" "$T/pid.before"
echo "first mount's log" >>"$M.log"
cp "$M.log" "$T/log.before"
CHAINFS_LOG=$M.log "$FUSE_MOUNT" "$M" 2>"$T/err"
check "a second fuse-mount.sh on a chainfs mount: exit non-zero" test $? -ne 0
check "... says it is a mount point" grep -q "already a mount point" "$T/err"
check "... the pidfile is the first one's" cmp -s "$ST/$key.pid" "$T/pid.before"
check "... its log is untouched" cmp -s "$M.log" "$T/log.before"
check "... --pid names the first daemon" test "$("$FUSE_MOUNT" --pid "$M")" = "$pid1"
expect ok stat "$M/chains/5"
CHAINFS_LOG=$T/second.log "$FUSE_MOUNT" -o follow=server "$M" 2>/dev/null
check "a second mount with its own log: refused too" test $? -ne 0
check "... and started nothing" test ! -e "$T/second.log"
check "-u" "$FUSE_MOUNT" -u "$M"
# Another mount made there while the daemon builds its tree: the daemon then fails ("already
# a mount point"); fuse-mount.sh must say so, not take the other mount's answer for its own.
printf 'wide /w 400000\n' >"$T/big.spec"
"$FUSE_MOUNT" -o ctl=none "$T/big.spec" "$M" 2>"$T/err" &
fm=$!
wait_for test -s "$ST/$key.pid"
mount_tmpfs "$M"
wait "$fm"
check "a mount made meanwhile by another: fuse-mount.sh fails" test $? -ne 0
check "... saying chainfs exited" grep -q "chainfs exited" "$T/err"
check "... the pidfile is gone" test ! -e "$ST/$key.pid"
umount "$M"

# nosuid,nodev by default on every path in; -o suid / -o dev turn each on.
D=$T/direct
mkdir -p "$D"
MOUNTS="$MOUNTS $D"
for o in "" suid dev suid,dev; do
	# shellcheck disable=SC2086
	"$CHAINFS" $TRANSPORT_OPTS -o ctl=none${o:+,$o} "$D" || fail "chainfs -o '$o'"
	case ,$o, in *,suid,*) want=not ;; *) want= ;; esac
	check "chainfs -o '$o': nosuid is ${want:-on}" $want has_flag "$D" nosuid
	case ,$o, in *,dev,*) want=not ;; *) want= ;; esac
	check "chainfs -o '$o': nodev is ${want:-on}" $want has_flag "$D" nodev
	umount "$D"
done
check "fuse-mount.sh: mount" mount_cfs "$M"
check "fuse-mount.sh: nosuid" has_flag "$M" nosuid
check "fuse-mount.sh: nodev" has_flag "$M" nodev
"$FUSE_MOUNT" -u "$M"
check "fuse-mount.sh -o suid,dev: mount" mount_cfs "$M" -o suid,dev
check "fuse-mount.sh -o suid,dev: suid" not has_flag "$M" nosuid
check "fuse-mount.sh -o suid,dev: dev" not has_flag "$M" nodev
"$FUSE_MOUNT" -u "$M"

# mount -t fuse "chainfs#SPEC" (the fstab line): mount.fuse3 adds dev,suid to the options; the
# mount is nosuid,nodev all the same, so a device node cannot reach the host's device and a
# set-uid root copy of id(1) does not run as root for uid 65534.
F=$T/fstab
check "mount -t fuse" mf_mount "$F" "$MF_OPTS"
check "mount -t fuse: nosuid" has_flag "$F" nosuid
check "mount -t fuse: nodev" has_flag "$F" nodev
# secure_tries RESULT MNT: what a device node and a set-uid root program do there
secure_tries() {
	mknod "$2/null" c 1 3 && chmod 666 "$2/null" || fail "mknod on $2"
	if sh -c "echo hi >'$2/null'" 2>/dev/null; then dev=opens; else dev=refused; fi
	cp /usr/bin/id "$2/id" && chmod 4755 "$2/id" || fail "a set-uid copy on $2"
	euid=$($NOBODY "$2/id" -u)
	eval "$1='$dev euid=$euid'"
}
secure_tries got "$F"
check "mount -t fuse: the device node is not opened, id runs as 65534 ($got)" \
	test "$got" = "refused euid=65534"
check "mount -t fuse: unmounted" mf_umount "$F"
# mount.fuse3 run by hand passes the user's own words: suid,dev there turn them on
mkdir -p "$F"
/usr/sbin/mount.fuse3 "$CHAINFS#@default" "$F" -o "$MF_OPTS,suid,dev" || fail "mount.fuse3 -o suid,dev"
check "mount.fuse3 -o suid,dev: suid" not has_flag "$F" nosuid
check "mount.fuse3 -o suid,dev: dev" not has_flag "$F" nodev
# the same tries, to show they can tell: here the node opens the host's /dev/null and id runs
# as root
secure_tries got "$F"
check "mount.fuse3 -o suid,dev: the node opens, id runs as root ($got)" \
	test "$got" = "opens euid=0"
check "mount.fuse3 -o suid,dev: unmounted" mf_umount "$F"

# -u touches chainfs mounts only: a tmpfs is refused, and stays mounted and whole.
TM=$T/tmpfs
mount_tmpfs "$TM"
echo keep >"$TM/file"
"$FUSE_MOUNT" -u "$TM" 2>"$T/err"
check "-u on a tmpfs: exit non-zero" test $? -ne 0
check "... says it is not chainfs's" grep -q "not chainfs's" "$T/err"
check "... the tmpfs is still mounted" is_mounted "$TM"
check "... with its file" test "$(cat "$TM/file")" = keep
# a busy tmpfs is not detached lazily either
(cd "$TM" && sleep 30) &
busy=$!
PIDS="$PIDS $busy"
"$FUSE_MOUNT" -u "$TM" 2>/dev/null
check "-u on a busy tmpfs: exit non-zero" test $? -ne 0
check "... still mounted" is_mounted "$TM"
kill "$busy"
umount "$TM"

# -u of a directory that is not mounted: exit non-zero, with a message.
mkdir -p "$T/plain"
"$FUSE_MOUNT" -u "$T/plain" 2>"$T/err"
check "-u on a plain directory: exit non-zero" test $? -ne 0
check "... says it is not mounted" grep -q "not mounted" "$T/err"

# A mountpoint named with a space and a newline mounts, answers --pid, and -u unmounts it and
# stops its daemon.
mkdir -p "$NL"
check "mount on a name with a space and a newline" "$FUSE_MOUNT" "$NL"
check "... mounted" test -e "$NL/chains/5"
nlpid=$("$FUSE_MOUNT" --pid "$NL")
check "... --pid names the daemon" test "$(readlink "/proc/$nlpid/exe")" = "$CHAINFS"
check "... -u" "$FUSE_MOUNT" -u "$NL"
check "... unmounted" test ! -e "$NL/chains"
check "... the daemon is gone" wait_for gone "$nlpid"
finish
