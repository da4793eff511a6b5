#!/bin/sh
# bench/poll: pollcore vs libev (poll and epoll backends) vs a naive malloc-per-wait loop,
# N pipes with one made ready per iteration. Writes bench/results/poll.csv (median ns per
# iteration), poll_instr.csv (user-space instructions per iteration, callgrind), poll.png and
# poll.md. Raw per-round timings and callgrind dumps stay in bench/results/tmp/poll.
#
# BUILD: build directory holding bench_poll (default: build).
# BENCH_QUICK=1: a seconds-long smoke run (3 N values, 3 rounds, short measurements, one
# callgrind run); its results go to bench/results/tmp/quick so that they never replace a full
# run's.
set -eu
cd "$(dirname "$0")/../.."

BUILD=${BUILD:-build}
BIN=$BUILD/bench_poll
if [ "${BENCH_QUICK:-}" = 1 ]; then
	NS=1,32,256 RUNS=3 TARGET_MS=2 INSTR_ITERS=64 INSTR_RUNS=1
	OUT=bench/results/tmp/quick
else
	NS=1,2,4,8,16,32,64,256,1024,4096 RUNS=21 TARGET_MS=15 INSTR_ITERS=2048 INSTR_RUNS=2
	OUT=bench/results
fi
TMP=bench/results/tmp/poll
mkdir -p "$OUT" "$TMP"
[ -x "$BIN" ] || { echo "poll: $BIN is missing: make $BIN" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "poll: valgrind is missing: make deps" >&2; exit 1; }

echo "poll: timing N=$NS, $RUNS interleaved rounds of ~${TARGET_MS} ms per contender"
"$BIN" --ns "$NS" --runs "$RUNS" --target-ms "$TARGET_MS" \
	--csv "$OUT/poll.csv" --raw "$TMP/poll_rounds.csv"

# One callgrind run: instructions per iteration for each (N, contender), from the labelled
# dumps bench_poll makes around its measured loops only.
instr_run() {
	rm -f "$TMP"/cg.*
	valgrind -q --tool=callgrind --instr-atstart=no --callgrind-out-file="$TMP/cg.%p" \
		"$BIN" --instr --ns "$NS" --instr-iters "$INSTR_ITERS"
	awk '
		/^desc: Trigger: Client Request: pollbench / {
			for (i = 5; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		}
		/^totals:/ && ("n" in v) {
			printf "%d,%s,%d,%.1f\n", v["n"], v["contender"], v["iters"], $2 / v["iters"]
			delete v
		}' "$TMP"/cg.*.* | sort -t, -k1,1n -k2,2 >"$1"
}

echo "poll: instructions per iteration (callgrind, $INSTR_RUNS run(s))"
instr_run "$TMP/instr1.csv"
if [ "$INSTR_RUNS" -gt 1 ]; then
	instr_run "$TMP/instr2.csv"
else
	cp "$TMP/instr1.csv" "$TMP/instr2.csv"
fi
# Both runs side by side, and how far apart they are: the count should not move.
{
	echo "n,contender,iters,instr_per_iter,instr_per_iter_rerun,diff_pct"
	paste -d, "$TMP/instr1.csv" "$TMP/instr2.csv" | awk -F, '{
		d = $4 > 0 ? 100 * ($8 - $4) / $4 : 0
		printf "%s,%s,%s,%s,%s,%.3f\n", $1, $2, $3, $4, $8, (d < 0 ? -d : d) }'
} >"$OUT/poll_instr.csv"

# Wide table, one row per N, for the plot and the Markdown.
awk -F, '
	FNR == 1 { next }
	FILENAME ~ /instr/ { ir[$1 "," $2] = $4; next }
	{ ns[$1 "," $2] = $5; pr[$1 "," $2] = $8; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
	END {
		split("pollcore libev-poll libev-epoll naive", c, " ")
		for (i = 1; i <= n; i++) {
			k = order[i]
			line = k
			for (j = 1; j <= 4; j++) line = line " " ns[k "," c[j]]
			for (j = 1; j <= 4; j++) line = line " " (ir[k "," c[j]] == "" ? "NaN" : ir[k "," c[j]])
			for (j = 2; j <= 4; j++) line = line " " pr[k "," c[j]]
			print line
		}
	}' "$OUT/poll.csv" "$OUT/poll_instr.csv" >"$TMP/wide.dat"

gnuplot -e "data='$TMP/wide.dat'; out='$OUT/poll.png'" bench/poll/plot.gp

{
	echo "# bench/poll: one ready pipe among N, per iteration"
	echo
	echo "$(nproc) vCPU, $(uname -sr), $(awk -F: '/model name/ { sub(/^ /, "", $2); print $2; exit }' /proc/cpuinfo)."
	echo "Time: ns per iteration (write + wait + callback read) as thread CPU time, user + kernel (the"
	echo "loop never sleeps, so this is wall time without the time other tenants held the CPU); median"
	echo "of $RUNS rounds, each running every contender once in rotating order. \"paired\": median over"
	echo "rounds of (contender / pollcore) within a round, which cancels drift between rounds;"
	echo "> 1 means pollcore is faster."
	echo "Instructions: user space only (callgrind), per iteration; the kernel's work is not counted."
	echo
	echo "| N | pollcore ns | libev-poll ns | libev-epoll ns | naive ns | libev-poll / pollcore (paired) | libev-epoll / pollcore (paired) | naive / pollcore (paired) | pollcore instr | libev-poll instr | libev-epoll instr | naive instr | libev-poll / pollcore instr |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk '{
		printf "| %d | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f | %.2f |\n",
			$1, $2, $3, $4, $5, $10, $11, $12, $6, $7, $8, $9, ($6 > 0 ? $7 / $6 : 0) }' "$TMP/wide.dat"
} >"$OUT/poll.md"

cat "$OUT/poll.md"
echo "poll: wrote $OUT/poll.csv $OUT/poll_instr.csv $OUT/poll.png $OUT/poll.md"
