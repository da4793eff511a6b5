#!/bin/sh
# Changes made through the control socket reach the kernel's caches, with hour-long entry
# and attribute timeouts so that nothing expires on its own: a spec line's new names (quoted,
# with spaces) show in listings the kernel already holds, an appended file shows its new
# size and bytes, and a mode switch from kernel to collapse mode lets a 100,000-link chain
# resolve at once although the kernel had followed (and kept the bodies of) its first links.
# check: alone: it drops the kernel's caches (drop_caches), which others count on
. "$(dirname "$0")/lib.sh"

M=$T/mnt

cat >"$T/lines.spec" <<'SPEC'
dir "/x y"
file "/x y/old" "one\n"
dir /plain
chain /long 100000 /plain
SPEC
# xattrs=on: the spec sets none, and every keyword is to be run, xattr included
mount_cfs "$M" -o "ctl=$SOCK,entry_timeout=3600,attr_timeout=3600,max_total=200000,xattrs=on" \
	"$T/lines.spec" ||
	{ fail mount; finish; exit 1; }
# the kernel holds the listings, the names and the file's attributes and pages
ls "$M" "$M/x y" "$M/plain" >/dev/null
cat "$M/x y/old" >/dev/null
stat "$M/x y/new2" >/dev/null 2>&1

check "a quoted line is applied" ctl 'file "/x y/new2" "two\n"'
check "its name shows in the listing the kernel held" \
	sh -c "ls '$M/x y' | grep -qx new2"
check "... and resolves" test "$(cat "$M/x y/new2")" = two
check "a name with a quote" ctl 'dir "/x y/it'\''s"'
check "... shows too" sh -c "ls '$M/x y' | grep -qx \"it's\""
check "a line in a plain directory" ctl 'link /plain/l "../x y/old"'
check "... shows in its listing" sh -c "ls '$M/plain' | grep -qx l"
check "append to a file the kernel holds" ctl 'append "/x y/old" "more\n"'
check "... shows its new size" test "$(stat -c %s "$M/x y/old")" -eq 9
check "... and its new bytes" test "$(tail -n 1 "$M/x y/old")" = more
check "a line in the root" ctl 'file "/top level" "t\n"'
check "... shows in the root's listing" sh -c "ls '$M' | grep -qx 'top level'"

# drop: the kernel forgets what it holds for this mount (names, attributes, pages) and asks
# again (cold experiments)
asked() { ctl stats | awk -v k="$1" '$1 == k { print $2 }'; }
warm() { stat "$M/x y/old" "$M/plain" >/dev/null && cat "$M/x y/old" >/dev/null; }
warm
l0=$(asked lookup) r0=$(asked read)
warm
l1=$(asked lookup) r1=$(asked read)
check "warm: names and pages come from the kernel's caches ($l0 $r0, then $l1 $r1)" \
	test "$l1" -eq "$l0" -a "$r1" -eq "$r0"
ctl drop >/dev/null
warm
l2=$(asked lookup) r2=$(asked read)
check "after drop it looks the names up again ($l1, then $l2)" test "$l2" -ge $((l1 + 3))
check "... and reads the file again ($r1, then $r2)" test "$r2" -gt "$r1"
# a file held open keeps its inode through the names' drop: its pages must go too
python3 -c 'import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.pread(fd, 4096, 0)
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, check=True)
os.pread(fd, 4096, 0)' "$M/x y/old" "$CTL" -s "$SOCK" drop
r3=$(asked read)
check "an open file's pages are dropped too ($r2, then $r3)" test "$r3" -gt "$r2"

# every spec keyword chainfsctl offers is a command the daemon runs, and the man page names it
for w in $("$CTL" --commands | sed -n '/^dir$/,$p'); do
	out=$(ctl "$w" 2>&1)
	check "control knows '$w' (a spec line, not an unknown command)" \
		sh -c "printf '%s' \"\$1\" | grep -q 'missing argument'" - "$out"
	check "chainfsctl(1) names '$w'" grep -q "^\.BR.*[ \"]$w[ \"]" "$ROOT/man/chainfsctl.1"
done
check "a fifo line at runtime" ctl 'fifo "/x y/pipe"'
check "... is a fifo on the mount" test -p "$M/x y/pipe"
check "a truncate line at runtime" ctl 'truncate "/x y/old" 2'
check "... shows its new size" test "$(stat -c %s "$M/x y/old")" -eq 2

