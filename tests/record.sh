#!/bin/sh
# Record and replay (issue 14): -o record writes one valid JSON line per request; replaying it
# on a fresh mount of the same tree in the same mode reproduces every result, in another mode
# it reports the differences it must (kernel-mode readlinks are EINVAL in server mode; a
# collapse-mode ELOOP is a success in kernel mode); `record start/stop` through the control
# socket; the file is made new and 0600, never through a planted symlink (one the kernel would
# follow), and replaced only when asked; a ring too small for any line counts
# every one dropped; --run --stats-out. The recording daemon runs the ASan build: its writer
# thread must be joined and the file flushed on stop and on unmount, with no leak.
. "$(dirname "$0")/lib.sh"

ASAN_BIN=$ROOT/build-asan/chainfs
[ -x "$ASAN_BIN" ] || make -s -C "$ROOT" BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" build-asan/chainfs >&2
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=97
M=$T/rec
SOCK=$T/rec.sock
REC=$T/rec.jsonl
CHAINFS=$ASAN_BIN mount_cfs "$M" -o "record=$REC,ctl=$SOCK" || { fail mount; finish; exit 1; }
DPID=$("$FUSE_MOUNT" --pid "$M")

# replay FILE MNT: chainfsctl replay's output; its status in $rc
replay() {
	out=$(timeout 120 "$CTL" replay "$1" "$2")
	rc=$?
}

# --- a scripted workload, recorded ------------------------------------------------------------
(
	cd "$M" || exit 1
	stat chains/5 >/dev/null
	readlink chains/5 >/dev/null
	cat README chains/target >/dev/null
	ls -l >/dev/null
	find nest dangling >/dev/null
	mkdir scratch
	ln -s ../README scratch/l
	echo x >scratch/f
	mv scratch/f scratch/g
	rm -r scratch
)
expect ENOENT stat "$M/no-such-name"
expect ELOOP stat "$M/chains/41"
out=$(ctl --json stats)
check "stats shows the recording" has "$out" '"active":true'
check "stats names the file" has "$out" "\"file\":\"$REC\""
out=$(ctl --json record stop)
check "record stop" has "$out" '"active":false'
check "nothing dropped" has "$out" '"dropped":0'
check "record stop twice is an error" not ctl record stop 2>/dev/null

# every line valid JSON with every field; the lookup that failed and the chain's readlinks there
check "valid JSON lines with the fields" python3 - "$REC" <<'PY'
import json, sys
need = {"t_ns", "op", "nodeid", "pid", "result", "errno", "ns"}
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) > 50, len(lines)
for l in lines:
    assert need <= l.keys() and ("path" in l or "path_hex" in l), l
    assert l["result"] in (0, None) or isinstance(l["result"], str), l
assert all(a["t_ns"] <= b["t_ns"] for a, b in zip(lines, lines[1:])), "time goes back"
ops = {(l["op"], l.get("path"), l["result"]) for l in lines}
for want in [("lookup", "/no-such-name", "ENOENT"), ("readlink", "/chains/5", 0),
             ("readlink", "/chains/41", 0), ("mkdir", "/scratch", 0),
             ("symlink", "/scratch/l", 0), ("rename", "/scratch/f", 0),
             ("rmdir", "/scratch", 0)]:
    assert want in ops, want
assert any(l["op"] == "rename" and l.get("to") == "/scratch/g" for l in lines)
assert any(l["op"] == "symlink" and l.get("target") == "../README" for l in lines)
# format 3: every line says so; opcodes chainfs does not serve go by the kernel's name
assert all(l["v"] == 3 for l in lines)
assert not [l for l in lines if l["op"].startswith("opcode_")], "an unnamed opcode"
assert any(l["op"] == "statx" and l["errno"] is None for l in lines), "stat's statx"
PY

