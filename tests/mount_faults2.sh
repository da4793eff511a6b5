#!/bin/sh
# Faults, part 2 (issue 34), in every follow mode (and over io_uring with
# CHAINFS_TRANSPORT=uring): a program that maps a file shared works while a rule stands; an
# errno drawn from a list with the seed; kill= signals the requester and the request is still
# answered; corrupt= changes what a read returns, the same bytes for the same seed; at=,len=
# takes only reads and writes that touch those bytes; bad rules are refused and add nothing;
# fault log, stats and the recording say what each did. Mounts take -o opens=answer, so that
# opens reach the daemon (and, under a rule, come back with direct I/O). attr= lies in a
# getattr's answer, as stat and ls -l see it. The selectors: after=, nth= and count= on loops
# of 10 stats (after= with corrupt= and kill= too); to= on rename, link and symlink; up=/down=
# windows over 2 s of stats, each judged by the client's clock against the rule's windows.
# check: long: every effect in every mode
. "$(dirname "$0")/lib.sh"

cat >"$T/spec" <<'SPEC'
file /x "hello\n" mode=0644
file /m "mapped\n" mode=0644
file /data "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-" mode=0644
file /other "other\n"
link /l x
dir /d
SPEC
DATA=0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-

# mapped FILE: map FILE shared, read and write through the map; prints what the map held,
# or the errno's name
mapped() {
	timeout 30 python3 - "$1" <<'PY'
import errno, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
except OSError as e:
    print(errno.errorcode[e.errno])
    sys.exit(0)
print(m[:].decode().strip())
m[:6] = b"MAPPED"
m.flush()
m.close()
os.close(fd)
PY
}
# Helpers in perl, not python: a python start costs seconds on a loaded 2-CPU machine.
# member JSON-LINE SECTION KEY: that member of a `stats` reply's section
member() {
	printf '%s' "$1" | perl -MJSON::PP -e 'my $o = decode_json(<STDIN>)->{$ARGV[0]}{$ARGV[1]};
		print defined $o ? (JSON::PP::is_bool($o) ? ($o ? "true" : "false") : $o) : -1' "$2" "$3"
}
transport() { member "$(raw stats)" transport "$1"; }
faults() { member "$(raw stats)" faults "$1"; }
# ename: the name of the errno in $! (perl), as the C library spells it
ENAME='sub ename { for (keys %!) { return $_ if $!{$_} } "?" }'
# errnos N PATH: the errno name each of N stats of PATH failed with, on one line ("ok" if none)
errnos() {
	timeout 60 perl -e "$ENAME"'; print join(" ", map { (stat $ARGV[1]) ? "ok" : ename() } 1 .. $ARGV[0])' "$1" "$2"
}
# logged_errnos ID: the errnos rule ID's hits in the log were answered with
logged_errnos() {
	raw 'fault log' | perl -MJSON::PP -e 'print join(" ", map { $_->{errno} // "-" }
		grep { $_->{id} == $ARGV[0] } @{decode_json(<STDIN>)->{log}})' "$1"
}
# pread FILE OFF LEN / pwrite FILE OFF TEXT: "ok" or the errno's name
pread() {
	timeout 30 perl -e "$ENAME"'; open(my $f, "<", $ARGV[0]) or die; sysseek($f, $ARGV[1], 0);
		print defined(sysread($f, my $b, $ARGV[2])) ? "ok" : ename()' "$@"
}
pwrite() {
	timeout 30 perl -e "$ENAME"'; open(my $f, "+<", $ARGV[0]) or die; sysseek($f, $ARGV[1], 0);
		print defined(syswrite($f, $ARGV[2])) ? "ok" : ename()' "$@"
}
# differ A B: "N OFF,OFF,... HOW SAMELEN": the bytes where files A and B differ, and how ("x"
# one bit flipped, "0" zeroed, "r" anything else)
differ() {
	perl -e 'local $/; open(my $f, "<", $ARGV[0]) or die; my $a = <$f>;
		open($f, "<", $ARGV[1]) or die; my $b = <$f>; my (@d, $how);
		for my $i (0 .. (length($a) < length($b) ? length($a) : length($b)) - 1) {
			my ($x, $y) = (ord(substr($a, $i, 1)), ord(substr($b, $i, 1)));
			next if $x == $y; push @d, $i;
			$how .= $y == 0 ? "0" : unpack("%32b*", chr($x ^ $y)) == 1 ? "x" : "r" }
		printf "%d %s %s %s", scalar @d, join(",", @d) || "-", $how // "-",
			length($a) == length($b) ? "True" : "False"' "$1" "$2"
}
# moved FROM TO / linked FROM TO / symlinked TARGET TO: "ok" or the errno's name (perl: mv
# would copy on EXDEV)
moved() { timeout 30 perl -e "$ENAME"'; print rename($ARGV[0], $ARGV[1]) ? "ok" : ename()' "$@"; }
linked() { timeout 30 perl -e "$ENAME"'; print link($ARGV[0], $ARGV[1]) ? "ok" : ename()' "$@"; }
symlinked() { timeout 30 perl -e "$ENAME"'; print symlink($ARGV[0], $ARGV[1]) ? "ok" : ename()' "$@"; }
# windowed FILE SECONDS UP DOWN START_US: stat FILE every few ms for SECONDS, and judge each
# stat by the client's own clock against the rule's windows (up UP ms, down DOWN ms, the first
# from START_US, the wall clock): a failure whose whole syscall lay inside a down window, or a
# success whose whole syscall lay inside an up window, is wrong. Prints "WRONG FAILED OK
# WINDOWS": the wrong ones, the failures, the successes, the up windows failures were seen in.
windowed() {
	timeout 60 perl -MTime::HiRes=time,sleep -e '
		my ($file, $secs, $up, $down, $start) = @ARGV;
		my $cycle = ($up + $down) * 1000; $up *= 1000;
		my ($wrong, $failed, $ok, %windows) = (0, 0, 0);
		my $end = time + $secs;
		while (time < $end) {
			my $t0 = int(time * 1e6); my $r = stat $file; my $t1 = int(time * 1e6);
			my $p = ($t0 - $start) % $cycle; my $n = int(($t0 - $start) / $cycle);
			if ($r) { $ok++; $wrong++ if $p < $up && $t1 - $t0 < $up - $p; }
			else { $failed++; $windows{$n} = 1;
				$wrong++ if $p >= $up && $t1 - $t0 < $cycle - $p; }
			sleep 0.006;
		}
		printf "%d %d %d %d", $wrong, $failed, $ok, scalar keys %windows' "$@"
}
# readonce FILE: what one read(2) of FILE returns (NULs as '@'), one request to the daemon
readonce() {
	timeout 30 perl -e 'open(my $f, "<", $ARGV[0]) or die; sysread($f, my $b, 4096);
		$b =~ tr/\0/@/; print $b' "$1"
}
# logged_checks ID: the rule's checks its hits in the log came at
logged_checks() {
	raw 'fault log' | perl -MJSON::PP -e 'print join(" ", map { $_->{check} }
		grep { $_->{id} == $ARGV[0] } @{decode_json(<STDIN>)->{log}})' "$1"
}
# rules: how many rules `fault list` shows
rules() {
	raw 'fault list' | grep -o '"id":' | wc -l
}
printf '%s' "$DATA" >"$T/data.orig"