# kernel mode keeps the bodies of the links it followed; collapse answers the chain's end.
# Walkers in the background keep requests coming while each switch's invalidations go out.
(while ! [ -e "$T/walkers.stop" ]; do
	stat -L "$M/long" "$M/x y/old" >/dev/null 2>&1
	ls -R "$M" >/dev/null 2>&1
done) &
walker=$!
PIDS="$PIDS $walker"
bad=0
for i in $(seq 1 ${CHAINFS_SWITCHES:-30}); do
	ctl mode kernel >/dev/null
	stat -L "$M/long" >/dev/null 2>&1 # ELOOP in kernel mode, after 40 links
	ctl mode collapse >/dev/null
	k=$(stat -L -c %F "$M/long" 2>&1)
	[ "$k" = directory ] || { bad=$((bad + 1)); echo "  switch #$i: $k" >&2; }
done
check "collapse after kernel mode: the 100,000-link chain resolves every time ($bad bad)" \
	test "$bad" -eq 0
# the walkers stop here, each with the walk it is in (killing the loop would leave that one
# running): their listings of the next mount would refresh what it must show by invalidation
gone() { ! kill -0 "$1" 2>/dev/null; }
: >"$T/walkers.stop"
wait_s=30
wait_for gone "$walker"
wait_s=10
check "the walkers stopped" gone "$walker"
unmount_cfs "$M"

# Server mode, what no request tells the kernel: a link's entry shows its target, so a link
# renamed into another directory may now lead elsewhere (its relative target is walked from
# there), and a listing the kernel keeps (opens=skip) shows each link with its target's kind,
# which a change far from that directory can alter.
cat >"$T/server.spec" <<'SPEC'
dir /d1
file /d1/t "file\n"
dir /d2/t
dir /kept
link /kept/l ../f
file /f "f\n"
file /f0 "f0\n"
chain /d/c 3 /f0
link /dl d
SPEC
mount_cfs "$M" -o "ctl=$SOCK,follow=server,entry_timeout=3600,attr_timeout=3600" \
	"$T/server.spec" || { fail "mount server"; finish; exit 1; }