# --- replays ----------------------------------------------------------------------------------
mount_cfs "$T/kernel" || fail "mount kernel"
replay "$REC" "$T/kernel"
check "same mode: no result differs (exit 0)" test "$rc" -eq 0
check "same mode: the summary says so" has "$out" "0 results differ"
check "the table has both latencies" has "$out" "recorded_p50_ns"
check "lookups were replayed" sh -c "printf '%s\n' \"\$1\" | awk '\$1 == \"lookup\" && \$2 > 10 && \$3 == 0 { ok = 1 } END { exit !ok }'" - "$out"
mount_cfs "$T/server" -o follow=server || fail "mount server"
replay "$REC" "$T/server"
check "server mode: results differ (exit 1)" test "$rc" -eq 1
check "server mode: a link's readlink is EINVAL there" has "$out" \
	"readlink /chains/5: recorded 0, replayed EINVAL"

# collapse mode answers ELOOP itself for a chain past its limits; the kernel's 40 let it pass
mount_cfs "$T/coll" -o "follow=collapse,record=$T/coll.jsonl" || fail "mount collapse"
expect ELOOP readlink "$T/coll/chains/41"
expect ok readlink "$T/coll/chains/40"
unmount_cfs "$T/coll"
mount_cfs "$T/kernel2" || fail "mount kernel2"
replay "$T/coll.jsonl" "$T/kernel2"
check "collapse vs kernel: differ (exit 1)" test "$rc" -eq 1
check "collapse vs kernel: ELOOP vs success" has "$out" \
	"readlink /chains/41: recorded ELOOP, replayed 0"
mount_cfs "$T/coll2" -o follow=collapse || fail "mount collapse again"
replay "$T/coll.jsonl" "$T/coll2"
check "collapse vs collapse: the same results" test "$rc" -eq 0
replay "$T/none.jsonl" "$T/coll2" 2>/dev/null
check "replay of a missing file: exit 2" test "$rc" -eq 2
echo '{"not":"a record"}' >"$T/bad.jsonl"
replay "$T/bad.jsonl" "$T/coll2" 2>/dev/null
check "replay of a non-recording: exit 2" test "$rc" -eq 2

# --- record start/stop through the control socket ----------------------------------------------
out=$(cd "$T" && ctl record start second.jsonl)
check "record start (a relative path is the caller's)" has "$out" "$T/second.jsonl"
check "a second start is refused" not ctl record start "$T/third.jsonl" 2>/dev/null
check "the raw socket takes only absolute paths" has \
	"$(printf 'record start rel.jsonl\n' | timeout 30 socat -t 30 - "UNIX-CONNECT:$SOCK")" '"ok":false'
stat "$M/chains/40" >/dev/null
ctl drop >/dev/null
stat "$M/chains/5" >/dev/null
ctl record stop >/dev/null
check "the second recording holds the stat" grep -q '"path":"/chains/5"' "$T/second.jsonl"
check "a file that cannot be made is an error" not ctl record start /nonexistent/dir/f 2>/dev/null
out=$(ctl record)
check "record without arguments: the last one" has "$out" "second.jsonl"

# --- what the caller was shown: a link's body, a listing, a size --------------------------------
# Recorded on $M, replayed onto a mount of the same tree, then onto that mount changed one way
# at a time: each change is a difference, named; put back, none.
seen_tree() { mkdir "$1/w" && echo abc >"$1/w/f" && ln -s f "$1/w/l"; }
seen_tree "$M"
ctl drop >/dev/null
ctl record start "$T/seen.jsonl" >/dev/null
readlink "$M/w/l" >/dev/null
stat "$M/w/f" >/dev/null
ls "$M/w" >/dev/null
ctl record stop >/dev/null
check "the recording holds the body, the size and the listing" python3 - "$T/seen.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert {"op": "readlink", "path": "/w/l", "body": "f"}.items() <= \
    next(l for l in lines if l["op"] == "readlink").items()
assert any(l["op"] == "lookup" and l["path"] == "/w/f" and l["kind"] == "f" and l["size"] == 4
           for l in lines)
