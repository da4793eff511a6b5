#!/bin/sh
# Kernel cache invalidations: none is sent to a nodeid the kernel forgot and got back as
# another kind (libfuse would log "writing device: Not a directory" for each), and the
# control commands that invalidate answer once the kernel's caches were dropped.
# check: long: walks of the default tree under flips
. "$(dirname "$0")/lib.sh"

M=$T/mnt
stat_of() { # stat_of KEY: that number from `stats`
	ctl stats | awk -v k="$1" '$1 == k { print $2 }'
}

# --- stale invalidations are dropped, failures are counted ------------------------------------
# A walk in server mode gives ~190k path nodeids; a namespace change (and then a mode switch)
# queues an invalidation for each, and while they drain the next walk makes the kernel forget
# nodeids that the daemon hands out again (in a slot's reuse a directory's nodeid may come
# back as a file's). One change is enough: without the drop, one gave ~100 refused
# invalidations, as three did, which took 40 s more a run.
mount_cfs "$M" -o "follow=server,ctl=$SOCK,opens=answer" || { fail mount; finish; exit 1; }
timeout 120 du -sL "$M" >/dev/null 2>&1
n=$(stat_of path_nodeids)
check "the walk left path nodeids ($n)" test "${n:-0}" -gt 1000
mkdir "$M/x1"
timeout 120 du -sL "$M" >/dev/null 2>&1
ctl mode collapse >/dev/null
timeout 120 du -sL "$M" >/dev/null 2>&1
# `mode` answers once every invalidation queued before it was delivered (or dropped)
ctl mode server >/dev/null
check "invalidations were dropped as stale ($(stat_of invalidations_stale))" \
	test "$(stat_of invalidations_stale)" -gt 0
check "no invalidation was lost ($(stat_of invalidations_lost))" \
	test "$(stat_of invalidations_lost)" -eq 0
check "libfuse logged no refused invalidation ($(grep -c 'writing device' "$M.log"))" \
	not_grep "writing device" "$M.log"
unmount_cfs "$M"

# --- mode and limits answer once the kernel's caches were dropped ---------------------------
# With hour-long timeouts the kernel keeps every entry it got; walks in the background keep
# it holding ~100k nodes, each to invalidate at every change, and requests coming while the
# invalidations go out. Right after `mode` answers, lstat of
# a link shows what the new mode shows (kernel: a link; server: the file it leads to), and
# after `limits`, a chain of 42 resolves or not as the new limit says.
mount_cfs "$M" -o "follow=kernel,ctl=$SOCK,entry_timeout=3600,attr_timeout=3600" ||
	{ fail mount; finish; exit 1; }
timeout 120 find "$M" >/dev/null 2>&1
# made last, so its invalidation is among the last queued (they go in handle order)
mkdir "$M/late" && ln -s ../README "$M/late/l" && ln -s ../chains/41 "$M/late/c41"
(while :; do find "$M" >/dev/null 2>&1; done) &
PIDS="$PIDS $!"
bad=0
for i in $(seq 1 20); do
	ctl mode server >/dev/null
	k=$(stat -c %F "$M/late/l" 2>&1)
	[ "$k" = "regular file" ] || { bad=$((bad + 1)); echo "  server #$i: $k" >&2; }
	ctl mode kernel >/dev/null
	k=$(stat -c %F "$M/late/l" 2>&1)
	[ "$k" = "symbolic link" ] || { bad=$((bad + 1)); echo "  kernel #$i: $k" >&2; }
done
check "20 mode flips under load: each next lstat saw the new mode ($bad wrong)" test "$bad" -eq 0
ctl mode server >/dev/null
bad=0
for i in $(seq 1 20); do
	ctl limits total=41 >/dev/null # late/c41 and the 41 of chains/41: 42 links
	"$PROBE" stat "$M/late/c41" | grep -q '^ELOOP' || bad=$((bad + 1))
	ctl limits total=42 >/dev/null
	"$PROBE" stat "$M/late/c41" | grep -q '^ok' || bad=$((bad + 1))
done
check "20 limit flips under load: each next stat saw the new limit ($bad wrong)" test "$bad" -eq 0
unmount_cfs "$M"

finish
