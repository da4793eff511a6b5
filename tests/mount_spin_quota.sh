#!/bin/sh
# The spin counts a cgroup CPU quota: a daemon started in a cgroup cpu group held to half a
# CPU says `spin_cpus 1` (not the machine's CPUs), and sees a raised quota within a second or
# so. Each hierarchy that can be used here, found where /proc/self/mountinfo shows it:
# - v1: a group in the hierarchy holding the cpu controller, with cpu.cfs_quota_us;
# - v2: a child of the cgroup2 mount with cpu.max. Where the v2 root does not offer cpu (a
#   hybrid machine binds it to v1) and the v1 cpu hierarchy has no groups, cpu is moved to v2
#   for the test (the v1 hierarchy unmounted), then the host is put back: the v1 hierarchy
#   remounted where it was, with its options, which the test checks (a loud FAIL if not).
#   The unmount fails where a process holds the hierarchy open: then
# - v2e: the daemon runs in a real v2 group whose cpu.max a tmpfs over the group's directory
#   supplies (no quota the kernel enforces: it checks where the daemon looks for it).
# Root. A hierarchy that cannot be used is named with why; skipped when none can be.
# check: once: the spin is the same code whatever the transport
# check: quiet: it measures a daemon's CPU under a cgroup quota, and may move the controller
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root to make a cgroup"

# ---- the cgroup mounts, as /proc/self/mountinfo shows them -------------------------------

# cg_mount_lines TYPE: "ROOT MOUNTPOINT OPTIONS SOURCE SUPER-OPTIONS" of each TYPE (cgroup,
# cgroup2) mount
cg_mount_lines() {
	awk -v t="$1" '{ for (i = 7; i < NF && $i != "-"; i++) {} }
		$(i + 1) == t { print $4, $5, $6, $(i + 2), $(i + 3) }' /proc/self/mountinfo
}
# cg_mounts: every cgroup mount without what a remount changes (mount ids, device numbers,
# peer group numbers), sorted: what "as before" compares
cg_mounts() {
	awk '{ s = $5 " " $6
		for (i = 7; i < NF && $i != "-"; i++) { t = $i; sub(/:[0-9]+$/, "", t); s = s " " t } }
		$(i + 1) ~ /^cgroup2?$/ { for (; i <= NF; i++) s = s " " $i; print s }' \
		/proc/self/mountinfo | LC_ALL=C sort
}
BEFORE=$(cg_mounts)
same_mounts() { [ "$(cg_mounts)" = "$BEFORE" ]; }

