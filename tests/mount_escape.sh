#!/bin/sh
# Nothing on the mount reaches the host, in any mode, whatever the tree does meanwhile: a
# hard-linked link, a link whose answer depended on a missing name, a link whose directory
# moves while it is read. A canary file sits just outside every mount: no read may return it.
# CHAINFS_RACE_SECS sets how long each race runs (default 5).
. "$(dirname "$0")/lib.sh"

SECS=${CHAINFS_RACE_SECS:-5}
printf 'HOST\n' >"$T/canary" # one ".." above any mount's root
UP=../../../../../../../../../../../../..

# The tree holds its own file at the canary's host path: a link to it that left the mount
# would reach the canary itself (and a write would change it).
cat >"$T/escape.spec" <<EOF
file /canary "inside\n"
file $T/canary "the tree's own canary\n"
dir /a/b/c/d/e/f/g/h/i/j
link /a/b/c/d/e/f/g/h/i/j/l $UP$T/canary
hardlink /escape /a/b/c/d/e/f/g/h/i/j/l
link /a/abs /canary
hardlink /absroot /a/abs
dir /race
link /race/L x/../../../canary
dir /mv/a/b
link /mv/a/b/L ../../../canary
EOF

# reads COUNTFILE CMD...: run CMD until the deadline file goes away, counting "HOST" answers
reads() {
	out=$1
	shift
	n=0
	host=0
	while [ -e "$T/running" ]; do
		case "$("$@" 2>/dev/null)" in *HOST*) host=$((host + 1)) ;; esac
		n=$((n + 1))
	done
	echo "$n $host" >"$out"
}

# race NAME READER-CMD -- CHANGER-CMD: both loops for SECS seconds; no read may see the host
race() {
	name=$1
	shift
	: >"$T/running"
	reads "$T/reads" "$@" &
	reader=$!
	PIDS="$PIDS $reader"
	end=$(($(date +%s) + SECS))
	changes=0
	while [ "$(date +%s)" -lt "$end" ]; do
		eval "$CHANGE" >/dev/null 2>&1
		changes=$((changes + 1))
	done
	rm -f "$T/running"
	check "$name: reader ends" timeout 30 sh -c "while kill -0 $reader 2>/dev/null; do sleep 0.1; done"
	read -r n host <"$T/reads" || n=0
	check "$name: $n reads during $changes changes, none of the host's canary" test "$host" -eq 0
	check "$name: the reads ran" test "$n" -gt 0
}

for mode in kernel collapse server; do
	E=$T/esc-$mode
	mount_cfs "$E" -o "follow=$mode" "$T/escape.spec" || { fail "mount $mode"; continue; }
	mnt=$(cd "$E" && pwd -P)

	# a hard-linked link: one answer for every name, right from each
	expect "ok 22" cat "$E/escape"
	expect "ok 22" cat "$E/a/b/c/d/e/f/g/h/i/j/l"
	expect "ok 7" cat "$E/absroot"
	ln -P "$E/a/b/c/d/e/f/g/h/i/j/l" "$E/again"
	expect "ok 22" cat "$E/again"
	if [ "$mode" != server ]; then
		expect "ok $mnt$T/canary" readlink "$E/escape"
		expect "ok $mnt/canary" readlink "$E/absroot"
	fi

	# the answer for a missing name must not climb once the name appears
	CHANGE="mkdir '$E/race/x'; rmdir '$E/race/x'"
	race "$mode: mkdir/rmdir under a link's path" cat "$E/race/L"
	# the answer must not climb when its directory moves up and back
	CHANGE="mv '$E/mv/a/b' '$E/mv/b2'; mv '$E/mv/b2' '$E/mv/a/b'"
	race "$mode: the link's directory moves" sh -c "cat '$E/mv/a/b/L' '$E/mv/b2/L'"

	check "$mode: writing through a hard-linked link stays in the tree" \
		sh -c "printf 'written\n' >'$E/escape'"
	expect "ok 8" cat "$E$T/canary"
	check "$mode: the host's canary is untouched" grep -qx HOST "$T/canary"
	printf 'HOST\n' >"$T/canary" # for the next mode, whatever happened
	unmount_cfs "$E"
done

finish
