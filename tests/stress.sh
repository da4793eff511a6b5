#!/bin/sh
# 20 s (STRESS_SECONDS) of everything at once against the ASan daemon: 8 readers (find, stat -L,
# readlink, cat), 2 mutators (ln -sfn, mv, mkdir, rm -r), and a control client switching
# limits and modes and toggling faults. A watchdog fails the test on any hang. Afterwards the
# daemon is alive and clean, nobody saw EIO (the injected faults use ETIMEDOUT), and the tree
# it dumps is the tree find sees.
# check: long: 20 s of load, then its checks
. "$(dirname "$0")/lib.sh"

ASAN_BIN=$ROOT/build-asan/chainfs
[ -x "$ASAN_BIN" ] || make -s -C "$ROOT" BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" build-asan/chainfs >&2
# (make check: 20 s a transport; .ci/run: 40; for a long soak, STRESS_SECONDS=600 sh THIS)
SECONDS_RUN=${STRESS_SECONDS:-20}
M=$T/mnt
SOCK=$T/ctl.sock
export ASAN_OPTIONS=detect_leaks=1:exitcode=97:handle_abort=1
CHAINFS=$ASAN_BIN mount_cfs "$M" -o "ctl=$SOCK,max_total=2000,max_nest=2000,abslinks=raw" ||
	{ fail mount; finish; exit 1; }
DPID=$("$FUSE_MOUNT" --pid "$M")
END=$(($(date +%s) + SECONDS_RUN))
mkdir -p "$M/play" "$T/logs"
for i in 1 2 3 4; do printf "file $i\n" >"$M/play/f$i"; done

reader() { # reader KIND N
	while [ "$(date +%s)" -lt "$END" ]; do
		case $1 in
		find) timeout 60 find "$M/play" "$M/chains" "$M/loops" "$M/nest" >/dev/null ;;
		stat) timeout 60 stat -L "$M"/chains/* "$M"/play/* "$M"/play/*/* >/dev/null ;;
		readlink) timeout 60 readlink "$M"/chains/* "$M"/play/* >/dev/null ;;
		cat) timeout 60 cat "$M/chains/40" "$M"/play/l* "$M/files/README" >/dev/null ;;
		esac
		[ $? -eq 124 ] && echo "HANG $1" >>"$T/logs/hang"
	done 2>>"$T/logs/reader$2"
}
mutator() { # mutator N
	j=0
	while [ "$(date +%s)" -lt "$END" ]; do
		j=$((j + 1))
		timeout 30 sh -c "
			ln -sfn f$((j % 4 + 1)) '$M/play/l$1' &&
			mkdir -p '$M/play/d$1/x' && ln -sfn ../../f1 '$M/play/d$1/x/l' &&
			mv '$M/play/d$1' '$M/play/e$1' && rm -r '$M/play/e$1' &&
			mv '$M/play/l$1' '$M/play/m$1' && mv '$M/play/m$1' '$M/play/l$1'"
		[ $? -eq 124 ] && echo "HANG mutator" >>"$T/logs/hang"
	done 2>>"$T/logs/mutator$1"
}
controller() {
	k=0
	while [ "$(date +%s)" -lt "$END" ]; do
		k=$((k + 1))
		case $((k % 6)) in
		0) "$CTL" -s "$SOCK" mode server ;;
		1) "$CTL" -s "$SOCK" limits total=$((30 + k % 20)) ;;
		2) "$CTL" -s "$SOCK" mode collapse ;;
		# (on links, whose bodies and names the mutators keep renewing: the kernel keeps
		# the files' pages, and with opens=skip it sends no OPEN to fault)
		3) "$CTL" -s "$SOCK" fault add op=any path=/play/l* errno=ETIMEDOUT prob=0.3 seed=$k ;;
		4) "$CTL" -s "$SOCK" mode kernel ;;
		5) "$CTL" -s "$SOCK" fault clear && "$CTL" -s "$SOCK" limits total=2000 ;;
		esac >/dev/null 2>>"$T/logs/control" || echo "control failed at $k" >>"$T/logs/control"
		sleep 0.2
	done
}

n=0
for kind in find stat readlink cat find stat readlink cat; do
	n=$((n + 1))
	reader $kind $n &
	PIDS="$PIDS $!"
done
mutator 1 &
PIDS="$PIDS $!"
mutator 2 &
PIDS="$PIDS $!"
controller &
PIDS="$PIDS $!"
# the watchdog: everything must be over shortly after END
deadline=$((END + 90))
for p in $PIDS; do
	while kill -0 "$p" 2>/dev/null; do
		if [ "$(date +%s)" -gt "$deadline" ]; then
			echo "HANG: pid $p still running" >>"$T/logs/hang"
			kill -9 "$p"
		fi
		sleep 1
	done
done
check "no hang (watchdog)" test ! -s "$T/logs/hang"
[ -s "$T/logs/hang" ] && cat "$T/logs/hang" >&2
check "the daemon is alive" kill -0 "$DPID"
check "no EIO anywhere" sh -c "! cat '$T'/logs/* | grep -q 'Input/output error'"
check "the control client was always answered" test ! -s "$T/logs/control"
check "the faults were seen" sh -c "cat '$T'/logs/* | grep -q 'timed out'"
"$CTL" -s "$SOCK" fault clear >/dev/null
"$CTL" -s "$SOCK" mode kernel >/dev/null

# Quiet now: what find sees is what dump says.
(cd "$M" && find . -path ./tree -prune -o -printf '%y %m %s %p %l\n' | LC_ALL=C sort) >"$T/seen"
"$CTL" -s "$SOCK" dump >"$T/dump.spec"
# the dump mounted again, its links shown as stored too
R=$T/ref
mount_cfs "$R" -o abslinks=raw "$T/dump.spec" || fail "mount the dump"
(cd "$R" && find . -path ./tree -prune -o -printf '%y %m %s %p %l\n' | LC_ALL=C sort) >"$T/dumped"
unmount_cfs "$R"
sed -i '/^d .* \.$/d' "$T/seen" "$T/dumped" # the roots' own sizes differ by nature
same_output "dump agrees with what find sees" "$T/seen" "$T/dumped"
unmount_cfs "$M"
i=0
while kill -0 "$DPID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "no sanitizer report" not_grep "Sanitizer" "$M.log"
finish