# own_path v1|v2: this shell's group in that hierarchy (/proc/self/cgroup)
own_path() {
	if [ "$1" = v2 ]; then
		sed -n 's/^0:://p' /proc/self/cgroup
	else
		awk -F: '("," $2 ",") ~ /,cpu,/ { sub(/^[^:]*:[^:]*:/, ""); print; exit }' /proc/self/cgroup
	fi
}
# below ROOT MOUNTPOINT PATH: the directory of the group PATH, through a mount of ROOT
below() {
	case $1 in
	/) echo "$2${3%/}" ;;
	*) case $3 in "$1" | "$1"/*) echo "$2${3#"$1"}" ;; *) return 1 ;; esac ;;
	esac
}
# v1_cpu_groups N: the v1 cpu hierarchy holds N groups, its root included (/proc/cgroups)
v1_cpu_groups() { [ "$(awk '$1 == "cpu" { print $3 }' /proc/cgroups)" = "$1" ]; }

# The v1 hierarchy holding cpu, as mounted; V1_PT is empty when there is none.
V1_PT=""
V1_MOUNTS=$(cg_mount_lines cgroup | awk '("," $5 ",") ~ /,cpu,/')
# shellcheck disable=SC2046 # five words, none with a space (mountinfo escapes them)
[ -z "$V1_MOUNTS" ] || set -- $(printf '%s\n' "$V1_MOUNTS" | head -n 1)
[ -z "$V1_MOUNTS" ] || { V1_ROOT=$1 V1_PT=$2 V1_OPTS=$3 V1_SRC=$4 V1_SUPER=$5; }

# ---- the state the test changes, and how it is put back -----------------------------------

HOME_CG=""    # the group this shell came from, where processes go back to
CG=""         # the group the test made
CG_OVER=""    # v2e: a tmpfs of the test's is mounted over $CG
DPID=""       # the daemon under test
V2=""         # the cgroup2 mount's directory
V2_ENABLED="" # the test wrote +cpu to $V2/cgroup.subtree_control
V1_MOVED=""   # the test unmounted the v1 cpu hierarchy

# cg_remove: every process still in the group goes back where it came from, then the group
# goes: it must not outlive the test even when a check fails half way
cg_remove() {
	[ -n "$CG" ] && [ -d "$CG" ] || { CG="" && return 0; }
	if [ -n "$CG_OVER" ]; then
		umount "$CG" || { echo "FAIL: $TEST_NAME: could not unmount $CG" >&2 && return 1; }
		CG_OVER=""
	fi
	while read -r p; do
		echo "$p" >"$HOME_CG/cgroup.procs" 2>/dev/null
	done <"$CG/cgroup.procs"
	rmdir "$CG" || { echo "FAIL: $TEST_NAME: could not remove $CG" >&2 && return 1; }
	CG=""
}

# remount_v1: the v1 cpu hierarchy mounted again where it was; refused (EBUSY) until the v2
# state of the cpu controller is released, a moment after its last group went
remount_v1() {
	err=$(mount -t cgroup -o "$V1_OPTS,$V1_SUPER" "$V1_SRC" "$V1_PT" 2>&1)
}

# v1_missing: the v1 cpu hierarchy seen at the start is no longer mounted where it was
v1_missing() {
	[ -n "$V1_PT" ] && ! cg_mount_lines cgroup |
		awk -v p="$V1_PT" '$2 == p && ("," $5 ",") ~ /,cpu,/ { f = 1 } END { exit !f }'
}

# restore_host: no daemon of ours, no group of ours, cpu where it was; 1 if any is not so
restore_host() {
	bad=0
	if [ -n "$DPID" ] && ! wait_for gone "$DPID"; then
		kill -KILL "$DPID" 2>/dev/null
		wait_for gone "$DPID" || { echo "FAIL: $TEST_NAME: daemon $DPID still runs" >&2 && bad=1; }
	fi
	DPID=""
	cg_remove || bad=1
	if [ -n "$V2_ENABLED" ]; then
		if echo -cpu >"$V2/cgroup.subtree_control"; then V2_ENABLED=""; else bad=1; fi
	fi
	# by what mountinfo shows, not by V1_MOVED: an exit between the unmount and its note
	if v1_missing; then
		if wait_for remount_v1; then
			V1_MOVED=""
			echo "$TEST_NAME: the v1 cpu hierarchy is mounted again at $V1_PT"
		else
			echo "FAIL: $TEST_NAME: cannot mount the v1 cpu hierarchy at $V1_PT again: $err" >&2
			bad=1
		fi
	fi
	return $bad
}

# On any exit: lib.sh's cleanup (unmounts, so the daemon ends), then the host as it was,
# checked in mountinfo; a failure there fails the test, loudly.
on_exit() {
	cleanup
	restore_host && same_mounts && return 0
	{
		echo "FAIL: $TEST_NAME: THE HOST'S CGROUP MOUNTS ARE NOT AS BEFORE"
		echo "before:"
		printf '%s\n' "$BEFORE"
		echo "now:"
		cg_mounts
	} >&2
	exit 1
}
trap on_exit EXIT

# ---- one hierarchy's checks ---------------------------------------------------------------

# quota US: US of CPU time per 100 ms for $CG
quota() {
	case $ver in
	v1) echo "$1" >"$CG/cpu.cfs_quota_us" ;;
	v2 | v2e) echo "$1 100000" >"$CG/cpu.max" ;;
	esac
}
# enter_group: this shell into $CG; v2e then lays its tmpfs over the group's directory
enter_group() {
	echo $$ >"$CG/cgroup.procs" || return 1
	[ "$ver" = v2e ] || return 0
	mount -t tmpfs -o size=64k,mode=755 cfs-spin-quota "$CG" && CG_OVER=1
}
# in_group PID: PID is in $CG (v2e: the tmpfs hides cgroup.procs, /proc/PID/cgroup tells)
in_group() {
	if [ "$ver" = v2e ]; then
		grep -q "^0::.*/${CG##*/}\$" "/proc/$1/cgroup"
	else
		grep -qx "$1" "$CG/cgroup.procs"
	fi
}
# pc STAT: that pollcore figure from `stats`
pc() {
	ctl stats | awk -v k="$1" '/^pollcore:/ { s = 1; next } /^[a-z]/ { s = 0 } s && $1 == k { print $2 }'
}
spin_counts() { find "$M" -maxdepth 3 >/dev/null && [ "$(pc spin_cpus)" = "$1" ]; }
want=$(nproc)
[ "$want" -gt 2 ] && want=2

