#!/bin/sh
# Fault injection that never lies (issue 14): rules have ids and can be removed one by one;
# while any rule stands the kernel keeps no answer, so a rule fires at every syscall (not
# only at cache misses) and what callers see matches the rule's hits one for one; short
# reads and writes and dropped writes behave as stated; every hit is logged with its draw, and
# a seed replays the same hits. The daemon runs the ASan build, in kernel mode (the kernel
# caches link bodies) with -o opens=answer (reads and writes can bypass the page cache).
. "$(dirname "$0")/lib.sh"

ASAN_BIN=$ROOT/build-asan/chainfs
[ -x "$ASAN_BIN" ] || make -s -C "$ROOT" BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" build-asan/chainfs >&2
M=$T/mnt
cat >"$T/spec" <<'SPEC'
dir /d
file /d/a "a\n"
file /x "hello\n"
file /w "old content\n" mode=0644
link /l x
dir /e
wide /big 300 prefix=f
SPEC
for i in $(seq 12); do printf 'dir /h%s\nfile /h%s/x "x"\n' "$i" "$i"; done >>"$T/spec"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=97
CHAINFS=$ASAN_BIN mount_cfs "$M" -o "ctl=$SOCK,opens=answer,xattrs=on" "$T/spec" ||
	{ fail mount; finish; exit 1; }
DPID=$("$FUSE_MOUNT" --pid "$M")

# field ID NAME: a rule's counter from `fault list`
field() {
	raw 'fault list' | python3 -c 'import json, sys
for r in json.load(sys.stdin)["faults"]:
    if r["id"] == int(sys.argv[1]): print(r[sys.argv[2]])' "$1" "$2"
}
# logged ID N: rule ID's hits in the log as a pattern over its N first checks ("0110...")
logged() {
	raw 'fault log' | python3 -c 'import json, sys
checks = {h["check"] for h in json.load(sys.stdin)["log"] if h["id"] == int(sys.argv[1])}
print("".join("1" if c in checks else "0" for c in range(1, int(sys.argv[2]) + 1)))' "$1" "$2"
}
# stats N PATH: N stat calls, "1" for each that failed with EIO, else "0"
stats() {
	timeout 60 perl -e 'use Errno; for (1 .. $ARGV[0]) { print((stat $ARGV[1]) ? 0 : $!{EIO} ? 1 : 2) }' "$1" "$2"
}
ones() {
	printf '%s' "$1" | tr -cd 1 | wc -c
}
requests() {
	raw stats | python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"].get(sys.argv[1], 0))' "$1"
}
# transport KEY: that number of `stats`' transport
transport() {
	raw stats | python3 -c 'import json, sys; print(json.load(sys.stdin)["transport"].get(sys.argv[1], -1))' "$1"
}

# --- ids and remove --------------------------------------------------------------------------
check "fault add names the new rule's id" has "$(ctl fault add op=mkdir path=/a errno=EROFS)" "added rule 1"
check "the raw reply carries it" has "$(raw 'fault add op=mkdir path=/b errno=EROFS')" '"id":2'
check "fault list shows ids" has "$(raw 'fault list')" '"id":1,"op":"mkdir"'
expect EROFS mkdir "$M/a" 0755
check "fault remove ID" has "$(ctl fault remove 1)" "   2 mkdir"
expect ok mkdir "$M/a" 0755
expect EROFS mkdir "$M/b" 0755
out=$(ctl fault remove 1 2>&1)
check "removing it again is an error ($out)" test $? -eq 1
check "... that says so" has "$out" "no rule 1"
check "a bad id is an error" has "$(raw 'fault remove x1')" '"ok":false'
check "... and so is a missing one" has "$(raw 'fault remove 0')" '"ok":false'
check "the daemon keeps serving" has "$(ctl ping)" version
check "ids are never reused" has "$(raw 'fault add op=mkdir path=/c errno=EROFS')" '"id":3'
ctl fault clear >/dev/null
check "nor after a clear" has "$(raw 'fault add op=mkdir path=/c errno=EROFS')" '"id":4'
ctl fault clear >/dev/null

