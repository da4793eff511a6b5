#!/bin/sh
# The control socket: every command through chainfsctl and through the raw socket, limits and
# modes taking effect without a remount, dump reproducing a mutated tree, faults, hostile
# clients, 200 clients at once, and another uid refused. The daemon runs the ASan build, with
# -o opens=answer: the faults below delay opens, which the kernel sends only then.
# check: long: 200 clients, delays and the dump's diff of the whole tree
. "$(dirname "$0")/lib.sh"

ASAN_BIN=$ROOT/build-asan/chainfs
[ -x "$ASAN_BIN" ] || make -s -C "$ROOT" BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" build-asan/chainfs >&2
M=$T/mnt
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=97
CHAINFS=$ASAN_BIN mount_cfs "$M" -o "follow=server,ctl=$SOCK,opens=answer" ||
	{ fail mount; finish; exit 1; }
DPID=$("$FUSE_MOUNT" --pid "$M")


# --- every command, both ways ---------------------------------------------------------------
check "ping" has "$(ctl ping)" "version"
check "raw ping" has "$(raw ping)" '"ok":true'
check "stats" has "$(ctl stats)" "waits_inline"
check "raw stats" has "$(raw stats)" '"requests"'
check "stats reset" has "$(raw 'stats reset')" '"walks":0'
check "limits" has "$(raw limits)" '"total":40'
check "chainfsctl limits" has "$(ctl limits nest=40 total=40)" "total"
check "mode" has "$(raw 'mode server')" '"mode":"server"'
check "resolve trace" has "$(ctl resolve chains/5)" "l 5 -> .5.chain/4"
check "raw resolve" has "$(raw 'resolve chains/41')" '"errno":"ELOOP"'
ctl resolve chains/41 >/dev/null
check "chainfsctl resolve of a failing walk exits 1" test $? -eq 1
check "resolve nofollow" has "$(raw 'resolve nofollow chains/5')" '"kind":"link"'
check "chain generator" has "$(raw 'chain /gen/c 100 /chains/target')" '"nodes_added":102'
check "nest generator" has "$(ctl nest /gen/n 10 /nest/dir/file)" "nodes_added"
check "loop generator" has "$(raw 'loop /gen/l 3')" '"ok":true'
check "tree generator" has "$(raw 'tree /gen/t depth=2 fanout=5 seed=4')" '"ok":true'
check "a bad generator line is refused" has "$(raw 'chain /gen/c 0 /x')" '"ok":false'
check "fault list" has "$(raw 'fault list')" '"faults":[]'
check "unknown command" has "$(raw 'frobnicate now')" 'unknown command: frobnicate'
check "wrong arguments" has "$(raw 'limits nest=-3')" '"ok":false'
check "mode with a bad name" has "$(raw 'mode sideways')" 'usage: mode'
ctl frobnicate >/dev/null 2>&1
check "chainfsctl exits non-zero on an error reply" test $? -eq 1
ctl limits total=200 >/dev/null
expect "ok 33" cat "$M/gen/c"

# --- limits and modes take effect on the next syscall, without a remount -----------------
for mode in server collapse; do
	ctl mode "$mode" >/dev/null
	ctl limits nest=40 total=40 >/dev/null
	expect ELOOP stat "$M/chains/41"
	ctl limits total=41 >/dev/null
	expect "ok file" stat "$M/chains/41"
	ctl limits total=40 >/dev/null
	expect ELOOP stat "$M/chains/41"
done
ctl limits nest=2000 total=2000 >/dev/null
# a long walk's trace keeps its first 4096 steps (two a link here) and counts the rest
ctl chain /long 2500 /chains/target >/dev/null
ctl limits total=3000 >/dev/null
out=$(ctl resolve long)
check "a long trace is cut and says so" has "$out" "more steps not shown"
check "a long trace still ends with the walk's end" has "$out" "2500 links"
check "raw: steps_omitted" has "$(raw 'resolve long')" '"steps_omitted":9'
ctl limits total=2000 >/dev/null
ctl mode kernel >/dev/null
expect ELOOP stat "$M/chains/1000"
expect "ok link" lstat "$M/chains/1000"
ctl mode server >/dev/null
expect "ok file" stat "$M/chains/1000"
expect "ok file" lstat "$M/chains/1000"

