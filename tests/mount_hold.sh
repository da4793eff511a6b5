#!/bin/sh
# Pauses on purpose (issue 27): a `hold` rule keeps a matching request waiting while other
# requests and the control socket are served, until `fault release ID`, the rule's own
# timeout, `fault remove`, `fault clear` or the unmount. A process stopped inside its
# syscall: the test changes the tree meanwhile (through the control socket, a change that
# needs no directory lock the held request holds: README, Races on purpose), releases it, and
# its result reflects the change, 20 times of 20. A killed holder is let go at once (its
# INTERRUPT ends the hold), and the mount keeps serving. The daemon runs the ASan build.
. "$(dirname "$0")/lib.sh"

ASAN_BIN=$ROOT/build-asan/chainfs
[ -x "$ASAN_BIN" ] || make -s -C "$ROOT" BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" build-asan/chainfs >&2
CHAINFS=$ASAN_BIN
M=$T/mnt
RUNS=${HOLD_RUNS:-20}
cat >"$T/spec" <<'SPEC'
file /README "readme\n"
dir /w
file /w/b "b\n"
SPEC

# held ID N: rule ID holds N requests now (`fault list`, the daemon's own account)
held() {
	raw 'fault list' | python3 -c 'import json, sys
for r in json.load(sys.stdin)["faults"]:
    if r["id"] == int(sys.argv[1]):
        sys.exit(r["held"] != int(sys.argv[2]))
sys.exit(1)' "$1" "$2"
}
# add RULE: the new rule's id
add() {
	# shellcheck disable=SC2086 # the rule's words
	ctl --json fault add $1 | sed -n 's/.*"id":\([0-9]*\).*/\1/p'
}
# reader NAME: cat $M/w/NAME into $T/NAME.out in the background, its pid (cat's own) in
# $reader; the link's body comes from a READLINK the rule holds (kernel mode: the kernel asks
# for it). Each wait on it is bounded (wait_for gone); the trap kills what is left.
reader() {
	cat "$M/w/$1" >"$T/$1.out" 2>&1 &
	reader=$!
	PIDS="$PIDS $reader"
}
# rules: how many rules `fault list` shows
rules() {
	raw 'fault list' | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["faults"]))'
}
has_ping() { ctl ping >/dev/null 2>&1; }
# reads NAME WANT: what the reader of NAME printed is WANT
reads() { [ "$(cat "$T/$1.out")" = "$2" ]; }

mount_cfs "$M" -o "ctl=$SOCK,follow=kernel" "$T/spec" || { fail mount; finish; exit 1; }

# --- the pause: change while held, release, the result shows the change -----------------
# /w/lN is a link to /w/xN, which is not there: cat alone would fail (ENOENT). The READLINK
# of lN is held; meanwhile the control socket makes xN (the invalidation it queues needs
# /w's lock, which a READLINK in a walk does not hold); released, the walk goes on to the
# new file.
ok=0
for i in $(seq "$RUNS"); do
	ctl link "/w/l$i" "x$i" >/dev/null
	id=$(add "op=readlink path=/w/l$i hold once")
	reader "l$i"
	if ! wait_for held "$id" 1; then
		echo "run $i: the readlink was never held" >&2
		ctl fault clear >/dev/null
		continue
	fi
	ctl file "/w/x$i" "new $i\n" >/dev/null
	check "run $i: still held after the change" held "$id" 1
	released=$(ctl --json fault release "$id")
	check "run $i: release says it let one go" has "$released" '"released":1'
	wait_for gone "$reader" || echo "run $i: the reader still waits" >&2
	wait "$reader"
	if reads "l$i" "new $i"; then
		ok=$((ok + 1))
	else
		echo "run $i: read '$(cat "$T/l$i.out")'" >&2
	fi
	ctl fault clear >/dev/null
done
check "held, changed, released: the reader sees the change ($ok of $RUNS)" test "$ok" -eq "$RUNS"

# while held, the rest is served: another file, another readlink, the control socket
ctl link /w/m b >/dev/null
id=$(add "op=readlink path=/w/m hold")
reader m
check "a hold without a timeout holds" wait_for held "$id" 1
expect "ok 7" cat "$M/README"
check "... the control socket answers" has_ping
check "... and the reader still waits" not gone "$reader"
expect "ok" readlink "$M/w/l1"
# fault remove lets go of what the rule holds
check "fault remove releases it" has "$(ctl --json fault remove "$id")" '"released":1'
check "... the reader ends" wait_for gone "$reader"
wait "$reader"
check "... with the file" reads m b

# fault clear releases every rule's holds
id=$(add "op=readlink path=/w/m hold")
id2=$(add "op=getattr path=/README hold")
reader m
stat -c %s "$M/README" >"$T/stat.out" 2>&1 &
stater=$!
PIDS="$PIDS $stater"
check "two rules hold one request each" wait_for held "$id" 1
check "..." wait_for held "$id2" 1
out=$(ctl --json fault clear)
check "fault clear releases both" has "$out" '"released":2'
check "... the reader ends" wait_for gone "$reader"
check "... the stat ends" wait_for gone "$stater"
wait "$reader" "$stater"
check "... both answered" reads m b
check "..." test "$(cat "$T/stat.out")" = 7

# a hold with a timeout lets go by itself
id=$(add "op=readlink path=/w/m hold=1500")
reader m
check "hold=1500 holds" wait_for held "$id" 1
check "... and lets go by itself" wait_for gone "$reader"
wait "$reader"
check "... the reader got the file" reads m b
check "... nothing held any more" held "$id" 0
ctl fault clear >/dev/null

# a killed holder: its INTERRUPT ends the hold (EINTR to a caller that is gone); without
# that, a caller the daemon has read a request of waits for the answer, unkillable
id=$(add "op=readlink path=/w/m hold")
reader m
check "held again" wait_for held "$id" 1
kill -9 "$reader"
check "the killed holder ends, unreleased" wait_for gone "$reader"
check "... the rule holds nothing" held "$id" 0
expect "ok 7" cat "$M/README"
check "... the mount serves" has_ping
ctl fault clear >/dev/null # (lets it go, if it still waited)
wait "$reader" 2>/dev/null

# bad rules and ids: a clear error, nothing added
for bad in hold=0 hold=600001 "hold errno=EIO" "hold delay=10" "hold change=unlink /README"; do
	# shellcheck disable=SC2086 # the rule's words
	out=$(ctl fault add op=readlink path=/w/m $bad 2>&1)
	rc=$?
	check "refused: $bad ($out)" test $rc -ne 0
	check "... with a reason" has "$out" hold
	check "... nothing added" test "$(rules)" -eq 0
done
out=$(ctl fault release 99 2>&1)
check "release of no rule: an error ($out)" has "$out" "no rule 99"
out=$(ctl fault release x 2>&1)
check "release of no number: an error" has "$out" "ID must be"

# --- unmount while a request is held: prompt, no mount, no process -----------------------
id=$(add "op=readlink path=/w/m hold")
daemon=$("$FUSE_MOUNT" --pid "$M")
reader m
check "held before the unmount" wait_for held "$id" 1
# promptly: the daemon is told to stop at once (it would otherwise be waited for 10 s first,
# the kernel never ending a session whose user it holds)
check "the unmount returns (8 s at most)" timeout 8 "$FUSE_MOUNT" -u "$M"
check "... the reader ends" wait_for gone "$reader"
wait "$reader" 2>/dev/null
check "... nothing mounted" not is_mounted "$M"
check "... the daemon gone" wait_for gone "$daemon"
finish
