#!/bin/sh
# chainfsctl replay never leaves MNT (issue 31): a hostile recording, whose paths climb out
# ("/../host/canary") or go through links it makes itself pointing out (by ".." and
# absolutely), with every operation replay makes and those it skips, leaves a host canary
# outside MNT as it was (names, types, modes, sizes, times, contents); lines with a ".." are
# refused, counted and make the status 3; a fifo where a file was recorded does not hold
# replay. An honest server-mode recording of `ln -s ABS lnk; echo > lnk/x` (ABS a directory
# of the tree and of the host alike) replays onto a tmpfs holding the materialized copy with
# MNT as the root: the copy gets x, the host does not.
# Lines that are not recorded requests (a non-string op, JSON nested 100000 deep, missing
# members, wrong types, format 2's members malformed or a newer format) stop replay with
# FILE:LINE: and status 2, never a crash, in the plain and the ASan/UBSan build.
. "$(dirname "$0")/lib.sh"

ASAN_CTL=$ROOT/build-asan/chainfsctl
make -s -C "$ROOT" BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" build-asan/chainfsctl >&2
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=97

# replay FILE MNT [CTL]: the output (stdout and stderr) in $out, the status in $rc (124 when
# it took longer than $replay_s seconds)
replay_s=120
replay() {
	out=$(timeout "$replay_s" "${3:-$CTL}" replay "$1" "$2" 2>&1)
	rc=$?
}
# rec OP PATH [MEMBERS]: one recorded line that succeeded
rec() {
	printf '{"t_ns":1,"op":"%s","nodeid":1,"pid":1,"path":"%s","result":0,"errno":0,"ns":1%s}\n' \
		"$1" "$2" "${3:-}"
}
# refused OP: replay's table counts some OP lines refused
refused() {
	printf '%s\n' "$out" | awk -v op="$1" '$1 == op && $5 > 0 { ok = 1 } END { exit !ok }'
}
# skipped_only OP: OP lines were all skipped, none replayed or refused
skipped_only() {
	printf '%s\n' "$out" | awk -v op="$1" '$1 == op && $2 == 0 && $4 > 0 && $5 == 0 { ok = 1 }
		END { exit !ok }'
}

# --- the canary: outside every replay target ---------------------------------------------------
HOST=$T/host
mkdir -p "$HOST/edir" "$HOST/sub"
printf 'canary\n' >"$HOST/canary"
chmod 640 "$HOST/canary"
printf 'sub\n' >"$HOST/sub/f"
touch -d '2001-01-01' "$HOST/canary" "$HOST/sub/f" "$HOST/sub" "$HOST/edir" "$HOST"
# snap: everything a change to the host would show: $T's names, and under host each name's
# type, mode, size, mtime, link body and content (kept in $S, made first)
S=$T/snaps
mkdir "$S"
snap() {
	ls -A "$T"
	(cd "$T" && find host -printf '%p %y %m %s %T@ %l\n' | LC_ALL=C sort &&
		find host -type f -exec md5sum {} + | LC_ALL=C sort)
}

# --- a hostile recording ------------------------------------------------------------------------
MAKES="lookup getattr readlink open read opendir readdir readdirplus access statfs unlink rmdir"
SKIPS="setattr write link mknod fsync flush release getxattr"
{
	# recorded paths that climb out, one operation each; the ops replay skips as well
	for op in $MAKES $SKIPS; do rec "$op" /../host/canary; done
	rec rmdir /../host/edir
	rec create /../host/new ',"mode":33206'
	rec mkdir /../host/newdir ',"mode":511'
	rec symlink /../host/lnk ',"target":"/etc/passwd"'
	rec rename /../host/canary ',"to":"/stolen"'
	rec rename /../host/sub ',"to":"/sub"'
	rec create /x ',"mode":33188'
	rec rename /x ',"to":"/../host/x"'
	rec unlink /..
	rec rmdir /../host/edir/../../host/sub
	rec lookup //../host/canary
	printf '{"op":"unlink","path_hex":"%s","errno":0,"ns":1}\n' \
		"$(printf '/../host/canary' | od -An -tx1 | tr -d ' \n')"
	# links the recording makes inside MNT, pointing out; then every operation through them
	rec symlink /up ',"target":"../host"'
	rec symlink /abs ",\"target\":\"$HOST\""
	rec symlink /fl ",\"target\":\"$HOST/canary\""
	rec symlink /dotdot ",\"target\":\"../../../../../../../..$HOST\"" # up to "/", then down
	for l in up abs dotdot; do
		for op in $MAKES $SKIPS; do rec "$op" "/$l/canary"; done
		rec rmdir "/$l/edir"
		rec create "/$l/new" ',"mode":33206'
		rec mkdir "/$l/newdir" ',"mode":511'
		rec symlink "/$l/lnk" ',"target":"x"'
		rec rename "/$l/canary" ',"to":"/stolen"'
		rec rename "/$l/sub" ',"to":"/sub"'
		rec create /y ',"mode":33188'
		rec rename /y ",\"to\":\"/$l/y\""
	done
	for op in open read opendir readdir access statfs; do rec "$op" /fl; done
	rec create /fl ',"mode":33206'
} >"$T/hostile.jsonl"

