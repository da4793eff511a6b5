#!/bin/sh
# bench/walk/report.sh CSV REQ_CSV PINNED_CSV MD PNG NODES DIRS BIG_NODES BIG_DIRS RUNS BIG_RUNS
# Markdown tables and the plot from bench/walk's results (run.sh calls it; it can be rerun
# alone on the CSVs of an earlier run).
set -eu
CSV=$1 REQ=$2 PIN=$3 MD=$4 PNG=$5
NODES=$6 DIRS=$7 BNODES=$8 BDIRS=$9
shift 9
RUNS=$1 BRUNS=$2
cd "$(dirname "$0")/../.."
. bench/walk/lib.sh
CONTENDERS="tmpfs bindfs cfs-kernel cfs-collapse cfs-server cfs-libfuse cfs-libfuse_mt cfs-nospin cfs-ro cfs-uring"

# table TREE PHASE MODE: one row per workload, one column per contender.
# MODE: ms (median wall), tmpfs or bindfs (ratio of medians to that contender).
table() {
	awk -F, -v tree="$1" -v phase="$2" -v mode="$3" -v cs="$CONTENDERS" '
	NR == 1 { next }
	$1 == tree && $4 == phase {
		v[$2, $3] = $7; okr[$2, $3] = $6 "/" $5
		if (!($2 in seen)) { seen[$2] = 1; wl[++n] = $2 }
		have[$3] = 1
	}
	END {
		nc = split(cs, c, " ")
		hdr = "| workload |"; sep = "|---|"
		for (j = 1; j <= nc; j++) if (have[c[j]] && !(mode != "ms" && c[j] == mode)) {
			hdr = hdr " " c[j] " |"; sep = sep "---:|"; use[j] = 1
		}
		print hdr; print sep
		for (i = 1; i <= n; i++) {
			w = wl[i]; line = "| " w " |"
			for (j = 1; j <= nc; j++) {
				if (!use[j]) continue
				if (!((w, c[j]) in v)) { line = line " – |"; continue }
				x = v[w, c[j]]
				if (mode == "ms") {
					cell = (x >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x))
					split(okr[w, c[j]], q, "/")
					if (q[1] != q[2]) cell = cell " (" q[1] "/" q[2] " ok)"
				} else {
					b = v[w, mode]
					cell = ((w, mode) in v && b > 0) ? sprintf("%.2f", x / b) : "–"
				}
				line = line " " cell " |"
			}
			print line
		}
	}' "$CSV"
}

# cpu TREE WORKLOAD: where the time went, per contender and phase.
cpu() {
	awk -F, -v tree="$1" -v w="$2" '
	NR > 1 && $1 == tree && $2 == w {
		printf "| %s | %s | %.0f | %.0f | %.0f | %.0f |\n", $3, $4, $7, $10, $11, $12
	}' "$CSV"
}

