#!/bin/sh
# Nothing on the mount reaches the host, in any mode, whatever the tree does meanwhile: a
# hard-linked link, a link whose answer depended on a missing name, a link whose directory
# moves while it is read. A canary file sits just outside every mount: no read may return it.
# CHAINFS_RACE_SECS sets how long each race runs (default 1).
. "$(dirname "$0")/lib.sh"

SECS=${CHAINFS_RACE_SECS:-1}
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

# race NAME CHANGE ARG... -- FILE...: for SECS seconds one process changes the tree (CHANGE:
# mkdir-rmdir DIR, or mv A B: there and back) while another reads each FILE in turn, again
# and again, each a process making those syscalls without a fork each; no read may see the
# host's canary. (With a fork a step, 5 s made ~40 changes and ~100 reads; one process makes
# hundreds of changes and thousands of reads a second.)
RACE='import os, sys, time
what = sys.argv[1]
if what == "read":
    running, files = sys.argv[2], sys.argv[3:]
    n = host = 0
    while os.path.exists(running):
        for f in files:
            try:
                with open(f, "rb") as r:
                    host += b"HOST" in r.read()
            except OSError:
                pass
        n += 1
    print(n, host)
else:
    end, args = time.time() + float(sys.argv[2]), sys.argv[3:]
    changes = 0
    while time.time() < end:
        try:
            if what == "mkdir-rmdir":
                os.mkdir(args[0])
                os.rmdir(args[0])
            else:
                os.rename(args[0], args[1])
                os.rename(args[1], args[0])
        except OSError:
            pass
        changes += 1
    print(changes)'
race() {
	name=$1 change=$2
	shift 2
	args=
	while [ "$1" != -- ]; do
		args="$args $1"
		shift
	done
	shift
	: >"$T/running"
	timeout 60 python3 -c "$RACE" read "$T/running" "$@" >"$T/reads" &
	reader=$!
	PIDS="$PIDS $reader"
	# shellcheck disable=SC2086 # ARGS are paths without spaces ($T is mktemp's)
	changes=$(timeout 60 python3 -c "$RACE" "$change" "$SECS" $args)
	rm -f "$T/running"
	check "$name: reader ends" timeout 30 sh -c "while kill -0 $reader 2>/dev/null; do sleep 0.1; done"
	read -r n host <"$T/reads" || n=0
	check "$name: $n reads during ${changes:-no} changes, none of the host's canary" \
		test "${host:-1}" -eq 0
	check "$name: the reads ran" test "$n" -gt 0
	check "$name: the changes ran" test "${changes:-0}" -gt 0
}

for mode in kernel collapse server; do
	E=$T/esc-$mode
	mount_cfs "$E" -o "follow=$mode" "$T/escape.spec" || { fail "mount $mode"; continue; }

	# a hard-linked link: one answer for every name, right from each
	expect "ok 22" cat "$E/escape"
	expect "ok 22" cat "$E/a/b/c/d/e/f/g/h/i/j/l"
	expect "ok 7" cat "$E/absroot"
	ln -P "$E/a/b/c/d/e/f/g/h/i/j/l" "$E/again"
	expect "ok 22" cat "$E/again"
	if [ "$mode" != server ]; then
		up10=.^/.^/.^/.^/.^/.^/.^/.^/.^/.^ # the deepest name is 10 down
		expect "ok $up10$T/canary" readlink "$E/escape"
		expect "ok .^/canary" readlink "$E/absroot"
	fi

	# the answer for a missing name must not climb once the name appears
	race "$mode: mkdir/rmdir under a link's path" mkdir-rmdir "$E/race/x" -- "$E/race/L"
	# the answer must not climb when its directory moves up and back
	race "$mode: the link's directory moves" mv "$E/mv/a/b" "$E/mv/b2" -- "$E/mv/a/b/L" "$E/mv/b2/L"

	check "$mode: writing through a hard-linked link stays in the tree" \
		sh -c "printf 'written\n' >'$E/escape'"
	expect "ok 8" cat "$E$T/canary"
	check "$mode: the host's canary is untouched" grep -qx HOST "$T/canary"
	printf 'HOST\n' >"$T/canary" # for the next mode, whatever happened
	unmount_cfs "$E"