# --- faults --------------------------------------------------------------------------------
ctl mode collapse >/dev/null # every readlink reaches the daemon (no cached bodies)
readlinks() {
	perl -e 'my $e = 0; for (1 .. 1000) { defined(readlink($ARGV[0])) or $e++ } print "$e\n"' "$1"
}
ctl fault add op=readlink path=/chains/5 errno=EIO >/dev/null
check "EIO with probability 1: 1000 of 1000" test "$(readlinks "$M/chains/5")" -eq 1000
expect "ok" readlink "$M/chains/40"
ctl fault clear >/dev/null
ctl fault add op=readlink path=/chains/5 errno=EIO prob=0.5 seed=42 >/dev/null
n1=$(readlinks "$M/chains/5")
ctl fault clear >/dev/null
ctl fault add op=readlink path=/chains/5 errno=EIO prob=0.5 seed=42 >/dev/null
n2=$(readlinks "$M/chains/5")
check "EIO with probability 0.5: about half ($n1 of 1000)" test "$n1" -gt 400 -a "$n1" -lt 600
check "the same seed gives the same faults ($n1, $n2)" test "$n1" -eq "$n2"
check "fault list counts the hits" has "$(raw 'fault list')" "\"hits\":$n2"
ctl fault clear >/dev/null
# every operation, the changing ones too: errno rules answer before any handler runs
# a name the kernel holds: the rule fires at the next syscall all the same
expect "ok" stat "$M/chains/40"
ctl fault add op=lookup path=/chains/40 errno=ENOTCONN >/dev/null
expect ENOTCONN stat "$M/chains/40"
ctl fault clear >/dev/null
expect "ok" stat "$M/chains/40"
ctl fault add op=mkdir path=/ro* errno=EROFS >/dev/null
ctl fault add op=unlink path=/README errno=EBUSY >/dev/null
ctl fault add op=rename path=/chains/5 errno=EXDEV >/dev/null
ctl fault add op=create path=/new* errno=EDQUOT >/dev/null
expect EROFS mkdir "$M/ro1" 0755
expect "ok" mkdir "$M/rw1" 0755
expect EBUSY unlink "$M/README"
expect EXDEV rename "$M/chains/5" "$M/chains/5b"
expect EDQUOT open "$M/new1" w,creat 0644
check "... and the tree is as before" test -e "$M/README" -a -L "$M/chains/5" -a ! -e "$M/ro1"
out=$(ctl fault add op=forget path=/x errno=EIO 2>&1)
check "a rule on forget is refused: nothing waits for its reply ($out)" \
	has "$out" "nothing waits for its reply"
ctl fault clear >/dev/null
# A held request holds up nobody else: another file is read while the delayed open still
# waits (its cat still runs), an order, not a time, so a loaded machine cannot fake it.
ctl fault add op=open path=/chains/target delay=3000 >/dev/null
t0=$(date +%s%N)
(cat "$M/chains/target" >/dev/null && touch "$T/slow.done") &
slow=$!
check "the delayed open is held" wait_for held_once
check "meanwhile another file is read" cat "$M/README"
check "... while the delayed open still waits" test ! -e "$T/slow.done"
wait $slow
t1=$(date +%s%N)
check "a delayed open takes its 3000 ms ($(((t1 - t0) / 1000000)) ms)" \
	test $(((t1 - t0) / 1000000)) -ge 3000
ctl fault clear >/dev/null

# --- hostile clients -----------------------------------------------------------------------
perl -MIO::Socket::UNIX -e '$SIG{PIPE} = "IGNORE"; 
	my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!";
	print $s ("a" x (1 << 20));
	my $r = <$s>; print $r // "";
	my $more = <$s>; print defined($more) ? "open\n" : "closed\n";' "$SOCK" >"$T/long.out" 2>&1
check "a 1 MiB line gets an error reply" grep -q "longer than" "$T/long.out"
check "... and the connection closed" grep -q "^closed" "$T/long.out"
head -c 4096 /dev/urandom | tr '\n' 'x' | sed 's/$/\n/' >"$T/garbage"
socat -t 5 - "UNIX-CONNECT:$SOCK" <"$T/garbage" >"$T/garbage.out" 2>&1
check "binary garbage gets an error reply" grep -q '"ok":false' "$T/garbage.out"
perl -MIO::Socket::UNIX -e '$SIG{PIPE} = "IGNORE"; my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die;
	print $s "stat"; close $s;' "$SOCK"
perl -MIO::Socket::UNIX -e '$SIG{PIPE} = "IGNORE"; 
	my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die; $s->blocking(0);
	my ($sent, $dead) = (0, 0);
	for (1 .. 4000) { my $n = syswrite($s, "resolve long\n"); if (!defined $n) {
		if ($!{EPIPE} || $!{ECONNRESET}) { $dead = 1; last } select(undef, undef, undef, 0.01) }
		else { $sent++ } }
	print $dead ? "dropped after $sent\n" : "still connected after $sent\n";' "$SOCK" \
	>"$T/silent.out" 2>&1
