#!/bin/sh
# Another uid is refused where tmpfs refuses it, in every mode, with allow_other and with or
# without -o default_permissions (chainfs always asks the kernel for its checks, so the fstab
# line with allow_other alone is safe), including search permission inside a link's target,
# which chainfs checks itself when it follows links.
. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

# setup ROOT: the same tree, made as root
setup() {
	cd "$1" || return 1
	mkdir priv && chmod 700 priv && echo s >priv/f
	echo s >secret && chmod 600 secret
	echo p >pub && chmod 644 pub
	mkdir ro && chmod 755 ro
	mkdir sticky && chmod 1777 sticky && echo r >sticky/rootfile && chmod 666 sticky/rootfile
	mkdir open && chmod 777 open && echo o >open/rootfile
	ln -s priv/f lp
	ln -s ../priv lpd && mv lpd ro/
	ln -s pub lpub
}

# probes ROOT: what uid 65534 may do
probes() {
	cd "$1" || return 1
	for c in "cat secret" "cat pub" "cat priv/f" "stat priv/f" "cat lp" "stat lp" \
		"cat lpub" "cat ro/lpd/f" "open pub w" "open ro/new creat,w" "mkdir ro/d 0755" \
		"unlink sticky/rootfile" "rename sticky/rootfile sticky/x" "open sticky/mine creat,w" \
		"unlink sticky/mine" "unlink open/rootfile" "chmod pub 0666" "truncate pub 0" \
		"symlink x ro/l" "access secret 4" "access pub 4" "access pub 2" "rmdir ro"; do
		printf '%s => ' "$c"
		# shellcheck disable=SC2086
		$NOBODY "$PROBE" $c
	done
}

R=$T/ref
mount_tmpfs "$R" || { fail "tmpfs"; finish; exit 1; }
(setup "$R") || fail "setup tmpfs"
(probes "$R") >"$T/out.tmpfs" 2>&1
check "uid 65534 is refused somewhere on tmpfs" grep -q EACCES "$T/out.tmpfs"
: >"$T/empty.spec"
for opts in allow_other,default_permissions allow_other; do
	for mode in kernel collapse server; do
		M=$T/m-$mode
		mount_cfs "$M" -o "follow=$mode,$opts" "$T/empty.spec" ||
			{ fail "mount $mode $opts"; continue; }
		chmod 755 "$M"
		(setup "$M") || fail "setup $mode"
		(probes "$M") >"$T/out.$mode" 2>&1
		same_output "uid 65534 on $mode mode ($opts) == on tmpfs" "$T/out.tmpfs" "$T/out.$mode"
		unmount_cfs "$M"
	done
done

# What a link answers shows nothing past a directory the caller may not search: not the names
# inside it (a link's answer built by walking through it), not their lengths (a link's size),
# and not through an answer the kernel kept from a caller with more rights. /priv is 0700;
# the link in it leads to a name uid 65534 must never learn.
cat >"$T/leak.spec" <<EOF
dir /priv mode=0700
dir /priv/secretname/x
link /priv/in secretname
dir /pub
link /pub/k ../priv/in/x/..
link /pub/c ../priv/in
EOF
# leaks WHAT MNT LINK: uid 65534's readlink of LINK names nothing of /priv's insides, and its
# size is the length of that answer
leaks() {
	got=$($NOBODY readlink "$2/$3")
	case "$got" in
	*secretname*) fail "$1: $3 answers '$got' to uid 65534" ;;
	*) pass ;;
	esac
	check "$1: $3's size is the answer's length" \
		test "$($NOBODY stat -c %s "$2/$3")" = "$(printf %s "$got" | wc -c)"
}
for mode in kernel collapse server; do
	L=$T/leak-$mode
	mount_cfs "$L" -o "follow=$mode,allow_other" "$T/leak.spec" || {
		fail "mount $mode"
		continue
	}
	readlink "$L/pub/k" "$L/pub/c" >/dev/null 2>&1 # root first: nothing it gets may carry over
	leaks "$mode" "$L" pub/k
	[ "$mode" = server ] || leaks "$mode" "$L" pub/c # (server: root sees c as its target)
	check "$mode: root still reaches the end" test "$(stat -L -c %F "$L/pub/c")" = directory
	unmount_cfs "$L"
done
# a mount begun in kernel mode lets the kernel keep link bodies; switched to collapse, what
# root is answered must not reach uid 65534 from that cache
L=$T/leak-switch
mount_cfs "$L" -o "allow_other,ctl=$T/leak.sock" "$T/leak.spec" || fail "mount for the switch"
"$CTL" -s "$T/leak.sock" mode collapse >/dev/null || fail "switch to collapse"
readlink "$L/pub/c" "$L/pub/k" >/dev/null 2>&1
leaks "kernel, then collapse" "$L" pub/c
leaks "kernel, then collapse" "$L" pub/k
unmount_cfs "$L"

# What a link answers is walked with anyone's rights (the kernel may keep it for every caller),
# so a directory's chmod on the way changes it, its size with it: with hour-long timeouts the
# next readlink and stat see what a fresh mount of the changed tree answers.
printf 'dir /a mode=%s\ndir /a/b\nfile /a/b/c\nlink /l /a/../a/b/c\n' 0700 >"$T/rights.spec"
printf 'dir /a mode=%s\ndir /a/b\nfile /a/b/c\nlink /l /a/../a/b/c\n' 0755 >"$T/rights2.spec"
answer() { echo "$(readlink "$1/l") $(stat -c %s "$1/l")"; }
for mode in kernel collapse; do
	L=$T/rights-$mode
	mount_cfs "$L" -o "follow=$mode" "$T/rights2.spec" || {
		fail "mount $mode, the changed tree"
		continue
	}
	want=$(answer "$L")
	unmount_cfs "$L"
	mount_cfs "$L" -o "follow=$mode,entry_timeout=3600,attr_timeout=3600" "$T/rights.spec" || {
		fail "mount $mode"
		continue
	}
	check "$mode: /a closed, the link answers otherwise ($(answer "$L"))" \
		test "$(answer "$L")" != "$want"
	chmod 755 "$L/a"
	check "$mode: chmod 755 /a, the link answers as a fresh mount does ($want)" \
		test "$(answer "$L")" = "$want"
	unmount_cfs "$L"
done

finish
