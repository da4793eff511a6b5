#!/bin/sh
# Extended attributes as on tmpfs: tests/xattr_steps.py sets, gets, lists and removes them in
# every namespace (user, trusted, security, unknown ones, a bare prefix) on every kind of node,
# with each flag and the size edges (the longest name, XATTR_SIZE_MAX, a listing past
# XATTR_LIST_MAX, short buffers), as root and as uid 65534; every outcome must be tmpfs's, in
# every follow mode. Server mode shows a link as its target by design, so there the steps on a
# link itself are left out (a link followed is in every mode). Then: the metadata limit
# answers ENOSPC where a small tmpfs does, a fault rule on getxattr reaches its caller.
. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
# uid 65534 runs the steps too, and may not reach the checkout (a `mktemp -d` clone is 0700)
STEPS=$T/xattr_steps.py
cp "$ROOT/tests/xattr_steps.py" "$STEPS"
# a python3 uid 65534 may run (root's may be a shim in /root)
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

# run CMD...: the command line and its outcome on one line (no pipes: this runs often)
run() {
	out=$("$@" 2>&1)
	rc=$?
	set -f
	# shellcheck disable=SC2086 # unquoted: its lines and blanks become single spaces
	printf '%s => %s (%d)\n' "$*" "$(echo $out)" "$rc"
	set +f
}
# acls: setfacl and getfacl in the current directory: access and default ACLs, inheritance on
# create (and the umask without a default), chmod's rewrite, a permission an entry decides,
# ACLs the kernel refuses
acls() {
	mkdir ad && chmod 755 ad
	run setfacl -d -m u:65534:rwx,g::r-x,o::--- ad
	run touch ad/f
	run mkdir ad/sub
	run mkfifo ad/p
	(umask 027 && touch plain && mkdir plaind)
	for n in ad ad/f ad/sub ad/p plain plaind; do
		run getfacl -n "$n"
		stat -c "%n %A" "$n"
	done
	: >af && chmod 600 af
	run $NOBODY sh -c 'echo x >>af'
	run setfacl -m u:65534:rw af
	run $NOBODY sh -c 'echo y >>af' # the entry decides
	run getfacl -n af
	run chmod 640 af # the mask becomes r--
	run getfacl -n af
	run $NOBODY sh -c 'echo z >>af'
	run setfacl -m m::rw af
	stat -c "%n %A" af
	run setfacl -x u:65534 af
	run getfacl -n af
	run setfacl -m g:65534:r,o::r af
	run setfacl -b af
	stat -c "%n %A" af
	run setfacl -d -m u:65534:r af # a default ACL on a file
	run $NOBODY setfacl -m u:65534:rwx af
	# the owner outside the file's group sets an ACL: set-gid goes (posix_acl_update_mode)
	: >sg && chown 65534:0 sg && chmod 2770 sg
	run $NOBODY setfacl -m u:1:r sg
	stat -c "%n %A" sg
	run setfacl -m u:1:rwx,u:2:r ad/f
	run cp -a ad ad.copy # a copy keeps its ACLs
	run getfacl -n ad.copy/f ad.copy
	ls -ld ad ad/f af | cut -c1-11
	# an ACL the kernel does not take: EINVAL, nothing changed
	$PY -c 'import errno, os
for v in (b"\x02\0\0\0\x01\0\x07\0\xff\xff\xff\xff", b"\x01\0\0\0", b"\x02\0\0"):
    try:
        os.setxattr("af", "system.posix_acl_access", v)
        print("set", v, "ok")
    except OSError as e:
        print("set", v, errno.errorcode[e.errno])'
	run getfacl -n af
}

# script ROOT LINKS: the steps on any filesystem, root's then uid 65534's, then the ACLs
script() {
	$PY "$STEPS" "$1" setup &&
		$PY "$STEPS" "$1" root "$2" &&
		$NOBODY $PY "$STEPS" "$1" nobody "$2" &&
		(cd "$1" && acls)
}

