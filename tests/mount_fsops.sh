#!/bin/sh
# The long form of mount_types.sh, through cfs-fsops: every file type (regular, directory,
# symlink, fifo, socket, character and block device) behaves on chainfs as on tmpfs: one
# script of operations (create, EEXIST on re-create, open
# for read/write/O_TRUNC, link, rename over every other type, unlink/rmdir, chmod, chown,
# a chown that sets nothing (its ctime moves all the same), times, sticky and search
# permission, set-id bits killed by a write) runs as root and as uid 65534 on a tmpfs and on
# chainfs in each follow mode, and every line's errno and stat fields (type, mode, uid, gid,
# nlink, size, rdev) must match. chainfs is mounted with
# allow_other and without -o default_permissions: permissions are always checked.
#
# Differences by design, left out of the comparison:
#  - server mode shows a symlink that resolves as what it points to, and collapse mode
#    answers (and sizes) a link by its chain's end, so those modes run the script without
#    symlinks, against a tmpfs run of that same script; kernel mode covers links.
# Both mounts are nosuid,nodev (FUSE's default; the tmpfs is mounted so), so opening a device
# node is EACCES on both.
. "$(dirname "$0")/lib.sh"

FSOPS=$BUILD/cfs-fsops
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
TYPES="reg dir lnk fifo sock chr blk"

# mk TYPE PATH: the line that makes a node of TYPE at PATH
mk() {
	case $1 in
	reg) echo "creat $2 0644" ;;
	dir) echo "mkdir $2 0755" ;;
	lnk) echo "symlink t.reg $2" ;;
	fifo) echo "mkfifo $2 0644" ;;
	sock) echo "bind $2" ;;
	chr) echo "mknod $2 c 0644 1 3" ;;
	blk) echo "mknod $2 b 0644 8 1" ;;
	esac
}

# The tree every run starts from, made by root: directories of each permission kind with a
# node of each type, and pairs of nodes for renaming each type over each other.
setup_script() {
	for d in sticky:1777 open:0777 ro:0755 priv:0700; do
		D=${d%:*}
		echo "mkdir $D 0755"
		echo "chmod $D ${d#*:}"
		for X in $TYPES; do mk "$X" "$D/t.$X"; done
		echo "mkdir $D/full 0755"
		echo "creat $D/full/f 0644"
	done
	for d in ren:0777 sren:1777; do
		P=${d%:*}
		echo "mkdir $P 0755"
		echo "chmod $P ${d#*:}"
		for X in $TYPES; do
			for Y in $TYPES; do
				mk "$X" "$P/s.$X.$Y"
				mk "$Y" "$P/d.$X.$Y"
				[ "$Y" = dir ] && echo "creat $P/d.$X.$Y/f 0644"
			done
		done
		echo "mkdir $P/s.edir 0755"
		echo "mkdir $P/d.edir 0755"
	done
	echo "creat open/suid 0644"
	echo "chmod open/suid 6777"
	echo "creat open/sgid 0644"
	echo "chmod open/sgid 2666"
	echo "creat open/w666 0644"
	echo "chmod open/w666 0666"
}

# What a user does in directory D to the nodes root made there.
others_nodes() {
	D=$1
	for X in $TYPES; do
		echo "lstat $D/t.$X"
		echo "stat $D/t.$X"
		for Y in $TYPES; do mk "$Y" "$D/t.$X"; done
		for f in r w rw,trunc w,creat; do echo "open $D/t.$X $f"; done
		echo "link $D/t.$X $D/h.$X"
		echo "lstat $D/h.$X"
		echo "touch $D/t.$X"
		echo "settime $D/t.$X 1000"
		echo "chmod $D/t.$X 0640"
		echo "keepown $D/t.$X"
		echo "lchown $D/t.$X 65534 65534"
		echo "lstat $D/t.$X"
	done
}

# What a user does in D with nodes of its own: its uid and gid on each, then the owner's
# rights, then the names removed again.
own_nodes() {
	D=$1
	for X in $TYPES; do
		mk "$X" "$D/n.$X"
		echo "lstat $D/n.$X"
		echo "chmod $D/n.$X 0600"
		echo "lchown $D/n.$X -1 65534"
		echo "lchown $D/n.$X 0 0"
		echo "keepown $D/n.$X"
		echo "settime $D/n.$X 2000"
		echo "touch $D/n.$X"
		echo "lstat $D/n.$X"
		echo "rename $D/n.$X $D/m.$X"
		echo "lstat $D/m.$X"
	done
}

removals() {
	D=$1
	for X in $TYPES; do
		for n in t m h; do
			echo "unlink $D/$n.$X"
			echo "rmdir $D/$n.$X"
			echo "lstat $D/$n.$X"
		done
	done
	echo "rename $D/full $D/full/sub"
	echo "rmdir $D/full"
	echo "lstat $D"
}

