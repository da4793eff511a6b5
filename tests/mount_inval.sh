#!/bin/sh
# Kernel cache invalidations: none is sent to a nodeid the kernel forgot and got back as
# another kind (libfuse would log "writing device: Not a directory" for each), and the
# control commands that invalidate answer once the kernel's caches were dropped.
. "$(dirname "$0")/lib.sh"

CTL=$BUILD/chainfsctl
M=$T/mnt
S=$T/ctl.sock
ctl() {
	timeout 60 "$CTL" -s "$S" "$@"
}
stat_of() { # stat_of KEY: that number from `stats`
	ctl stats | awk -v k="$1" '$1 == k { print $2 }'
}

# --- stale invalidations are dropped, failures are counted ------------------------------------
# A walk in server mode gives ~190k path nodeids; a namespace change queues an invalidation
# for each, and while they drain a second walk makes the kernel forget nodeids that the daemon
# hands out again (in a slot's reuse a directory's nodeid may come back as a file's).
mount_cfs "$M" -o "follow=server,ctl=$S,opens=answer" || { fail mount; finish; exit 1; }
timeout 120 du -sL "$M" >/dev/null 2>&1
n=$(stat_of path_nodeids)
check "the walk left path nodeids ($n)" test "${n:-0}" -gt 50000
for i in 1 2 3; do
	mkdir "$M/x$i"
	timeout 120 du -sL "$M" >/dev/null 2>&1
done
ctl mode collapse >/dev/null
timeout 120 du -sL "$M" >/dev/null 2>&1
ctl mode server >/dev/null
sleep 1
check "invalidations were dropped as stale ($(stat_of invalidations_stale))" \
	test "$(stat_of invalidations_stale)" -gt 0
check "no invalidation was lost ($(stat_of invalidations_lost))" \
	test "$(stat_of invalidations_lost)" -eq 0
check "libfuse logged no refused invalidation ($(grep -c 'writing device' "$M.log"))" \
	not_grep "writing device" "$M.log"
unmount_cfs "$M"

finish
