#!/bin/sh
# fuse-mount.sh — mount, unmount and script chainfs.
#
#   fuse-mount.sh [chainfs options] [SPEC] MOUNTPOINT   mount; return once the mount answers
#   fuse-mount.sh -u MOUNTPOINT                         unmount (also a stale, dead mount)
#   fuse-mount.sh --run 'COMMAND' [chainfs options] [SPEC]
#                    mount on a fresh temp dir, run COMMAND with $MNT set, unmount, exit
#                    with COMMAND's status
#   fuse-mount.sh --run 'COMMAND' --stats-out FILE [chainfs options] [SPEC]
#                    the same, and FILE gets {"delta", "before", "after"}: `chainfsctl
#                    stats --json` before and after COMMAND, every number of delta being
#                    after minus before (python3); a latency's quantiles are those of
#                    its subtracted buckets, its max null
#   fuse-mount.sh --pid MOUNTPOINT                      the pid of the daemon serving it
#
# Installed by make install as chainfs-mount, it runs the chainfs beside it.
# Environment: CHAINFS (the binary; default: build/chainfs here, built if needed),
# CHAINFS_TIMEOUT (seconds to wait for the mount, default 10), CHAINFS_LOG (daemon log;
# default: in the state directory), CHAINFS_STATE_DIR (where pid and log files live; default
# $XDG_RUNTIME_DIR/chainfs, /run/chainfs for root, /tmp/chainfs-UID; it must be a directory
# of yours, not a link, with mode 0700, or it is refused).
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
	# installed (make install: chainfs-mount beside chainfs), not in a source tree
	if [ ! -d "$here/fusefs" ] && [ -x "$here/chainfs" ]; then
		echo "$here/chainfs"
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

# The state directory: made 0700 when missing, refused unless it is a real directory of ours
# that nobody else can write, so no one can plant a pid or a link in it.
state_dir() {
	d=${CHAINFS_STATE_DIR:-}
	if [ -z "$d" ]; then
		if [ -n "${XDG_RUNTIME_DIR:-}" ]; then
			d=$XDG_RUNTIME_DIR/chainfs
		elif [ "$(id -u)" = 0 ]; then
			d=/run/chainfs
		else
			d=/tmp/chainfs-$(id -u)
		fi
	fi
	[ -e "$d" ] || [ -L "$d" ] || mkdir -m 700 "$d" 2>/dev/null
	if [ -L "$d" ] || [ ! -d "$d" ] || [ "$(stat -c '%u %a' "$d")" != "$(id -u) 700" ]; then
		die "$d: not a directory of yours with mode 0700; refusing to keep state there"
	fi
	echo "$d"
}

key_of() {
	printf '%s' "$1" | cksum | cut -d' ' -f1
}

# start_time PID: the process's start time (field 22 of /proc/PID/stat; the name in field 2
# may hold spaces and parentheses, so count from the last ')'). Empty if there is none.
start_time() {
	sed -n 's/.*) //p' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20
}

# is_our_daemon PID START MNT: PID is still the chainfs we started for MNT: the same process
# (start time), ours, a chainfs binary, serving MNT (its last argument). Never signal others.
is_our_daemon() {
	case "$1" in '' | *[!0-9]* | 0 | 1) return 1 ;; esac
	[ -n "$2" ] && [ "$(start_time "$1")" = "$2" ] || return 1
	[ "$(stat -c %u "/proc/$1" 2>/dev/null)" = "$(id -u)" ] || return 1
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	case "${exe% (deleted)}" in */chainfs) ;; *) return 1 ;; esac
	[ "$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | tail -n 1)" = "$3" ]
}

# read_pidfile FILE: sets pid and started from a pidfile of ours ("PID START"), else fails
read_pidfile() {
	[ -f "$1" ] && [ ! -L "$1" ] && [ -O "$1" ] || return 1
	read -r pid started _ <"$1" || return 1
}

