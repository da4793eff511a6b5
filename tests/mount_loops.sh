#!/bin/sh
# No user can hold the daemon with a loop: with the limits raised as far as they go
# (max_total and max_nest 1,000,000,000), uid 65534 makes a two-link loop and lists it with
# `ls -l`, which walks it once per request (lookup, getattr, readlink); the walk ends with
# ELOOP as soon as it repeats, so the listing returns at once and root's stat, sent meanwhile,
# is answered. In every mode: in kernel mode the kernel follows links itself, but the daemon
# walks "up -> loopa/.." to answer its readlink (abslinks=inroot).
# Before the cycle check each walk ran to the limit: 118 s of a stalled daemon for one ls.
. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
BIG=max_total=1000000000,max_nest=1000000000
LIMIT_S=3 # "a couple of seconds", with room for a loaded machine
DEEP_S=20 # a deepening loop: the budget ends each walk after about a second
printf '%s\n' 'file /f "root'\''s file\n"' 'dir /pub mode=0777' >"$T/loops.spec"

O=$T/out # where uid 65534 writes what it saw
mkdir "$O" && chown 65534:65534 "$O"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

for mode in kernel collapse server; do
	M=$T/$mode
	SOCK=$T/$mode.sock
	mount_cfs "$M" -o "follow=$mode,$BIG,allow_other,ctl=$SOCK" "$T/loops.spec" ||
		{ fail "mount $mode"; continue; }
	chmod 755 "$M"
	check "$mode: uid 65534 makes a two-link loop" \
		$NOBODY sh -c "ln -s loopb '$M/pub/loopa' && ln -s loopa '$M/pub/loopb' &&
			ln -s loopa/.. '$M/pub/up'"
	ctl stats reset >/dev/null
	t0=$(now_ms)
	# the listing, then what following the loop gives, each walk under a deadline
	$NOBODY sh -c "timeout 60 ls -l '$M/pub' >'$O/$mode.ls' 2>&1;
		timeout 60 stat -L '$M/pub/loopa' >'$O/$mode.stat' 2>&1; echo \$? >'$O/$mode.rc'" &
	walker=$!
	PIDS="$PIDS $walker"
	# root's stat while the walker runs (or just after: a fast walk may be done already)
	check "$mode: root's stat is answered meanwhile" timeout "$LIMIT_S" stat "$M/f" >/dev/null
	wait "$walker"
	took=$(($(now_ms) - t0))
	check "$mode: ls -l and stat -L of the loop took ${took} ms (< ${LIMIT_S} s)" \
		test "$took" -lt $((LIMIT_S * 1000))
	check "$mode: ls -l lists the links" grep -Eq " up( ->|$)" "$O/$mode.ls"
	check "$mode: stat -L of the loop fails" test "$(cat "$O/$mode.rc")" -ne 0
	check "$mode: ... with ELOOP" grep -q "Too many levels of symbolic links" "$O/$mode.stat"
	expect ELOOP stat "$M/pub/loopb"
	expect ELOOP stat "$M/pub/up/f"
	# the daemon's own account: its walks found the loop, a few links in
	if [ "$mode" != kernel ]; then
		ctl stats >"$T/$mode.stats"
		found=$(awk '$1 == "loops_found" { print $2 }' "$T/$mode.stats")
		links=$(awk '$1 == "links_followed" { print $2 }' "$T/$mode.stats")
		walks=$(awk '$1 == "walks" { print $2 }' "$T/$mode.stats")
		check "$mode: the daemon found loops (${found:-none})" test "${found:-0}" -gt 0
		# per walk: how many walks a listing makes is not the point
		check "$mode: ... a few links in (${links:-?} in ${walks:-?} walks)" \
			test "${links:-0}" -lt $((10 * ${walks:-0}))
	fi
	# ga -> "gb/x", gb -> "ga" nests one body deeper each turn, so no state repeats: each
	# request's walk budget ends it (about a second here), and other users are answered in
	# between. In server mode one stat -L is many requests (the kernel follows the answer,
	# the link's own path, up to its limit of 40), so there the walker is only timed out.
	$NOBODY sh -c "mkdir '$M/pub/g' && ln -s gb/x '$M/pub/g/ga' && ln -s ga '$M/pub/g/gb'"
	$NOBODY sh -c "timeout $DEEP_S stat -L '$M/pub/g/ga' >'$O/$mode.deep' 2>&1" &
	walker=$!
	PIDS="$PIDS $walker"
	for i in 1 2 3; do # names never asked before: each lookup reaches the daemon
		check "$mode: root's lookup $i is answered while the deepening walk runs" \
			sh -c "timeout $LIMIT_S stat '$M/new$i' 2>&1 | grep -q 'No such file'"
	done
	wait "$walker"
	[ "$mode" = server ] ||
		check "$mode: the deepening loop is ELOOP" grep -q "Too many levels" "$O/$mode.deep"
	unmount_cfs "$M"
done
finish
