#!/bin/sh
# tools/check.sh STAGE...: what `make check` and its check-* targets run. Each suite's output
# goes to its own log under $BUILD/check/; the terminal gets one line per suite (its counts
# and seconds; on failure the log's name and its first failure lines) and, as the very last
# line, the total "N passed, N failed" that tools/check-summary.sh counts.
#
# Every suite runs even when an earlier one failed (a failed build included: what it could
# not build fails on its own and is counted), so that one run shows everything that is
# broken. Exit status: 0 when all passed, 1 when anything failed, 130/143 when interrupted
# (the suites not yet run are skipped, and the total says so).
#
# Stages, in the order given:
#   unit         build (plain), the Check suites (UNIT_TESTS), the script tests (UNIT_SCRIPTS)
#   asan         build under AddressSanitizer + UBSan (build-asan/), the Check suites again
#   integration  the mount scripts (SHELL_TESTS) against $BUILD
#   uring        the mount scripts in URING_TESTS again, over FUSE over io_uring
#                (CHAINFS_TRANSPORT=uring; each script skips, saying why, on a kernel without it)
#   fuzz         each libFuzzer target for 60 s (make check-fuzz)
#   bench        the benchmarks' smoke run (BENCH_QUICK=1): each script passes if it runs
#                to its end; its numbers are not meaningful and stay in files
# The Makefile passes MAKE, BUILD and the lists in the environment. V=1 also streams each
# suite's output to the terminal.
set -u
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
LOGS=$BUILD/check
LIST=$LOGS/suites
mkdir -p "$LOGS"
: >"$LIST"

stop= # INT or TERM once signalled: the running suite ends (it got the signal too), no more start
trap 'stop=INT' INT
trap 'stop=TERM' TERM

# show_failure LOG: the first lines of LOG that say what failed: the suites' own failure
# lines (tests/lib.sh's FAIL:, Check's :F: and :E:, the fuzz runner's, a sanitizer's), else
# anything that looks like an error (a build, a benchmark)
show_failure() {
	{
		grep -aE '^FAIL|:[EF]:|FAILED|^==[0-9]+==ERROR|^SUMMARY: ' "$1" ||
			grep -aE 'ERROR|[Ee]rror[: ]|Assertion|not found|No such file|missing' "$1" ||
			tail -n 3 "$1"
	} | head -n 5 | cut -c1-160 | sed 's/^/    /'
}

# suite NAME COMMAND...: run COMMAND with its output in NAME's log, and count it
suite() {
	name=$1
	shift
	[ -z "$stop" ] || return 0
	log=$LOGS/$(printf '%s' "$name" | tr / -).log
	printf '%-28s ' "$name"
	start=$(date +%s)
	if [ "${V:-}" = 1 ]; then
		echo
		{
			"$@" </dev/null 2>&1
			echo $? >"$log.status"
		} | tee "$log"
		st=$(cat "$log.status")
		rm -f "$log.status"
	else
		"$@" </dev/null >"$log" 2>&1
		st=$?
	fi
	secs=$(($(date +%s) - start))
	printf '%s\t%s\t%s\n' "$name" "$st" "$log" >>"$LIST"
	c=$(sh tools/check-summary.sh count "$log" "$st")
	p=${c% *}
	f=${c#* }
	[ "${V:-}" = 1 ] && printf '%-28s ' "$name"
	if [ "$f" -eq 0 ]; then
		echo "ok    $p passed, $f failed  ${secs} s"
	else
		echo "FAIL  $p passed, $f failed  ${secs} s, exit status $st, log $log"
		show_failure "$log"
	fi
}

stage_unit() {
	suite format "$MAKE" -s format-check
	suite build/plain "$MAKE" all ${UNIT_TESTS:-}
	for t in ${UNIT_TESTS:-}; do
		suite "unit/${t##*/}" env CK_DEFAULT_TIMEOUT=600 "$t"
	done
	for s in ${UNIT_SCRIPTS:-}; do
		suite "unit/$(basename "$s" .sh)" env BUILD="$BUILD" sh "$s"
	done
}

stage_asan() {
	suite build/asan "$MAKE" BUILD=build-asan OPT="${ASAN_OPT:-}" SAN="${ASAN_SAN:-}" \
		${ASAN_UNIT_TESTS:-} build-asan/chainfs
	for t in ${ASAN_UNIT_TESTS:-}; do
		suite "asan/${t##*/}" env CK_DEFAULT_TIMEOUT=600 "$t"
	done
}

stage_integration() {
	for t in ${SHELL_TESTS:-}; do
		suite "mount/$(basename "$t" .sh)" env BUILD="$BUILD" sh "$t"
	done
}

stage_uring() {
	for t in ${URING_TESTS:-}; do
		suite "uring/$(basename "$t" .sh)" env BUILD="$BUILD" CHAINFS_TRANSPORT=uring sh "$t"
	done
}

stage_fuzz() {
	suite fuzz "$MAKE" check-fuzz
}

stage_bench() {
	suite build/bench "$MAKE" bench-build
	for s in ${BENCH_SCRIPTS:-}; do
		suite "bench/$(basename "$(dirname "$s")")" env BUILD="$BUILD" BENCH_QUICK=1 sh "$s"
	done
	suite bench/summary env BENCH_QUICK=1 sh bench/summary.sh
	echo "  (a smoke run: its numbers mean nothing; bench/results/tmp/quick/SUMMARY.md has them)"
}

echo "check: $*; each suite's output is in $LOGS/ (V=1 shows it as it runs)"
for s in "$@"; do
	case $s in
	unit | asan | integration | uring | fuzz | bench) "stage_$s" ;;
	*)
		echo "check.sh: unknown stage '$s'" >&2
		exit 2
		;;
	esac
done
[ -z "$stop" ] || echo "interrupted (SIG$stop): the suites after the last one shown did not run"
sh tools/check-summary.sh total "$LIST"
st=$?
case $stop in
INT) exit 130 ;;
TERM) exit 143 ;;
esac
exit $st