chunks = [l for l in lines if l["op"] in ("readdir", "readdirplus") and l["path"] == "/w"]
assert chunks[0]["offset"] == 0 and chunks[-1]["entries"] == "", chunks
assert sorted("/".join(c["entries"] for c in chunks if c["entries"]).split("/")) == ["f:f", "l:l"]
PY
S2=$T/seen
mount_cfs "$S2" || fail "mount seen"
seen_tree "$S2"
replay "$T/seen.jsonl" "$S2"
check "the same tree: no difference (exit 0)" test "$rc" -eq 0
ln -sfn g "$S2/w/l"
replay "$T/seen.jsonl" "$S2"
check "another link body: a difference (exit 1)" test "$rc" -eq 1
check "... naming the body" has "$out" 'readlink /w/l: body: recorded "f", replayed "g"'
replay_errno_only() {
	out=$(timeout 120 "$CTL" replay --errno-only "$1" "$2")
	rc=$?
}
replay_errno_only "$T/seen.jsonl" "$S2"
check "... which --errno-only does not compare (exit 0)" test "$rc" -eq 0
ln -sfn f "$S2/w/l"
echo abcdef >"$S2/w/f"
replay "$T/seen.jsonl" "$S2"
check "another size: a difference (exit 1)" test "$rc" -eq 1
check "... naming the size" has "$out" "lookup /w/f: size: recorded 4, replayed 7"
echo abc >"$S2/w/f"
touch "$S2/w/extra"
replay "$T/seen.jsonl" "$S2"
check "one more name listed: a difference (exit 1)" test "$rc" -eq 1
check "... as extra" has "$out" '/w: entry "extra": recorded none, replayed file'
rm "$S2/w/extra"
rm "$S2/w/f" && mkdir "$S2/w/f"
replay "$T/seen.jsonl" "$S2"
check "an entry of another kind: a difference (exit 1)" test "$rc" -eq 1
check "... in the listing" has "$out" '/w: entry "f": recorded file, replayed directory'
check "... and in the lookup" has "$out" "lookup /w/f: kind: recorded file, replayed directory"
rmdir "$S2/w/f" && echo abc >"$S2/w/f"
replay "$T/seen.jsonl" "$S2"
check "put back: no difference again" test "$rc" -eq 0
# a recording of format 1 (no "v", errnos only) still replays: nothing else to compare
python3 - "$T/seen.jsonl" >"$T/seen1.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    l = json.loads(line)
    for k in ("v", "kind", "size", "offset", "body", "entries"):
        l.pop(k, None)
    print(json.dumps(l, separators=(",", ":")))
PY
ln -sfn g "$S2/w/l"
replay "$T/seen1.jsonl" "$S2"
check "format 1 replays, its errnos the same (exit 0)" test "$rc" -eq 0
check "... readlink replayed" sh -c "printf '%s\n' \"\$1\" | awk '\$1 == \"readlink\" && \$2 == 1 { ok = 1 } END { exit !ok }'" - "$out"
sed 's/^{"v":3,/{"v":4,/' "$T/seen.jsonl" >"$T/seen4.jsonl"
out=$(timeout 120 "$CTL" replay "$T/seen4.jsonl" "$S2" 2>&1)
check "a newer format is refused (exit 2)" test $? -eq 2
check "... saying so" has "$out" "seen4.jsonl:1: recorded in a newer format"
unmount_cfs "$S2"

