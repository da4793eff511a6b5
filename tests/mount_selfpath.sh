#!/bin/sh
# A link made with the mount's own host path (`ln -s "$PWD/data" self` inside the mount) names
# the tree's /data, in every follow mode, while readlink answers stay inside the mount (no
# host path). The rule (README "The mount's own path"): a stored absolute target that begins
# with the mount point's path followed by '/' or its end walks from the tree's root past it;
# anything else absolute, a mere string prefix included, means the tree's own path. The tree
# here holds its own files under the mount point's path and next to it, so a wrong rule reads
# the wrong file rather than failing.
. "$(dirname "$0")/lib.sh"

TC=$(cd "$T" && pwd -P) # the mount point as the daemon knows it: canonical

# stored LINK WANT: the stored target (the daemon's dump) of LINK is WANT, as written
stored() {
	ctl dump | grep -qF "link $1 $2 uid="
}

for mode in kernel collapse server; do
	M=$TC/m-$mode
	SOCK=$T/ctl-$mode.sock
	# the tree has /tmp (the mount point's first directory) and even the mount point's own
	# path, plus paths that only share a string prefix with it
	cat >"$T/$mode.spec" <<SPEC
file /data "root\n"
dir /a/b
file $M/data "tree's own\n"
file ${M}x/data "prefix x\n"
file $M-other/data "prefix other\n"
link /spec-self $M/data
SPEC
	mount_cfs "$M" -o "follow=$mode,ctl=$SOCK" "$T/$mode.spec" || {
		fail "mount $mode"
		continue
	}
	ln -s "$M/data" "$M/self"
	ln -s "$M/data" "$M/a/b/deep"
	ln -s "$M" "$M/a/top"
	ln -s "$M/" "$M/a/top2"
	ln -s "${M}x/data" "$M/px"
	ln -s "$M-other/data" "$M/po"
	ln -s "$TC/./m-$mode/data" "$M/dotted" # not the mount's path, byte for byte
	ln -s "$M/a/b/deep" "$M/chain"                       # through another such link
	ln -s "$M/a/../data" "$M/a/b/up"
	ln -s "$M/../m-$mode/data" "$M/out" # on the host: $M/data; in the tree ".." stays at the root

	for l in self a/b/deep spec-self chain a/b/up; do
		check "$mode: cat $l reads the tree's /data" test "$(cat "$M/$l")" = root
		expect "ok file 0644 5" stat "$M/$l" # stat -L: the tree's /data
	done
	check "$mode: the mount's path alone is the root" test "$(cat "$M/a/top/data")" = root
	check "$mode: ... with a trailing slash too" test "$(cat "$M/a/top2/data")" = root
	expect ENOENT stat "$M/out"
	check "$mode: \${M}x is the tree's own path" test "$(cat "$M/px")" = "prefix x"
	check "$mode: \$M-other is the tree's own path" test "$(cat "$M/po")" = "prefix other"
	check "$mode: another spelling is the tree's own path" test "$(cat "$M/dotted")" = "tree's own"
	check "$mode: the tree's own file under the mount's path stays reachable" \
		test "$(cat "$M/${M#/}/data")" = "tree's own"
	# server mode shows these links as what they lead to (a/top: a directory, a loop for find)
	[ "$mode" = server ] || check "$mode: no readlink answer holds a host path" answers_inside "$M"
	if [ "$mode" = kernel ]; then
		expect "ok data" readlink "$M/self"
		expect "ok .^/.^/data" readlink "$M/a/b/deep"
		expect "ok .^" readlink "$M/a/top"
		expect "ok .^/.^/data" readlink "$M/a/b/up"
		expect "ok m-$mode/data" readlink "$M/out"
	fi
	check "$mode: the stored target is as written" stored /self "$M/data"
	check "$mode: ... the spec's too" stored /spec-self "$M/data"
	unmount_cfs "$M" || fail "unmount $mode"
done

# abslinks=raw: the host's meaning, answered as stored
M=$TC/m-raw
printf 'file /data "root\\n"\n' >"$T/raw.spec"
if mount_cfs "$M" -o abslinks=raw "$T/raw.spec"; then
	ln -s "$M/data" "$M/self"
	expect "ok $M/data" readlink "$M/self"
	check "raw: cat reads it through the host" test "$(cat "$M/self")" = root
	unmount_cfs "$M" || fail "unmount raw"
else
	fail "mount raw"
fi

finish