for mode in kernel collapse server; do
	M=$T/m.$mode
	SOCK=$T/$mode.sock
	mount_cfs "$M" -o "ctl=$SOCK,follow=$mode,opens=answer" "$T/spec" ||
		{ fail "$mode: mount"; continue; }

	# --- a shared map while an unrelated rule stands -----------------------------------------
	ctl fault add op=getattr path=/nothing errno=EIO >/dev/null
	check "$mode: the kernel took FUSE_DIRECT_IO_ALLOW_MMAP ($(transport direct_io_mmap))" \
		test "$(transport direct_io_mmap)" = true
	out=$(mapped "$M/m")
	check "$mode: MAP_SHARED works while a rule stands ($out)" test "$out" = mapped
	check "$mode: ... and what was written through the map is stored" \
		test "$(cat "$M/m")" = MAPPED
	ctl fault add op=read path=/x errno=EIO >/dev/null
	check "$mode: ... while reads still reach the rules, one by one" not cat "$M/x" 2>/dev/null
	check "$mode: ... every one" not cat "$M/x" 2>/dev/null
	ctl fault clear >/dev/null

	# --- errno=E1|E2|...: one drawn with the seed ------------------------------------------
	ctl record start "$T/$mode.jsonl" >/dev/null
	id=$(raw "fault add op=getattr path=/x errno=EIO|ENOENT|EPERM seed=3" |
		sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	e1=$(errnos 24 "$M/x")
	check "$mode: errno=EIO|ENOENT|EPERM: every stat fails with one of them ($e1)" \
		sh -c "! printf '%s' '$e1' | tr ' ' '\n' | grep -qvxE 'EIO|ENOENT|EPERM'"
	check "$mode: ... all three drawn" \
		test "$(printf '%s' "$e1" | tr ' ' '\n' | sort -u | wc -l)" -eq 3
	check "$mode: ... the log names each hit's errno" test "$(logged_errnos "$id")" = "$e1"
	check "$mode: ... fault list shows the list" has "$(raw 'fault list')" '"errno":"EIO|ENOENT|EPERM"'
	ctl fault clear >/dev/null
	ctl fault add op=getattr path=/x 'errno=EIO|ENOENT|EPERM' seed=3 >/dev/null
	check "$mode: ... the same seed draws the same errnos" test "$(errnos 24 "$M/x")" = "$e1"
	ctl fault clear >/dev/null
	check "$mode: ... and the stat of another path is not touched" test "$(errnos 1 "$M/m")" = ok

	# --- kill=SIG: the requester is signalled, the request answered -------------------------
	ctl fault add op=read path=/x kill=SIGTERM >/dev/null
	timeout 30 cat "$M/x" >/dev/null 2>&1
	st=$?
	check "$mode: kill=SIGTERM ends a cat with status 143 ($st)" test "$st" -eq 143
	check "$mode: ... a cat of another file is not touched" test "$(cat "$M/other")" = other
	check "$mode: ... the mount keeps serving" test "$(cat "$M/data")" = "$DATA"
	check "$mode: ... the log says the signal went" has "$(raw 'fault log')" '"kill":"SIGTERM","sent":true'
	check "$mode: ... stats count it ($(faults kills))" test "$(faults kills)" -eq 1
	ctl fault clear >/dev/null
	# with errno=, the signal goes and the request is answered with it: a caller that
	# handles the signal sees both
	ctl fault add op=read path=/x kill=USR1 errno=EIO >/dev/null
	out=$(timeout 30 perl -e "$ENAME"'; my @got; $SIG{USR1} = sub { push @got, "USR1" };
		open(my $f, "<", $ARGV[0]) or die; push @got, defined(sysread($f, my $b, 10)) ? "read" : ename();
		print join(" ", sort @got)' "$M/x")
	check "$mode: kill=USR1 errno=EIO: the caller gets the signal and EIO ($out)" \
		test "$out" = "EIO USR1"
	ctl fault clear >/dev/null

	# --- corrupt=zero|random|flip bytes=N seed=S ---------------------------------------------
	ctl fault add op=read path=/data corrupt=random bytes=4 seed=7 >/dev/null
	cat "$M/data" >"$T/c1"
	ctl fault clear >/dev/null
	ctl fault add op=read path=/data corrupt=random bytes=4 seed=7 >/dev/null
	cat "$M/data" >"$T/c2"
	ctl fault clear >/dev/null
	d=$(differ "$T/data.orig" "$T/c1")
	check "$mode: corrupt=random bytes=4: 4 bytes differ, the length kept ($d)" \
		sh -c "set -- $d; [ \$1 = 4 ] && [ \$4 = True ]"
	check "$mode: ... the same seed, the same bytes twice" cmp -s "$T/c1" "$T/c2"
	check "$mode: ... and the tree keeps its own" test "$(cat "$M/data")" = "$DATA"
	ctl fault add op=read path=/data corrupt=random bytes=4 seed=8 >/dev/null
	cat "$M/data" >"$T/c3"
	ctl fault clear >/dev/null
	check "$mode: ... another seed, other bytes" not cmp -s "$T/c1" "$T/c3"
	ctl fault add op=read path=/data corrupt=flip bytes=3 seed=1 >/dev/null
	cat "$M/data" >"$T/c4"
	ctl fault clear >/dev/null
	d=$(differ "$T/data.orig" "$T/c4")
	check "$mode: corrupt=flip bytes=3: 3 bytes, one bit each ($d)" \
		sh -c "set -- $d; [ \$1 = 3 ] && [ \$3 = xxx ]"
	ctl fault add op=read path=/data corrupt=zero bytes=2 at=10,len=5 >/dev/null
	cat "$M/data" >"$T/c5"
	ctl fault clear >/dev/null
	d=$(differ "$T/data.orig" "$T/c5")
	check "$mode: corrupt=zero bytes=2 at=10,len=5: 2 zeroed inside 10..14 ($d)" \
		sh -c "set -- $d; [ \$1 = 2 ] && [ \$3 = 00 ] &&
			for o in \$(echo \$2 | tr , ' '); do [ \$o -ge 10 ] && [ \$o -le 14 ] || exit 1; done"
	check "$mode: ... stats count the corrupted reads ($(faults corruptions))" \
		test "$(faults corruptions)" -ge 5

	# --- at=OFF,len=N: only reads and writes that touch those bytes ---------------------------
	ctl fault add op=read path=/data at=32,len=8 errno=EIO >/dev/null
	check "$mode: at=32,len=8: a read beside the range succeeds" test "$(pread "$M/data" 0 8)" = ok
	check "$mode: ... a read crossing its start fails" test "$(pread "$M/data" 28 8)" = EIO
	check "$mode: ... a read inside it fails" test "$(pread "$M/data" 34 2)" = EIO
	check "$mode: ... a read right after it succeeds" test "$(pread "$M/data" 40 8)" = ok
	check "$mode: ... the log says which bytes" has "$(raw 'fault log')" '"offset":28,"size":8'
	ctl fault clear >/dev/null
	ctl fault add op=write path=/data at=10,len=2 errno=ENOSPC >/dev/null
	check "$mode: a write rule at=10,len=2: a write beside it succeeds" \
		test "$(pwrite "$M/data" 0 ABCDEFGHIJ)" = ok
	check "$mode: ... one crossing it fails" test "$(pwrite "$M/data" 8 xyz)" = ENOSPC
	ctl fault clear >/dev/null
	check "$mode: ... and stored nothing" test "$(cut -c1-12 "$M/data")" = ABCDEFGHIJab
	printf '%s' "$DATA" >"$M/data"
	ctl record stop >/dev/null

	# --- attr=FIELD:VALUE,...: a getattr's answer lies --------------------------------------
	ctl record start "$T/$mode.attr.jsonl" >/dev/null
	ctl fault add op=getattr path=/x attr=size:12345,mode:0600,nlink:7,mtime:86400 >/dev/null
	out=$(stat -c '%s %a %h %Y' "$M/x")
	check "$mode: attr=: stat sees the size, mode, nlink and mtime given ($out)" \
		test "$out" = "12345 600 7 86400"
	out=$(ls -l "$M/x")
	check "$mode: ... and so does ls -l ($out)" sh -c 'case "$1" in "-rw------- 7 "*" 12345 "*) ;; *) exit 1 ;; esac' - "$out"
	check "$mode: ... another file is told the truth" test "$(stat -c %s "$M/other")" = 6
	check "$mode: ... fault list shows the fields" has "$(raw 'fault list')" '"attr":"size:12345,mode:0600,nlink:7,mtime:86400"'
	ctl fault clear >/dev/null
	check "$mode: ... once the rule goes, the truth again" test "$(stat -c '%s %a %h' "$M/x")" = "6 644 1"
	if [ "$mode" != server ]; then # server mode shows a link as its target
		ctl fault add op=getattr path=/l attr=size:99 >/dev/null
		check "$mode: a link whose st_size disagrees with its readlink ($(readlink "$M/l"))" \
			test "$(stat -c %s "$M/l")" = 99 -a "$(readlink "$M/l" | wc -c)" -lt 99
		ctl fault clear >/dev/null
	fi
	ctl record stop >/dev/null
	check "$mode: the recording has the lie's line" \
		grep -q '"on":"getattr".*"path":"/x","effect":"attr=size:12345,mode:0600,nlink:7,mtime:86400"' "$T/$mode.attr.jsonl"
	check "$mode: ... and the size the getattr showed" \
		grep -q '"op":"getattr".*"path":"/x".*"size":12345' "$T/$mode.attr.jsonl"

	# --- the recording: a line for each kill and corruption ----------------------------------
	check "$mode: the recording has the kill's line" \
		grep -q '"on":"read".*"path":"/x","effect":"kill=SIGTERM",.*"result":"applied"' "$T/$mode.jsonl"
	check "$mode: ... and the corruption's" \
		grep -q '"effect":"corrupt=random bytes=4",.*"result":"applied"' "$T/$mode.jsonl"
	check "$mode: ... and the drawn errnos in the stats' lines" \
		grep -q '"op":"getattr".*"path":"/x","result":"EPERM"' "$T/$mode.jsonl"

	# --- after=N, nth=N, count=N on a loop of 10 stats --------------------------------------
	ctl record start "$T/$mode.sel.jsonl" >/dev/null
	id=$(raw "fault add op=getattr path=/x after=3 errno=EIO" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	out=$(errnos 10 "$M/x")
	check "$mode: after=3: the first 3 stats pass, the 7 after fail ($out)" \
		test "$out" = "ok ok ok EIO EIO EIO EIO EIO EIO EIO"
	check "$mode: ... fault list shows after=" has "$(raw 'fault list')" '"after":3'
	check "$mode: ... and so does chainfsctl's table" has "$(ctl fault list)" ' after=3'
	check "$mode: ... the log's hits are the rule's checks 4..10 ($(logged_checks "$id"))" \
		test "$(logged_checks "$id")" = "4 5 6 7 8 9 10"
	ctl fault clear >/dev/null
	ctl fault add op=getattr path=/x after=3 count=2 errno=EIO >/dev/null
	out=$(errnos 10 "$M/x")
	check "$mode: after=3 count=2: the 4th and 5th fail, no other ($out)" \
		test "$out" = "ok ok ok EIO EIO ok ok ok ok ok"
	check "$mode: ... then the rule is spent" has "$(raw 'fault list')" '"spent":true'
	ctl fault clear >/dev/null
	ctl fault add op=getattr path=/x nth=4 errno=EIO >/dev/null
	out=$(errnos 10 "$M/x")
	check "$mode: nth=4: the 4th fails, no other ($out)" test "$out" = "ok ok ok EIO ok ok ok ok ok ok"
	ctl fault clear >/dev/null
	ctl fault add op=getattr path=/x count=3 errno=EIO >/dev/null
	out=$(errnos 10 "$M/x")
	check "$mode: count=3: the first 3 fail ($out)" test "$out" = "EIO EIO EIO ok ok ok ok ok ok ok"
	ctl fault clear >/dev/null
	# with other effects (one read(2), one request): the 3rd read is zeroed, the 2nd killed
	ctl fault add op=read path=/data after=2 count=1 corrupt=zero bytes=64 >/dev/null
	a=$(readonce "$M/data") b=$(readonce "$M/data") c=$(readonce "$M/data") d=$(readonce "$M/data")
	check "$mode: after=2 count=1 corrupt=zero: the 3rd read only is zeroed ($c)" \
		test "$a$b$d" = "$DATA$DATA$DATA" -a "$c" = "$(printf '%s' "$DATA" | tr -c @ @)"
	ctl fault clear >/dev/null
	ctl fault add op=read path=/x after=1 kill=TERM >/dev/null
	readonce "$M/x" >/dev/null 2>&1
	s1=$?
	readonce "$M/x" >/dev/null 2>&1
	s2=$?
	check "$mode: after=1 kill=TERM: the first reader lives, the second ends with 143 ($s1 $s2)" \
		test "$s1 $s2" = "0 143"
	ctl fault clear >/dev/null

	# --- to=GLOB: the new path of a rename, link or symlink -----------------------------------
	ctl fault add op=rename 'path=/*' 'to=/d/*' errno=EXDEV >/dev/null
	check "$mode: rename to=/d/*: a rename into /d fails" test "$(moved "$M/other" "$M/d/o")" = EXDEV
	check "$mode: ... one elsewhere succeeds" test "$(moved "$M/other" "$M/o2")" = ok
	check "$mode: ... and back" test "$(moved "$M/o2" "$M/other")" = ok
	check "$mode: ... the log names the new path" has "$(raw 'fault log')" '"to":"/d/o"'
	check "$mode: ... fault list shows to=" has "$(raw 'fault list')" '"to":"/d/*"'
	check "$mode: ... chainfsctl's log too" has "$(ctl fault log)" ' to=/d/o'
	check "$mode: ... and its table" has "$(ctl fault list)" ' to=/d/*'
	ctl fault clear >/dev/null
	ctl fault add op=link 'path=/*' 'to=/d/*' errno=EMLINK >/dev/null
	check "$mode: link to=/d/*: a link made in /d fails" test "$(linked "$M/x" "$M/d/lx")" = EMLINK
	check "$mode: ... one made elsewhere succeeds" test "$(linked "$M/x" "$M/lx")" = ok
	ctl fault clear >/dev/null
	ctl fault add op=symlink 'path=/*' 'to=/d/*' errno=EACCES >/dev/null
	check "$mode: symlink to=/d/*: a link made in /d fails" test "$(symlinked x "$M/d/sx")" = EACCES
	check "$mode: ... one made elsewhere succeeds" test "$(symlinked x "$M/sx")" = ok
	ctl fault clear >/dev/null
	rm -f "$M/lx" "$M/sx"
	ctl record stop >/dev/null
	check "$mode: the recording's trigger lines say which matching request fired" \
		grep -q '"effect":"corrupt=zero bytes=64","check":3,"result":"applied"' "$T/$mode.sel.jsonl"

	# --- up=MS down=MS: fires only in its up windows (2 s of stats) ---------------------------
	id=$(raw "fault add op=getattr path=/x up=150 down=250 errno=EIO" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	list=$(raw 'fault list')
	check "$mode: chainfsctl's table shows the windows" has "$(ctl fault list)" ' up=150 down=250 window='
	start=$(printf '%s' "$list" | sed -n 's/.*"started_us":\([0-9]*\).*/\1/p')
	set -- $(windowed "$M/x" 2 150 250 "$start")
	check "$mode: up=150 down=250: no stat failed in a down window nor passed in an up one (wrong $1 of $2 failed, $3 passed)" \
		test "${1:-1}" -eq 0
	check "$mode: ... stats failed in at least 3 up windows ($4) and passed between ($3)" \
		test "${4:-0}" -ge 3 -a "${3:-0}" -ge 1
	hits=$(raw 'fault log' | perl -MJSON::PP -e 'my $o = decode_json(<STDIN>); my $bad = 0;
		my @h = grep { $_->{id} == $ARGV[1] } @{$o->{log}};
		for (@h) { $bad++ unless defined $_->{window_us} && $_->{window_us} < 150000
			&& ($_->{time_us} - $ARGV[0]) % 400000 < 155000 } print "$bad ", scalar @h' "$start" "$id")
	check "$mode: ... every logged hit came inside an up window (bad, hits: $hits)" \
		sh -c "set -- $hits; [ \$1 -eq 0 ] && [ \$2 -ge 3 ]"
	ctl fault clear >/dev/null
	# a rule whose 1 ms up window is over rests for an hour: listed, standing, resting
	ctl fault add op=getattr path=/x up=1 down=3600000 errno=EIO >/dev/null
	check "$mode: up=1 down=3600000: stats counts it resting" wait_for test "$(faults rules_resting)" -eq 1
	check "$mode: ... fault list says down" has "$(raw 'fault list')" '"window":"down"'
	check "$mode: ... and a stat passes" test "$(errnos 1 "$M/x")" = ok
	ctl fault clear >/dev/null

	unmount_cfs "$M"
	check "$mode: no sanitizer report (BUILD=build-asan)" not grep -q "Sanitizer\|runtime error" "$M.log"
done

# --- the completion offers the new keys after `fault add` (from chainfsctl --help) ------------
comp=$(PATH="$BUILD:$PATH" bash -c ". '$ROOT/tools/completion.bash'; COMP_WORDS=(chainfsctl /mnt fault add op=read \"\"); COMP_CWORD=5; _chainfsctl; echo \"\${COMPREPLY[*]}\"" 2>/dev/null)
for k in kill= corrupt= bytes= at= len= errno= attr= after= up= down= to=; do
	check "the completion offers $k after fault add" has " $comp " " $k "
done

# --- bad rules: refused with the reason, no rule added, the tree unchanged --------------------
M=$T/m.bad
SOCK=$T/bad.sock
mount_cfs "$M" -o "ctl=$SOCK,opens=answer" "$T/spec" || { fail "bad: mount"; finish; exit 1; }
ctl fault add op=getattr path=/nothing errno=EIO >/dev/null
bad() { # WANT RULE...: refused, saying WANT
	out=$(ctl fault add "$@" 2>&1)
	st=$?
	check "refused: $* ($out)" sh -c "[ $st -ne 0 ] && case \"\$1\" in *\"\$2\"*) ;; *) exit 1;; esac" - "$out" "$want"
}
want="signal name" bad op=read path=/x kill=SIGFOO
want="signal name" bad op=read path=/x kill=0
want="signal name" bad op=read path=/x kill=99
want="'EFOO' in the list is not an errno" bad op=read path=/x 'errno=EIO|EFOO'
want="'' in the list" bad op=read path=/x 'errno=EIO|'
want="1..511" bad op=read path=/x 'errno=EIO|600'
want="stop the kernel sending it" bad op=open path=/x 'errno=EIO|ENOSYS'
want="kill= goes alone" bad op=read path=/x kill=TERM short=3
want="kill= goes alone" bad op=read path=/x kill=TERM delay=10
want="hold is a rule of its own" bad op=read path=/x kill=TERM hold
want="give op=read" bad op=write path=/x corrupt=zero
want="zero, random or flip" bad op=read path=/x corrupt=some
want="exclude each other" bad op=read path=/x corrupt=zero errno=EIO
want="bytes= goes with corrupt=" bad op=read path=/x bytes=3 errno=EIO
want="bytes= takes" bad op=read path=/x corrupt=zero bytes=0
want="give op=read or op=write" bad op=getattr path=/x at=0,len=4 errno=EIO
want="at=OFF needs a length" bad op=read path=/x at=4 errno=EIO
want="len= goes with at=" bad op=read path=/x len=4 errno=EIO
want="a length of 1 or more" bad op=read path=/x at=4,len=0 errno=EIO
want="expected len=" bad op=read path=/x at=4,size=2 errno=EIO
want="kind: the kernel" bad op=getattr path=/x attr=kind:dir
want="a value out of range" bad op=getattr path=/x attr=size:x
want="a value out of range" bad op=getattr path=/x attr=mode:0999
want="FIELD one of" bad op=getattr path=/x attr=colour:1
want="FIELD one of" bad op=getattr path=/x attr=size
want="give op=getattr or op=lookup" bad op=read path=/x attr=size:1
want="exclude each other" bad op=getattr path=/x attr=size:1 errno=EIO
want="largest offset" bad op=read path=/x at=18446744073709551615,len=2 errno=EIO
want="after= takes 1.." bad op=getattr path=/x after=0 errno=EIO
want="nth= and count= take" bad op=getattr path=/x nth=0 errno=EIO
want="after= and nth= contradict" bad op=getattr path=/x after=2 nth=3 errno=EIO
want="up= and down= go together" bad op=getattr path=/x up=100 errno=EIO
want="up= and down= go together" bad op=getattr path=/x down=100 errno=EIO
want="up= and down= take" bad op=getattr path=/x up=0 down=10 errno=EIO
want="give op=rename, op=link or op=symlink" bad op=getattr path=/x 'to=/d/*' errno=EIO
want="give op=rename, op=link or op=symlink" bad op=any path=/x 'to=/d/*' kill=TERM
want="unknown key" bad op=getattr path=/x before=3 errno=EIO
check "no bad rule was added ($(rules) rules)" test "$(rules)" -eq 1
check "the tree is unchanged" test "$(cat "$M/data")" = "$DATA"
check "the daemon keeps serving" has "$(ctl ping)" version
unmount_cfs "$M"
check "no sanitizer report (BUILD=build-asan)" not grep -q "Sanitizer\|runtime error" "$M.log"

# --- -o opens=skip: corrupt= needs reads past the page cache ---------------------------------
M=$T/m.skip
SOCK=$T/skip.sock
mount_cfs "$M" -o "ctl=$SOCK" "$T/spec" || { fail "skip: mount"; finish; exit 1; }
want="opens=answer" bad op=read path=/data corrupt=flip
unmount_cfs "$M"
finish