# dump_back MNT: the dump of MNT mounts back with the same attributes, and its copy has them
dump_back() {
	"$BUILD/chainfsctl" "$1" dump >"$T/dump.spec"
	check "dump writes xattr lines" grep -q '^xattr /d user.long .* at=' "$T/dump.spec"
	$PY "$STEPS" "$1" show >"$T/show.orig"
	check "... the long value among them" grep -q "^d user.long " "$T/show.orig"
	# no option: xattrs=auto is on, as the dump holds xattrs
	mount_cfs "$T/back" "$T/dump.spec" || { fail "mount the dump"; return; }
	$PY "$STEPS" "$T/back" show >"$T/show.back"
	same_output "the dump mounts back with every xattr" "$T/show.orig" "$T/show.back"
	unmount_cfs "$T/back"
	mount_tmpfs "$T/copy" # a filesystem that keeps every namespace and long values
	check "materialize the dump" "$CHAINFS" --materialize --keep-ids "$T/dump.spec" "$T/copy"
	$PY "$STEPS" "$T/copy" show >"$T/show.copy"
	same_output "materialize writes every xattr" "$T/show.orig" "$T/show.copy"
	# and --spec-from reads them back from the copy
	check "spec-from the copy" "$CHAINFS" --spec-from "$T/copy" >"$T/from.spec"
	grep '^xattr ' "$T/dump.spec" | LC_ALL=C sort >"$T/xattrs.dump"
	grep '^xattr ' "$T/from.spec" | LC_ALL=C sort >"$T/xattrs.from"
	same_output "spec-from writes the same xattr lines" "$T/xattrs.dump" "$T/xattrs.from"
}

R=$T/ref
mount_tmpfs "$R" || { fail "tmpfs"; finish; exit 1; }
: >"$T/empty.spec"
# tmpfs's outcomes, with and without the steps on a link itself. By design of the kernel's
# FUSE code (fuse_listxattr): a listing's length, asked with size 0, is capped at
# XATTR_LIST_MAX, where tmpfs answers the whole length.
for links in yes no; do
	umount "$R" && mount -t tmpfs -o mode=755 chainfs-ref "$R" || fail "fresh tmpfs"
	script "$R" "$links" 2>&1 | sed 's/^\(list d size=0 => \)74737$/\165536/' >"$T/out.tmpfs.$links"
done
cp "$T/out.tmpfs.yes" "$T/out.tmpfs"
for mode in kernel collapse server; do
	links=yes
	[ "$mode" = server ] && links=no
	M=$T/m-$mode
	mount_cfs "$M" -o "follow=$mode,xattrs=on,allow_other" "$T/empty.spec" ||
		{ fail "mount $mode"; continue; }
	chmod 755 "$M"
	script "$M" "$links" >"$T/out.$mode" 2>&1
	same_output "$mode mode: xattrs and ACLs as on tmpfs, as root and uid 65534" \
		"$T/out.tmpfs.$links" "$T/out.$mode"
	check "$mode: the steps ran to the last" grep -q "^getfacl -n af => .*other::r-- (0)$" "$T/out.$mode"
	[ "$mode" = kernel ] && dump_back "$M"
	unmount_cfs "$M"
done
# the steps are not vacuous: tmpfs kept, refused and listed
check "tmpfs: user.* on a fifo is EPERM" grep -q "^set p user.a 2B flags=0 => EPERM$" "$T/out.tmpfs"
check "tmpfs: XATTR_CREATE on an existing name is EEXIST" \
	grep -q "^set f user.a 2B flags=1 => EEXIST$" "$T/out.tmpfs"
check "tmpfs: a listing past 64 KiB is E2BIG" grep -q "^list d size=65536 => E2BIG$" "$T/out.tmpfs"
check "tmpfs: uid 65534 does not see trusted.*" \
	grep -q "^list f size=65536 => user.keep,security.keep$" "$T/out.tmpfs"

# ENOSPC: a value past what is left (tmpfs: its inode space, nr_inodes; chainfs: -o max_meta)
small() {
	python3 - "$1" <<'PY'
import errno, os, sys
os.chdir(sys.argv[1])
open("f", "w").close()
for size in (60000, 10):
    try:
        os.setxattr("f", "user.v", b"x" * size)
        print(size, "ok")
    except OSError as e:
        print(size, errno.errorcode[e.errno])
print(os.listxattr("f"))
PY
}
umount "$R" && mount -t tmpfs -o mode=755,nr_inodes=16 chainfs-ref "$R" || fail "small tmpfs"
small "$R" >"$T/small.tmpfs" 2>&1
M=$T/m-small
if mount_cfs "$M" -o max_meta=16k,xattrs=on,ctl="$SOCK" "$T/empty.spec"; then
	small "$M" >"$T/small.cfs" 2>&1
	same_output "ENOSPC as a small tmpfs" "$T/small.tmpfs" "$T/small.cfs"
	check "... which refused the large value" grep -q "^60000 ENOSPC$" "$T/small.cfs"
	# a fault rule on getxattr reaches its caller; other nodes are answered
	: >"$M/g"
	ctl fault add op=getxattr path=/f errno=EIO >/dev/null
	expect EIO getxattr "$M/f" user.v
	expect ENODATA getxattr "$M/g" user.v
	ctl fault clear >/dev/null
	expect ok getxattr "$M/f" user.v
	unmount_cfs "$M"
