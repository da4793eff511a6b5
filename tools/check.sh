#!/bin/bash
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
#   uring        the same scripts again over FUSE over io_uring (CHAINFS_TRANSPORT=uring),
#                but for those that say "# check: once" (each script skips, saying why, on
#                a kernel without the ring)
#   mounts       integration and uring in one pool: no suite waits for the other stage's
#                slowest to end, and the "alone" ones of both run at its start
#   all          asan, mounts, fuzz and bench at once: the asan suites, then the fuzz targets,
#                one at a time beside the mount pool, whose alone suites (the benchmarks' smoke
#                run among them) come first, while the side job keeps the other CPU busy
#                (what make check runs, after unit)
#   fuzz         each libFuzzer target (FUZZ_TARGETS) for FUZZ_CHECK_SECONDS (10 s)
#   bench        the benchmarks' smoke run (BENCH_QUICK=1): each script passes if it runs
#                to its end; its numbers are not meaningful and stay in files
# Within a stage, suites run side by side, CHECK_JOBS at a time (default 2; 3 for the mount
# stages, whose suites mostly wait on the kernel and on their daemons): each uses its own
# temp dir and mountpoints. A script that changes what other mounts see (a module parameter,
# the kernel's caches) says "# check: alone: WHY" and runs with no other mount script beside
# it; one that measures time says "# check: quiet: WHY" and runs with nothing at all beside
# it; one that takes long says "# check: long: WHY" and is started first. A line a suite, in
# the order they end.
# The Makefile passes MAKE, BUILD and the lists in the environment. V=1 also streams each
# suite's output to the terminal, one suite at a time.
set -u
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
LOGS=$BUILD/check
LIST=$LOGS/suites
mkdir -p "$LOGS"
: >"$LIST"
# side by side, each suite is a job of its own (its own process group), so a signal can end it
set -m

stop= # INT or TERM once signalled: the running suites are ended, no more start
on_signal() {
	stop=$1
	local j
	for j in $(jobs -p); do kill -TERM -- "-$j" 2>/dev/null; done
}
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM

# show_failure LOG: the first lines of LOG that say what failed: the suites' own failure
# lines (tests/lib.sh's FAIL:, Check's :F: and :E:, the fuzz runner's, a sanitizer's) with
# the few lines after each (a diff a check printed), else anything that looks like an error
# (a build, a benchmark): enough for a run whose logs are gone to say what differed
show_failure() {
	{
		grep -aE -A4 '^FAIL|:[EF]:|FAILED|^==[0-9]+==ERROR|^SUMMARY: ' "$1" ||
			grep -aE 'ERROR|[Ee]rror[: ]|Assertion|not found|No such file|missing' "$1" ||
			tail -n 3 "$1"
	} | head -n 16 | cut -c1-160 | sed 's/^/    /'
}

# suite NAME COMMAND...: run COMMAND with its output in NAME's log, and count it. Its line
# goes out in one write, so that suites ending together do not mix their lines.
suite() {
	local name=$1 log st start secs p f skip line
	shift
	[ -z "$stop" ] || return 0
	log=$LOGS/$(printf '%s' "$name" | tr / -).log
	start=$(date +%s)
	if [ "${V:-}" = 1 ]; then
		printf '%-28s\n' "$name"
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
	read -r p f skip <<<"$(sh tools/check-summary.sh count "$log" "$st")"
	if [ "$skip" = 1 ]; then
		line=$(printf '%-28s skip  %s' "$name" "$(sed -n 's/^[^ :]*: skipped: //p' "$log" | head -n 1)")
	elif [ "$f" -eq 0 ]; then
		line=$(printf '%-28s ok    %s passed, %s failed  %s s' "$name" "$p" "$f" "$secs")
	else
		line=$(printf '%-28s FAIL  %s passed, %s failed  %s s, exit status %s, log %s\n%s' \
			"$name" "$p" "$f" "$secs" "$st" "$log" "$(show_failure "$log")")
	fi
	printf '%s\n' "$line"
}

