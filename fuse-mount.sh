#!/bin/sh
# fuse-mount.sh — mount, unmount and script chainfs.
#
#   fuse-mount.sh [chainfs options] [SPEC] MOUNTPOINT   mount; return once the mount answers
#   fuse-mount.sh -u MOUNTPOINT                         unmount (also a stale, dead mount)
#   fuse-mount.sh --run 'COMMAND' [chainfs options] [SPEC]
#                    mount on a fresh temp dir, run COMMAND with $MNT set, unmount, exit
#                    with COMMAND's status
#
# Environment: CHAINFS (the binary; default: build/chainfs here, built if needed),
# CHAINFS_TIMEOUT (seconds to wait for the mount, default 10), CHAINFS_LOG (daemon log).
set -u

here=$(cd "$(dirname "$0")" && pwd)
timeout=${CHAINFS_TIMEOUT:-10}

die() {
	echo "fuse-mount.sh: $*" >&2
	exit 1
}

chainfs_bin() {
	if [ -n "${CHAINFS:-}" ]; then
		echo "$CHAINFS"
		return
	fi
	if [ ! -x "$here/build/chainfs" ] || [ -n "$(find "$here/fusefs" "$here/resolver" \
		"$here/pollcore" -newer "$here/build/chainfs" -name '*.[ch]' 2>/dev/null | head -1)" ]; then
		make -s -C "$here" all >&2 || die "build failed"
	fi
	echo "$here/build/chainfs"
}

is_mounted() {
	# /proc/mounts escapes spaces as \040; compare the canonical path the same way
	m=$(printf '%s' "$1" | sed 's/ /\\040/g')
	awk -v m="$m" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
}

pidfile_of() {
	key=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
	echo "${XDG_RUNTIME_DIR:-/tmp}/chainfs-$key.pid"
}

unmount() {
	mnt=$(cd "$1" 2>/dev/null && pwd -P) || mnt=$1
	pidfile=$(pidfile_of "$mnt")
	if is_mounted "$mnt"; then
		# a dead daemon leaves a mount that answers ENOTCONN: a plain unmount still works;
		# a busy one is detached lazily so the caller is never stuck
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null ||
			umount -l "$mnt" 2>/dev/null || die "cannot unmount $mnt"
	fi
	if [ -f "$pidfile" ]; then
		pid=$(cat "$pidfile")
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt $((timeout * 10)) ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
		rm -f "$pidfile"
	fi
	return 0
}

# mount ARGS...: the last argument is the mountpoint
mount_fs() {
	[ $# -ge 1 ] || die "usage: fuse-mount.sh [chainfs options] [SPEC] MOUNTPOINT"
	eval "mnt=\${$#}"
	[ -d "$mnt" ] || die "$mnt: not a directory"
	mnt=$(cd "$mnt" && pwd -P)
	bin=$(chainfs_bin) || exit 1
	log=${CHAINFS_LOG:-${XDG_RUNTIME_DIR:-/tmp}/chainfs-$(printf '%s' "$mnt" | cksum | cut -d' ' -f1).log}
	pidfile=$(pidfile_of "$mnt")
	: >"$log"
	setsid "$bin" -f "$@" </dev/null >>"$log" 2>&1 &
	pid=$!
	i=0
	while [ $i -lt $((timeout * 10)) ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			st=$?
			cat "$log" >&2
			die "chainfs exited with status $st before the mount answered"
		fi
		if is_mounted "$mnt" && stat "$mnt/." >/dev/null 2>&1; then
			echo "$pid" >"$pidfile"
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	kill "$pid" 2>/dev/null
	echo "$pid" >"$pidfile"
	unmount "$mnt"
	cat "$log" >&2
	die "$mnt: no answer within ${timeout}s; stopped the daemon"
}

run_cmd() {
	[ $# -ge 1 ] || die "usage: fuse-mount.sh --run 'COMMAND' [chainfs options] [SPEC]"
	cmd=$1
	shift
	MNT=$(mktemp -d "${TMPDIR:-/tmp}/chainfs.XXXXXX") || die "mktemp failed"
	export MNT
	trap 'unmount "$MNT"; rmdir "$MNT" 2>/dev/null' EXIT
	trap 'exit 130' INT TERM
	mount_fs "$@" "$MNT" || exit 1
	sh -c "$cmd"
	return $?
}

case "${1:-}" in
-u)
	[ $# -eq 2 ] || die "usage: fuse-mount.sh -u MOUNTPOINT"
	unmount "$2"
	;;
--run)
	shift
	run_cmd "$@"
	exit $?
	;;
-h | --help | "")
	sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
	[ -n "${1:-}" ]
	;;
*)
	mount_fs "$@"
	;;
esac