ln -s t "$M/d1/l"
check "server: d1/l shows d1/t, a file" test -f "$M/d1/l"
mv "$M/d1/l" "$M/d2/l"
# the kernel moves its entry with the old target as the rename returns; chainfs's
# invalidation can land only once the rename has let go of d2 (README, server mode): wait for
# it, a few ms, with a deadline, then it must hold
i=0
while ! [ -d "$M/d2/l" ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "... moved to d2, it shows d2/t, a directory (after $i waits)" test -d "$M/d2/l"
check "... and keeps showing it" test -d "$M/d2/l"
has_word() { printf '%s\n' $1 | grep -qx "$2"; }
kinds() { python3 -c 'import os, sys
k = lambda e: ":l" if e.is_symlink() else ":d" if e.is_dir(follow_symlinks=False) else ":f"
print(" ".join(sorted(e.name + k(e) for e in os.scandir(sys.argv[1]))))' "$1"; }
check "a kept listing shows the link as its target, a file" test "$(kinds "$M/kept")" = "l:f"
rm "$M/f" && mkdir "$M/f"
check "... and as a directory once the target is one" test "$(kinds "$M/kept")" = "l:d"
# a mode or limit switch changes kinds in listings the kernel keeps: the root's (never
# looked up, so never counted) and those of directories reached through a link
k=$(kinds "$M")
check "server: the root lists dl as its target, a directory ($k)" has_word "$k" dl:d
ctl mode kernel >/dev/null
k=$(kinds "$M")
check "kernel: the root lists dl as a link ($k)" has_word "$k" dl:l
ctl mode server >/dev/null
k=$(kinds "$M")
check "server again: the listing kept in kernel mode is dropped ($k)" has_word "$k" dl:d
k=$(kinds "$M/dl")
check "server: dl/c resolves, listed as a file ($k)" has_word "$k" c:f
# a directory reached through a link, held as a cwd, keeps its path nodeid through drop's
# entry invalidations: its own listing must go too, so `ls .` there asks again
n=$(python3 -c 'import os, subprocess, sys
def listings():
    out = subprocess.run(sys.argv[2:] + ["--json", "stats"], capture_output=True, check=True)
    r = __import__("json").loads(out.stdout)["requests"]
    return r.get("readdir", 0) + r.get("readdirplus", 0)
os.chdir(sys.argv[1])
os.listdir(".")
a = listings()
os.listdir(".")
b = listings()
subprocess.run(sys.argv[2:] + ["drop"], stdout=subprocess.DEVNULL, check=True)
os.listdir(".")
print(a, b, listings())' "$M/dl" "$CTL" -s "$SOCK")
set -- $n # a b c: listings asked for before, warm, after drop
check "a cwd through a link: its listing is kept while warm ($n)" test "$1" -eq "$2"
check "... and asked for again after drop ($n)" test "$3" -gt "$2"
# a file reached through links, held open, keeps its path nodeid through drop's entry
# invalidations: its pages under that nodeid must go too
r0=$(asked read)
r0=${r0:-0} # none yet
python3 -c 'import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.pread(fd, 4096, 0)
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, check=True)
os.pread(fd, 4096, 0)' "$M/d/c" "$CTL" -s "$SOCK" drop
r1=$(asked read)
check "an open file through links: read again after drop ($r0, then $r1)" test "$r1" -ge $((r0 + 2))
# ... and a change through the file's own name reaches what the kernel holds under that
# path nodeid: pages and size (attribute and entry timeouts are an hour)
check "through the links: the file as it is" test "$(cat "$M/d/c")" = f0
stat -L "$M/d/c" >/dev/null
printf 'more\n' >>"$M/f0"
check "after a write through its name: the new size through the links" \
	test "$(stat -L -c %s "$M/d/c")" -eq 8
check "... and the new bytes" test "$(cat "$M/d/c")" = "$(printf 'f0\nmore')"
ctl limits total=2 >/dev/null
k=$(kinds "$M/dl")
check "limits total=2: dl/c (4 links) is listed as a link ($k)" has_word "$k" c:l
# the root's listing outlives its entries: once the kernel has pruned them (drop_caches=2
# frees dentries, not the pages of the root, which the mount pins) and forgotten the link, no
# entry invalidation reaches the root, so a switch must drop the root's listing itself
ctl limits total=40 >/dev/null
ctl mode kernel >/dev/null
k=$(kinds "$M")
check "kernel: the root lists dl as a link ($k)" has_word "$k" dl:l
# ... and so does a directory held open (its inode stays, its listing with it) whose entries
# are pruned: only its own invalidation at the switch can drop that listing
k=$(kinds "$M/kept")
check "kernel: kept lists l as a link ($k)" test "$k" = "l:l"
# hold DIR: keep DIR open for a minute in the background (its inode stays, its listing with
# it), once it is open; the holder's pid in $holder
hold() {
	rm -f "$T/held"
	python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
open(sys.argv[2], "w").close()
time.sleep(60)' "$1" "$T/held" &
	holder=$!
	PIDS="$PIDS $holder"
	wait_for test -e "$T/held"
}
hold "$M/kept"
# requests KIND...: how many of those the daemon was sent, summed
requests() {
	_n=0
	for _k; do _n=$((_n + $(req "$SOCK" "$_k"))); done
	echo $_n
}
forgot_since() { [ "$(requests forget forget_multi)" -gt "$1" ]; }
# prune: the kernel frees unused dentries (drop_caches=2; the pages of held inodes stay) and
# forgets their nodes; waits for the first FORGET, with a deadline
prune() {
	_f0=$(requests forget forget_multi)
	sync
	echo 2 >/proc/sys/vm/drop_caches
	wait_for forgot_since "$_f0"
}
check "pruned dentries: the kernel forgot their nodes" prune
ctl mode server >/dev/null
k=$(kinds "$M")
check "server: the switch drops the root's kept listing with no entry under it ($k)" \
	has_word "$k" dl:d
k=$(kinds "$M/kept")
check "server: ... and the held directory's, with no entry under it ($k)" test "$k" = "l:d"
kill "$holder" && wait "$holder" 2>/dev/null
# drop with nothing under the root held: the kernel drops a directory's kept listing with any
# entry invalidated under it, so once it has forgotten the root's entries, only drop's own
# invalidation of the root makes the next listing of the root cold
ctl mode kernel >/dev/null
ls "$M" >/dev/null
check "the root's entries forgotten" prune
ls "$M" >/dev/null
n0=$(requests readdir readdirplus)
ls "$M" >/dev/null
n1=$(requests readdir readdirplus)
check "the root's listing is kept while warm ($n0, then $n1)" test "$n1" -eq "$n0"
ctl drop >/dev/null
ls "$M" >/dev/null
n2=$(requests readdir readdirplus)
check "... and asked for again after drop, its entries forgotten ($n1, then $n2)" \
	test "$n2" -gt "$n1"
# server mode: a kept listing shows each link as its target's kind; with the link's entry
# forgotten (no entry invalidation under the directory), a change of the target elsewhere must
# still drop that listing (the listings noted as showing resolved links)
ctl mode server >/dev/null
hold "$M/kept"
k=$(kinds "$M/kept")
prune
rmdir "$M/f" && : >"$M/f"
k="$k $(kinds "$M/kept")"
kill "$holder" && wait "$holder" 2>/dev/null
check "server: a held listing with its link forgotten shows the new kind of the target ($k)" \
	test "$k" = "l:d l:f"
unmount_cfs "$M"
finish
