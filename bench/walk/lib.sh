# bench/walk/lib.sh: mounts for the mount-level benchmarks (walk, chains, memory), sourced.
#
# Every mount made here is recorded, and bench_cleanup (installed as the EXIT trap by
# bench_init) unmounts them all and stops every daemon started here, by its pid, whatever
# happened. Every wait has a timeout.
#
# Needs: BUILD (build directory), run from the repository root.

BENCH_MOUNTS=   # mount points we made, newest first
BENCH_PIDS=     # daemons we started
BENCH_WORK=     # our temporary directory
MOUNT_TIMEOUT=${MOUNT_TIMEOUT:-60} # seconds a daemon may take to answer (a 1e7 tree loads slowly)

bench_log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
bench_die() { bench_log "error: $*"; exit 1; }

is_mounted() {
	awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts
}

# Wait up to $2 seconds (default 10) for pid $1 to exit; kill -9 it past that.
bench_reap() {
	_p=$1 _t=$((${2:-10} * 20)) _i=0
	while kill -0 "$_p" 2>/dev/null && [ $_i -lt $_t ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	if kill -0 "$_p" 2>/dev/null; then
		bench_log "pid $_p still running after ${2:-10}s: SIGKILL"
		kill -9 "$_p" 2>/dev/null
	fi
	wait "$_p" 2>/dev/null || true
}

bench_forget_pid() {
	_n=
	for _q in $BENCH_PIDS; do [ "$_q" = "$1" ] || _n="$_n $_q"; done
	BENCH_PIDS=$_n
}

bench_forget_mount() {
	_n=
	for _q in $BENCH_MOUNTS; do [ "$_q" = "$1" ] || _n="$_n $_q"; done
	BENCH_MOUNTS=$_n
}

# Unmount $1 (fuse or not) and, if given, wait for the daemon $2 to exit.
bench_umount() {
	if is_mounted "$1"; then
		fusermount3 -u "$1" 2>/dev/null || umount "$1" 2>/dev/null ||
			fusermount3 -uz "$1" 2>/dev/null || umount -l "$1" 2>/dev/null ||
			bench_log "cannot unmount $1"
	fi
	bench_forget_mount "$1"
	if [ -n "${2:-}" ]; then
		bench_reap "$2" 10
		bench_forget_pid "$2"
	fi
}

bench_cleanup() {
	_st=$?
	trap - EXIT INT TERM
	for _m in $BENCH_MOUNTS; do
		is_mounted "$_m" && { fusermount3 -u "$_m" 2>/dev/null || umount "$_m" 2>/dev/null ||
			umount -l "$_m" 2>/dev/null; }
	done
	for _p in $BENCH_PIDS; do
		kill "$_p" 2>/dev/null && bench_reap "$_p" 5
	done
	BENCH_MOUNTS= BENCH_PIDS=
	[ -z "$BENCH_URING_SAVED" ] || echo "$BENCH_URING_SAVED" >"$BENCH_URING_PARAM"
	if [ -n "$BENCH_WORK" ] && [ -d "$BENCH_WORK" ]; then
		# never descend into something still mounted
		if awk -v w="$BENCH_WORK/" 'index($2, w) == 1 { f = 1 } END { exit !f }' /proc/mounts; then
			bench_log "leaving $BENCH_WORK: something is still mounted under it"
		else
			rm -rf "$BENCH_WORK"
		fi
	fi
	exit $_st
}

# bench_uring_on: FUSE over io_uring allowed (the fuse module's enable_uring), put back as it
# was by bench_cleanup; fails when the kernel has no such parameter.
BENCH_URING_PARAM=/sys/module/fuse/parameters/enable_uring
BENCH_URING_SAVED=
bench_uring_on() {
	[ -w "$BENCH_URING_PARAM" ] || return 1
	[ -n "$BENCH_URING_SAVED" ] || BENCH_URING_SAVED=$(cat "$BENCH_URING_PARAM")
	echo Y >"$BENCH_URING_PARAM"
}

# bench_init NAME: the temp directory and the traps.
bench_init() {
	# (no "chainfs" in the name or the tmpfs source: nothing that sweeps stale chainfs mounts
	# and dirs should take ours)
	BENCH_WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-$1.XXXXXX")
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	[ "$(id -u)" = 0 ] || bench_die "$1: needs root (mounts, drop_caches)"
	[ -c /dev/fuse ] || bench_die "$1: no /dev/fuse"
}

# Wait until $1 is a mount point whose root answers, or pid $2 dies, or $3 seconds pass.
# Prints the seconds waited (from the caller's start time $4, in ns) on success.
bench_wait_mount() {
	_m=$1 _p=$2 _lim=$3 _t0=$4
	while :; do
		if is_mounted "$_m" && stat "$_m/." >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$_p" 2>/dev/null || return 1
		if [ $(($(date +%s%N) - _t0)) -gt $((_lim * 1000000000)) ]; then
			return 2
		fi
		sleep 0.01
	done
}

# cfs_mount MNT LOG [chainfs args...]: start chainfs in the foreground (background job) on MNT,
# logging to LOG; sets DPID and MOUNT_NS (ns from exec to a mount that answers).
cfs_mount() {
	_mnt=$1 _log=$2
	shift 2
	bench_daemon "$_mnt" "$_log" "chainfs $*" "$BUILD/chainfs" -f "$@" "$_mnt"
}

# bindfs_mount SRC MNT LOG [bindfs args...]: bindfs in the foreground (background job).
bindfs_mount() {
	_src=$1 _mnt=$2 _log=$3
	shift 3
	bench_daemon "$_mnt" "$_log" bindfs bindfs -f "$@" "$_src" "$_mnt"
}

# bench_daemon MNT LOG NAME CMD...: start a FUSE daemon in the foreground (its own session,
# a background job), wait until MNT answers; DPID and MOUNT_NS (start to answering) are set.
bench_daemon() {
	_mnt=$1 _log=$2 _name=$3
	shift 3
	mkdir -p "$_mnt"
	_t0=$(date +%s%N)
	setsid "$@" </dev/null >"$_log" 2>&1 &
	DPID=$!
	BENCH_PIDS="$DPID $BENCH_PIDS"
	BENCH_MOUNTS="$_mnt $BENCH_MOUNTS"
	if ! bench_wait_mount "$_mnt" "$DPID" "$MOUNT_TIMEOUT" "$_t0"; then
		cat "$_log" >&2
		bench_umount "$_mnt" "$DPID"
		bench_die "$_name did not mount $_mnt within ${MOUNT_TIMEOUT}s"
	fi
	MOUNT_NS=$(($(date +%s%N) - _t0))
}

# tmpfs_mount MNT SIZE
tmpfs_mount() {
	mkdir -p "$1"
	mount -t tmpfs -o "size=$2,mode=0755" bench-tmpfs "$1" || bench_die "cannot mount tmpfs on $1"
	BENCH_MOUNTS="$1 $BENCH_MOUNTS"
}

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# Median of the numbers on stdin (one per line); empty input gives nothing.
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

machine_line() {
	printf '%s vCPU (%s), %s GiB RAM, %s' "$(nproc)" \
		"$(awk -F: '/model name/ { sub(/^ /, "", $2); print $2; exit }' /proc/cpuinfo)" \
		"$(awk '/MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" "$(uname -sr)"
}

# rotate N WORDS...: the words, starting at index N mod count (a round's order of contenders)
rotate() {
	_k=$(($1 % ($# - 1)))
	shift
	_i=0 _a= _b=
	for _x in "$@"; do
		if [ $_i -ge $_k ]; then _a="$_a $_x"; else _b="$_b $_x"; fi
		_i=$((_i + 1))
	done
	echo $_a $_b
}

# Awk functions for the scripts' tables, put before a program: med, mn, mx of a[k, 1..cnt].
BENCH_AWK_STATS='
function med(a, k, cnt,    i, j, t, v) {
	for (i = 1; i <= cnt; i++) v[i] = a[k, i]
	for (i = 2; i <= cnt; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
	return (cnt % 2) ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
}
function mn(a, k, cnt,    i, x) { x = a[k, 1]; for (i = 2; i <= cnt; i++) if (a[k, i] < x) x = a[k, i]; return x }
function mx(a, k, cnt,    i, x) { x = a[k, 1]; for (i = 2; i <= cnt; i++) if (a[k, i] > x) x = a[k, i]; return x }
'
