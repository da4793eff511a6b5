#!/bin/sh
# make check's counting (tools/check-summary.sh) and its runner (tools/check.sh) on made-up
# suites: a passing set and a failing one. The total "N passed, N failed" must be the last
# line, count every suite by its own closing line (Check's, tests/lib.sh's, the fuzz
# runner's) or, without one, by its exit status, and the exit status must say whether
# anything failed. Needs no mount.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SUMMARY=$ROOT/tools/check-summary.sh
T=$(mktemp -d /tmp/cfs-summary.XXXXXX)
trap 'rm -rf "$T"' EXIT
# make check runs this with its own lists in the environment: the made-up runs below name
# what they run, and nothing else may leak in (the real benchmarks, say)
unset UNIT_TESTS UNIT_SCRIPTS ASAN_UNIT_TESTS SHELL_TESTS FUZZ_TARGETS BENCH_SCRIPTS CHECK_JOBS
passed=0
failed=0

ok() {
	passed=$((passed + 1))
}
ko() {
	failed=$((failed + 1))
	echo "FAIL: $*" >&2
}
# expect_eq WHAT WANT GOT
expect_eq() {
	if [ "$2" = "$3" ]; then ok; else ko "$1: want '$2', got '$3'"; fi
}

# suite SET NAME STATUS LOG-TEXT: a suite that ran, as tools/check.sh lists it
suite() {
	mkdir -p "$T/$1"
	log=$T/$1/$(printf '%s' "$2" | tr / -).log
	printf '%b' "$4" >"$log"
	printf '%s\t%s\t%s\n' "$2" "$3" "$log" >>"$T/$1/suites"
}

# --- one suite at a time -------------------------------------------------------------------
count() {
	printf '%b' "$2" >"$T/one.log"
	sh "$SUMMARY" count "$T/one.log" "$1"
}
expect_eq "Check, all pass" "141 0 0" \
	"$(count 0 'Running suite(s): tree\n100%: Checks: 141, Failures: 0, Errors: 0\n')"
expect_eq "Check, failures and errors" "7 3 0" \
	"$(count 1 '70%: Checks: 10, Failures: 2, Errors: 1\n')"
expect_eq "two Check runners in one suite add up" "9 1 0" \
	"$(count 1 '100%: Checks: 5, Failures: 0, Errors: 0\n80%: Checks: 5, Failures: 1, Errors: 0\n')"
expect_eq "lib.sh's closing line" "12 2 0" "$(count 1 'FAIL: x\nmount_x: 12 passed, 2 failed\n')"
expect_eq "the fuzz runner's line; interrupted counts as failed" "2 2 0" \
	"$(count 2 'fuzz: 2 passed, 0 failed, 2 interrupted\n')"
expect_eq "no count line, exit 0: one passed" "1 0 0" "$(count 0 'walk: wrote x.csv\n')"
expect_eq "no count line, exit 1: one failed" "0 1 0" "$(count 1 'walk: bindfs is missing\n')"
expect_eq "crashed before its closing line: one failed" "0 1 0" "$(count 139 'half a log\n')"
expect_eq "says 0 failed but exited non-zero: one failed" "5 1 0" \
	"$(count 1 'mount_y: 5 passed, 0 failed\n')"
expect_eq "no log at all, exit 127" "0 1 0" "$(sh "$SUMMARY" count "$T/missing.log" 127)"

expect_eq "skipped, exit 0: neither passed nor failed" "0 0 1" \
	"$(count 0 'mount_u: skipped: this kernel has no FUSE over io_uring\n')"
expect_eq "skipped yet exited non-zero: one failed" "0 1 0" \
	"$(count 1 'mount_u: skipped: no cgroup\n')"

