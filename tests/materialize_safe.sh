#!/bin/sh
# --materialize into a directory another user owns, while that user (uid 65534) swaps names
# for links to host files: no host file changes mode, content, owner or link count, and no
# second name leads to one. A hard-linked symlink's names each lead where the tree's do, so
# the copy has no link out of itself; device nodes keep their mode only with --keep-ids.
# All on a tmpfs of its own (a hard link cannot cross filesystems; 100,000 files go fast).
# MAT_ROUNDS (20) and MAT_RACE_S (20) bound the race.
# check: once: it mounts nothing
. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
ROUNDS=${MAT_ROUNDS:-20}
RACE_S=${MAT_RACE_S:-20}
NFIFO=3000
W=$T/fs
mount_tmpfs "$W" || { fail "tmpfs"; finish; exit 1; }

# Root's 0600 files that the racer points its links at, and a directory holding one.
mkdir -m 755 "$W/host" "$W/host/d"
for c in c0 c1 c2 c3 d/f; do
	printf 'secret %s\n' "$c" >"$W/host/$c"
	chmod 600 "$W/host/$c"
done
# host_intact: every canary as made, else say which is not
host_intact() {
	for c in c0 c1 c2 c3 d/f; do
		got=$(stat -c '%a %u %h' "$W/host/$c")
		if [ "$got" != "600 0 1" ] || [ "$(cat "$W/host/$c")" != "secret $c" ]; then
			echo "  $W/host/$c: mode, owner, links: $got" >&2
			return 1
		fi
	done
}
# fresh DIR: an empty directory that uid 65534 owns (the racers keep their state in $W/st)
fresh() {
	rm -rf "$1" && mkdir -m 755 "$1" && chown 65534:65534 "$1"
}
mkdir -m 755 "$W/st" && chown 65534 "$W/st"

# (a) Special files made and then chown'ed and chmod'ed by name: the racer renames each fifo as
# soon as it exists and puts a link to a canary in its place. --keep-ids (owners as root) is
# the widest window: a round or two hit it before the fix.
RACE_FIFOS='my ($dir, $n, $secs, $ready, $host) = @ARGV;
chdir $dir or die "$dir: $!";
open(my $fh, ">", $ready) or die "$ready: $!";
close $fh;
my ($i, $end) = (0, time + $secs);
while ($i < $n && time < $end) {
	next unless rename("f$i", "x$i");
	symlink("$host/c" . ($i % 4), "f$i");
	$i++;
}'
i=0
while [ $i -lt $NFIFO ]; do
	echo "fifo /f$i mode=0666"
	i=$((i + 1))
done >"$T/fifos.spec"
r=0
refused=0
while [ $r -lt "$ROUNDS" ] && host_intact 2>/dev/null; do
	D=$W/fifos.$r
	fresh "$D"
	$NOBODY perl -e "$RACE_FIFOS" "$D" $NFIFO "$RACE_S" "$W/st/ready.$r" "$W/host" &
	racer=$!
	PIDS="$PIDS $racer"
	wait_for test -e "$W/st/ready.$r" || fail "fifo racer $r never started"
	# a swap it sees is refused (exit 1); a swap it does not see must not matter
	"$CHAINFS" --materialize --keep-ids "$T/fifos.spec" "$D" 2>"$T/fifos.$r.err" || refused=$((refused + 1))
	kill "$racer" 2>/dev/null
	wait "$racer" 2>/dev/null
	r=$((r + 1))
done
echo "  fifo race: $r rounds, $refused refused a swapped name"
check "(a) fifos chmod'ed through swapped-in links: host files unchanged" host_intact
# a refusal names the entry it found swapped: replaced after it was made, or gone before it
# could be opened (both seen here, depending on where the swap lands)
named() {
	for e in "$T"/fifos.*.err; do
		[ ! -s "$e" ] || grep -q '/fifos\.[0-9]*/f[0-9]*: ' "$e" || return 1
	done
}
check "(a) each refusal names the entry swapped ($refused refusals)" named

