#!/bin/sh
# fuse-mount.sh — mount, unmount and script chainfs.
#
#   fuse-mount.sh [chainfs options] [SPEC] MOUNTPOINT   mount; return once the mount answers
#                    (refused where something is mounted already)
#   fuse-mount.sh -u MOUNTPOINT                         unmount a chainfs mount (also a
#                    stale, dead one) and stop its daemon; any other mount is refused
#   fuse-mount.sh --run 'COMMAND' [chainfs options] [SPEC]
#                    mount on a fresh temp dir, run COMMAND with $MNT set, unmount, exit
#                    with COMMAND's status (--run COMMAND may stand anywhere among the
#                    options, as may --stats-out FILE)
#   fuse-mount.sh --run 'COMMAND' --stats-out FILE [chainfs options] [SPEC]
#                    the same, and FILE gets {"delta", "before", "after"}: `chainfsctl
#                    stats --json` before and after COMMAND, every number of delta being
#                    after minus before (python3) but for settings and levels (spin_us,
#                    fds, tree.*, ...), which are after's; a latency's quantiles are those
#                    of its subtracted buckets, its max null
#   fuse-mount.sh --pid MOUNTPOINT                      the pid of the daemon serving it
#   fuse-mount.sh -h | --help                           this text (man chainfs-mount: more)
#
# Exit status: 0 when done; chainfs's own status when it refused to start (2 for a bad option
# or spec); 1 for anything else that failed, with a message.
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
	if [ ! -x "$here/build/chainfs" ] || [ -n "$(find "$here/fusefs" "$here/tree" "$here/spec" \
		"$here/cli" "$here/resolver" "$here/pollcore" -newer "$here/build/chainfs" \
		-name '*.[ch]' 2>/dev/null | head -1)" ]; then
		make -s -C "$here" all >&2 || die "build failed"
	fi
	echo "$here/build/chainfs"
}

# canon PATH: sets mnt to PATH with its links resolved (pwd -P), whole even when it ends in a
# newline; a directory that cannot be entered (a dead daemon's mount: ENOTCONN) is named
# through its canonical parent. Fails when neither can be entered.
canon() {
	c=$(cd -- "$1" 2>/dev/null && pwd -P && echo .) && mnt=${c%?.} && return 0
	p=$1
	while [ "${p%/}" != "$p" ] && [ "$p" != / ]; do p=${p%/}; done
	case $p in
	*/*) c=$(cd -- "${p%/*}/" 2>/dev/null && pwd -P && echo .) || return 1 ;;
	*) c=$(pwd -P && echo .) || return 1 ;;
	esac
	c=${c%?.}
	mnt=${c%/}/${p##*/}
}