# --- the total ---------------------------------------------------------------------------
suite pass unit/test_a 0 'Running suite(s): a\n100%: Checks: 20, Failures: 0, Errors: 0\n'
suite pass mount/m 0 'm: 7 passed, 0 failed\n'
suite pass fuzz 0 '== fuzz spec: 60s\nfuzz: 4 passed, 0 failed\n'
suite pass bench/walk 0 'walk: 9.35x (NOT met)\nexit status 1\n'
out=$(sh "$SUMMARY" total "$T/pass/suites")
st=$?
expect_eq "passing set: exit status" 0 "$st"
expect_eq "passing set: the output is the total alone" "32 passed, 0 failed" "$out"

suite fail unit/test_a 0 '100%: Checks: 20, Failures: 0, Errors: 0\n'
suite fail unit/test_b 1 '90%: Checks: 10, Failures: 1, Errors: 0\n'
suite fail mount/m 1 'FAIL: readlink\nm: 6 passed, 1 failed\n'
suite fail mount/crash 139 'Segmentation fault\n'
suite fail fuzz 0 'fuzz: 4 passed, 0 failed\n'
suite fail bench/walk 1 'walk: bindfs is missing\n'
suite fail mount/skips 0 'skips: skipped: no cgroup v2 cpu controller\n'
out=$(sh "$SUMMARY" total "$T/fail/suites")
st=$?
expect_eq "failing set: exit status" 1 "$st"
expect_eq "failing set: the last line is the total, skips counted apart before it" \
	"1 skipped: neither passed nor failed|39 passed, 4 failed" \
	"$(printf '%s\n' "$out" | tail -n 2 | paste -sd'|')"
expect_eq "failing set: each failed suite named before it" \
	"unit/test_b mount/m mount/crash bench/walk" \
	"$(printf '%s\n' "$out" | sed -n 's/^FAILED \([^:]*\):.*/\1/p' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "failing set: a skipped suite named with its reason" \
	"SKIPPED mount/skips: no cgroup v2 cpu controller" "$(printf '%s\n' "$out" | grep '^SKIPPED')"
: >"$T/empty"
sh "$SUMMARY" total "$T/empty" >/dev/null
expect_eq "nothing ran: a failure" 1 "$?"

# --- the runner: every suite runs, the total is its last line ------------------------------
# Made-up Check suites and a stand-in for make in a scratch BUILD: the format check and the
# build step pass and count as one test each.
mk_suite() { # NAME STATUS LINE
	printf '#!/bin/sh\necho "%s"\nexit %s\n' "$3" "$2" >"$T/$1"
	chmod +x "$T/$1"
}
mk_suite good1 0 "100%: Checks: 3, Failures: 0, Errors: 0"
mk_suite bad 1 "66%: Checks: 3, Failures: 1, Errors: 0"
mk_suite good2 0 "100%: Checks: 4, Failures: 0, Errors: 0"
run_check() { # UNIT_TESTS
	(cd "$ROOT" && MAKE=true BUILD="$T/build" UNIT_TESTS="$1" UNIT_SCRIPTS= V= \
		bash tools/check.sh unit)
}
out=$(run_check "$T/good1 $T/good2")
st=$?
expect_eq "runner, all pass: exit status" 0 "$st"
expect_eq "runner, all pass: last line" "9 passed, 0 failed" "$(printf '%s\n' "$out" | tail -n 1)"
out=$(run_check "$T/good1 $T/bad $T/good2")
st=$?
expect_eq "runner, one fails: exit status" 1 "$st"
expect_eq "runner, one fails: last line counts the suite after it too" "11 passed, 1 failed" \
	"$(printf '%s\n' "$out" | tail -n 1)"
expect_eq "runner: the failed suite's line names its log" "1" \
	"$(printf '%s\n' "$out" | grep -c "^unit/bad .*FAIL .*log $T/build/check/unit-bad.log$")"
expect_eq "runner: the suite's output is in its log, not on the terminal" \
	"66%: Checks: 3, Failures: 1, Errors: 0|0" \
	"$(cat "$T/build/check/unit-bad.log")|$(printf '%s\n' "$out" | grep -c '^66%')"