# (b) A second name linked through a path: once /d is done (its mode lets 65534 see d/f),
# the racer puts a link to a host directory holding a root-only "f" in its place. 2000 files
# follow before the second name, so the racer is in time.
RACE_DIR='my ($dir, $secs, $ready, $host, $done) = @ARGV;
chdir $dir or die "$dir: $!";
open(my $fh, ">", $ready) or die "$ready: $!";
close $fh;
my $end = time + $secs;
until (-e "d/f") { exit 1 if time > $end }
rename("d", "d.gone") && symlink("$host/d", "d") or die "swap: $!";
open($fh, ">", $done) or die "$done: $!";
close $fh;'
{
	echo "dir /d mode=0755"
	echo "file /d/f inside mode=0644"
	i=0
	while [ $i -lt 2000 ]; do
		echo "file /pad/p$i x"
		i=$((i + 1))
	done
	echo "hardlink /zz /d/f"
} >"$T/hard.spec"
D=$W/hard
fresh "$D"
$NOBODY perl -e "$RACE_DIR" "$D" "$RACE_S" "$W/st/ready.hard" "$W/host" "$W/st/done.hard" &
racer=$!
PIDS="$PIDS $racer"
wait_for test -e "$W/st/ready.hard" || fail "dir racer never started"
"$CHAINFS" --materialize "$T/hard.spec" "$D" 2>"$T/hard.err"
echo "  hard link race: exit $?: $(cat "$T/hard.err")"
wait "$racer"
check "(b) the racer swapped /d for a link before the second name" test -e "$W/st/done.hard"
check "(b) second name through a swapped-in link: host files unchanged" host_intact
check "(b) the second name is not a host file" \
	sh -c "[ ! -e '$D/zz' ] || [ \"\$(stat -c %i '$D/zz')\" != \"\$(stat -c %i '$W/host/d/f')\" ]"

# (c) A hard-linked symlink: each name's body is right for its own directory (the link is
# broken in two, and stderr says so), so nothing of the copy leads out of it.
cat >"$T/hlink.spec" <<'EOF'
dir /a/b
link /a/b/l /c0
hardlink /h /a/b/l
link /a/b/dl /
hardlink /hd /a/b/dl
link /a/b/rel x
hardlink /hrel /a/b/rel
EOF
D=$W/host/w/copy # ../../c0 from here is a canary
mkdir -p "$D"
check "(c) materialize hard-linked symlinks" \
	sh -c "'$CHAINFS' --materialize '$T/hlink.spec' '$D' 2>'$T/hlink.err'"
cat "$T/hlink.err"
check "(c) cat copy/h does not read the host" not sh -c "cat '$D/h' 2>/dev/null | grep -q secret"
find -L "$D" 2>/dev/null | sed "s|^$D||" >"$T/find"
check "(c) find -L stays inside the copy" not grep -Eq '/(c[0-3]|d|w)(/|$)' "$T/find"
check "(c) /h leads where the tree's does" test "$(readlink "$D/h")" = c0
check "(c) /hd is the copy's root" test "$(readlink "$D/hd")" = .
check "(c) the first names keep theirs" \
	test "$(readlink "$D/a/b/l") $(readlink "$D/a/b/dl")" = "../../c0 ../.."
check "(c) a body right everywhere stays one hard link" \
	test "$(stat -c '%h %i' "$D/hrel")" = "$(stat -c '2 %i' "$D/a/b/rel")"
check "(c) stderr says a hard link was broken" grep -q "/h: .*hard link" "$T/hlink.err"

# (d) Device nodes: the spec's mode only with --keep-ids, else 0600, and stderr says so.
echo "dev /null c 1 3 mode=0666" >"$T/dev.spec"
D=$W/dev
fresh "$D"
"$CHAINFS" --materialize "$T/dev.spec" "$D" 2>"$T/dev.err"
check "(d) a device without --keep-ids is made 0600" test "$(stat -c %a "$D/null")" = 600
check "(d) stderr says so" grep -q "/null: .*0600" "$T/dev.err"
check "(d) the 0600 node is not writable by uid 65534" \
	not $NOBODY sh -c "exec 2>/dev/null; echo x >'$D/null'"
D=$W/dev.keep
fresh "$D"
"$CHAINFS" --materialize --keep-ids "$T/dev.spec" "$D"
check "(d) with --keep-ids the spec's mode" test "$(stat -c %a "$D/null")" = 666

# Without a racer, a directory another user owns gets the same copy as one of root's.
DEF=$W/def
mkdir -m 755 "$DEF"
fresh "$W/def.other"
check "default tree into root's directory" "$CHAINFS" --materialize --keep-ids "$DEF"
check "default tree into uid 65534's directory" \
	"$CHAINFS" --materialize --keep-ids "$W/def.other"
listing() {
	(cd "$1" && find . -printf '%y %m %U %G %n %s %T@ %p -> %l\n' | LC_ALL=C sort)
}
listing "$DEF" >"$T/def.ls"
listing "$W/def.other" >"$T/def.other.ls"
same_output "the two copies" "$T/def.ls" "$T/def.other.ls"

finish