# mount_type MNT: the file system type of the mount on top at MNT (the last line of
# /proc/self/mountinfo whose mount point is MNT); fails when nothing is mounted there.
# mountinfo escapes space, tab, newline and backslash as \ooo: field 5 is unescaped and
# compared with MNT, which comes through the environment (awk -v would read its backslashes).
mount_type() {
	CFS_MNT=$1 awk '
	function unescape(s, out, d) {
		out = ""
		while (match(s, /\\[0-7][0-7][0-7]/)) {
			d = substr(s, RSTART + 1, 3)
			out = out substr(s, 1, RSTART - 1) \
				sprintf("%c", substr(d, 1, 1) * 64 + substr(d, 2, 1) * 8 + substr(d, 3, 1))
			s = substr(s, RSTART + 4)
		}
		return out s
	}
	{
		for (i = 7; i < NF && $i != "-"; i++)
			;
		if (unescape($5) == ENVIRON["CFS_MNT"])
			type = $(i + 1)
	}
	END { if (type == "") exit 1; print type }' /proc/self/mountinfo
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
	# the cmdline ends in "\0MNT\0", compared byte for byte (MNT may hold newlines)
	n=$(printf '%s' "$3" | wc -c)
	[ "$(tail -c $((n + 2)) "/proc/$1/cmdline" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = \
		"$(printf '\0%s\0' "$3" | od -An -tx1 | tr -d ' \n')" ]
}

# served_by PID MNT: the mount at MNT is PID's: PID holds /dev/fuse open, and the connection
# its fdinfo names is the mount's (the minor of its device number). A kernel whose fdinfo
# names no connection is taken at PID's word.
served_by() {
	conn=$(stat -c %Ld "$2/." 2>/dev/null) || return 1
	for fd in "/proc/$1/fd/"*; do
		[ "$(readlink "$fd" 2>/dev/null)" = /dev/fuse ] || continue
		said=$(sed -n 's/^fuse_connection:[[:space:]]*//p' "/proc/$1/fdinfo/${fd##*/}")
		[ -z "$said" ] || [ "$said" = "$conn" ] && return 0
	done
	return 1
}

# read_pidfile FILE: sets pid and started from a pidfile of ours ("PID START"), else fails
read_pidfile() {
	[ -f "$1" ] && [ ! -L "$1" ] && [ -O "$1" ] || return 1
	read -r pid started _ <"$1" || return 1
}

# stop_daemon PID START MNT [SIGNALS]: wait for the daemon to end after its unmount; if it
# does not, SIGTERM, then SIGKILL, each only while it is still verifiably ours. SIGNALS
# ("TERM KILL": no wait first) replaces "0 TERM KILL", 0 standing for the wait.
stop_daemon() {
	for sig in ${4:-0 TERM KILL}; do
		[ "$sig" = 0 ] || { is_our_daemon "$1" "$2" "$3" && kill -s "$sig" "$1" 2>/dev/null; }
		i=0
		while is_our_daemon "$1" "$2" "$3" && [ $i -lt $((timeout * 10)) ]; do
			sleep 0.1
			i=$((i + 1))
		done
		is_our_daemon "$1" "$2" "$3" || return 0
	done
}

# unmount PATH: unmount the chainfs mount at PATH and stop its daemon. Only a mount chainfs
# made is touched: its type is fuse.chainfs (libfuse's subtype, from the program's name), or
# it is a FUSE mount served by the daemon our pidfile names. Anything else, or nothing
# mounted and no daemon of ours, fails with a message.
unmount() {
	canon "$1" || { echo "fuse-mount.sh: $1: no such directory" >&2 && return 1; }
	dir=$(state_dir) || exit 1
	pidfile=$dir/$(key_of "$mnt").pid
	pid=
	read_pidfile "$pidfile" && is_our_daemon "$pid" "$started" "$mnt" || pid=
	if type=$(mount_type "$mnt"); then
		case $type in
		fuse.chainfs) ours=1 ;;
		fuse | fuse.*) ours=${pid:+1} ;;
		*) ours= ;;
		esac
		if [ -z "$ours" ]; then
			echo "fuse-mount.sh: $mnt: a $type mount, not chainfs's; not unmounting it" >&2
			return 1
		fi
		# a dead daemon leaves a mount that answers ENOTCONN: a plain unmount still works;
		# a busy one is detached lazily so the caller is never stuck, and its daemon is
		# told to stop at once: the kernel ends the session only when the last user lets
		# go, which a user the daemon keeps waiting (a fault rule's hold) never would
		busy=
		fusermount3 -u "$mnt" 2>/dev/null || { busy=1 && fusermount3 -uz "$mnt" 2>/dev/null; } ||
			umount -l "$mnt" 2>/dev/null || {
			echo "fuse-mount.sh: $mnt: cannot unmount" >&2
			return 1
		}
	elif [ -z "$pid" ]; then
		rm -f "$pidfile"
		echo "fuse-mount.sh: $mnt: not mounted, and no daemon of ours serves it" >&2
		return 1
	fi
	[ -z "$pid" ] || stop_daemon "$pid" "$started" "$mnt" "${busy:+TERM KILL}"
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
	canon "$mnt" || die "$mnt: no such directory"
	# before anything else: a second daemon would fail, and the pidfile and log are the
	# first one's (a dead mount, which cannot be entered, is found here too)
	if type=$(mount_type "$mnt"); then
		die "$mnt: already a mount point ($type); unmount it first"
	fi
	[ -d "$mnt" ] || die "$mnt: not a directory"
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
			echo "fuse-mount.sh: chainfs exited with status $st before the mount answered" >&2
			[ "$st" -ne 0 ] || st=1
			exit "$st"
		fi
		# the mount that answers must be our daemon's: another one made there meanwhile
		# would answer too, while ours fails with "already a mount point"
		if mount_type "$mnt" >/dev/null && stat "$mnt/." >/dev/null 2>&1 &&
			is_our_daemon "$pid" "$started" "$mnt" && served_by "$pid" "$mnt"; then
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