done

# The host above the mount changes under it. uid 65534 owns the mountpoint's grandparent: it
# renames the mountpoint's parent away and puts a link to / where the mountpoint was; or root
# mounts over an ancestor, or unmounts lazily, while a process works inside. No answer may name
# the mountpoint's host path: reads through links give the tree's files or fail, never the
# host's, and writes do not reach the host. The tree holds its own $T/canary; only the host
# holds $T/hostonly and $T/victim.
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
printf 'HOST\n' >"$T/hostonly"
printf 'HOST\n' >"$T/victim"
cat >"$T/host.spec" <<EOF
file $T/canary "inside\n"
dir /d/e
link /d/e/esc $T/canary
link /d/e/broken $T/hostonly
link /d/e/escw ../../../../../..$T/victim
link /d/e/up ../../d
EOF

# no_host WHAT DIR RUN...: through DIR (the mount's root, by whatever path still leads there),
# run as RUN (env: root; or setpriv...), no read gets a host file and no write through a link
# reaches the host
no_host() {
	what=$1 dir=$2
	shift 2
	# cd -P: the shell must not spell the way in again from the (changed) host path
	cd -P "$dir/d/e" 2>/dev/null || {
		fail "$what: cd into the mount"
		return
	}
	for l in esc broken up/e/esc; do
		out=$(timeout 10 "$@" cat "$l" 2>/dev/null)
		case "$out" in *HOST*) fail "$what: $l read the host's file" ;; *) pass ;; esac
	done
	timeout 10 "$@" sh -c 'printf written >escw' 2>/dev/null
	cd -P ../.. 2>/dev/null || fail "$what: cd back"
	check "$what: the host's victim is untouched" grep -qx HOST "$T/victim"
	printf 'HOST\n' >"$T/victim"
}

for mode in kernel collapse server; do
	X=$T/x-$mode
	mkdir -p "$X/a" && chown 65534 "$X" && chmod 755 "$X" "$X/a"
	mount_cfs "$X/a/m" -o "follow=$mode,allow_other" "$T/host.spec" || {
		fail "mount $mode"
		continue
	}
	expect "ok 7" cat "$X/a/m/d/e/esc" # the tree's own canary
	for l in esc broken escw up; do     # what the kernel keeps, from before the host changes
		readlink "$X/a/m/d/e/$l" >/dev/null 2>&1
	done

	# the mountpoint's parent renamed away by its owner, a link to / in its place
	if $NOBODY sh -c "mv '$X/a' '$X/b' && mkdir '$X/a' && ln -s / '$X/a/m'"; then
		no_host "$mode, renamed above, root" "$X/b/m" env
		no_host "$mode, renamed above, uid 65534" "$X/b/m" $NOBODY
		rm -f "$X/a/m" && rmdir "$X/a" && mv "$X/b" "$X/a"
	else
		fail "$mode: uid 65534 moves the mount's parent"
	fi
	if [ -L "$X/a/m" ] || ! mountpoint -q "$X/a/m"; then
		fail "$mode: the mount is back in its place"
		continue
	fi

	# this shell works inside while root mounts over an ancestor, in which m leads to /; then
	# the mount is unmounted lazily under it, and a link to / takes the mountpoint's place
	cd -P "$X/a/m" || fail "$mode: cd into the mount"
	if mount -t tmpfs -o mode=755 cfs-over "$X/a" && ln -s / "$X/a/m"; then
		no_host "$mode, ancestor mounted over" . env
		umount "$X/a"
	else
		fail "$mode: over-mount"
	fi
	if umount -l "$X/a/m" && rmdir "$X/a/m" && ln -s / "$X/a/m"; then
		no_host "$mode, unmounted lazily" . env
		rm "$X/a/m" && mkdir "$X/a/m"
	else
		fail "$mode: lazy unmount"
	fi
	cd "$T" || exit 1
done

finish
