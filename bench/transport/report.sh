#!/bin/sh
# bench/transport/report.sh OUT RUNS RTT_N CHAIN_K TREE SECONDS: transport.md and
# transport_rtt.png from the CSVs bench/transport/run.sh wrote in OUT (run.sh calls it; it can
# be rerun alone on an earlier run's CSVs). TREE describes the tree, SECONDS the run's length.
set -eu
OUT=$1 RUNS=$2 RTT_N=$3 CHAIN_K=$4 TREE=$5 SECS=$6
cd "$(dirname "$0")/../.."
. bench/walk/lib.sh
CSV=$OUT/transport.csv RCSV=$OUT/transport_rtt.csv HCSV=$OUT/transport_rtt_hist.csv
# variants and workloads in the CSV's order (run.sh writes them in run order)
VARIANTS=$(awk -F, 'NR > 1 && !s[$2]++ { printf "%s ", $2 }' "$CSV")
VARIANTS=$(echo $VARIANTS)
WORKLOADS=$(awk -F, 'NR > 1 && !s[$1]++ { printf "%s ", $1 }' "$CSV")
WORKLOADS=$(echo $WORKLOADS)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# --- Markdown --------------------------------------------------------------------------
MD=$OUT/transport.md
# table MODE: a row per workload and phase, a column per variant.
# MODE: wall ("median [min–max]" ms), daemon (daemon CPU ms), client (the workload's CPU ms),
# or a variant's name (ratio of median wall times to that variant's).
table() {
	awk -F, -v mode="$1" -v vs="$VARIANTS" -v wls="$WORKLOADS" '
	NR > 1 { k = $1 " " $3; w[k, $2] = $6; lo[k, $2] = $7; hi[k, $2] = $8; c[k, $2] = $9
		d[k, $2] = $10; okr[k, $2] = ($5 < $4) ? sprintf(" (%d/%d ok)", $5, $4) : ""; have[k] = 1 }
	function f(x) { return x >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x) }
	END {
		nv = split(vs, v, " "); nw = split(wls, wl, " ")
		h = "| workload | phase |"; s = "|---|---|"
		for (j = 1; j <= nv; j++) { h = h " " v[j] " |"; s = s "---:|" }
		print h; print s
		for (i = 1; i <= nw; i++) for (p = 1; p <= 2; p++) {
			k = wl[i] " " (p == 1 ? "cold" : "warm")
			if (!have[k]) continue
			l = "| " wl[i] " | " (p == 1 ? "cold" : "warm") " |"
			for (j = 1; j <= nv; j++) {
				if (!((k, v[j]) in w)) { l = l " – |"; continue }
				if (mode == "wall") x = f(w[k, v[j]]) " [" f(lo[k, v[j]]) "–" f(hi[k, v[j]]) "]" okr[k, v[j]]
				else if (mode == "daemon") x = sprintf("%.0f", d[k, v[j]])
				else if (mode == "client") x = sprintf("%.0f", c[k, v[j]])
				else if ((k, mode) in w && w[k, mode] > 0) x = sprintf("%.2f", w[k, v[j]] / w[k, mode])
				else x = "–"
				l = l " " x " |"
			}
			print l
		}
	}' "$CSV"
}
{
	echo "# bench/transport: /dev/fuse and FUSE over io_uring, with and without the spin"
	echo
	echo "$(machine_line). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "Run ending $(date -u '+%Y-%m-%d %H:%M') UTC, $SECS s; chainfs $(git rev-parse --short HEAD 2>/dev/null || echo '?')."
	echo "Median of $RUNS rounds; in each round every variant runs each workload once, in"
	echo "rotating order, on a fresh mount (a new daemon) after dropping the caches. cold = the"
	echo "first run on that mount, warm = the same command again. Tree: $TREE."
	echo "server_chain: \`-o follow=server,max_total=2000,max_nest=40\`, \`stat -L\` of $CHAIN_K"
	echo "distinct 1000-link chains, once each. Variants: dev = /dev/fuse, uring = FUSE over"
	echo "io_uring; spin0 = \`-o spin=0\`, spin50 = the default 50 µs busy-poll; uring-pinned ="
	echo "uring-spin0 with the daemon and the workload on CPU 0 (a diagnostic: no cross-CPU"
	echo "wake-up). Variants run: $VARIANTS."
	echo
	echo "### Wall time, ms: median [min–max]"
	echo
	table wall
	echo
	echo "### The daemon's CPU, ms (median; user + system, every thread, 10 ms ticks)"
	echo
	table daemon
	echo
	echo "### The workload's own CPU, ms (median)"
	echo
	table client
	echo
	echo "### Wall time relative to dev-spin0 (ratio of medians; < 1: faster)"
	echo
	table dev-spin0
	echo
	echo "### Wall time relative to dev-spin50, today's default (ratio of medians)"
	echo
	table dev-spin50
	echo
	echo "### One round trip: fstat() with attr_timeout=0 (one GETATTR each), µs"
	echo
	echo "$RTT_N calls per run, median over rounds of each quantile; max = the largest of all"
	echo "rounds; CPU per call = the daemon's (or the caller's) CPU over the whole run / calls."
	echo
	echo "| variant | runs | p50 | p90 | p99 | p99.9 | max | mean | caller CPU/call | daemon CPU/call |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk -F, 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%s\n", $1, $2, $5, $6, $7, $8, $9, $10, $11, $12, ($4 > 0 ? " " $4 " errors" : "") }' "$RCSV"
	echo
	echo "Output checks (checksum-bytes of the sorted output, per workload and phase; \"varies\""
	echo "= it differed between rounds):"
	echo
	awk -F, 'NR > 1 { k = $1 " " $3
		if (!(k in first)) { first[k] = $11; o[++n] = k } else if ($11 != first[k]) d[k] = d[k] ", " $2 " " $11 }
	END { for (i = 1; i <= n; i++) printf "- %s: %s\n", o[i], (o[i] in d) ? first[o[i]] " (first variant)" d[o[i]] : "the same for every variant (" first[o[i]] ")" }' "$CSV"
	echo
	echo "![transport_rtt.png](transport_rtt.png)"
} >"$MD"

# --- plot: the round trip's distribution per variant: CDF, and the tail (1 - CDF, log) ---
if command -v gnuplot >/dev/null; then
	PL= PT=
	for v in $VARIANTS; do
		# x = the bucket's upper edge: the fraction of calls at or below it
		awk -F, -v v="$v" '$1 == v { print $3, $5 }' "$HCSV" >"$W/cdf.$v"
		[ -s "$W/cdf.$v" ] || continue
		PL="$PL${PL:+, }\"$W/cdf.$v\" using 1:2 with steps lw 2 title \"$v\""
		PT="$PT${PT:+, }\"$W/cdf.$v\" using 1:(\$2 < 1 ? 1 - \$2 : 1/0) with steps lw 2 title \"$v\""
	done
	gnuplot <<-EOF
		set terminal pngcairo size 1400,600 font ",10" noenhanced
		set output "$OUT/transport_rtt.png"
		set multiplot layout 1,2 title "one FUSE round trip: fstat() with attr_timeout=0 (one GETATTR), $RTT_N calls x $RUNS rounds per variant"
		set logscale x
		set grid xtics mxtics ytics
		set xlabel "latency, us (log scale)"
		set key bottom right
		set title "CDF"
		set ylabel "fraction of calls at or below"
		set yrange [0:1]
		plot $PL
		set title "tail: fraction of calls above (log scale)"
		set ylabel "fraction of calls above"
		set logscale y
		set yrange [*:1]
		set key top right
		plot $PT
		unset multiplot
	EOF
fi