# stop_daemon PID START MNT: wait for the daemon to end after its unmount; if it does not,
# SIGTERM, then SIGKILL, each only while it is still verifiably ours
stop_daemon() {
	for sig in 0 TERM KILL; do
		[ "$sig" = 0 ] || { is_our_daemon "$1" "$2" "$3" && kill -s "$sig" "$1" 2>/dev/null; }
		i=0
		while is_our_daemon "$1" "$2" "$3" && [ $i -lt $((timeout * 10)) ]; do
			sleep 0.1
			i=$((i + 1))
		done
		is_our_daemon "$1" "$2" "$3" || return 0
	done
}

unmount() {
	mnt=$(cd "$1" 2>/dev/null && pwd -P) || mnt=$1
	dir=$(state_dir) || exit 1
	pidfile=$dir/$(key_of "$mnt").pid
	if is_mounted "$mnt"; then
		# a dead daemon leaves a mount that answers ENOTCONN: a plain unmount still works;
		# a busy one is detached lazily so the caller is never stuck
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null ||
			umount -l "$mnt" 2>/dev/null || die "cannot unmount $mnt"
	fi
	if read_pidfile "$pidfile"; then
		stop_daemon "$pid" "$started" "$mnt"
	fi
	rm -f "$pidfile"
	return 0
}

# open_log FILE: fd 3 writes the daemon's log to FILE, created afresh (O_EXCL: never through
# a link planted there); a device such as /dev/null is appended to.
open_log() {
	[ -L "$1" ] && die "$1: a symbolic link; refusing to write the log through it"
	if [ -e "$1" ] && [ ! -f "$1" ]; then
		[ -c "$1" ] || die "$1: neither a regular file nor a device"
		command exec 3>>"$1" || die "$1: cannot open"
		return
	fi
	if [ -e "$1" ]; then
		[ -O "$1" ] || die "$1: not your file; refusing to replace it"
		rm -f "$1" || die "$1: cannot replace"
	fi
	set -C
	command exec 3>"$1" || die "$1: cannot create (something was put there meanwhile?)"
	set +C
}