mkdir "$T/dst"
snap >"$S/before"
replay "$T/hostile.jsonl" "$T/dst"
snap >"$S/after"
same_output "the host (canary, names in \$T)" "$S/before" "$S/after"
check "lines with .. refused: status 3" test "$rc" -eq 3
check "the summary counts them (12 + 11)" has "$out" "
23 lines refused"
check "... and shows them" has "$out" "unlink /../host/canary: refused, not a path beneath the mount"
for op in $MAKES create mkdir symlink rename; do
	check "$op: a path with .. is refused" refused "$op"
done
for op in $SKIPS; do
	check "$op: skipped" skipped_only "$op"
done
check "through links out: not found in MNT" has "$out" "create /abs/new: recorded 0, replayed ENOENT"
check "the links the recording made are in MNT" test -L "$T/dst/abs" -a -L "$T/dst/up"
check "the names made through them were not made" test ! -e "$T/dst/stolen" -a ! -e "$T/dst/sub"

# the same with a copy of the host's path inside MNT: the links name MNT's copy
mkdir -p "$T/dst2$HOST/edir"
printf 'inside\n' >"$T/dst2$HOST/canary"
snap >"$S/before2"
replay "$T/hostile.jsonl" "$T/dst2" "$ASAN_CTL" # every operation, under ASan/UBSan
snap >"$S/after2"
same_output "the host, MNT holding its path" "$S/before2" "$S/after2"
check "the same status under ASan" test "$rc" -eq 3
check "no sanitizer report" not has "$out" "Sanitizer" 2>/dev/null
check "no UBSan report" not has "$out" "runtime error" 2>/dev/null
check "an absolute link names MNT's own copy" test ! -e "$T/dst2$HOST/canary"

# a fifo where the recording opened a file: replay does not wait for a writer
mkdir "$T/fifo"
mkfifo "$T/fifo/f"
{ rec open /f; rec read /f; rec opendir /f; } >"$T/fifo.jsonl"
replay_s=20
replay "$T/fifo.jsonl" "$T/fifo"
replay_s=120
check "a fifo does not hold replay" test "$rc" -eq 1
check "... its opens succeed" has "$out" "opendir /f: recorded 0, replayed ENOTDIR"

# --- an honest server-mode recording onto the materialized copy ------------------------------
HOST2=$T/host2 # a directory of the host, and the same path in the tree
mkdir "$HOST2"
mount_cfs "$T/srv" -o "follow=server,record=$T/srv.jsonl" || fail "mount server"
(cd "$T/srv" && mkdir -p "./$HOST2" && ln -s "$HOST2" lnk && echo x >lnk/x) ||
	fail "the workload in server mode"
unmount_cfs "$T/srv"
check "the recording creates /lnk/x" grep -q '"op":"create".*"path":"/lnk/x"' "$T/srv.jsonl"
mount_tmpfs "$T/copy" || fail "mount tmpfs"
check "materialize the default tree" "$CHAINFS" --materialize "$T/copy"
replay "$T/srv.jsonl" "$T/copy"
check "honest: nothing in the host's directory" test -z "$(ls -A "$HOST2")"
check "honest: the copy has lnk/x where the mount had it" test -f "$T/copy$HOST2/x"
check "honest: the create replayed as recorded" not has "$out" "create /lnk/x" 2>/dev/null
check "honest: no line refused" has "$out" "0 lines refused"
check "honest: status 0 or 1" test "$rc" -le 1

# --- lines that are not recorded requests -------------------------------------------------------
GOOD='{"op":"lookup","path":"/","errno":0,"ns":1}'
NEST=$(awk 'BEGIN { for (i = 0; i < 100000; i++) printf "["; for (i = 0; i < 100000; i++) printf "]" }')
# bad WHAT LINE WORD: after a good line, LINE stops replay: status 2, "FILE:2: ..." saying WORD
bad() {
	printf '%s\n%s\n' "$GOOD" "$2" >"$T/bad.jsonl"
	for ctl in "$CTL" "$ASAN_CTL"; do
		replay "$T/bad.jsonl" "$T/dst" "$ctl"
		check "$1 ($(basename "$(dirname "$ctl")")): status 2, no crash" test "$rc" -eq 2
		check "$1: the line's number" has "$out" "bad.jsonl:2: "
		check "$1: why" has "$out" "$3"
		check "$1: no critical warning nor sanitizer report" not grep -Eq \
			'CRITICAL|Sanitizer|runtime error' <<EOF
$out
EOF
	done
}
bad "a number as op" '{"op":5,"path":"/x","errno":0,"ns":1}' '"op" is not a string'
bad "an object as op" '{"op":{},"path":"/x","errno":0,"ns":1}' "nested"
bad "null as op" '{"op":null,"path":"/x","errno":0,"ns":1}' '"op" is not a string'
bad "an op that is no name" '{"op":"look up","path":"/x","errno":0,"ns":1}' "not an operation"
bad "100000 nested arrays" "$NEST" "nested"
bad "100000 nested arrays as a path" "{\"op\":\"lookup\",\"path\":$NEST,\"errno\":0,\"ns\":1}" \
	"nested"
