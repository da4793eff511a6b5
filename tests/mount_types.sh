#!/bin/sh
# Every file type as on tmpfs: regular files, directories, links, fifos, sockets and device
# nodes, made through the mount (mknod, mkfifo, bind) and then linked, renamed over each other,
# chmod'ed, chown'ed, touched and removed, as root and as uid 65534, in every follow mode. Each
# step's outcome (the errno, or success) and each node's type, mode, owner, group, link count,
# size and rdev must be tmpfs's. By design, server mode shows a link as what it leads to and
# collapse mode's link answers (and sizes) are their chains' ends, so in those modes the script
# leaves links out (kernel mode covers them); and a fifo is opened across two processes.
. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

# st NAME...: the fields compared, one line a node
st() {
	for n in "$@"; do
		stat -c "$n: %F %a %u %g %h %s %t:%T" "$n" 2>&1 | sed 's/^stat: //'
	done
}
# run CMD...: the command line and its outcome (the probe's errno name, or mknod's message)
run() {
	out=$("$@" 2>&1)
	rc=$?
	printf '%s => %s (%d)\n' "$*" "$(printf '%s' "$out" | sed 's/^[a-z]*: //' | tr '\n' ' ')" "$rc"
}
bind_sock() { # bind_sock PATH: a unix socket bound on the mount (python3 is in make deps)
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"
}

# setid: set-id bits after a write, truncate or open(O_TRUNC) by uid 65534, outside the
# file's group or inside it, after root's chown and chgrp, and after uid 65534's chown and
# chgrp of a file it owns. tmpfs drops set-uid always and set-gid when the file is
# group-executable or the writer is outside its group; root keeps both when writing. (The
# kernel's FUSE code alone keeps set-gid on 02666: chainfs drops it.)
setid() {
	mkdir setid && chmod 777 setid
	for m in 2666 2676 4666 6666 6676 2777 4777 6777; do
		for how in write trunc otrunc ingroup chown chgrp root ownchown ownchgrp; do
			f=setid/$m.$how
			: >"$f"
			case $how in own*) chown 65534:65534 "$f" ;; esac
			chmod "$m" "$f"
			case $how in
			ownchown) $NOBODY chown 65534 "$f" ;;
			ownchgrp) $NOBODY chgrp 65534 "$f" ;;
			write) $NOBODY sh -c "echo x >>$f" ;;
			trunc) $NOBODY truncate -s 5 "$f" ;;
			otrunc) $NOBODY sh -c "echo y >$f" ;;
			ingroup) setpriv --reuid=65534 --regid=65534 --groups=0 sh -c "echo x >>$f" ;;
			chown) chown 65534 "$f" ;;
			chgrp) chgrp 65534 "$f" ;;
			root) echo x >>"$f" ;;
			esac
			echo "$m $how => $(stat -c %a "$f")" # the mode alone: no size asked
		done
	done
}

# script ROOT LINKS: the same steps on any filesystem; LINKS=no leaves links out
script() {
	cd "$1" || return 1
	types="reg fifo sock chr blk"
	[ "$2" = yes ] && types="$types lnk"
	: >reg && mkfifo fifo && bind_sock sock && mknod chr c 1 3 && mknod blk b 7 0 &&
		mkdir dir && mkdir full && : >full/x
	[ "$2" = yes ] && ln -s reg lnk
	st $types dir
	run mkfifo fifo
	run mknod chr c 1 3
	run mkdir sock
	for t in $types; do
		run "$PROBE" link "$t" "$t.hard"
		st "$t" "$t.hard"
		run "$PROBE" rename "$t.hard" dir
		run "$PROBE" rename dir "$t.hard"
		run "$PROBE" rename "$t.hard" full
		run "$PROBE" rmdir "$t"
		run "$PROBE" mkdir "$t/x" 0755
		run "$PROBE" chmod "$t" 0640
		run chown -h 65534:65534 "$t.hard"
		run touch -h -d @1000000000 "$t"
		st "$t" "$t.hard"
		run "$PROBE" unlink "$t.hard"
	done
	run "$PROBE" rename fifo sock
	run "$PROBE" rename chr blk exchange
	st $types
	# another uid: the owner's rules, the sticky bit, a parent it may not write
	mkdir open sticky && chmod 777 open && chmod 1777 sticky && mkfifo sticky/rootfifo
	chmod 666 sticky/rootfifo
	: >open/suid && chmod 06777 open/suid # a write by another uid drops set-id bits
	$NOBODY sh -c 'echo x >>open/suid' && st open/suid
	$NOBODY sh -c 'cd open && mkfifo f && mkfifo f' 2>&1 | sed 's/^[a-z]*: //'
	$NOBODY sh -c 'cd open && python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\"s\")"; echo "bind: $?"'
	for c in "mknod open/c c 1 3" "mkfifo dir/f" "rm -f sticky/rootfifo" "mv sticky/rootfifo sticky/x" \
		"chmod 600 sock" "chown 65534 open/f" "touch -h -d @5 sock" "touch -h -d @5 open/f" \
		"rm -f chr" "ln open/f open/g" "chown 0 open/f" "chgrp 0 open/f"; do
		printf '%s => ' "$c"
		$NOBODY sh -c "$c" 2>&1 | sed 's/^[a-z]*: //' | tr '\n' ' '
		echo
	done
	st open/f open/s open/g sticky/rootfifo
	setid
}