# --- side by side, alone, once ----------------------------------------------------------------
# Made-up mount scripts, each writing when it ran ("NAME.TRANSPORT START END", ns) to $T/spans. Two plain
# ones meet (each waits, with a timeout, for the other's start file): they only pass when run
# side by side. The "alone" ones must overlap nothing; the "once" one is left out over the ring.
S=$T/scripts
mkdir -p "$S"
mk_script() { # NAME MARK PEER: a script that ran, waiting for PEER's start if PEER is set
	{
		echo "$2"
		echo "s=\$(date +%s%N); : >$T/started.$1; : >$T/started.$1.\${CHAINFS_TRANSPORT:-dev}"
		echo "echo \"\$(cat \"\$CHECK_URING_PARAM\" 2>/dev/null)\" >$T/param.$1"
		if [ -n "$3" ]; then
			echo "i=0; while [ ! -e $T/started.$3 ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done"
			echo "[ -e $T/started.$3 ] || { echo '$1: no $3 beside it'; echo '$1: 0 passed, 1 failed'; exit 1; }"
		fi
		echo "echo \"$1.\${CHAINFS_TRANSPORT:-dev} \$s \$(date +%s%N)\" >>$T/spans"
		echo "echo '$1: 1 passed, 0 failed'"
	} >"$S/$1.sh"
}
mk_script x "" y
mk_script y "" x
mk_script a1 "# check: alone: made up" ""
mk_script a2 "# check: alone: made up" ""
mk_script o "# check: once: made up" ""
mk_script l "# check: long: made up" ""
echo N >"$T/param"
run_stage() { # STAGE
	(cd "$ROOT" && MAKE=true BUILD="$T/build2" SHELL_TESTS="$S/a1.sh $S/x.sh $S/a2.sh $S/y.sh $S/o.sh" \
		CHECK_URING_PARAM="$T/param" V= bash tools/check.sh "$1")
}
out=$(run_stage integration)
expect_eq "side by side: all pass" "5 passed, 0 failed" "$(printf '%s\n' "$out" | tail -n 1)"
# overlaps NAME [REGEX]: how many spans (those whose name matches REGEX) overlap the span of NAME
overlaps() {
	awk -v n="$1" -v re="${2:-.}" '{ s[$1] = $2; e[$1] = $3 } END { c = 0
		for (k in s) if (k != n && k ~ re && s[k] < e[n] && s[n] < e[k]) c++
		print c }' "$T/spans"
}
expect_eq "alone: a1 beside nothing" 0 "$(overlaps a1.dev)"
expect_eq "alone: a2 beside nothing" 0 "$(overlaps a2.dev)"
rm -f "$T/spans" "$T"/started.*
out=$(run_stage uring)
expect_eq "uring: all but the once one" "4 passed, 0 failed" "$(printf '%s\n' "$out" | tail -n 1)"
expect_eq "uring: the once one did not run" 0 "$(grep -c '^o\.' "$T/spans")"
expect_eq "uring: the module parameter is on for the stage" "Y" "$(cat "$T/param.x")"
expect_eq "uring: and put back after" "N" "$(cat "$T/param")"
rm -f "$T/spans" "$T"/started.*
out=$(cd "$ROOT" && MAKE=true BUILD="$T/build2" \
	SHELL_TESTS="$S/a1.sh $S/x.sh $S/a2.sh $S/y.sh $S/o.sh $S/l.sh" CHECK_URING_PARAM="$T/param" \
	V= bash tools/check.sh mounts)
expect_eq "mounts: both transports in one pool, but the once one over the ring" \
	"11 passed, 0 failed" "$(printf '%s\n' "$out" | tail -n 1)"
expect_eq "mounts: the alone ones first" a1.dev \
	"$(sort -k2 -n "$T/spans" | head -n 1 | cut -d' ' -f1)"
