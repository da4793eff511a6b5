#!/bin/sh
# bench/chains: ns per link of stat() (stat -L) and cat (open + read + close) through serial
# chains of 8, 40, 1000 and 100,000 links, served by chainfs in server and collapse modes
# (limits raised), in kernel mode (lengths <= 40: the kernel's own limit), and on tmpfs
# (the kernel alone, lengths <= 40). Writes bench/results/chains.csv, chains.md, chains.png.
#
# Every chain is stat'ed once on a fresh mount: the chains are distinct (`chain /cN/kI N
# ../target`, K of each length), so the cold pass never hits the kernel's dentry cache. The
# warm pass repeats the same chains at once and shows what the kernel's cache makes of them
# (in server mode a cached chain never reaches the daemon). tmpfs has no cold state.
#
# BUILD: build directory. BENCH_QUICK=1: lengths 8, 40, 1000 only, one round, results in
# bench/results/tmp/quick. CHAINS_RUNS: rounds (default 5).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. bench/walk/lib.sh

if [ "${BENCH_QUICK:-}" = 1 ]; then
	RUNS=${CHAINS_RUNS:-1}
	SHAPES="8:200 40:100 1000:10"
	OUT=bench/results/tmp/quick
	TMP=bench/results/tmp/quick/chains
else
	RUNS=${CHAINS_RUNS:-5}
	# K per length: enough chains that a pass takes tens of ms at least (~660k nodes in all)
	SHAPES="8:2000 40:1000 1000:100 100000:5"
	OUT=bench/results
	TMP=bench/results/tmp/chains
fi
mkdir -p "$OUT" "$TMP"
for b in chainfs bench_chains; do
	[ -x "$BUILD/$b" ] || make --no-print-directory BUILD="$BUILD" "$BUILD/$b"
done

bench_init chains
W=$BENCH_WORK
SPEC=$W/chains.spec
KSPEC=$W/kernel.spec # lengths <= 40, for tmpfs
{
	printf '%s\n' 'file /target "you reached the end of the chain\n"'
	for s in $SHAPES; do
		n=${s%:*} k=${s#*:}
		awk -v n="$n" -v k="$k" 'BEGIN { for (i = 0; i < k; i++) printf "chain /c%d/k%d %d ../target\n", n, i, n }'
	done
} >"$SPEC"
awk '/^file/ || ($1 == "chain" && $3 <= 40)' "$SPEC" >"$KSPEC"
KSHAPES=
for s in $SHAPES; do
	if [ "${s%:*}" -le 40 ]; then KSHAPES="$KSHAPES $s"; fi
done
MAXT=200000 # links per walk for server and collapse: above the longest chain

tmpfs_mount "$W/tmpfs" 1g
"$BUILD/chainfs" --materialize "$KSPEC" "$W/tmpfs" || bench_die "materialize failed"

RAW=$TMP/chains_runs.csv
echo "contender,round,op,links,count,pass,ok,errors,wall_ns,cpu_ns,first_errno,mount_ns" >"$RAW"
CONTENDERS="tmpfs cfs-kernel cfs-collapse cfs-server"

run_one() { # contender round op
	c=$1 r=$2 op=$3
	drop_caches
	case $c in
	tmpfs)
		root=$W/tmpfs shapes=$KSHAPES mns=0
		;;
	*)
		mode=${c#cfs-}
		if [ "$mode" = kernel ]; then shapes=$KSHAPES; else shapes=$SHAPES; fi
		cfs_mount "$W/mnt" "$W/daemon.log" -o "follow=$mode,max_total=$MAXT,max_nest=40" "$SPEC"
		root=$W/mnt mns=$MOUNT_NS
		;;
	esac
	# shellcheck disable=SC2086
	timeout 600 "$BUILD/bench_chains" "$op" "$root" $shapes >"$W/res" ||
		bench_log "  $c $op: bench_chains failed (status $?)"
	awk -v c="$c" -v r="$r" -v m="$mns" '{ printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", c, r, $1, $2, $3, $4, $5, $6, $7, $8, $9, m }' \
		"$W/res" >>"$RAW"
	[ "$c" = tmpfs ] || bench_umount "$W/mnt" "$DPID"
}

t0=$(date +%s)
r=0
while [ $r -lt "$RUNS" ]; do
	i=0
	for op in stat cat; do
		# rotate the contenders' order from run to run
		# shellcheck disable=SC2086
		for c in $(rotate $((r * 2 + i)) $CONTENDERS); do run_one "$c" $r $op; done
		i=$((i + 1))
	done
	r=$((r + 1))
	bench_log "chains: round $r/$RUNS done ($(($(date +%s) - t0))s)"
done