# --- every syscall reaches the rules ---------------------------------------------------------
stat "$M/x" >/dev/null
ctl fault add op=getattr path=/x errno=EIO prob=0.5 seed=1 >/dev/null # rule 5
p1=$(stats 50 "$M/x")
n=$(ones "$p1")
check "50 stats: some fail, some succeed, nothing else ($p1)" \
	sh -c "[ $n -gt 5 ] && [ $n -lt 45 ] && ! printf '%s' '$p1' | grep -q 2"
check "every stat was checked ($(field 5 checks) checks)" test "$(field 5 checks)" -eq 50
check "the failures are the rule's hits ($n, $(field 5 hits))" test "$(field 5 hits)" -eq "$n"
check "the log names the very stats that failed" test "$(logged 5 50)" = "$p1"
ctl fault clear >/dev/null
ctl fault add op=getattr path=/x errno=EIO prob=0.5 seed=1 >/dev/null # rule 6
p2=$(stats 50 "$M/x")
check "the same seed fails the same stats" test "$p2" = "$p1"
check "... and logs the same pattern" test "$(logged 6 50)" = "$p1"
ctl fault clear >/dev/null

readlink "$M/l" >/dev/null # the kernel now holds the link's body (kernel mode)
ctl fault add op=readlink path=/l errno=EIO >/dev/null
expect EIO readlink "$M/l"
expect EIO readlink "$M/l"
ctl fault clear >/dev/null
ctl fault add op=readlink path=/l errno=EIO prob=0.5 seed=3 >/dev/null # rule 8
# each readlink once the body the last one was answered with is dropped: chainfs's notifier
# drops it a moment after the reply (the kernel fills its copy from the reply itself)
fails=0
for i in $(seq 30); do
	readlink "$M/l" >/dev/null 2>&1 || fails=$((fails + 1))
	wait_for settled "$SOCK" || fail "readlink $i: the body's drop was never sent"
done
n=$(field 8 checks)
check "30 readlinks, 30 checks: a kept body does not hide the rule ($n)" test "$n" -eq 30
check "the failed readlinks are its hits ($fails)" test "$(field 8 hits)" -eq "$fails"
ctl fault clear >/dev/null

cat "$M/x" >/dev/null
ctl fault add op=read path=/x errno=EIO >/dev/null
check "cat with a read rule fails" not cat "$M/x" 2>/dev/null
check "... and fails again" not cat "$M/x" 2>/dev/null
ctl fault clear >/dev/null
ctl fault add op=read path=/x errno=EIO prob=0.5 seed=5 >/dev/null # rule 10
fails=0
for i in $(seq 30); do cat "$M/x" >/dev/null 2>&1 || fails=$((fails + 1)); done
check "30 cats fail as often as the rule hits ($fails)" test "$(field 10 hits)" -eq "$fails"
ctl fault clear >/dev/null

ls "$M/d" >/dev/null
ctl fault add op=readdirplus path=/d errno=EIO >/dev/null
check "ls with a listing rule fails" not ls "$M/d" 2>/dev/null
check "... and fails again" not ls "$M/d" 2>/dev/null
ctl fault clear >/dev/null

# once the last rule goes, the kernel keeps answers again
stat "$M/x" >/dev/null
g0=$(requests getattr)
for i in 1 2 3 4 5 6 7 8 9 10; do stat "$M/x" >/dev/null; done
check "without rules, 10 stats cost at most one getattr" test $(($(requests getattr) - g0)) -le 1