# stats_delta BEFORE AFTER OUT: counts subtracted member by member (arrays element by
# element); strings, booleans, settings and levels (the reply's "levels": what is now, or
# the most ever, not a count of events) are after's; a latency histogram's quantiles are those of its
# subtracted buckets, and its maximum null (the interval's own is not known)
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
def sub(a, b, path=""):
    if path in LEVELS or isinstance(a, bool) or isinstance(b, bool):
        return a
    if isinstance(a, dict) and "log2_buckets" in a:
        return hist(a, b if isinstance(b, dict) and "log2_buckets" in b else
                    {"log2_buckets": []})
    if isinstance(a, (int, float)):
        return a - (b if isinstance(b, (int, float)) else 0)
    if isinstance(a, dict):
        b = b if isinstance(b, dict) else {}
        return {k: sub(v, b.get(k), path + "." + k if path else k) for k, v in a.items()}
    if isinstance(a, list):
        b = b if isinstance(b, list) else []
        return [sub(v, b[i] if i < len(b) else None) for i, v in enumerate(a)]
    return a
before, after = (json.load(open(f)) for f in sys.argv[1:3])
# the members that are settings or levels, not counts, as the daemon lists them (a section
# name stands for all its members); "levels" itself among them
LEVELS = set(after.get("levels", [])) | {"levels"}
with open(sys.argv[3], "w") as out:
    json.dump({"delta": sub(after, before), "before": before, "after": after}, out)
    out.write("\n")
PY
}

# has_run ARGS...: whether --run stands among ARGS as a word of its own (not as -o's value)
has_run() {
	after_o=
	for a; do
		[ -z "$after_o" ] && [ "$a" = --run ] && return 0
		after_o=
		[ "$a" != -o ] || after_o=1
	done
	return 1
}

# run_cmd ARGS...: --run COMMAND and --stats-out FILE are taken from wherever they stand; the
# other words go to chainfs in their order
run_cmd() {
	usage="usage: fuse-mount.sh --run 'COMMAND' [--stats-out FILE] [chainfs options] [SPEC]"
	cmd= stats_out= want= n=$#
	while [ "$n" -gt 0 ]; do
		a=$1
		shift
		n=$((n - 1))
		case $want in
		cmd) cmd=$a want= && continue ;;
		stats) stats_out=$a want= && continue ;;
		opt) set -- "$@" "$a" && want= && continue ;;
		esac
		case $a in
		--run) [ -z "$cmd" ] || die "--run given twice; $usage" && want=cmd ;;
		--stats-out) [ -z "$stats_out" ] || die "--stats-out given twice" && want=stats ;;
		-o) set -- "$@" "$a" && want=opt ;;
		*) set -- "$@" "$a" ;;
		esac
	done
	case $want in
	cmd) die "--run needs a COMMAND; $usage" ;;
	stats) die "--stats-out needs a FILE" ;;
	esac
	MNT=$(mktemp -d "${TMPDIR:-/tmp}/chainfs.XXXXXX") || die "mktemp failed"
	export MNT
	mounted=
	# the log is keyed by a temp dir's name that never comes back: it goes with the mount
	# (printed first when the mount failed)
	trap '[ -z "$mounted" ] || unmount "$MNT"; rmdir "$MNT" 2>/dev/null
		rm -f "$MNT.before" "$MNT.after"; [ -n "${CHAINFS_LOG:-}" ] || rm -f "$log"' EXIT
	trap 'exit 130' INT TERM
	mount_fs "$@" "$MNT" || exit 1
	mounted=1
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
	unmount "$2" || exit 1
	;;
--pid)
	[ $# -eq 2 ] || die "usage: fuse-mount.sh --pid MOUNTPOINT"
	canon "$2" || die "$2: no such directory"
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
	if has_run "$@"; then
		run_cmd "$@"
		exit $?
	fi
	mount_fs "$@"
	;;
esac
