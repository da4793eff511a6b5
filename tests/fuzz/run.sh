#!/bin/sh
# Run the libFuzzer targets named as arguments (default: all), one after the other, each for
# FUZZ_SECONDS seconds (default 60). Each fuzzes a scratch corpus, build-fuzz/corpus/TARGET,
# which starts from the committed seeds (tests/fuzz/corpus/TARGET, never written to) and is
# kept between runs (FUZZ_FRESH=1 starts it over). A crash, timeout or OOM leaves its input
# in build-fuzz/crashes/ and prints the command that replays it. Ends with
# "fuzz: N passed, N failed"; exits 1 if any target failed.
set -u
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-build-fuzz}
targets=${*:-spec spec_line resolve}
src=$(dirname "$0")
crashes=$build/crashes
pass=0
fail=0

# Whole specs run to several KB. The line-based targets want several lines from the start,
# so their length limit is not grown slowly from the seeds' (-len_control=0).
len_flags_of() {
	case $1 in
	spec) echo "-max_len=32768" ;;
	*) echo "-max_len=1024 -len_control=0" ;;
	esac
}

mkdir -p "$crashes" "$build/logs"
for t in $targets; do
	bin=$build/fuzz_$t
	work=$build/corpus/$t
	log=$build/logs/$t.log
	if [ ! -x "$bin" ]; then
		echo "fuzz: $bin is missing (make fuzz-build)" >&2
		fail=$((fail + 1))
		continue
	fi
	[ "${FUZZ_FRESH:-0}" = 1 ] && rm -rf "$work"
	mkdir -p "$work"
	cp -n "$src/corpus/$t"/* "$work"/ 2>/dev/null
	dict=
	case $t in
	spec | spec_line) dict=-dict=$src/spec.dict ;;
	resolve) dict=-dict=$src/resolve.dict ;;
	esac
	echo "== fuzz $t: ${seconds}s, corpus $work, log $log"
	# -rss_limit_mb / -malloc_limit_mb: far above what the bounded targets use, so hitting
	# them means a real leak or runaway allocation.
	"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
		$(len_flags_of "$t") -print_final_stats=1 \
		-artifact_prefix="$crashes/$t-" $dict "$work" >"$log" 2>&1
	rc=$?
	# the final "#N DONE cov: .. ft: .. corp: .." line, or the last progress line
	grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -n 1
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		continue
	fi
	fail=$((fail + 1))
	echo "fuzz: $t FAILED (exit $rc):"
	grep -E '^fuzz: |^SUMMARY|^==[0-9]+==ERROR|ALARM|out-of-memory' "$log" | head -n 5
	artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
	if [ -n "$artifact" ]; then
		echo "  reproducer: $artifact"
		echo "  replay:     $bin $artifact"
	fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