ran="" # the hierarchies tested
why="" # why the others were not
not_run() {
	echo "$TEST_NAME: $ver not run: $*"
	why="$why${why:+; }$ver: $*"
}

# spin_checks: a daemon started in $CG, held to half a CPU, counts 1; raised to 1.5 CPUs, it
# counts 2 (or the CPUs there are) within 5 s, at the next spin's sample
spin_checks() {
	M=$T/mnt.$ver
	SOCK=$T/ctl.$ver.sock
	echo "$TEST_NAME: $ver: $how in $CG"
	ran="$ran $ver"
	# The daemon forks from this shell while the shell is in the group; then the shell leaves.
	enter_group || { fail "$ver: cannot enter $CG" && return; }
	if quota 50000; then
		mount_cfs "$M" -o "ctl=$SOCK"
		st=$?
	else
		st=quota
	fi
	echo $$ >"$HOME_CG/cgroup.procs"
	[ "$st" = 0 ] || { fail "$ver: cannot set a quota or mount ($st)" && return; }
	DPID=$("$FUSE_MOUNT" --pid "$M")
	check "$ver: the daemon runs in the group" in_group "$DPID"

	check "$ver: default spin is on" test "$(pc spin_us)" = 50
	check "$ver: half a CPU of quota: the spin counts 1 CPU ($(pc spin_cpus))" \
		test "$(pc spin_cpus)" = 1
	check "$ver: --json shows it too" has "$(ctl --json stats)" '"spin_cpus":1'

	quota 150000
	wait_s=5
	wait_for spin_counts "$want"
	wait_s=10
	check "$ver: 1.5 CPUs, re-read within 5 s: the spin counts $want ($(pc spin_cpus))" \
		test "$(pc spin_cpus)" = "$want"

	unmount_cfs "$M"
	check "$ver: the daemon ends with its unmount" wait_for gone "$DPID"
	DPID=""
}

# ---- v1 -----------------------------------------------------------------------------------

v1_run() {
	ver=v1
	[ -n "$V1_PT" ] || { not_run "no cgroup v1 hierarchy with the cpu controller" && return; }
	HOME_CG=$(below "$V1_ROOT" "$V1_PT" "$(own_path v1)") ||
		{ not_run "this shell's group is not under $V1_PT" && return; }
	[ -w "$HOME_CG/cgroup.procs" ] || { not_run "$HOME_CG/cgroup.procs is not writable" && return; }
	CG=$V1_PT/cfs-spin-quota.$$
	mkdir "$CG" || { CG="" && not_run "cannot make a group in $V1_PT" && return; }
	how="cgroup v1 cpu.cfs_quota_us"
	if echo 100000 >"$CG/cpu.cfs_period_us"; then
		spin_checks
	else
		fail "v1: cannot set a period in $CG"
	fi
	cg_remove || fail "v1: $CG removed"
}

# ---- v2 -----------------------------------------------------------------------------------