else
	fail "mount max_meta=16k"
fi

# xattrs off: the first request of each kind is answered ENOSYS and the kernel sends no more
# (it answers EOPNOTSUPP itself), so ls -l asks none a name; no ACLs, the kernel's umask; what
# the spec set is kept for dump. Off is what -o xattrs=auto (the default) chooses for a tree
# without xattrs; with xattrs=on, or auto on a tree that holds one, every name is asked.
{
	echo 'dir /d'
	for i in $(seq 40); do echo "file /d/f$i \"x\""; done
} >"$T/plain.spec"
{
	cat "$T/plain.spec"
	echo 'xattr /d/f1 user.kept "v"'
} >"$T/off.spec"
xattr_reqs() { # SOCK: getxattr and listxattr requests counted
	echo $(($(req "$1" getxattr) + $(req "$1" listxattr)))
}
# mount_walked NAME XATTRS SPEC: $T/m-NAME mounted with -o xattrs=XATTRS (none: the default)
# and its /d listed twice (ls -l); n: the xattr requests that cost; socket $T/NAME.sock
mount_walked() {
	M=$T/m-$1
	mount_cfs "$M" -o "${2:+xattrs=$2,}ctl=$T/$1.sock" "$3" || { fail "mount $1"; return 1; }
	ls -l "$M/d" >/dev/null
	ls -l "$M/d" >/dev/null
	n=$(xattr_reqs "$T/$1.sock")
}
for how in on auto; do
	if mount_walked "$how" "${how%auto}" "$T/off.spec"; then
		check "xattrs=$how, a spec with an xattr: ls -l twice asks for xattrs of each of 40 names ($n)" \
			test "$n" -ge 80
		expect ok getxattr "$M/d/f1" user.kept
		unmount_cfs "$M"
	fi
done
if mount_walked auto-plain "" "$T/plain.spec"; then
	check "xattrs=auto, a tree without xattrs: ls -l twice of 40 names asks for xattrs at most once a kind ($n)" \
		test "$n" -le 2
	out=$($PY -c 'import os, sys
try:
    os.setxattr(sys.argv[1], "user.a", b"1"); print("ok")
except OSError as e:
    print(os.strerror(e.errno))' "$M/d/f1")
	check "xattrs=auto, off: setxattr is not supported ($out)" test "$out" = "Operation not supported"
	out=$("$CTL" -s "$T/auto-plain.sock" xattr /d/f2 user.a '"1"' 2>&1)
	check "xattrs=auto, off: a control xattr line is refused, naming the option ($out)" \
		has "$out" "xattrs=on"
	"$CTL" -s "$T/auto-plain.sock" dump >"$T/plain.dump"
	check "... and the tree, dumped, has no xattr" \
		sh -c 'grep -q "^file /d/f2 " "$1" && ! grep -q "^xattr " "$1"' sh "$T/plain.dump"
	unmount_cfs "$M"
fi
if mount_walked off off "$T/off.spec"; then
	check "xattrs=off: ls -l twice of 40 names asks for xattrs at most once a kind ($n)" test "$n" -le 2
	expect EOPNOTSUPP getxattr "$M/d/f1" user.kept
	out=$($PY -c 'import os, sys
for f in (lambda: os.setxattr(sys.argv[1], "user.a", b"1"), lambda: os.listxattr(sys.argv[1]),
          lambda: os.removexattr(sys.argv[1], "user.kept")):
    try:
        f(); print("ok")
    except OSError as e:
        print(os.strerror(e.errno))' "$M/d/f1" | paste -sd,)
	check "xattrs=off: set, list and remove are not supported ($out)" \
		test "$out" = "Operation not supported,Operation not supported,Operation not supported"
	(cd "$M" && umask 027 && touch plain && mkdir plaind)
	check "xattrs=off: the kernel applied the umask ($(stat -c %a "$M/plain" "$M/plaind" | paste -sd' '))" \
		test "$(stat -c %a "$M/plain" "$M/plaind" | paste -sd' ')" = "640 750"
	check "xattrs=off: what the spec set is kept for dump" \
		has "$("$CTL" -s "$T/off.sock" dump)" 'xattr /d/f1 user.kept v'
	out=$("$CTL" -s "$T/off.sock" fault add op=getxattr path=/d/f1 errno=EIO 2>&1)
	check "xattrs=off: a rule on getxattr is refused, saying why ($out)" \
		has "$out" "xattrs=on"
	unmount_cfs "$M"
fi
finish
