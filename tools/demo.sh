#!/bin/sh
# `make demo`: a short tour of the default tree on a fresh temp mount, unmounted at the end.
set -eu
cd "$(dirname "$0")/.."
CTL=$(pwd)/build/chainfsctl
export CTL
exec ./fuse-mount.sh --run '
set -u
say() { printf "\n\033[1m$ %s\033[0m\n" "$*"; }
run() { say "$*"; sh -c "$*" 2>&1 || true; }
cd "$MNT"
echo "chainfs is mounted at $MNT (follow=kernel: the kernel follows the links)."
run "ls -l chains"
run "find . | wc -l"
run "stat -L -c \"%n: %F, %s bytes\" chains/40"
say "stat -L chains/41       # one link past the kernel'"'"'s limit of 40"
stat -L chains/41 2>&1 || true
run "readlink chains/5 chains/.5.chain/1"
run "cat chains/40"
run "ls -l abs; readlink abs/*"
run "stat -L loops/* 2>&1 | head -3"
echo
echo "Now chainfs follows the links itself, past the kernel'"'"'s 40, without remounting:"
run "\$CTL . limits total=2000 nest=200"
run "\$CTL . mode server"
run "stat -L -c \"%n: %F\" chains/1000 nest/100"
run "\$CTL . resolve nest/8"
run "\$CTL . stats | sed -n \"/resolver:/,/heap_allocs/p\""
echo
echo "Next: mount it yourself with  ./fuse-mount.sh /some/dir  (unmount: ./fuse-mount.sh -u /some/dir)"
echo "and read /some/dir/README; chainfs --help lists the follow modes and limits."
'