# --- short reads and writes, dropped writes ---------------------------------------------------
ctl fault add op=read path=/x short=2 >/dev/null
check "a short read returns at most 2 bytes" test "$(python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); print(len(os.read(fd, 100)))' "$M/x")" -eq 2
check "cat reads on and gets it all" test "$(cat "$M/x")" = hello
ctl fault clear >/dev/null
ctl fault add op=write path=/w short=3 >/dev/null
out=$(python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY); print(os.write(fd, b"new stuff!!\n"))' "$M/w")
check "a short write: the caller is told 3 bytes ($out)" test "$out" -eq 3
check "... and 3 bytes were stored" test "$(cat "$M/w")" = "new content"
printf 'all of it\n' >"$M/w"
check "a writer that goes on stores it all, 3 bytes a request" test "$(cat "$M/w")" = "all of it"
ctl fault clear >/dev/null
ctl fault add op=write path=/w nowrite >/dev/null
out=$(python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY); print(os.write(fd, b"something else\n"))' "$M/w")
check "a dropped write reports success, all 15 bytes ($out)" test "$out" -eq 15
check "... and a later read shows the old content" test "$(cat "$M/w")" = "all of it"
ctl fault clear >/dev/null
check "short= is refused on ops it cannot cut" \
	has "$(ctl fault add op=getattr path=/x short=3 2>&1)" "op=read or op=write"
check "nowrite is refused on ops other than write" \
	has "$(ctl fault add op=read path=/x nowrite 2>&1)" "give op=write"

# --- every operation a rule may name fires at the next syscall --------------------------------
# op.py OP MNT DIR: the syscall that makes the kernel send OP, run once a rule on OP stands:
# what it needs open is opened first, then it makes DIR/ready and waits for DIR/go; prints
# "ok" or the errno's name. Its table must name every op the daemon lists, no more.
cat >"$T/op.py" <<'PY'
import errno, os, sys, time
op, m = sys.argv[1], sys.argv[2]
p = lambda name: os.path.join(m, name)
fd = os.open(p("w"), os.O_RDWR) if op in ("getattr", "read", "write", "flush", "fsync",
                                          "fallocate", "lseek") else -1
dfd = os.open(p("d"), os.O_RDONLY | os.O_DIRECTORY) if op == "fsyncdir" else -1
table = {
    "lookup": lambda: os.stat(p("not-there")),
    "getattr": lambda: os.fstat(fd),
    "setattr": lambda: os.chmod(p("x"), 0o600),
    "readlink": lambda: os.readlink(p("l")),
    "mknod": lambda: os.mkfifo(p("fifo")),
    "mkdir": lambda: os.mkdir(p("newdir")),
    "unlink": lambda: os.unlink(p("d/a")),
    "rmdir": lambda: os.rmdir(p("e")),
    "symlink": lambda: os.symlink("x", p("newlink")),
    "rename": lambda: os.rename(p("x"), p("x2")),
    "link": lambda: os.link(p("x"), p("x3")),
    "open": lambda: os.open(p("x"), os.O_RDONLY),
    "read": lambda: os.pread(fd, 10, 0),
    "write": lambda: os.pwrite(fd, b"new", 0),
    "flush": lambda: os.close(fd),
    "fsync": lambda: os.fsync(fd),
    "fsyncdir": lambda: os.fsync(dfd),
    "opendir": lambda: os.listdir(p("d")),
    "readdirplus": lambda: os.listdir(p("d")),
    "readdir": lambda: os.listdir(p("big")),  # past its first page: plain READDIR
    "statfs": lambda: os.statvfs(m),
    "create": lambda: os.open(p("newfile"), os.O_CREAT | os.O_WRONLY, 0o644),
    "fallocate": lambda: os.posix_fallocate(fd, 0, 10),
    "lseek": lambda: os.lseek(fd, 0, os.SEEK_DATA),
    "getxattr": lambda: os.getxattr(p("x"), "user.a"),
    "listxattr": lambda: os.listxattr(p("x")),
    "setxattr": lambda: os.setxattr(p("x"), "user.a", b"1"),
    "removexattr": lambda: os.removexattr(p("x"), "user.a"),
}
if op == "--names":
    print(" ".join(sorted(table)))
    sys.exit(0)
open(os.path.join(sys.argv[3], "ready"), "w").close()
deadline = time.monotonic() + 30
while not os.path.exists(os.path.join(sys.argv[3], "go")) and time.monotonic() < deadline:
    time.sleep(0.01)
try:
    table[op]()
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
out=$(raw 'fault add op=nosuch path=* errno=EIO')
listed=$(printf '%s' "$out" | sed -n 's/.*one of: any \([a-z_ ]*\).*/\1/p' | tr ' ' '\n' | sort | xargs)
check "an unknown op is refused, naming those a rule may use ($listed)" test -n "$listed"
check "the test knows a syscall for each of them, no more" \
	test "$(python3 "$T/op.py" --names x)" = "$listed"