# Medians per (contender, op, links, pass): ns per call and per link.
CSV=$OUT/chains.csv
{
	echo "contender,op,links,pass,runs,calls_per_run,ok_runs,ns_per_call,ns_per_link,cpu_ns_per_call,first_errno"
	awk -F, 'NR > 1 { print $1 "," $3 "," $4 "," $6 }' "$RAW" | sort -u -t, -k1,1 -k2,2 -k3,3n -k4,4 |
		while IFS=, read -r c op n pass; do
			sel=$(awk -F, -v c="$c" -v op="$op" -v n="$n" -v p="$pass" '$1 == c && $3 == op && $4 == n && $6 == p' "$RAW")
			runs=$(echo "$sel" | wc -l)
			k=$(echo "$sel" | head -1 | cut -d, -f5)
			okr=$(echo "$sel" | awk -F, '$8 == 0' | wc -l)
			call=$(echo "$sel" | awk -F, '{ print $9 / $5 }' | median)
			cpu=$(echo "$sel" | awk -F, '{ print $10 / $5 }' | median)
			fe=$(echo "$sel" | awk -F, '$11 != "-" { print $11; exit }')
			printf '%s,%s,%s,%s,%s,%s,%s,%.1f,%.2f,%.1f,%s\n' "$c" "$op" "$n" "$pass" "$runs" "$k" "$okr" \
				"$call" "$(echo "$call $n" | awk '{ print $1 / $2 }')" "$cpu" "${fe:--}"
		done
} >"$CSV"

# Markdown: one table per op and pass, a row per length, a column per contender.
MD=$OUT/chains.md
{
	echo "# bench/chains: ns per link through serial chains"
	echo
	echo "$(machine_line). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "Median of $RUNS rounds, contenders in rotating order, each on a fresh mount (a new"
	echo "daemon; caches dropped). K distinct chains per length ($SHAPES as N:K), each"
	echo "called once per pass: cold = first call on each chain (nothing cached: every call reaches"
	echo "the daemon), warm = the same chains again right after (the kernel's dentry and attribute"
	echo "caches answer; in server mode no request at all). ns per link = wall time per call / N."
	echo "stat = stat() through the chain (stat -L); cat = open + read 4 KiB + close."
	echo "Wall time (the calls sleep while the daemon works). For tmpfs, where nothing sleeps, the"
	echo "calling thread's CPU time per link is given too: wall time also counts other tenants."
	echo "chainfs: \`-o max_total=$MAXT,max_nest=40\`; kernel mode and tmpfs stop at 40 links (ELOOP)."
	echo
	for op in stat cat; do
		for pass in cold warm; do
			echo "### $op, $pass: ns per link (ns per call in brackets)"
			echo
			echo "| links | tmpfs (kernel) | cfs-kernel | cfs-collapse | cfs-server |"
			echo "|---:|---:|---:|---:|---:|"
			awk -F, -v op="$op" -v pass="$pass" 'NR > 1 && $2 == op && $4 == pass {
				v[$3, $1] = sprintf("%s (%s)", ($9 >= 100 ? sprintf("%.0f", $9) : sprintf("%.1f", $9)), sprintf("%.0f", $8))
				if ($1 == "tmpfs") v[$3, $1] = v[$3, $1] sprintf("; CPU %.0f/link", $10 / $3)
				if ($7 < $5) v[$3, $1] = v[$3, $1] " " ($5 - $7) "/" $5 " runs failed: " $11
				if (!($3 in s)) { s[$3] = 1; ns[++n] = $3 } }
			END { split("tmpfs cfs-kernel cfs-collapse cfs-server", c, " ")
				for (i = 1; i <= n; i++) { l = "| " ns[i] " |"; for (j = 1; j <= 4; j++) l = l " " (((ns[i], c[j]) in v) ? v[ns[i], c[j]] : "–") " |"; print l } }' "$CSV" |
				sort -t'|' -k2,2n
			echo
		done
	done
	echo "Server-mode mount time (the daemon's start to a mount that answers, ~$(awk 'NR > 1' "$SPEC" | wc -l) chains):"
	echo "median $(awk -F, 'NR > 1 && $1 == "cfs-server" && $6 == "cold" && $4 == 8 { print $12 / 1e6 }' "$RAW" | median | awk '{ printf "%.0f", $1 }') ms."
	echo
	echo "![chains.png](chains.png)"
} >"$MD"

if command -v gnuplot >/dev/null; then
	for op in stat cat; do
		awk -F, -v op="$op" 'NR > 1 && $2 == op && $4 == "cold" { v[$3, $1] = $9; if (!($3 in s)) { s[$3] = 1; ns[++n] = $3 } }
		END { split("tmpfs cfs-kernel cfs-collapse cfs-server", c, " ")
			for (i = 1; i <= n; i++) { l = ns[i]; for (j = 1; j <= 4; j++) l = l " " (((ns[i], c[j]) in v) ? v[ns[i], c[j]] : "NaN"); print l } }' "$CSV" |
			sort -n >"$W/$op.dat"
	done
	gnuplot <<-EOF
		set terminal pngcairo size 1200,500 font ",10"
		set output "$OUT/chains.png"
		set multiplot layout 1,2 title "serial chains, cold (distinct chains, fresh mount): ns per link"
		set logscale xy
		set grid
		set xlabel "links in the chain"
		set ylabel "ns per link"
		set key top right
		set xrange [5:200000]
		set title "stat() through the chain"
		plot for [i=2:5] "$W/stat.dat" using 1:i with linespoints lw 2 title word("tmpfs cfs-kernel cfs-collapse cfs-server", i-1)
		set title "open + read + close through the chain"
		plot for [i=2:5] "$W/cat.dat" using 1:i with linespoints lw 2 title word("tmpfs cfs-kernel cfs-collapse cfs-server", i-1)
		unset multiplot
	EOF
fi
cat "$MD"
bench_log "chains: wrote $CSV $MD $OUT/chains.png"
