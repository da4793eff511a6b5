#!/bin/sh
# Kernel cache coherence as a property: with hour-long entry and attribute timeouts, random
# changes (system calls through the mount, spec lines, `mode` and `limits` through the control
# socket), and after each one every path's lstat, readlink, stat -L, listing and small file
# content through the mount equal what a fresh mount of the daemon's own `dump` answers, in
# the same follow mode and limits. tests/coherence.py says how; each step is one check.
# CHAINFS_SEED=N replays a run (the seed is printed first; make check runs seed 1, so CI
# replays the same sequence), CHAINFS_STEPS=N sets its length (default 300: 20 to 40 s);
# `make stress` runs a longer one from a new seed each time.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || { echo "coherence: needs python3 (make deps)"; exit 1; }
seed=${CHAINFS_SEED:-1} # make check replays one sequence; make stress draws new ones
steps=${CHAINFS_STEPS:-300}
echo "seed=$seed"
echo "coherence: $steps steps (CHAINFS_SEED=$seed CHAINFS_STEPS=$steps replays)"

M=$T/mnt
R=$T/ref # a name as long as M's: link answers through the mountpoint have equal lengths
S=$T/ctl.sock
MOUNTS="$MOUNTS $R" # mounted and unmounted by coherence.py, once a step; the trap is ours
mkdir -p "$R"
# A small start: links of every kind (relative, absolute, with "..", dangling, to a
# directory, a chain, a loop), a hard link, names with spaces and quotes.
cat >"$T/start.spec" <<'EOF'
dir /a
file /a/f "hello\n"
file "/x y/q\"t" "quoted\n"
file "/x y/it's" size=5000
link /a/l f
link /a/up "../x y"
link /abs /a/f
link /a/dangling nowhere
link /dirlink a
hardlink /a/h /a/f
chain /c 3 /a/f
loop /lp 2
EOF
opts="ctl=$S,entry_timeout=3600,attr_timeout=3600"
mount_cfs "$M" -o "follow=kernel,$opts" "$T/start.spec" ||
	{ fail mount; finish; exit 1; }
timeout $((steps * 3 + 120)) python3 "$ROOT/tests/coherence.py" seed="$seed" steps="$steps" \
	mnt="$M" ref="$R" sock="$S" chainfs="$CHAINFS" ctl="$BUILD/chainfsctl" tmp="$T" \
	fuse_mount="$FUSE_MOUNT" mainopts="$opts" \
	replay="CHAINFS_SEED=$seed CHAINFS_STEPS=@STEPS@ sh tests/coherence.sh" >"$T/out" 2>&1
rc=$?
grep -v '^result ' "$T/out"
set -- $(awk '$1 == "result" { print $2, $3 }' "$T/out")
if [ $# -eq 2 ]; then
	passed=$1
	failed=$2
else
	fail "coherence.py ended without a result (status $rc)"
fi
finish