# --- a fault rule's trigger: a line of its own where the change happened; replay skips it -----
M3=$T/trig
SOCK_WAS=$SOCK
SOCK=$T/trig.sock
mount_cfs "$M3" -o "ctl=$SOCK" || fail "mount trig"
mkdir -p "$M3/t/a" "$M3/t/p"
echo orig >"$M3/t/a/f"
echo planted >"$M3/t/p/f"
ctl record start "$T/trig.jsonl" >/dev/null
id1=$(ctl --json fault add op=getattr path=/t/a/f when=after change=replace /t/a /t/p |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
id2=$(ctl --json fault add op=lookup path=/t/nope when=before change=rmdir /t |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
stat "$M3/t/a/f" >/dev/null
check "after the trigger the file is the planted one" test "$(cat "$M3/t/a/f")" = planted
expect ENOENT stat "$M3/t/nope"
ctl record stop >/dev/null
check "each trigger: its rule, request and change, where it happened" \
	python3 - "$T/trig.jsonl" "$id1" "$id2" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
trig = [i for i, l in enumerate(lines) if "trigger" in l]
assert len(trig) == 2, trig
a, b = (lines[i] for i in trig)
for t in (a, b):
    assert t["v"] == 3 and "op" not in t and t["pid"] > 0, t
assert a["trigger"] == int(sys.argv[2]) and a["on"] == "getattr" and a["path"] == "/t/a/f", a
assert a["when"] == "after" and a["change"] == "replace /t/a /t/p", a
assert a["result"] == "applied" and "error" not in a, a
# after: the getattr's own line (answered from the old tree) comes first
prev = lines[trig[0] - 1]
assert prev["op"] == "getattr" and prev["path"] == "/t/a/f" and prev["kind"] == "f", prev
assert b["trigger"] == int(sys.argv[3]) and b["on"] == "lookup" and b["path"] == "/t/nope", b
assert b["when"] == "before" and b["result"] == "failed", b
assert "rmdir /t" in b["error"] and "Directory not empty" in b["error"], b
# before: the lookup's own line comes after it
nxt = lines[trig[1] + 1]
assert nxt["op"] == "lookup" and nxt["path"] == "/t/nope" and nxt["result"] == "ENOENT", nxt
PY
ctl fault clear >/dev/null
unmount_cfs "$M3"
SOCK=$SOCK_WAS
mount_cfs "$M3" || fail "mount trig again"
mkdir -p "$M3/t/a" "$M3/t/p"
echo orig >"$M3/t/a/f"
echo planted >"$M3/t/p/f"
replay "$T/trig.jsonl" "$M3"
check "replay skips the triggers and replays the rest (exit $rc, not 2)" test "$rc" -ne 2
check "... saying how many" has "$out" "2 fault rule triggers skipped"
check "... and replaying the requests" sh -c "printf '%s\n' \"\$1\" | awk '\$1 == \"getattr\" && \$2 >= 1 { ok = 1 } END { exit !ok }'" - "$out"
unmount_cfs "$M3"

# --- the file: made new and 0600, never through a planted link ---------------------------------
# fs.protected_symlinks lets root follow a link in a sticky world-writable directory when the
# directory's owner owns the link too: the directory is the other uid's, so only chainfs's
# own care stands between the planted link and its target, whatever the sysctl says
PUB=$T/pub
mkdir -m 1777 "$PUB"
chown 65534:65534 "$PUB"
printf 'root only\n' >"$T/victim"
chmod 600 "$T/victim"
victim() { stat -c '%s %a %i %Y' "$T/victim" && cat "$T/victim"; }
V=$(victim)
setpriv --reuid=65534 --regid=65534 --clear-groups ln -s "$T/victim" "$PUB/rec.jsonl"
check "the kernel lets root follow the planted link" test "$(cat "$PUB/rec.jsonl")" = "root only"
out=$(ctl record start "$PUB/rec.jsonl" 2>&1)
check "record start to a planted symlink fails" test $? -ne 0
check "... the name exists" has "$out" "rec.jsonl: exists"
out=$(ctl record replace "$PUB/rec.jsonl" 2>&1)
check "record replace to a planted symlink fails" test $? -ne 0
check "... a symlink is never followed" has "$out" "rec.jsonl: a symbolic link: never followed"
for opt in "" ,record_replace; do
	MOUNTS="$MOUNTS $T/planted$opt" # unmounted if it mounts after all
	mkdir -p "$T/planted$opt"
	CHAINFS_TIMEOUT=5 "$FUSE_MOUNT" -o "record=$PUB/rec.jsonl$opt" "$T/planted$opt" \
		2>"$T/planted.err"
	check "-o record=SYMLINK$opt fails the mount" test $? -ne 0
	check "... saying why" grep -Eq "rec.jsonl: (exists|a symbolic link)" "$T/planted.err"
done
check "the symlink's target is untouched" test "$(victim)" = "$V"
check "no recording runs" has "$(ctl --json record)" '"active":false'
check "-o record_replace alone is refused" not "$CHAINFS" -o record_replace "$T/planted" 2>/dev/null

ctl record start "$T/mine.jsonl" >/dev/null
ctl drop >/dev/null
stat "$M/chains/11" >/dev/null
ctl record stop >/dev/null
check "the first recording holds its stat" grep -q '"path":"/chains/11"' "$T/mine.jsonl"
check "a recording is made 0600" test "$(stat -c %a "$T/mine.jsonl")" = 600
out=$(ctl record start "$T/mine.jsonl" 2>&1)
check "record start on an existing file fails" test $? -ne 0
check "... saying how to replace it" has "$out" "record replace FILE"
chmod 644 "$T/mine.jsonl"
check "record replace takes the caller's own file" ctl record replace "$T/mine.jsonl" >/dev/null
ctl drop >/dev/null
stat "$M/chains/12" >/dev/null
ctl record stop >/dev/null
check "... emptied first" not grep -q '"path":"/chains/11"' "$T/mine.jsonl"
check "... then recorded" grep -q '"path":"/chains/12"' "$T/mine.jsonl"
check "... and made 0600" test "$(stat -c %a "$T/mine.jsonl")" = 600

# --- a ring smaller than any line: every line dropped and counted -----------------------------
CHAINFS_RECORD_RING=64 mount_cfs "$T/tiny" -o "record=$T/tiny.jsonl,ctl=$T/tiny.sock" ||
	fail "mount tiny"
ls -R "$T/tiny/nest" >/dev/null
check "dropped lines are counted" python3 -c '
import json, subprocess, sys
s = json.loads(subprocess.check_output([sys.argv[1], "-s", sys.argv[2], "--json", "stats"]))
r = s["record"]
assert r["dropped"] > 5 and r["lines"] == 0, r' "$CTL" "$T/tiny.sock"
unmount_cfs "$T/tiny"
check "nothing was written" test ! -s "$T/tiny.jsonl"

# --- -o record with a path that cannot be written: no mount --------------------------------
mkdir -p "$T/badrec"
CHAINFS_TIMEOUT=5 "$FUSE_MOUNT" -o record=/nonexistent/dir/f "$T/badrec" 2>"$T/badrec.err"
check "-o record to a missing dir fails the mount" test $? -ne 0
check "... saying why" grep -q "record=/nonexistent/dir/f" "$T/badrec.err"

# --- fuse-mount.sh --run --stats-out ------------------------------------------------------------
TMPDIR=$T "$FUSE_MOUNT" --run 'stat "$MNT/chains/5" >/dev/null; exit 3' \
	--stats-out "$T/delta.json" -o follow=server
check "--run keeps the command's status" test $? -eq 3
check "the delta counts what the command caused" python3 - "$T/delta.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
delta, before, after = d["delta"], d["before"], d["after"]
assert delta["requests"]["lookup"] >= 2, delta["requests"]
assert delta["requests"]["lookup"] == after["requests"]["lookup"] - before["requests"].get("lookup", 0)
assert delta["mode"] == "server"
assert delta["tree"]["nodes"] == after["tree"]["nodes"] > 0  # a level: after's
# a latency's delta: the interval's own counts, quantiles from them, no maximum
lk, b = delta["latency"]["lookup"], before["latency"].get("lookup", {"count": 0})
assert lk["count"] == after["latency"]["lookup"]["count"] - b["count"], lk
assert sum(lk["log2_buckets"]) == lk["count"], lk
top = max(i for i, n in enumerate(lk["log2_buckets"]) if n)
assert 0 < lk["p50_ns"] <= lk["p99_ns"] == (1 << top) - 1, lk
assert lk["max_ns"] is None, lk
PY

# --- a recording stopped by the unmount, under ASan: flushed, joined, no leak ---------------
ctl record start "$T/last.jsonl" >/dev/null
stat "$M/chains/target" >/dev/null
ctl unmount >/dev/null
i=0
while kill -0 "$DPID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "the daemon exited" sh -c "! kill -0 $DPID 2>/dev/null"
check "the unmount flushed the recording" grep -q '"path":"/chains/target"' "$T/last.jsonl"
check "no sanitizer report" not_grep "Sanitizer" "$M.log"
finish