# cpu_to_v2: the cpu controller bound to v2 for the test. Only when the v1 hierarchy holding
# it has no groups (our own v1 group is released a moment after its rmdir) and is mounted
# once: unmounting it then ends the hierarchy, and the kernel hands cpu back to the v2 root.
# The unmount fails where some process keeps a file of the hierarchy open.
cpu_to_v2() {
	V2_NO_CPU=1
	[ -n "$V1_PT" ] || { not_run "$V2 does not offer cpu, and no v1 hierarchy has it" && return 1; }
	[ "$(printf '%s\n' "$V1_MOUNTS" | wc -l)" = 1 ] && [ "$V1_ROOT" = / ] ||
		{ not_run "the v1 cpu hierarchy is mounted more than once, or in part" && return 1; }
	case "$V1_PT $V1_OPTS $V1_SRC $V1_SUPER" in
	*\\*) not_run "the v1 cpu mount has escaped characters" && return 1 ;;
	esac
	wait_for v1_cpu_groups 1 ||
		{ not_run "$V2 does not offer cpu, and the v1 cpu hierarchy has groups" && return 1; }
	err=$(umount "$V1_PT" 2>&1) ||
		{ not_run "$V2 does not offer cpu, and unmounting $V1_PT to move it: $err" && return 1; }
	V1_MOVED=1
	echo "$TEST_NAME: v2: $V1_PT unmounted for the test, to bind cpu to v2"
	wait_for grep -qw cpu "$V2/cgroup.controllers" ||
		{ fail "v2: cpu did not come to $V2/cgroup.controllers within 10 s" && return 1; }
	V2_NO_CPU=""
}

# v2_cannot WHY: a failure once the test has changed the host, else not run
v2_cannot() {
	if [ -n "$V1_MOVED" ]; then fail "v2: $*"; else not_run "$*"; fi
}

# v2_group: $CG made in v2, the cpu controller handed down to it (moved from v1 if need be)
v2_group() {
	if ! grep -qw cpu "$V2/cgroup.controllers"; then
		cpu_to_v2 || return 1
	fi
	if ! grep -qw cpu "$V2/cgroup.subtree_control"; then
		echo +cpu >"$V2/cgroup.subtree_control" ||
			{ v2_cannot "cannot enable cpu below $V2" && return 1; }
		V2_ENABLED=1
	fi
	CG=$V2/cfs-spin-quota.$$
	mkdir "$CG" || { CG="" && v2_cannot "cannot make $CG" && return 1; }
	how="cgroup v2 cpu.max"
}

V2_NO_CPU="" # the v2 root does not offer cpu, and the test could not move it there
v2_run() {
	ver=v2
	# shellcheck disable=SC2046 # five words, none with a space (mountinfo escapes them)
	set -- $(cg_mount_lines cgroup2 | head -n 1)
	[ $# = 5 ] || { not_run "no cgroup2 file system is mounted" && return; }
	V2=$2
	HOME_CG=$(below "$1" "$2" "$(own_path v2)") ||
		{ not_run "this shell's group is not under $V2" && return; }
	[ -w "$HOME_CG/cgroup.procs" ] || { not_run "$HOME_CG/cgroup.procs is not writable" && return; }
	v2_group && spin_checks
	[ -n "$V1_MOVED$V2_ENABLED$CG" ] || return 0
	check "v2: the host put back (group, controller, v1 mount)" restore_host
	check "v2: the cgroup mounts are as before" same_mounts
}

# v2e, where no v2 group can hold a cpu quota (cpu stays bound to v1): the daemon's reading of
# v2 is still checked. It runs in a real v2 group whose cpu.max comes from a small tmpfs
# mounted over the group's directory for the test. The kernel enforces nothing then; what is
# checked is that the daemon finds its v2 group where mountinfo shows the cgroup2 mount (on a
# hybrid machine, /sys/fs/cgroup/unified), and reads and re-reads the quota there.
v2e_run() {
	ver=v2e
	CG=$V2/cfs-spin-quota.$$
	mkdir "$CG" || { CG="" && not_run "cannot make $CG" && return; }
	how="cgroup v2 cpu.max, emulated by a tmpfs over the group"
	spin_checks
	check "v2e: the host put back (tmpfs, group)" restore_host
	check "v2e: the cgroup mounts are as before" same_mounts
}

v1_run
v2_run
[ -z "$V2_NO_CPU" ] || v2e_run
[ -n "$ran" ] || [ "$failed" != 0 ] || skip "$why"
finish