# one NAME COMMAND...: a suite with nothing beside it, as a job of its own all the same (so
# that INT from the terminal reaches this script, which ends the job)
one() {
	suite "$@" &
	wait $!
	wait # once more should a signal have cut the first short
}

# pool JOBS: the suites queued by queue since the last pool run: first those marked alone, one
# at a time (beside no other suite of the pool: the side job, which mounts nothing, may go on,
# and in stage_all it does, so the second CPU is not left idle as it was when they came last);
# then the rest, JOBS at a time; then those marked quiet, with nothing at all beside them, the
# side job waited for first. V=1 runs everything one at a time.
QUEUE=()
SIDE_PID= # the side job's pid while one runs (stage_all)
queue() { # PHASE NAME COMMAND... (PHASE: 0, 1 alone, 2 quiet; the words joined by tabs)
	local IFS=$'\t'
	QUEUE+=("$*")
}
# running: how many of the pool's suites run (the side job is not one)
running() { jobs -rp | grep -cvx "${SIDE_PID:-none}"; }
pool() {
	local all=$1 jobs item phase words
	[ "${V:-}" != 1 ] || all=1
	for phase in 1 0 2; do
		if [ "$phase" = 2 ]; then wait; else while [ "$(running)" -gt 0 ]; do wait -n; done; fi
		if [ "$phase" = 0 ]; then jobs=$all; else jobs=1; fi
		for item in "${QUEUE[@]}"; do
			[ "${item%%$'\t'*}" = "$phase" ] || continue
			[ -z "$stop" ] || break
			while [ "$(running)" -ge "$jobs" ]; do
				wait -n
			done
			IFS=$'\t' read -r -a words <<<"${item#*$'\t'}"
			suite "${words[@]}" &
		done
	done
	wait
	QUEUE=()
}

# marked SCRIPT WORD: whether SCRIPT has a "# check: WORD: why" line
marked() {
	grep -q "^# check: $2:" "$1"
}
phase_of() {
	if marked "$1" quiet; then echo 2; elif marked "$1" alone; then echo 1; else echo 0; fi
}

stage_unit() {
	one format "$MAKE" -s format-check
	one build/plain "$MAKE" -j"${CHECK_JOBS:-2}" all ${UNIT_TESTS:-}
	for t in ${UNIT_TESTS:-}; do
		queue 0 "unit/${t##*/}" env CK_DEFAULT_TIMEOUT=600 "$t"
	done
	for s in ${UNIT_SCRIPTS:-}; do
		queue 0 "unit/$(basename "$s" .sh)" env BUILD="$BUILD" sh "$s"
	done
	pool "${CHECK_JOBS:-2}"
}

build_asan() {
	one build/asan "$MAKE" -j"${CHECK_JOBS:-2}" BUILD=build-asan OPT="${ASAN_OPT:-}" \
		SAN="${ASAN_SAN:-}" ${ASAN_UNIT_TESTS:-} build-asan/chainfs build-asan/chainfsctl
}
# The asan suites run their tests in one process (CK_FORK=no): a forked child per test made
# LeakSanitizer scan at every child's exit, about half of these suites' CPU (test_tree: 87
# CPU-s against 26). Leaks are still found, at the process's exit, which then fails the
# suite; the plain run keeps a child per test; timeout stands in for Check's per-test one,
# which only works in children.
queue_asan() {
	for t in ${ASAN_UNIT_TESTS:-}; do
		queue 0 "asan/${t##*/}" env CK_FORK=no timeout 1200 "$t"
	done
}
stage_asan() {
	build_asan
	queue_asan
	pool "${CHECK_JOBS:-2}"
}

