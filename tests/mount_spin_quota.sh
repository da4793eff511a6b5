#!/bin/sh
# The spin counts a cgroup CPU quota: a daemon started in a cgroup cpu group held to half a
# CPU says `spin_cpus 1` (not the machine's CPUs), and sees a raised quota within a second or
# so. cgroup v2 (a child of /sys/fs/cgroup with cpu.max, on a machine whose v2 root offers
# the cpu controller: Debian 12's default) or v1 (a group in /sys/fs/cgroup/cpu with
# cpu.cfs_quota_us, where the cpu controller is bound to v1: a hybrid mount). Root, else
# skipped.
# check: once: the spin is the same code whatever the transport
# check: alone: it measures a daemon's CPU under a cgroup quota
. "$(dirname "$0")/lib.sh"

M=$T/mnt

skip() {
	echo "$TEST_NAME: skipped: $*"
	exit 0
}

# Which hierarchy holds the cpu controller: TOP (where processes go back to) and the quota's
# files. The daemon reads v2 under /sys/fs/cgroup (pc_cgroup.c), so v2 is taken only there.
if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	TOP=/sys/fs/cgroup
	CG=$TOP/cfs-spin-quota.$$
	quota() { echo "$1 100000" >"$CG/cpu.max"; } # quota() US: US of CPU time per 100 ms
	how="cgroup v2 cpu.max"
else
	TOP=/sys/fs/cgroup/cpu
	CG=$TOP/cfs-spin-quota.$$
	quota() { echo "$1" >"$CG/cpu.cfs_quota_us"; }
	how="cgroup v1 cpu.cfs_quota_us"
fi

# Every process still in the group goes back to the top one, then the group goes: it must not
# outlive the test even when a check fails half way.
cg_remove() {
	[ -d "$CG" ] || return 0
	while read -r p; do
		echo "$p" >"$TOP/cgroup.procs" 2>/dev/null
	done <"$CG/cgroup.procs"
	rmdir "$CG" 2>/dev/null || echo "$TEST_NAME: could not remove $CG" >&2
}
trap 'cleanup; cg_remove' EXIT

[ "$(id -u)" = 0 ] || skip "needs root to make a cgroup"
[ -w "$TOP/cgroup.procs" ] || skip "no writable cgroup with the cpu controller ($TOP)"
if [ "$TOP" = /sys/fs/cgroup ]; then
	# v2: a child gets cpu.max only when its parent hands the controller down
	grep -qw cpu "$TOP/cgroup.subtree_control" || echo +cpu >"$TOP/cgroup.subtree_control" ||
		skip "cannot enable the cpu controller below $TOP"
	mkdir "$CG" 2>/dev/null || skip "cannot make $CG"
else
	mkdir "$CG" 2>/dev/null || skip "cannot make $CG"
	echo 100000 >"$CG/cpu.cfs_period_us" || skip "cannot set a period in $CG"
fi
quota 50000 || skip "cannot set a quota in $CG"
echo "$TEST_NAME: $how in $CG"

# pc STAT: that pollcore figure from `stats`
pc() {
	ctl stats | awk -v k="$1" '/^pollcore:/ { s = 1; next } /^[a-z]/ { s = 0 } s && $1 == k { print $2 }'
}

# The daemon forks from this shell while the shell is in the group; then the shell leaves.
echo $$ >"$CG/cgroup.procs"
mount_cfs "$M" -o "ctl=$SOCK" || { echo $$ >"$TOP/cgroup.procs"; fail mount; finish; exit 1; }
echo $$ >"$TOP/cgroup.procs"
pid=$("$FUSE_MOUNT" --pid "$M")
check "the daemon runs in the group" grep -qx "$pid" "$CG/cgroup.procs"

check "default spin is on" test "$(pc spin_us)" = 50
check "half a CPU of quota: the spin counts 1 CPU ($(pc spin_cpus))" test "$(pc spin_cpus)" = 1
check "--json shows it too" has "$(ctl --json stats)" '"spin_cpus":1'

# A raised quota is read again after a second, at the next spin's sample: walk until the
# spin counts it, for up to 5 s.
quota 150000
want=$(nproc)
[ "$want" -gt 2 ] && want=2
spin_counts() { find "$M" -maxdepth 3 >/dev/null && [ "$(pc spin_cpus)" = "$1" ]; }
wait_s=5
wait_for spin_counts "$want"
check "1.5 CPUs, re-read within 5 s: the spin counts $want ($(pc spin_cpus))" \
	test "$(pc spin_cpus)" = "$want"

unmount_cfs "$M"
finish