# both runs of the long one start together (two at a time), in either order: the check is that
# they are the first two of the rest, not which of them the clock saw first
expect_eq "mounts: then the long one, listed last, both its runs first of the rest" \
	"l.dev l.uring" \
	"$(grep -v '^a' "$T/spans" | sort -k2 -n | head -n 2 | cut -d' ' -f1 | sort | paste -sd' ')"
expect_eq "mounts: the once one ran once" 1 "$(grep -c '^o\.' "$T/spans")"
for a in a1.dev a2.dev a1.uring a2.uring; do
	expect_eq "mounts: $a beside nothing" 0 "$(overlaps $a)"
done
expect_eq "mounts: x ran over both transports" \
	"x.dev x.uring" "$(sed -n 's/^\(x\.[a-z]*\) .*/\1/p' "$T/spans" | sort | paste -sd' ')"
expect_eq "mounts: the module parameter is on for the pool" "Y" "$(cat "$T/param.y")"
expect_eq "mounts: and put back after" "N" "$(cat "$T/param")"
# the whole: a made-up asan suite (the side job) that lasts until both runs of a plain script
# have started; that script and an alone one wait for the side job's start (they pass only
# beside it); the alone one runs first, so the side job meets both its runs; a quiet script
# must meet nothing, the side job included.
rm -f "$T/spans" "$T"/started.*
mk_script q "# check: quiet: made up" ""
mk_script p "" side
mk_script a3 "# check: alone: made up" side
printf '%s\n' '#!/bin/sh' "s=\$(date +%s%N); : >$T/started.side" \
	"i=0; while { [ ! -e $T/started.p.dev ] || [ ! -e $T/started.p.uring ]; } && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done" \
	"echo \"side.asan \$s \$(date +%s%N)\" >>$T/spans" \
	'echo "100%: Checks: 1, Failures: 0, Errors: 0"' >"$T/side"
chmod +x "$T/side"
out=$(cd "$ROOT" && MAKE=true BUILD="$T/build4" SHELL_TESTS="$S/p.sh $S/a3.sh $S/q.sh" \
	ASAN_UNIT_TESTS="$T/side" FUZZ_TARGETS= CHECK_URING_PARAM="$T/param" V= \
	bash tools/check.sh all)
expect_eq "all: the side suite, the build steps and every script over both transports" \
	"9 passed, 0 failed" "$(printf '%s\n' "$out" | tail -n 1)"
expect_eq "all: the side job ran beside the plain script's two runs" 2 "$(overlaps side.asan '^p\\.')"
expect_eq "all: the side job ran beside the alone one's two runs" 2 "$(overlaps side.asan '^a3\\.')"
for a in a3.dev a3.uring; do
	expect_eq "all: alone $a met no other script" 0 "$(overlaps $a '^[^s]')"
done
expect_eq "all: the alone one's runs ended before the plain one's began" yes \
	"$(awk '/^a3\./ { if ($3 > e) e = $3 } /^p\./ { if (!b || $2 < b) b = $2 }
		END { print (e && b && e < b) ? "yes" : "no" }' "$T/spans")"
for q in q.dev q.uring; do
	expect_eq "all: quiet $q beside nothing, the side job included" 0 "$(overlaps $q)"
done
printf '#!/bin/sh\necho "sk: skipped: made up"\n' >"$S/sk.sh"
out=$(cd "$ROOT" && MAKE=true BUILD="$T/build3" SHELL_TESTS="$S/sk.sh" V= bash tools/check.sh integration)
expect_eq "a skipped script: its line says skip and why" 1 \
	"$(printf '%s\n' "$out" | grep -c '^mount/sk  *skip  made up$')"
expect_eq "a skipped script: the total says so" \
	"1 skipped: neither passed nor failed|0 passed, 0 failed" \
	"$(printf '%s\n' "$out" | tail -n 2 | paste -sd'|')"

echo "check_summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