{
	echo "# bench/walk: the same trees through chainfs, bindfs and tmpfs"
	echo
	echo "$(machine_line). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "Trees: \`/tree\` = $NODES nodes ($DIRS directories), \`/big\` = $BNODES nodes ($BDIRS"
	echo "directories; \`tree /big depth=4 fanout=1000 files=99% links=0% seed=7\` in a full run)."
	echo "Median wall time over rounds; in each round every contender runs each of its workloads"
	echo "once, in rotating order. Rounds per pair (up to $RUNS on /tree, $BRUNS on /big) are in the"
	echo "table \"rounds\" at the end. cold = caches dropped and a fresh mount (a new"
	echo "daemon); warm = the same command again on that mount. tmpfs has no cold state (its"
	echo "dentries and pages are the data), so its cold and warm are the same thing. \"(k/n ok)\""
	echo "marks workloads whose command failed or timed out in some rounds. cfs-server runs"
	echo "only the workloads that stay bounded when links are followed (\`/tree\`'s links to"
	echo "directories expand into millions of paths): stat_chains, readdir_wide and \`/big\`"
	echo "(no links)."
	echo
	for t in default big; do
		for ph in cold warm; do
			echo "### $t tree, $ph: median wall ms"
			echo
			table $t $ph ms
			echo
		done
	done
	for base in tmpfs bindfs; do
		for t in default big; do
			for ph in cold warm; do
				echo "### $t tree, $ph: ratio to $base (median / median; < 1 is faster than $base)"
				echo
				table $t $ph $base
				echo
			done
		done
	done
	echo "### Where the time goes: find and ls -lR over /tree (median ms)"
	echo
	echo "client = the workload's own CPU (user + system, rusage); daemon = the daemon's CPU"
	echo "(/proc/PID/stat, 10 ms ticks); others = every other non-idle CPU time on the machine"
	echo "during the run (/proc/stat: kernel threads, interrupts, other tenants)."
	echo
	echo "| contender | phase | wall | client CPU | daemon CPU | others' CPU |"
	echo "|---|---|---:|---:|---:|---:|"
	cpu default find
	echo
	echo "| contender (ls -lR) | phase | wall | client CPU | daemon CPU | others' CPU |"
	echo "|---|---|---:|---:|---:|---:|"
	cpu default ls_lR
	echo
	# Output check: cold runs of the same workload should print the same bytes everywhere.
	echo "### Same tree? Outputs that differ from tmpfs (cksum of the sorted output; lines-bytes past 200k lines)"
	echo
	echo "Expected differences: kernel mode shows absolute link targets rewritten relative to the"
	echo "link (-o abslinks=inroot; the tmpfs copy keeps them absolute), so \`ls -lR\` differs; collapse"
	echo "mode answers readlink with the end of the chain (or an error for a dangling link), so"
	echo "\`ls -lR\`, \`tar\` and \`stat -L\` of chains differ."
	echo
	awk -F, 'NR > 1 && $4 == "cold" { k = $1 "," $2; c[k, $3] = $13; if (!(k in s)) { s[k] = 1; o[++n] = k }; cs[$3] = 1 }
	END {
		bad = 0
		for (i = 1; i <= n; i++) for (x in cs) if ((o[i], x) in c && c[o[i], x] != c[o[i], "tmpfs"]) {
			split(o[i], p, ","); printf "- %s / %s: %s differs (%s vs tmpfs %s)\n", p[1], p[2], x, c[o[i], x], c[o[i], "tmpfs"]; bad++ }
		if (!bad) print "- none: every contender printed exactly what tmpfs printed."
	}' "$CSV"
	echo
	if [ -s "$REQ" ]; then
		echo "### FUSE requests per workload (daemon run with -d; one cold and one warm run)"
		echo
		echo "\"per dir\": requests per directory walked. Wall times here are slowed by the debug"
		echo "log and are not the benchmark's."
		echo
		echo "| tree | workload | contender | phase | requests | per dir | opcodes |"
		echo "|---|---|---|---|---:|---:|---|"
		awk -F, -v d="$DIRS" -v bd="$BDIRS" 'NR > 1 {
			nd = ($1 == "big") ? bd : d
			gsub(/;/, ", ", $7)
			pd = ($2 ~ /^(find|find_f|ls_lR|du_s|tar|find4|big_find)$/) ? sprintf("%.2f", $6 / nd) : "–"
			printf "| %s | %s | %s | %s | %d | %s | %s |\n", $1, $2, $3, $4, $6, pd, $7 }' "$REQ"
		echo
	fi
	if [ -s "$PIN" ]; then
		echo "### One CPU or two: cold and warm find over /tree, daemon and walk pinned to CPU 0"
		echo
		echo "Medians over $(awk -F, 'NR > 1 { print $2 }' "$PIN" | sort -u | wc -l) interleaved rounds (ms). Pinned (taskset: the daemon's threads and"
		echo "the find on CPU 0), a request never has to wake the other vCPU."
		echo
		echo "| variant | cold wall | cold client CPU | cold daemon CPU | warm wall | warm client CPU | warm daemon CPU |"
		echo "|---|---:|---:|---:|---:|---:|---:|"
		for v in unpinned pinned-cpu0 unpinned-loop=libfuse pinned-cpu0-loop=libfuse; do
			grep -q "^$v," "$PIN" || continue
			row="| $v |"
			for ph in cold warm; do
				for f in 4 5 7; do
					x=$(awk -F, -v v="$v" -v ph="$ph" -v f="$f" 'NR > 1 && $1 == v && $3 == ph {
						if (f == 4) print $4 / 1e6; else if (f == 5) print ($5 + $6) / 1e6; else print ($7 + $8) / 1e6 }' "$PIN" | median)
					row="$row $(printf '%.0f' "${x:-0}") |"
				done
			done
			echo "$row"
		done
		echo
	fi
	echo "### Rounds per workload and contender"
	echo
	awk -F, -v cs="$CONTENDERS" 'NR > 1 && $4 == "cold" { v[$1 "/" $2, $3] = $5; if (!(($1 "/" $2) in s)) { s[$1 "/" $2] = 1; o[++n] = $1 "/" $2 } }
	END { nc = split(cs, c, " "); h = "| tree/workload |"; sep = "|---|"
		for (j = 1; j <= nc; j++) { h = h " " c[j] " |"; sep = sep "---:|" }
		print h; print sep
		for (i = 1; i <= n; i++) { l = "| " o[i] " |"; for (j = 1; j <= nc; j++) l = l " " (((o[i], c[j]) in v) ? v[o[i], c[j]] : "–") " |"; print l } }' "$CSV"
	echo
	echo "![walk.png](walk.png)"
} >"$MD"

# Plot: median wall per workload and contender, cold and warm, log scale.
if command -v gnuplot >/dev/null; then
	DAT=$(mktemp)
	for ph in cold warm; do
		awk -F, -v phase="$ph" -v cs="$CONTENDERS" '
		NR > 1 && $4 == phase { v[$2, $3] = $7; if (!($2 in s)) { s[$2] = 1; wl[++n] = $2 } }
		END { nc = split(cs, c, " "); for (i = 1; i <= n; i++) { l = wl[i]; for (j = 1; j <= nc; j++) l = l " " (((wl[i], c[j]) in v) ? v[wl[i], c[j]] : "NaN"); print l } }' "$CSV" >"$DAT.$ph"
	done
	gnuplot <<-EOF
		set terminal pngcairo size 1400,900 font ",10"
		set output "$PNG"
		set multiplot layout 2,1 title "walks: median wall time per workload (log scale; lower is better)"
		set style data histogram
		set style histogram clustered gap 1
		set style fill solid 0.8 border -1
		set logscale y
		set grid ytics
		set ylabel "ms"
		set key outside right
		set xtics rotate by -20
		set title "cold (fresh mount, caches dropped)"
		plot for [i=2:8] "$DAT.cold" using i:xtic(1) title word("$CONTENDERS", i-1)
		set title "warm (second run on the same mount)"
		plot for [i=2:8] "$DAT.warm" using i:xtic(1) title word("$CONTENDERS", i-1)
		unset multiplot
	EOF
	rm -f "$DAT" "$DAT.cold" "$DAT.warm"
fi
