#!/bin/sh
# The symlink bug lab (lab/, chainfs-lab): every experiment gives one outcome in each of
# LAB_RUNS runs (3) in each follow mode it applies to, and leaves nothing behind: the temp dir
# the runs are made in (TMPDIR, with files of its own) is the same before and after, a check
# that fails on an experiment that writes beside its own directory. Malformed experiments say
# FILE:LINE and run nothing; a command that hangs is stopped at the experiment's timeout,
# reported error, and what it mounted and held is released. The installed runner runs too.
# check: once: chainfs-lab mounts with chainfs's own transport; its --transport is its own
# check: long: every experiment three times
. "$(dirname "$0")/lib.sh"

LABRUN=$ROOT/lab/chainfs-lab
# the programs Debian installs, as make lab runs them
DEBPATH=/usr/sbin:/usr/bin:/sbin:/bin
export BUILD
P=$T/tmp # the runs' parent temp dir, holding files of its own
mkdir -p "$P/d"
echo keep >"$P/keep"
echo mine >"$P/d/mine"
chmod 600 "$P/d/mine"
ln -s keep "$P/link"

# snap DIR: every name below DIR with its kind, mode, owner, size or link body, and each
# file's content (a directory's size and times change with what is made and removed in it)
snap() {
	(cd "$1" && find . ! -type d -printf '%p %y %m %U:%G %s %l\n' &&
		find . -type d -printf '%p d %m %U:%G\n' && find . -type f -exec md5sum {} +) |
		LC_ALL=C sort
}
# lab ARGS: chainfs-lab with the parent temp dir $P, the report on $T/out, messages $T/err
lab() {
	TMPDIR=$P PATH=$DEBPATH timeout 600 "$LABRUN" "$@" >"$T/out" 2>"$T/err"
}
no_mounts_below_t() { ! grep -q " $T/" /proc/mounts; }

# --- every experiment, LAB_RUNS times: one outcome each, nothing left -----------------------
snap "$P" >"$T/before"
lab --runs "${LAB_RUNS:-3}" --json
rc=$?
check "every experiment gave one outcome in all its runs (exit $rc)" test $rc -eq 0
/usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
bad = [e for e in r["experiments"] if e["agree"] != r["runs"] or e["outcome"] == "error"]
for e in bad:
    print("  %s (%s): %s" % (e["experiment"], e["mode"], e["counts"]), file=sys.stderr)
print(len(r["experiments"]))
sys.exit(1 if bad or not r["experiments"] else 0)' "$T/out" >"$T/rows"
check "... in the JSON report, each row ($(cat "$T/rows") rows)" test $? -eq 0
check "... progress went to stderr" grep -q "run 1/${LAB_RUNS:-3}" "$T/err"
snap "$P" >"$T/after"
same_output "the parent temp dir before and after" "$T/before" "$T/after"
check "no mount left" no_mounts_below_t

# --- the snapshot sees an experiment that writes beside its own directory -------------------
cat >"$T/leak.sh" <<'EOF'
. "$LAB_LIB"
program true
spec 'dir /w'
run 'echo leaked >"$LAB/../../leaked"'
outcome works true
EOF
snap "$P" >"$T/before"
lab --runs 1 "$T/leak.sh"
snap "$P" >"$T/after"
check "a leaking experiment changes the snapshot" not cmp -s "$T/before" "$T/after"
rm -f "$P/leaked"

# --- a malformed experiment: FILE:LINE, and nothing runs ------------------------------------
# bad NAME LINE WHY BODY: the experiment BODY (after the lib line and a run that would leave
# $T/ran) is refused with "FILE:LINE: WHY", status 2, and its command never runs
bad() {
	f=$T/$1.sh
	{
		echo '. "$LAB_LIB"'
		echo "run 'touch $T/ran'"
		printf '%s\n' "$4"
	} >"$f"
	rm -f "$T/ran"
	lab --runs 2 "$f"
	rc=$?
	check "$1: status 2 ($rc)" test $rc -eq 2
	check "$1: $f:$2: $3" grep -qF "$f:$2: $3" "$T/err"
	check "$1: nothing ran" test ! -e "$T/ran"
	check "$1: the row says error" grep -q "| $1 | .* | error | 0/2" "$T/out"
}
ok="program true
outcome works true"
bad syntax 5 "syntax error" "$ok
if then"
bad typo 3 "rul: not a declaration" "rul op=getattr path=/x errno=EIO
$ok"
bad word 3 "rule: unknown word 'frob=1'" "rule op=getattr path=/x comm=cat frob=1 change=unlink /x
$ok"
bad nocomm 3 "rule: a change rule needs comm=" "rule op=getattr path=/x change=unlink /x
$ok"
bad op 4 "op: unknown op" "spec 'file /x'
rule op=getattrr path=/x errno=EIO
$ok"
bad spec 4 "unknown keyword bogus" "spec 'dir /w'
spec 'bogus /x'
$ok"
bad outcome 4 "outcome: 'maybe'" "program true
outcome maybe true"
bad mode 3 "modes: unknown follow mode 'fast'" "modes kernel fast
$ok"

# --- a command that hangs: stopped at the experiment's timeout, error, all released --------
cat >"$T/hang.sh" <<'EOF'
. "$LAB_LIB"
program cat
timeout 2
spec 'file /w/f "f\n"'
rule op=getattr path=/w/f comm=cat hold
run 'cat "$MNT/w/f"'
outcome works true
EOF
snap "$P" >"$T/before"
start=$(date +%s)
lab --runs 2 "$T/hang.sh"
rc=$?
took=$(($(date +%s) - start))
check "a hang: status 1 ($rc)" test $rc -eq 1
check "... reported error in both runs" grep -q "| hang | .* | error | 2/2 |" "$T/out"
check "... saying why" grep -q "stopped after 2 s" "$T/err"
check "... stopped at the timeout ($took s for 2 runs)" test "$took" -lt 30
check "... no mount left" no_mounts_below_t
check "... no process left" not pgrep -f "$P/chainfs-lab" >/dev/null
snap "$P" >"$T/after"
same_output "... the parent temp dir" "$T/before" "$T/after"

# --- options, --list, and the runner make install installs ----------------------------------
lab --runs 0
check "--runs 0: status 2" test $? -eq 2
lab --mode fast
check "--mode fast: status 2" test $? -eq 2
lab nosuchexperiment
check "an unknown experiment: status 2" test $? -eq 2
check "... named" grep -q "nosuchexperiment: no such experiment" "$T/err"
lab --list
check "--list names the experiments with what each shows" grep -q "^file-cp-a  *cp -a:" "$T/out"
check "make install into a staging dir" sh -c "make -s -C '$ROOT' BUILD='$BUILD' install DESTDIR='$T/inst' PREFIX=/usr >'$T/inst.log' 2>&1"
check "installed: chainfs-lab" test -x "$T/inst/usr/bin/chainfs-lab"
check "installed: the lab" test -r "$T/inst/usr/share/chainfs/lab/lib.sh" -a -r "$T/inst/usr/share/chainfs/lab/file-cp-a.sh"
check "installed: its manual" test -r "$T/inst/usr/share/man/man1/chainfs-lab.1"
TMPDIR=$P PATH=$DEBPATH timeout 120 "$T/inst/usr/bin/chainfs-lab" --runs 1 parent-mkdir-p >"$T/out" 2>"$T/err"
check "the installed chainfs-lab runs an experiment" grep -q "| parent-mkdir-p | .* | kernel | reproduced | 1/1 |" "$T/out"
finish