bad "no op" '{"path":"/x","errno":0,"ns":1}' 'no "op"'
bad "no path" '{"op":"lookup","errno":0,"ns":1}' '"path"'
bad "no errno" '{"op":"lookup","path":"/x","ns":1}' '"errno"'
bad "no ns" '{"op":"lookup","path":"/x","errno":0}' '"ns"'
bad "a number as path" '{"op":"lookup","path":7,"errno":0,"ns":1}' '"path" is not a string'
bad "a number as to" '{"op":"rename","path":"/x","to":5,"errno":0,"ns":1}' '"to" is not'
bad "a number as target" '{"op":"symlink","path":"/x","target":1,"errno":0,"ns":1}' \
	'"target" is not'
bad "a string as mode" '{"op":"mkdir","path":"/x","mode":"777","errno":0,"ns":1}' \
	'"mode" is not'
bad "a negative mode" '{"op":"mkdir","path":"/x","mode":-1,"errno":0,"ns":1}' '"mode" is not'
bad "a mode too large" '{"op":"mkdir","path":"/x","mode":4294967296,"errno":0,"ns":1}' \
	'"mode" is not a mode'
bad "a fraction as errno" '{"op":"lookup","path":"/x","errno":1.5,"ns":1}' '"errno" is not'
bad "a string as errno" '{"op":"lookup","path":"/x","errno":"ENOENT","ns":1}' '"errno" is not'
bad "an errno too large" '{"op":"lookup","path":"/x","errno":99999,"ns":1}' '"errno" is not'
bad "a negative ns" '{"op":"lookup","path":"/x","errno":0,"ns":-1}' '"ns" is not'
bad "a boolean as result" '{"op":"lookup","path":"/x","errno":0,"ns":1,"result":true}' \
	'"result" is not'
bad "odd hex" '{"op":"lookup","path_hex":"2f7","errno":0,"ns":1}' "hex"
bad "hex that is not" '{"op":"lookup","path_hex":"2fzz","errno":0,"ns":1}' "hex"
bad "a NUL in hex" '{"op":"unlink","path_hex":"2f00","errno":0,"ns":1}' "hex"
# format 2's members: what the reply showed
bad "format version 0" '{"v":0,"op":"lookup","path":"/x","errno":0,"ns":1}' '"v" is not'
bad "a newer format" '{"v":4,"op":"lookup","path":"/x","errno":0,"ns":1}' "newer format"
# format 3's trigger lines: skipped, but their v and rule id are checked
bad "a trigger line of format 2" '{"v":2,"trigger":1,"on":"getattr","path":"/x"}' \
	'a trigger line without "v" of 3'
bad "a trigger line of a newer format" '{"v":4,"trigger":1}' "newer format"
bad "a trigger that is no id" '{"v":3,"trigger":"1"}' '"trigger" is not'
bad "a trigger nested" '{"v":3,"trigger":{"id":1}}' "nested"
bad "a string as v" '{"v":"2","op":"lookup","path":"/x","errno":0,"ns":1}' '"v" is not'
bad "a kind that is none" '{"v":2,"op":"lookup","path":"/x","errno":0,"ns":1,"kind":"x"}' \
	'"kind" is not'
bad "a negative size" '{"v":2,"op":"lookup","path":"/x","errno":0,"ns":1,"size":-1}' \
	'"size" is not'
bad "a number as body" '{"v":2,"op":"readlink","path":"/x","errno":0,"ns":1,"body":1}' \
	'"body" is not'
bad "a NUL in a body's hex" \
	'{"v":2,"op":"readlink","path":"/x","errno":0,"ns":1,"body_hex":"6100"}' "hex"
for e in "f" "x:a" "f:a/" "f:a//d:b" "/f:a" "f:"; do
	bad "entries \"$e\"" \
		"{\"v\":2,\"op\":\"readdir\",\"path\":\"/\",\"errno\":0,\"ns\":1,\"entries\":\"$e\"}" \
		'"entries" is not'
done
bad "not JSON" '{"op":"lookup",' "not JSON"
bad "an empty line" '' "not a JSON object"
bad "an array" '["op"]' "not a JSON object"
finish
