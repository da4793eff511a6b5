#!/bin/sh
# Run the libFuzzer targets named as arguments (default: all), one after the other, each for
# FUZZ_SECONDS seconds (default 60). Each fuzzes a scratch corpus, build-fuzz/corpus/TARGET,
# which starts from the committed seeds (tests/fuzz/corpus/TARGET, never written to) and is
# kept between runs (FUZZ_FRESH=1 starts it over). A crash, timeout or OOM leaves its input
# in build-fuzz/crashes/ and prints the command that replays it.
# A run stopped by a signal from outside is INTERRUPTED, neither a pass nor a crash: INT or
# TERM to this script stops the running target and skips the rest; a fuzzer signalled on its
# own (libFuzzer's exit 72, or killed outright without a crash report) counts as interrupted
# and the next target runs.
# Ends with "fuzz: N passed, N failed" (", N interrupted" when some were); exits 1 if any
# target failed, else 130/143 if this script was stopped by INT/TERM, else 2 if a target
# was interrupted.
set -u
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-build-fuzz}
targets=${*:-spec spec_line resolve control gate}
src=$(dirname "$0")
crashes=$build/crashes
pass=0
fail=0
interrupted=0
stop=     # INT or TERM once this script has been signalled
child=    # the fuzzer running now

# libFuzzer's exit status when its own SIGINT/SIGTERM handler ended the run
LIBFUZZER_INTERRUPTED=72

# Whole specs run to several KB. The line-based targets want several lines from the start,
# so their length limit is not grown slowly from the seeds' (-len_control=0).
len_flags_of() {
	case $1 in
	spec) echo "-max_len=32768" ;;
	*) echo "-max_len=1024 -len_control=0" ;;
	esac
}

# The fuzzer runs in the background so that the trap runs at once (a trap waits for a
# foreground command to end); it is told to stop and reports what it has.
on_signal() {
	stop=$1
	[ -n "$child" ] && kill -TERM "$child" 2>/dev/null
}
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM

mkdir -p "$crashes" "$build/logs"
for t in $targets; do
	if [ -n "$stop" ]; then
		echo "fuzz: $t not run (interrupted)"
		continue
	fi
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
	control) dict=-dict=$src/control.dict ;;
	esac
	echo "== fuzz $t: ${seconds}s, corpus $work, log $log"
	# -rss_limit_mb / -malloc_limit_mb: far above what the bounded targets use, so hitting
	# them means a real leak or runaway allocation.
	"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
		$(len_flags_of "$t") -print_final_stats=1 \
		-artifact_prefix="$crashes/$t-" $dict "$work" >"$log" 2>&1 &
	child=$!
	wait "$child"
	rc=$?
	# a trapped signal ends the wait early: wait again for the fuzzer's own status
	while kill -0 "$child" 2>/dev/null; do
		wait "$child"
		rc=$?
	done
	child=
	# the final "#N DONE cov: .. ft: .. corp: .." line, or the last progress line
	grep -aE '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -n 1
	# -print_final_stats: executions in all, their average rate, the peak memory
	# (printed twice when a signal reached libFuzzer's handler mid-report: the last wins)
	awk '/^stat::/ { sub(/^stat::/, ""); sub(/:/, ""); v[$1] = $2 }
		END { if ("number_of_executed_units" in v)
			print "executions=" v["number_of_executed_units"],
			    "exec/s=" v["average_exec_per_sec"], "peak_rss_mb=" v["peak_rss_mb"] }' "$log"
	artifact=$(LC_ALL=C sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
	if [ $rc -eq 0 ] && [ -z "$stop" ]; then
		pass=$((pass + 1))
		continue
	fi
	# A crash found is a crash, even if a signal came as well. Without one, a signal ended
	# the run: our own, libFuzzer's handler (72), or one it could not catch (128 + N).
	if [ -z "$artifact" ] && { [ -n "$stop" ] || [ $rc -eq $LIBFUZZER_INTERRUPTED ] ||
		[ $rc -gt 128 ]; }; then
		interrupted=$((interrupted + 1))
		echo "fuzz: $t INTERRUPTED (${stop:+SIG$stop to run.sh, }exit $rc): not a pass, no crash found"
		continue
	fi
	fail=$((fail + 1))
	echo "fuzz: $t FAILED (exit $rc):"
	grep -aE '^fuzz: |^SUMMARY|^==[0-9]+==ERROR|ALARM|out-of-memory' "$log" | head -n 5
	if [ -n "$artifact" ]; then
		echo "  reproducer: $artifact"
		echo "  replay:     $bin $artifact"
	fi
done
summary="fuzz: $pass passed, $fail failed"
[ "$interrupted" -eq 0 ] || summary="$summary, $interrupted interrupted"
echo "$summary"
[ "$fail" -eq 0 ] || exit 1
case $stop in
INT) exit 130 ;;
TERM) exit 143 ;;
esac
[ "$interrupted" -eq 0 ] || exit 2
exit 0