# ENOSYS is "not implemented" to the kernel, and from these it remembers it for the mount's
# life (fs/fuse: no_open, no_flush, no_rename2, ...): such a rule is refused, and the op still
# reaches the daemon (the ENOLINK rule after it fires)
enosys_kept="open opendir flush fsync fsyncdir create rename link fallocate lseek getxattr listxattr setxattr removexattr"
for op in $listed; do
	case " $enosys_kept " in *" $op "*)
		out=$(ctl fault add op="$op" path='*' errno=ENOSYS 2>&1)
		check "op=$op errno=ENOSYS is refused, saying why ($out)" has "$out" "for good"
		;;
	esac
	rm -f "$T/ready" "$T/go"
	timeout 60 python3 "$T/op.py" "$op" "$M" "$T" >"$T/op.out" 2>&1 &
	pid=$!
	i=0
	while [ ! -e "$T/ready" ] && [ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	ctl fault add op="$op" path='*' errno=ENOLINK >/dev/null
	touch "$T/go"
	wait $pid
	check "op=$op fires at the next syscall ($(cat "$T/op.out"))" grep -qx ENOLINK "$T/op.out"
	ctl fault clear >/dev/null
done
for op in init forget forget_multi release releasedir access; do
	out=$(ctl fault add op="$op" path='*' errno=EIO 2>&1)
	check "op=$op is refused, saying why ($out)" has "$out" "fault $op: "
done
check "errno=38 (ENOSYS by number) is refused too" \
	has "$(ctl fault add op=open path=/x errno=38 2>&1)" "for good"
check "op=any errno=ENOSYS is refused: it would reach them" \
	has "$(ctl fault add op=any path=/x errno=ENOSYS 2>&1)" "name the op"
check "ENOSYS where the kernel forgets it is taken" \
	has "$(ctl fault add op=getattr path=/x errno=ENOSYS 2>&1)" "added rule"
expect ENOSYS stat "$M/x"
ctl fault clear >/dev/null

# --- errnos: what the kernel takes in a reply, 1..511 -----------------------------------------
# A larger one the kernel refuses: over /dev/fuse the request stays unanswered and its caller
# unkillable. The rules name a path nothing asks for, so that a daemon that took them would
# hang no caller here.
for e in 512 4095; do
	out=$(ctl fault add op=getattr path=/never-asked errno=$e 2>&1)
	check "errno=$e is refused, saying why ($out)" has "$out" "1..511"
done
ctl fault clear >/dev/null
ctl fault add op=getattr path=/x errno=511 >/dev/null
got=$(timeout 10 perl -e 'print((stat $ARGV[0]) ? "ok" : $! + 0)' "$M/x")
check "errno=511 is taken, and a stat gets it ($got)" test "$got" = 511
ctl fault clear >/dev/null

# --- a delay holds back its own request only ---------------------------------------------------
# Twelve lookups held 10 s on CPU 0, then a stat of another path on CPU 0. Over io_uring a held
# request keeps its ring entry, and the stat used to wait for the delays (13.9 s); a queue now
# holds at most delay_entries_per_queue of them and serves further delayed ones at once.
id=$(raw "fault add op=lookup path=/h*/x delay=10000" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
held=""
for i in $(seq 12); do
	(timeout 60 taskset -c 0 stat "$M/h$i/x" >/dev/null 2>&1; echo $? >"$T/held.$i") &
	held="$held $!"
done
hits8() { [ "$(field "$id" hits)" -ge 8 ]; }
check "the lookups reached the delay" wait_for hits8
# an order, not a time: the stat is answered while every delayed one held still waits (over
# the ring, those past a queue's share were served at once, without their delay)
check "a stat of another path on the same CPU answers" \
	sh -c 'timeout 10 taskset -c 0 stat "$1" >/dev/null' - "$M/d/a"
answered=$(ls "$T" | grep -c '^held\.')
unheld=0
[ "$(transport live)" != uring ] || unheld=$(transport delays_unheld)
check "... while the delayed ones held still wait ($answered answered, $unheld not held)" \
	test "$answered" -le "$unheld"
if [ "$(transport live)" = uring ]; then
	n=$(transport held_by_delays)
	check "the ring holds at most $(transport delay_entries_per_queue) of them ($n)" \
		test "$n" -le "$(transport delay_entries_per_queue)"
	check "... and served the others at once ($(transport delays_unheld))" \
		test "$(transport delays_unheld)" -ge 4
fi
bad=0
for p in $held; do wait "$p"; done
for i in $(seq 12); do [ "$(cat "$T/held.$i")" = 0 ] || bad=$((bad + 1)); done
check "every delayed stat got its answer ($bad failed)" test "$bad" -eq 0
ctl fault clear >/dev/null

# --- the log ----------------------------------------------------------------------------------
ctl fault add op=getattr path=/x errno=EIO >/dev/null
stats 300 "$M/x" >/dev/null
out=$(raw 'fault log')
check "the log keeps the last 256 hits and counts the older ones" \
	sh -c "printf '%s' '$out' | python3 -c 'import json, sys
o = json.load(sys.stdin); assert len(o[\"log\"]) == 256 and o[\"dropped\"] == o[\"hits\"] - 256, o[\"dropped\"]'"
check "chainfsctl fault log prints it" has "$(ctl fault log)" "older ones not kept"
ctl fault clear >/dev/null

check "the kernel refused no reply (replies_fixed $(transport replies_fixed))" \
	test "$(transport replies_fixed)" -eq 0

# --- unmount under ASan: a clean exit, no leak ------------------------------------------------
check "unmount command" has "$(raw unmount)" '"ok":true'
i=0
while kill -0 "$DPID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "the daemon exited" sh -c "! kill -0 $DPID 2>/dev/null"
check "no sanitizer report" not_grep "Sanitizer" "$M.log"

# --- -o faults=FILE: rules from the first request on; a bad file mounts nothing -------------
M2=$T/mnt2
printf '# the first lookup already fails\n\n  op=lookup path=/first errno=EIO\nop=getattr path=/x delay=1\n' \
	>"$T/good.rules"
printf 'file /first "1"\n' >"$T/first.spec"
CHAINFS=$ASAN_BIN mount_cfs "$M2" -o "faults=$T/good.rules,ctl=$T/f2.sock" "$T/first.spec" ||
	fail "mount with -o faults"
expect EIO stat "$M2/first"
out=$("$CTL" -s "$T/f2.sock" --json fault list)
check "-o faults: both rules stand" has "$out" '"id":2'
check "-o faults: the first was hit by the first lookup" has "$out" '"path":"/first","errno":"EIO"'
check "-o faults: once" has "$out" '"hits":1'
unmount_cfs "$M2"
check "-o faults: no sanitizer report" not_grep "Sanitizer" "$M2.log"
bad_rules() { # NAME TEXT WANT: a rules file with TEXT mounts nothing, exit 2, says WANT
	printf "$2" >"$T/bad.rules"
	mkdir -p "$M2"
	"$ASAN_BIN" -o "faults=$T/bad.rules" "$M2" >/dev/null 2>"$T/bad.err"
	st=$?
	check "-o faults, $1: exit 2 ($st)" test "$st" -eq 2
	check "-o faults, $1: says $3" grep -q -- "$3" "$T/bad.err"
	check "-o faults, $1: nothing mounted" not is_mounted "$M2"
}
bad_rules "a bad line" 'op=lookup path=/a errno=EIO\nop=nosuch path=/b\n' "bad.rules:2: op: unknown op"
bad_rules "short= without opens=answer" 'op=read path=/a short=1\n' "bad.rules:1: .*opens=answer"
"$ASAN_BIN" -o faults=/dev/zero "$M2" >/dev/null 2>"$T/bad.err"
check "-o faults=/dev/zero: refused, exit 2" test $? -eq 2
check "-o faults=/dev/zero: not a regular file" grep -q "not a regular file" "$T/bad.err"
finish