renames() {
	P=$1
	for X in $TYPES; do
		for Y in $TYPES; do
			echo "rename $P/s.$X.$Y $P/d.$X.$Y exchange"
			echo "rename $P/d.$X.$Y $P/s.$X.$Y exchange"
			echo "rename $P/s.$X.$Y $P/d.$X.$Y noreplace"
			echo "rename $P/s.$X.$Y $P/d.$X.$Y"
			echo "lstat $P/s.$X.$Y"
			echo "lstat $P/d.$X.$Y"
		done
		echo "rename $P/s.$X.dir open/moved.$X"
		echo "lstat open/moved.$X"
	done
	echo "rename $P/s.edir $P/d.edir"
	echo "lstat $P/d.edir"
	echo "lstat $P"
}

ops_script() {
	for D in sticky open ro priv; do
		echo "# $D"
		others_nodes "$D"
		own_nodes "$D"
	done
	for P in ren sren; do
		echo "# $P"
		renames "$P"
	done
	echo "# set-id bits: a write or truncate by another uid clears them, chown always"
	echo "write open/suid data"
	echo "lstat open/suid"
	echo "write open/sgid data"
	echo "lstat open/sgid"
	echo "truncate open/w666 3"
	echo "lstat open/w666"
	echo "chmod open/w666 6777"
	echo "truncate open/w666 1"
	echo "lstat open/w666"
	echo "lchown open/suid 0 0"
	echo "lstat open/suid"
	echo "open open/w666 w,trunc"
	echo "lstat open/w666"
	echo "# a fifo between two processes, a socket connected through its path"
	echo "mkfifo open/pp 0666"
	echo "pipe open/pp"
	echo "connect open/cc"
	echo "lstat open/cc"
	for D in sticky open ro priv; do
		echo "# removing in $D"
		removals "$D"
	done
}

setup_script >"$T/setup.all"
ops_script >"$T/ops.all"
TYPES="reg dir fifo sock chr blk"
setup_script >"$T/setup.nolnk"
ops_script >"$T/ops.nolnk"

# run DIR LABEL SCRIPT: set the tree up as root under DIR, then the operations as root in
# one copy and as uid 65534 in another (SCRIPT: all or nolnk); outputs go to $T/LABEL.*
run() {
	for who in root nobody; do
		mkdir "$1/$who" && chmod 755 "$1/$who" || return 1
		"$FSOPS" "$1/$who" <"$T/setup.$3" >"$T/$2.setup.$who" 2>&1
	done
	"$FSOPS" "$1/root" <"$T/ops.$3" >"$T/$2.root" 2>&1
	$NOBODY "$FSOPS" "$1/nobody" <"$T/ops.$3" >"$T/$2.nobody" 2>&1
}

SGID_LINE='^lstat open/sgid =>'

R=$T/ref
mkdir -p "$R"
if ! mount -t tmpfs -o size=64m,mode=755,nosuid,nodev chainfs-types "$R"; then
	fail "tmpfs"
	finish
	exit 1
fi
MOUNTS="$MOUNTS $R"
mkdir "$R/all" "$R/nolnk" || fail "tmpfs dirs"
chmod 755 "$R/all" "$R/nolnk"
run "$R/all" tmpfs all || fail "tmpfs run"
run "$R/nolnk" tmpfs-nolnk nolnk || fail "tmpfs run without links"
for who in root nobody; do
	check "setup on tmpfs as $who: every step succeeds" not grep -v ' => ok' "$T/tmpfs.setup.$who"
done
# the script reaches every answer it is meant to compare, so a match means something
for want in "ok fifo 0644 0 0" "ok sock 0755 0 0" "ok chr 0644 0 0 1 0 1:3" "ok blk 0644 0 0 1 0 8:1" \
	EEXIST ENOTDIR EISDIR ENOTEMPTY EINVAL ENXIO "ok ctime moved"; do
	check "tmpfs as root answers '$want'" grep -q " => $want" "$T/tmpfs.root"
done
for want in EACCES EPERM "ok fifo 0644 65534 65534" "ok sock 0755 65534 65534" \
	"ok reg 0777 0 0 1 4" "ok reg 0666 0 0 1 4"; do
	check "tmpfs as uid 65534 answers '$want'" grep -q " => $want" "$T/tmpfs.nobody"
done
check "tmpfs: S_ISGID without group execute cleared by uid 65534's write" \
	grep -q "$SGID_LINE ok reg 0666 " "$T/tmpfs.nobody"

: >"$T/empty.spec"
for mode in kernel collapse server; do
	M=$T/m-$mode
	mount_cfs "$M" -o "follow=$mode,allow_other" "$T/empty.spec" ||
		{ fail "mount $mode"; continue; }
	chmod 755 "$M"
	check "$mode: mounted with default_permissions though not asked" \
		grep -q " $M fuse.chainfs .*default_permissions" /proc/mounts
	ref=tmpfs script=all
	[ "$mode" = kernel ] || ref=tmpfs-nolnk script=nolnk
	run "$M" "$mode" "$script" || fail "$mode run"
	for who in root nobody; do
		same_output "$mode setup as $who: lines from tmpfs (<) and chainfs (>)" \
			"$T/$ref.setup.$who" "$T/$mode.setup.$who"
		same_output "$mode as $who: lines from tmpfs (<) and chainfs (>)" \
			"$T/$ref.$who" "$T/$mode.$who"
	done
	unmount_cfs "$M"
done
finish