# mount ARGS...: the last argument is the mountpoint
mount_fs() {
	[ $# -ge 1 ] || die "usage: fuse-mount.sh [chainfs options] [SPEC] MOUNTPOINT"
	eval "mnt=\${$#}"
	[ -d "$mnt" ] || die "$mnt: not a directory"
	mnt=$(cd "$mnt" && pwd -P)
	bin=$(chainfs_bin) || exit 1
	dir=$(state_dir) || exit 1
	key=$(key_of "$mnt")
	log=${CHAINFS_LOG:-$dir/$key.log}
	pidfile=$dir/$key.pid
	open_log "$log"
	# the daemon gets the canonical mountpoint, which -u and --pid look for in its cmdline
	n=$#
	for a; do
		n=$((n - 1))
		if [ $n -eq 0 ]; then set -- "$@" "$mnt"; else set -- "$@" "$a"; fi
	done
	shift $(($# / 2))
	setsid "$bin" -f "$@" </dev/null >&3 2>&3 3>&- &
	pid=$!
	exec 3>&-
	# the pidfile exists from the start, so that -u finds a daemon that never answered
	started=
	i=0
	while [ -z "$started" ] && [ $i -lt 50 ]; do
		started=$(start_time "$pid")
		i=$((i + 1))
	done
	rm -f "$pidfile"
	(set -C && echo "$pid $started" >"$pidfile") || die "$pidfile: cannot create"
	i=0
	while [ $i -lt $((timeout * 10)) ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			st=$?
			rm -f "$pidfile"
			cat "$log" >&2
			die "chainfs exited with status $st before the mount answered"
		fi
		if is_mounted "$mnt" && stat "$mnt/." >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	unmount "$mnt"
	cat "$log" >&2
	die "$mnt: no answer within ${timeout}s; stopped the daemon"
}

# stats_json FILE: the mount's stats as one JSON line, through the chainfsctl beside chainfs
stats_json() {
	ctl=$(dirname "$(chainfs_bin)")/chainfsctl
	timeout 60 "$ctl" "$MNT" --json stats >"$1" || die "stats of $MNT failed"
}

# stats_delta BEFORE AFTER OUT: numbers subtracted member by member (arrays element by
# element); strings and booleans are after's; a latency histogram's quantiles are those of
# its subtracted buckets, and its maximum null (the interval's own is not known)
stats_delta() {
	command -v python3 >/dev/null || die "--stats-out needs python3"
	python3 - "$1" "$2" "$3" <<'PY' || die "$3: cannot write the stats delta"
import json, math, sys
def quantile(buckets, count, q):
    # as the daemon's: the top of the bucket holding the rank (bucket i: below 2^i ns)
    want, seen = max(1, math.ceil(q * count)), 0
    for i, n in enumerate(buckets):
        seen += n
        if seen >= want:
            return (1 << i) - 1 if i else 0
    return None
def hist(a, b):
    # a latency histogram's delta: counts subtract; quantiles come from the subtracted
    # buckets; the maximum of the interval alone is not known (null)
    d = {k: sub(v, b.get(k)) for k, v in a.items()}
    d["log2_buckets"] = [v - (b["log2_buckets"][i] if i < len(b["log2_buckets"]) else 0)
                         for i, v in enumerate(a["log2_buckets"])]
    for k, q in (("p50_ns", 0.5), ("p99_ns", 0.99)):
        d[k] = quantile(d["log2_buckets"], d["count"], q) if d["count"] else 0
    d["max_ns"] = None
    return d
def sub(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a
    if isinstance(a, dict) and "log2_buckets" in a:
        return hist(a, b if isinstance(b, dict) and "log2_buckets" in b else
                    {"log2_buckets": []})
    if isinstance(a, (int, float)):
        return a - (b if isinstance(b, (int, float)) else 0)
    if isinstance(a, dict):
        b = b if isinstance(b, dict) else {}
        return {k: sub(v, b.get(k)) for k, v in a.items()}
    if isinstance(a, list):
        b = b if isinstance(b, list) else []
        return [sub(v, b[i] if i < len(b) else None) for i, v in enumerate(a)]
    return a
before, after = (json.load(open(f)) for f in sys.argv[1:3])
with open(sys.argv[3], "w") as out:
    json.dump({"delta": sub(after, before), "before": before, "after": after}, out)
    out.write("\n")
PY
}

run_cmd() {
	[ $# -ge 1 ] || die "usage: fuse-mount.sh --run 'COMMAND' [--stats-out FILE] [chainfs options] [SPEC]"
	cmd=$1
	shift
	stats_out=
	if [ "${1:-}" = --stats-out ]; then
		[ $# -ge 2 ] || die "--stats-out needs a FILE"
		stats_out=$2
		shift 2
	fi
	MNT=$(mktemp -d "${TMPDIR:-/tmp}/chainfs.XXXXXX") || die "mktemp failed"
	export MNT
	trap 'unmount "$MNT"; rmdir "$MNT" 2>/dev/null; rm -f "$MNT.before" "$MNT.after"' EXIT
	trap 'exit 130' INT TERM
	mount_fs "$@" "$MNT" || exit 1
	[ -z "$stats_out" ] || stats_json "$MNT.before"
	sh -c "$cmd"
	st=$?
	if [ -n "$stats_out" ]; then
		stats_json "$MNT.after"
		stats_delta "$MNT.before" "$MNT.after" "$stats_out"
	fi
	return $st
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
--pid)
	[ $# -eq 2 ] || die "usage: fuse-mount.sh --pid MOUNTPOINT"
	mnt=$(cd "$2" 2>/dev/null && pwd -P) || mnt=$2
	dir=$(state_dir) || exit 1
	read_pidfile "$dir/$(key_of "$mnt").pid" && is_our_daemon "$pid" "$started" "$mnt" ||
		die "$mnt: no daemon of ours serves it"
	echo "$pid"
	;;
-h | --help)
	# the comment block under the first line is the help
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	;;
"")
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
	exit 1
	;;
*)
	mount_fs "$@"
	;;
esac