check "a client that never reads is dropped ($(cat "$T/silent.out"))" grep -q dropped "$T/silent.out"
perl -MIO::Socket::UNIX -e '$SIG{PIPE} = "IGNORE"; for (1 .. 10000) {
	my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect $_: $!"; close $s }
	print "done\n"' "$SOCK" >"$T/cycles.out" 2>&1
check "10,000 connect/disconnect cycles" grep -q done "$T/cycles.out"
check "the mount answers after all that" has "$(raw ping)" '"ok":true'
expect "ok file" stat "$M/chains/target"

# --- 200 clients while a find runs ---------------------------------------------------------
# The find (find's walk: each directory lstat'ed, opened and read, the names below it by their
# d_type) goes over the tree again and again until the clients are done: it runs all the time
# they do, and no longer (the whole tree is walked below, by the dump's diff).
FIND='import os, sys
top, started, stop = sys.argv[1:4]
n = errors = 0
first = ""
def walk(d):
    global n, errors, first
    if os.path.exists(stop):
        return
    try:
        os.lstat(d)
        with os.scandir(d) as it:
            if not os.path.exists(started):
                open(started, "w").close()
            for e in it:
                n += 1
                if e.is_dir(follow_symlinks=False):
                    walk(e.path)
    except OSError as e:
        errors += 1
        first = first or ": first %s" % e
while not os.path.exists(stop):
    walk(top)
print("%d names, %d errors%s" % (n, errors, first))
sys.exit(1 if errors else 0)'
timeout 300 python3 -c "$FIND" "$M/tree" "$T/find.started" "$T/clients.done" >"$T/find.out" &
finder=$!
PIDS="$PIDS $finder"
wait_for test -e "$T/find.started" || echo "the find has not started" >&2
perl -MIO::Socket::UNIX -e '$SIG{PIPE} = "IGNORE"; 
	my @c = map { IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!" } 1 .. 200;
	print $_ "ping\n" for @c;
	my $ok = grep { my $l = <$_>; defined $l && $l =~ /"ok":true/ } @c;
	my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die; print $s "stats\n";
	my $st = <$s>; my ($table) = $st =~ /"table":"(\w+)"/; my ($heap) = $st =~ /"waits_heap":(\d+)/;
	print "answered $ok table $table waits_heap $heap\n";' "$SOCK" >"$T/many.out" 2>&1
: >"$T/clients.done"
check "200 clients all answered ($(cat "$T/many.out"))" grep -q "answered 200 table heap" "$T/many.out"
check "the heap table was waited on" sh -c "! grep -q 'waits_heap 0\$' '$T/many.out'"
inline_table() { raw stats | grep -q '"table":"inline"'; }
check "the inline table again once they left" wait_for inline_table
wait $finder
rc=$?
check "find finished meanwhile ($(cat "$T/find.out"))" test $rc -le 1 -a -e "$T/find.started"

# --- dump reproduces a mutated tree --------------------------------------------------------
ctl mode kernel >/dev/null
mkdir "$M/mut" && printf 'hello\n' >"$M/mut/f" && ln -s f "$M/mut/l" && mv "$M/wide/f1" "$M/mut/g"
rm -r "$M/loops" && chmod 700 "$M/mut" && ln "$M/mut/f" "$M/mut/hard"
ctl dump >"$T/dump.spec"
check "dump is a spec" test -s "$T/dump.spec"
M2=$T/mnt2
mount_cfs "$M2" "$T/dump.spec" || fail "mount the dump"
# links answered through the mountpoint name their own mount: the same once it is taken off
same_tree() {
	a=$(cd "$1" && pwd -P)
	b=$(cd "$2" && pwd -P)
	timeout 300 diff -r --no-dereference "$1" "$2" >"$T/dumpdiff" 2>&1
	while read -r line; do
		case "$line" in
		"Symbolic links $a/"*" and $b/"*" differ")
			p=${line#"Symbolic links $a/"}
			p=${p%% and *}
			ta=$(readlink "$a/$p")
			tb=$(readlink "$b/$p")
			[ "${ta#"$a"}" = "${tb#"$b"}" ] || { echo "  $p: '$ta' vs '$tb'" >&2; return 1; } ;;
		*) echo "  $line" >&2; return 1 ;;
		esac
	done <"$T/dumpdiff"
}
check "the dump mounted again is the same tree" same_tree "$M" "$M2"
check "chainfsctl finds a mount's socket from its mountpoint" has "$("$CTL" "$M2" ping)" version
check "opens=skip (the default): an open fault is refused, naming the option" \
	has "$("$CTL" "$M2" fault add op=open path=/x delay=10 2>&1)" "opens=answer"
