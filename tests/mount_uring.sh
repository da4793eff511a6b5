#!/bin/sh
# FUSE over io_uring (-o transport=uring): stats says the ring is live with a queue per
# possible CPU; a walk, listings, reads, a 1000-link chain followed by the daemon, writes and
# renames answer exactly as over /dev/fuse; a daemon killed with SIGKILL in the middle of a
# walk leaves a mount that fuse-mount.sh clears and a new ring mount that works.
# check: once: it picks its transports itself
. "$(dirname "$0")/lib.sh"

if [ ! -e "$URING_PARAM" ]; then
	echo "$TEST_NAME: skipped: this kernel has no FUSE over io_uring ($URING_PARAM)"
	exit 0
fi
uring_param Y || { fail "cannot set $URING_PARAM"; finish; exit 1; }

U=$T/ring # the same length as the other: server mode shows dangling links by
D=$T/devf # their path through the mountpoint, and ls -l shows their length
stat_of() { # stat_of SOCK KEY: that number (or word) from `stats`
	timeout 30 "$CTL" -s "$1" stats | awk -v k="$2" '$1 == k { print $2; exit }'
}
# the kernel's queues: one per possible CPU (num_possible_cpus), "0-1" or "0-3,6"
cpus=$(tr ',' '\n' </sys/devices/system/cpu/possible |
	awk -F- '{ n += (NF == 2 ? $2 - $1 + 1 : 1) } END { print n }')

cat >"$T/u.spec" <<'SPEC'
dir /d
file /d/small "hello\n"
file /d/big size=300000 pattern="abc\n"
dir /plain
file /plain/target "end of the chain\n"
chain /chains/1000 1000 /plain/target
tree /tree depth=3 fanout=8 files=50% links=10% seed=7
SPEC
opts=follow=server,max_total=2000,max_nest=2000
mount_cfs "$U" -o "transport=uring,ctl=$T/u.sock,$opts" "$T/u.spec" || { fail mount; finish; exit 1; }
mount_cfs "$D" -o "transport=dev,ctl=$T/d.sock,$opts" "$T/u.spec" || { fail mount; finish; exit 1; }

check "stats: the ring is live" test "$(stat_of "$T/u.sock" live)" = uring
check "stats: one queue per possible CPU ($cpus)" test "$(stat_of "$T/u.sock" queues)" = "$cpus"
check "stats: entries in every queue" test "$(stat_of "$T/u.sock" entries_per_queue)" -ge 1
check "stats: the dev mount says dev" test "$(stat_of "$T/d.sock" live)" = dev

# same MNT OUT COMMAND...: run COMMAND in MNT, output to OUT (errors included, sorted)
same() {
	(cd "$1" && timeout 60 sh -c "$3" 2>&1 | sed "s|$1|MNT|g" | LC_ALL=C sort) >"$2"
}
compare() { # compare WHAT COMMAND
	same "$U" "$T/u.out" "$2"
	same "$D" "$T/d.out" "$2"
	same_output "$1 over the ring and over /dev/fuse" "$T/u.out" "$T/d.out"
}
compare find 'find .'
compare "ls -lR" 'ls -lRn --time-style=+%s .'
compare "cat of every file" 'find . -type f -exec md5sum {} +'
compare "stat -L through 1000 links" 'stat -L -c "%n %F %s %i %h" chains/1000; cat chains/1000'
head -c 700000 /dev/urandom >"$T/w.src"
for m in "$U" "$D"; do
	(cd "$m" && timeout 60 sh -c '
		cp "$0/w.src" d/written && echo more >>d/small && mv d/written plain/moved &&
		mkdir d/sub && ln -s ../small d/sub/l && mv d/sub d/sub2 && rm d/big' "$T")
done
compare "writes and renames" 'find . -path ./tree -prune -o -printf "%p %y %s %m %l\n"'
compare "what was written" 'md5sum plain/moved d/small'
check "a 700 kB file written through the ring reads back" cmp "$T/w.src" "$U/plain/moved"
n=$(stat_of "$T/u.sock" ring_requests)
check "the requests came through the ring ($n)" test "${n:-0}" -gt 100
timeout 30 "$CTL" -s "$T/u.sock" stats reset >/dev/null
n=$(stat_of "$T/u.sock" ring_requests)
check "stats reset counts the ring's requests from there ($n)" test "${n:-9}" -le 2

unmount_cfs "$D"
unmount_cfs "$U"

# SIGKILL during a walk over the ring: the walker gets ENOTCONN, not a hang; the dead mount
# is cleared and a new ring mount works.
M=$T/crash
mount_cfs "$M" -o "transport=uring,ctl=$T/c.sock" || { fail mount; finish; exit 1; }
timeout 60 find "$M/tree" >/dev/null 2>"$T/find.err" &
finder=$!
check "the find is under way" wait_for served "$T/c.sock" 300
kill -9 "$("$FUSE_MOUNT" --pid "$M")"
wait $finder
st=$?
check "find ends when the daemon dies (status $st, not a timeout)" test $st -ne 124
check "find reports ENOTCONN" grep -q "Transport endpoint is not connected" "$T/find.err"
expect ENOTCONN stat "$M/wide/f9999"
check "fuse-mount.sh -u clears the dead mount" "$FUSE_MOUNT" -u "$M"
check "a new ring mount works" mount_cfs "$M" -o "transport=uring,ctl=$T/c.sock"
expect "ok file" stat "$M/chains/40"
check "... over the ring" test "$(stat_of "$T/c.sock" live)" = uring
unmount_cfs "$M"
finish
