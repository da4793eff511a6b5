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

# st NAME...: the fields compared, one line a node (an error without its "stat: ")
st() {
	for n in "$@"; do
		line=$(stat -c "$n: %F %a %u %g %h %s %t:%T" "$n" 2>&1)
		printf '%s\n' "${line#stat: }"
	done
}
# run CMD...: the command line and its outcome (the probe's errno name, or mknod's message):
# each line of the output without a leading "word: ", the lines joined by spaces. (What
# sed 's/^[a-z]*: //' | tr '\n' ' ' made of it, in the shell itself: $(...) has dropped the
# trailing newlines, and a step costs no processes beyond the command's own.)
nl='
'
run() {
	out=$("$@" 2>&1)
	rc=$?
	rest=$out msg="" sep=""
	while [ -n "$rest" ]; do
		line=${rest%%"$nl"*}
		case $rest in *"$nl"*) rest=${rest#*"$nl"} ;; *) rest="" ;; esac
		case $line in *": "*) case ${line%%": "*} in *[!a-z]*) ;; *) line=${line#*": "} ;; esac ;; esac
		msg=$msg$sep$line
		sep=" "
	done
	printf '%s => %s (%d)\n' "$*" "$msg" "$rc"
}
bind_sock() { # bind_sock PATH: a unix socket bound on the mount (python3 is in make deps)
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"
}

# setid: set-id bits after a write, truncate or open(O_TRUNC) by uid 65534, outside the
# file's group or inside it, after root's chown and chgrp, and after uid 65534's chown and
# chgrp of a file it owns. tmpfs drops set-uid always and set-gid when the file is
# group-executable or the writer is outside its group; root keeps both when writing. (The
# kernel's FUSE code alone keeps set-gid on 02666: chainfs drops it.) One python3 process
# makes the system calls the shell, chown, chmod, truncate, setpriv and stat made, in their
# order (uid 65534's steps in a forked child that drops to that uid and its groups); a step
# that fails prints its errno name, so it shows in the compared output.
cat >"$T/setid.py" <<'EOF'
import ctypes, errno, os

NOBODY = 65534
W, C = os.O_WRONLY, os.O_CREAT

def out(line):
    os.write(1, (line + "\n").encode())

def step(what, f, fn):
    try:
        fn(f)
    except OSError as e:
        out("%s %s: %s" % (what, f, errno.errorcode.get(e.errno, e.errno)))
        return 1
    return 0

def as_nobody(groups, what, f, fn):
    """fn(f) by uid and gid 65534 with GROUPS (setpriv's state), in a child."""
    def dropped(f):
        os.setgroups(groups)
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
        fn(f)

    pid = os.fork()
    if pid == 0:
        rc = 1
        try:
            rc = step(what, f, dropped)
        finally:
            os._exit(rc)
    os.waitpid(pid, 0)

def write(data, flags):  # sh's "echo DATA >>F" or ">F"
    def fn(f):
        fd = os.open(f, W | C | flags, 0o666)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    return fn

def truncate5(f):  # truncate -s 5 F
    fd = os.open(f, W | C | os.O_NONBLOCK, 0o666)
    try:
        os.ftruncate(fd, 5)
    finally:
        os.close(fd)

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_NO_AUTOMOUNT, STATX_MODE = -100, 0x100, 0x800, 0x2

def mode_only(f):
    """stat -c %a F: statx asking for the mode alone, so the kernel may answer from what it
    holds (a write invalidates only size and times): what chainfs must have dropped"""
    buf = ctypes.create_string_buffer(256)  # struct statx; stx_mode is at byte 28
    if libc.statx(AT_FDCWD, f.encode(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_MODE,
                  buf) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), f)
    return int.from_bytes(buf.raw[28:30], "little")

def chown(uid, gid):  # chown/chgrp: lstat, then fchownat
    def fn(f):
        os.lstat(f)
        os.chown(f, uid, gid)
    return fn

def chmod(mode):  # chmod: stat, then fchmodat
    def fn(f):
        os.stat(f)
        os.chmod(f, mode)
    return fn

os.mkdir("setid", 0o777)  # mkdir setid && chmod 777 setid
chmod(0o777)("setid")
for m in ["2666", "2676", "4666", "6666", "6676", "2777", "4777", "6777"]:
    for how in ["write", "trunc", "otrunc", "ingroup", "chown", "chgrp", "root", "ownchown",
                "ownchgrp"]:
        f = "setid/%s.%s" % (m, how)
        step(":>", f, lambda f: os.close(os.open(f, W | C | os.O_TRUNC, 0o666)))
        if how.startswith("own"):
            step("chown", f, chown(NOBODY, NOBODY))
        step("chmod", f, chmod(int(m, 8)))
        if how == "ownchown":
            as_nobody([], "chown", f, chown(NOBODY, -1))
        elif how == "ownchgrp":
            as_nobody([], "chgrp", f, chown(-1, NOBODY))
        elif how == "write":
            as_nobody([], "write", f, write(b"x\n", os.O_APPEND))
        elif how == "trunc":
            as_nobody([], "truncate", f, truncate5)
        elif how == "otrunc":
            as_nobody([], "write", f, write(b"y\n", os.O_TRUNC))
        elif how == "ingroup":
            as_nobody([0], "write", f, write(b"x\n", os.O_APPEND))
        elif how == "chown":
            step("chown", f, chown(NOBODY, -1))
        elif how == "chgrp":
            step("chgrp", f, chown(-1, NOBODY))
        elif how == "root":
            step("write", f, write(b"x\n", os.O_APPEND))
        try:
            out("%s %s => %o" % (m, how, mode_only(f) & 0o7777))
        except OSError as e:
            out("%s %s => %s" % (m, how, errno.errorcode.get(e.errno, e.errno)))
EOF
setid() {
	python3 "$T/setid.py"
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
