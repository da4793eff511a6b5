#!/bin/sh
# `make demo`: a short tour of the default tree on a fresh temp mount, unmounted at the end
# (also when the tour fails or is interrupted). Every command is shown as it can be retyped:
# the tour runs inside the mount, and chainfsctl is named by its absolute path. Bold only
# on a terminal; the explanations read what the commands answered.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
CTL=$BUILD/chainfsctl
rel=${BUILD#"$top"/} # as the reader types it from $top
export CHAINFS="$BUILD/chainfs"

if [ -t 1 ]; then
	bold=$(printf '\033[1m') plain=$(printf '\033[0m')
else
	bold= plain=
fi

say() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; }
run() {
	say "$*"
	sh -c "$*" 2>&1 || true
}
note() { printf '(%s)\n' "$*"; }

tour() {
	echo "chainfs is mounted at $MNT (follow=kernel: the kernel follows the links)."
	echo "The commands below run in that directory:"
	say "cd $MNT"
	run "ls -l chains"
	first=$(readlink chains/5 || echo "?")
	last=$(readlink chains/.5.chain/1 || echo "?")
	note "chains/N is the first of N links; the rest are in the hidden chains/.N.chain/ (ls -a shows it): chains/5 -> $first -> ... -> .5.chain/1 -> $last"
	run "find . | wc -l"
	run "stat -L -c '%n: %F, %s bytes' chains/40"
	run "stat -L chains/41"
	note "one link past the kernel's limit of 40"
	run "cat chains/40"
	run "ls -l abs"
	run "$CTL . dump | grep '^link /abs/' | cut -d' ' -f1-3"
	stored=$("$CTL" . dump | awk '$1 == "link" && $2 == "/abs/target" { print $3 }')
	answer=$(readlink abs/target || echo "an error")
	note "abs/ links are stored absolute, from the tree's root; kernel mode rewrites them so they stay inside the mount: abs/target, stored $stored, reads $answer"
	run "stat -L loops/* 2>&1 | head -3"
	echo
	echo "Now chainfs follows the links itself, past the kernel's 40, without remounting:"
	run "$CTL . limits total=2000 nest=200"
	run "$CTL . mode server"
	run "stat -L -c '%n: %F' chains/1000 nest/100"
	run "$CTL . resolve nest/8"
	note "one line a step: d a directory passed, l a link entered (indented as links nest), - the file reached, = where the walk ends"
	run "$CTL . stats | sed -n '/resolver:/,/heap_allocs/p'"
}

if [ "${1:-}" = --tour ]; then
	cd "$MNT"
	tour
	exit 0
fi

MNT=$(mktemp -d "${TMPDIR:-/tmp}/chainfs-demo.XXXXXX")
export MNT
cleanup() {
	./fuse-mount.sh -u "$MNT" >/dev/null 2>&1
	rmdir "$MNT" 2>/dev/null
	true
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
./fuse-mount.sh "$MNT"
st=0
sh "$0" --tour || st=$?
echo
./fuse-mount.sh -u "$MNT"
rmdir "$MNT"
trap - EXIT
echo "Unmounted $MNT and removed it."
echo "Next, from $top: mount it yourself with ./fuse-mount.sh /some/dir (unmount:"
echo "./fuse-mount.sh -u /some/dir) and read /some/dir/README; $rel/chainfs --help lists the"
echo "follow modes and limits, $rel/chainfsctl --help the commands of a running mount."
exit $st