# queue_mounts TRANSPORT...: the mount scripts over each TRANSPORT (dev: /dev/fuse, as the
# scripts default to; uring: FUSE over io_uring, but for the scripts that say "# check: once"),
# a script's runs one after the other in the queue; those that say "# check: long: WHY" first,
# so that no long one starts near the end with little left to run beside it
queue_mounts() {
	local t long
	for long in yes no; do
		for t in ${SHELL_TESTS:-}; do
			if marked "$t" long; then [ "$long" = yes ]; else [ "$long" = no ]; fi || continue
			queue_script "$t" "$@"
		done
	done
}
queue_script() { # SCRIPT TRANSPORT...
	local t=$1 tr
	shift
	for tr in "$@"; do
		if [ "$tr" = dev ]; then
			queue "$(phase_of "$t")" "mount/$(basename "$t" .sh)" env BUILD="$BUILD" sh "$t"
		elif ! marked "$t" once; then
			queue "$(phase_of "$t")" "uring/$(basename "$t" .sh)" env BUILD="$BUILD" \
				CHAINFS_TRANSPORT=uring sh "$t"
		fi
	done
}

# The scripts side by side would each save the module parameter, turn it on and put back
# what they saw: one could put "N" back under another's ring. The stage turns it on once
# for all of them and puts it back after (the /dev/fuse runs do not look at it).
URING_PARAM=${CHECK_URING_PARAM:-/sys/module/fuse/parameters/enable_uring}
# mount_pool TRANSPORT...: the mount scripts over those transports in one pool
mount_pool() {
	local saved=
	if [ -w "$URING_PARAM" ] && [ "$*" != dev ]; then
		saved=$(cat "$URING_PARAM")
		trap 'echo "$saved" >"$URING_PARAM"' EXIT
		echo Y >"$URING_PARAM"
	fi
	queue_mounts "$@"
	pool "${CHECK_JOBS:-3}"
	[ -z "$saved" ] || echo "$saved" >"$URING_PARAM"
	trap - EXIT
}
stage_integration() { mount_pool dev; }
stage_uring() { mount_pool uring; }
stage_mounts() { mount_pool dev uring; }

# stage_fuzz [JOBS]: the fuzz targets, JOBS at a time (CHECK_JOBS, else 2)
stage_fuzz() {
	local jobs=${1:-${CHECK_JOBS:-2}}
	one build/fuzz "$MAKE" -j"$jobs" fuzz-build
	for t in ${FUZZ_TARGETS:-}; do
		queue 0 "fuzz/$t" env FUZZ_SECONDS="${FUZZ_CHECK_SECONDS:-10}" FUZZ_BUILD="${FUZZ_BUILD:-build-fuzz}" \
			sh tests/fuzz/run.sh "$t"
	done
	pool "$jobs"
}

# stage_all: asan, mounts, fuzz and bench at once. The asan suites and then the fuzz targets,
# which want a CPU each and mount nothing, run one at a time as a side job beside the mount
# scripts (over both transports), which mostly wait on the kernel and their daemons. The
# scripts marked alone run beside the side job too (what they change is what mounts see), and
# so do the benchmarks' smoke runs, alone as well (they drop the kernel's caches); those
# marked quiet (they time things) last, with nothing beside them.
stage_all() {
	build_asan
	[ -z "${BENCH_SCRIPTS:-}" ] || one build/bench "$MAKE" bench-build
	(
		queue_asan
		pool 1
		stage_fuzz 1
	) &
	SIDE_PID=$!
	queue_bench
	mount_pool dev uring
	SIDE_PID=
	[ -z "${BENCH_SCRIPTS:-}" ] || bench_said
}

# queue_bench: the benchmarks' smoke runs (BENCH_QUICK=1), marked alone, then their summary
queue_bench() {
	[ -n "${BENCH_SCRIPTS:-}" ] || return 0
	for s in $BENCH_SCRIPTS; do
		queue 1 "bench/$(basename "$(dirname "$s")")" env BUILD="$BUILD" BENCH_QUICK=1 sh "$s"
	done
	queue 1 bench/summary env BENCH_QUICK=1 sh bench/summary.sh
}
bench_said() {
	echo "  (the benchmarks' smoke run: its numbers mean nothing; bench/results/tmp/quick/SUMMARY.md has them)"
}
stage_bench() {
	one build/bench "$MAKE" bench-build
	queue_bench
	pool 1
	bench_said
}

echo "check: $*; each suite's output is in $LOGS/ (V=1 shows it as it runs)"
for s in "$@"; do
	case $s in
	unit | asan | integration | uring | mounts | fuzz | all | bench) "stage_$s" ;;
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