R=$T/ref
mount_tmpfs "$R" || { fail "tmpfs"; finish; exit 1; }
chmod 755 "$R"
: >"$T/empty.spec"
for mode in kernel collapse server; do
	links=yes
	[ "$mode" = kernel ] || links=no
	umount "$R" && mount -t tmpfs -o mode=755 chainfs-ref "$R" || fail "fresh tmpfs"
	(script "$R" "$links") >"$T/out.tmpfs" 2>&1
	M=$T/m-$mode
	mount_cfs "$M" -o "follow=$mode,allow_other" "$T/empty.spec" || { fail "mount $mode"; continue; }
	chmod 755 "$M"
	(script "$M" "$links") >"$T/out.$mode" 2>&1
	same_output "$mode mode: every file type as on tmpfs, as root and uid 65534" \
		"$T/out.tmpfs" "$T/out.$mode"
	check "$mode: the script made a fifo, a socket and devices" \
		grep -q "^fifo: fifo .* 0:0$" "$T/out.$mode"
	check "$mode: ... with their rdev" grep -q "^chr: character special file .* 1:3$" "$T/out.$mode"
	# a fifo on the mount carries data between two processes (the kernel's pipe)
	mkfifo "$M/pipe"
	(echo through >"$M/pipe") &
	PIDS="$PIDS $!"
	check "$mode: a fifo carries data" test "$(timeout 10 cat "$M/pipe")" = through
	# dump and materialize keep them
	"$BUILD/chainfsctl" "$M" dump >"$T/dump.spec"
	# (the script renamed fifo over sock and exchanged chr and blk)
	check "$mode: dump writes a fifo line" grep -q '^fifo /sock ' "$T/dump.spec"
	check "$mode: dump writes a dev line" grep -q '^dev /blk c 1 3 ' "$T/dump.spec"
	unmount_cfs "$M"
done
check "tmpfs drops set-gid on 02666 written by an outsider" grep -q "^2666 write => 666$" "$T/out.tmpfs"
check "... and keeps it for a member of the group" grep -q "^2666 ingroup => 2666$" "$T/out.tmpfs"
# open(O_TRUNC) handed to the daemon in OPEN (atomic_o_trunc) rather than as a SETATTR
umount "$R" && mount -t tmpfs -o mode=755 chainfs-ref "$R" || fail "fresh tmpfs"
(cd "$R" && setid) >"$T/setid.tmpfs" 2>&1
M=$T/m-opens
if mount_cfs "$M" -o allow_other,opens=answer "$T/empty.spec"; then
	chmod 755 "$M"
	(cd "$M" && setid) >"$T/setid.opens" 2>&1
	same_output "opens=answer: set-id bits as on tmpfs" "$T/setid.tmpfs" "$T/setid.opens"
	unmount_cfs "$M"
else
	fail "mount opens=answer"
fi
C=$T/copy
mkdir "$C"
check "materialize the dump" "$CHAINFS" --materialize --keep-ids "$T/dump.spec" "$C"
check "the copy has the fifo" test -p "$C/sock"
check "the copy has the device" test "$(stat -c '%F %t:%T' "$C/blk")" = "character special file 1:3"
finish