check "raw dump" has "$(raw dump)" '"spec":"'
check "a last request without its newline is answered" \
	has "$(printf ping | timeout 30 socat -t 30 - "UNIX-CONNECT:$SOCK")" '"version"'
# a runtime line that changes a file the kernel holds pages of is seen by the next read
cat "$M2/mut/f" >/dev/null
"$CTL" "$M2" append /mut/f '"more\n"' >/dev/null
check "append: the next read sees the new content" test "$(cat "$M2/mut/f")" = "hello
more"
check "append: the next stat sees the new size" test "$(stat -c %s "$M2/mut/f")" -eq 11
# A killed daemon leaves its socket behind; the next daemon there replaces it safely.
sockdir=${XDG_RUNTIME_DIR:+$XDG_RUNTIME_DIR/chainfs}
sockdir=${sockdir:-/run/chainfs}
pid2=$("$FUSE_MOUNT" --pid "$M2")
kill -9 "$pid2"
check "the killed daemon is gone" wait_for gone "$pid2"
check "a killed daemon's socket stays behind" sh -c "ls '$sockdir' | grep -q '^mnt2-'"
unmount_cfs "$M2"
mount_cfs "$M2" "$T/dump.spec" || fail "remount over a stale socket"
check "the stale socket was replaced" has "$("$CTL" "$M2" ping)" version
unmount_cfs "$M2"

# --- out of fds --------------------------------------------------------------------------------
# A daemon limited to 40 fds and 60 clients held open: accept fails with EMFILE while the
# connections wait, and the listener is set aside instead of polled in a spin. The daemon
# stays near idle, the mount answers, and once the clients go new ones are served.
M3=$T/mnt3
S3=$T/ctl3.sock
mkdir -p "$M3"
MOUNTS="$MOUNTS $M3"
prlimit --nofile=40:40 "$CHAINFS" -f -o "ctl=$S3" "$M3" 2>"$T/emfile.log" &
EPID=$!
PIDS="$PIDS $EPID"
pings() { timeout 5 "$CTL" -s "$1" ping 2>/dev/null | grep -q version; }
check "the fd-limited daemon answers" wait_for pings "$S3"
# the clients are held open until killed below
perl -MIO::Socket::UNIX -e '
	my @s = map { IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!\n" } 1 .. 60;
	open(my $f, ">", $ARGV[1]) or die; close($f); sleep 60' "$S3" "$T/held" &
HPID=$!
PIDS="$PIDS $HPID"
check "60 clients connected" wait_for test -e "$T/held"
check "the daemon runs out of fds" wait_for grep -q 'cannot accept' "$T/emfile.log"
cpu() { awk '{ print $14 + $15 }' "/proc/$EPID/stat"; }
c0=$(cpu)
sleep 2 # the measurement: what the daemon spends of 2 s while out of fds
used=$(($(cpu) - c0))
check "out of fds, the daemon stays near idle ($used ticks in 2 s)" test "$used" -lt 40
expect ok stat "$M3/chains/5"
check "the shortage is logged once" test "$(grep -c 'cannot accept' "$T/emfile.log")" -eq 1
kill "$HPID"
wait "$HPID" 2>/dev/null
out=$(timeout 10 "$CTL" -s "$S3" stats)
check "once the clients close, a new one is served" has "$out" "accept_pauses"
check "stats counts the pauses" test "$(printf '%s\n' "$out" | awk '$1 == "accept_pauses" { print $2 }')" -ge 1
unmount_cfs "$M3"
wait "$EPID"
check "the fd-starved daemon exits cleanly" test $? -eq 0

# --- another uid -----------------------------------------------------------------------------
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
$NOBODY "$CTL" -s "$SOCK" ping >/dev/null 2>&1
check "another uid cannot even connect (0600 socket)" test $? -ne 0
chmod 666 "$SOCK"
out=$($NOBODY socat -t 5 - "UNIX-CONNECT:$SOCK" </dev/null 2>&1)
check "another uid is refused by the peer check" has "$out" "permission denied"
chmod 600 "$SOCK"

# --- unmount through the socket, under ASan: a clean exit, no leak ------------------------
check "unmount command" has "$(raw unmount)" '"ok":true'
check "the daemon exited" wait_for gone "$DPID"
check "no sanitizer report" not_grep "Sanitizer" "$M.log"
check "the socket is removed" test ! -e "$SOCK"
finish
