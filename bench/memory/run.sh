#!/bin/sh
# bench/memory: the daemon's memory and start-up time for generated trees of about 1e4, 1e5,
# 1e6 and 1e7 nodes (the default tree's shape: 50% files, 10% links, the rest directories).
# Writes bench/results/memory.csv, memory.md and memory.png.
#
# Per size:
#   - the tree's own accounting (cfs_tree_stats: arrays, arenas, hashes), from bench_treemem,
#     which loads the same spec in-process (the numbers `chainfsctl MNT stats` shows under
#     tree:, without a daemon's other memory);
#   - chainfs started on the spec: time from exec to a mount whose root answers (stat), then
#     VmRSS and VmHWM from /proc/PID/status, idle and (sizes <= 1e5) after a find over the
#     whole tree in kernel mode;
#   - bytes per node: (VmRSS - VmRSS of the same daemon serving an empty tree) / nodes.
#
# BUILD: build directory. BENCH_QUICK=1: sizes 1e4 and 1e5 only, one round, results in
# bench/results/tmp/quick. MEMORY_RUNS: start-ups per size (default 3; one for 1e7).
# MEMORY_MAX=1e6 skips 1e7 (which needs ~1.5 GB and ~30 s to load).
# MEMORY_BIG=1: the big trees instead, 1e7, 5e7 and 1e8 nodes (about 95 bytes a node: 9.5 GB
# and minutes to load for 1e8), one start-up each, results in memory_big.csv and .md; a size
# is skipped unless half the memory available holds it at 120 bytes a node (twice over: the
# in-process load and the daemon run one after the other, not at once).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. bench/walk/lib.sh

if [ "${BENCH_QUICK:-}" = 1 ]; then
	RUNS=${MEMORY_RUNS:-1} SIZES="1e4 1e5"
	OUT=bench/results/tmp/quick
	TMP=bench/results/tmp/quick/memory
else
	RUNS=${MEMORY_RUNS:-3} SIZES="1e4 1e5 1e6 1e7"
	[ "${MEMORY_MAX:-}" = 1e6 ] && SIZES="1e4 1e5 1e6"
	OUT=bench/results
	TMP=bench/results/tmp/memory
fi
NAME=memory
if [ "${MEMORY_BIG:-}" = 1 ]; then
	RUNS=1 SIZES="1e7 5e7 1e8" NAME=memory_big
	TMP=$TMP/big
fi
mkdir -p "$OUT" "$TMP"
for b in chainfs bench_treemem; do
	[ -x "$BUILD/$b" ] || make --no-print-directory BUILD="$BUILD" "$BUILD/$b"
done

# nodes = 1 + F * (1 + d + ... + d^(D-1)), d = directories per directory
spec_line() {
	case $1 in
	0) echo "dir /t" ;;
	1e4) echo "tree /t depth=4 fanout=20 files=50% links=10% seed=1" ;; # 11,702 with the root
	1e5) echo "tree /t depth=5 fanout=20 files=50% links=10% seed=1" ;; # 93,622: /tree's shape
	1e6) echo "tree /t depth=5 fanout=32 files=50% links=10% seed=1" ;; # 990,114
	1e7) echo "tree /t depth=6 fanout=37 files=57% links=10% seed=1" ;; # 10,043,763
	5e7) echo "tree /t depth=7 fanout=45 files=66% links=10% seed=1" ;; # 49,999,997
	1e8) echo "tree /t depth=6 fanout=50 files=53% links=10% seed=1" ;; # 100,035,952
	esac
}

# A 1e7 tree needs ~1 GB and tens of seconds to load.
avail_kb=$(awk '/MemAvailable/ { print $2 }' /proc/meminfo)
MOUNT_TIMEOUT=300
[ "$NAME" = memory_big ] && MOUNT_TIMEOUT=1800
# the default max_meta (half the RAM, 128 bytes a node and the names) holds ~90M nodes: the
# budget measured here is memory, so the accounting limit is lifted to all of it
BIG_OPTS=max_meta=100%
bench_init memory
W=$BENCH_WORK

status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

RAW=$TMP/memory_runs.csv
echo "size,round,nodes,tree_bytes,load_ns,inproc_rss_kb,start_ns,rss_kb,hwm_kb,rss_walked_kb,hwm_walked_kb,threads" >"$RAW"
t0=$(date +%s)
for size in 0 $SIZES; do
	if [ "$size" = 1e7 ] && [ "$avail_kb" -lt 6000000 ]; then
		bench_log "memory: 1e7 skipped: only $avail_kb kB available"
		continue
	fi
	need_kb=$(awk -v s="$size" 'BEGIN { printf "%d", s * 120 / 1024 }')
	if [ $((avail_kb / 2)) -lt "$need_kb" ]; then
		bench_log "memory: $size skipped: needs $need_kb kB, half of $avail_kb kB available is less"
		continue
	fi
	spec_line "$size" >"$W/$size.spec"
	# the tree's own accounting, in-process
	set -- $("$BUILD/bench_treemem" "$W/$size.spec")
	nodes=$1 tbytes=$5 load=$7 inrss=$(($9 - $8))
	n=$RUNS
	case $size in 1e7 | 5e7 | 1e8) n=1 ;; esac
	r=0
	while [ $r -lt "$n" ]; do
		drop_caches
		cfs_mount "$W/mnt" "$W/daemon.log" -o follow=kernel,$BIG_OPTS "$W/$size.spec"
		rss=$(status_kb "$DPID" VmRSS) hwm=$(status_kb "$DPID" VmHWM) thr=$(status_kb "$DPID" Threads)
		wr= wh=
		case $size in 0 | 1e4 | 1e5)
			timeout 300 find "$W/mnt" >/dev/null || bench_log "memory: find over $size failed"
			wr=$(status_kb "$DPID" VmRSS) wh=$(status_kb "$DPID" VmHWM)
			;;
		esac
		bench_umount "$W/mnt" "$DPID"
		echo "$size,$r,$nodes,$tbytes,$load,$inrss,$MOUNT_NS,$rss,$hwm,$wr,$wh,$thr" >>"$RAW"
		r=$((r + 1))
	done
	bench_log "memory: $size ($nodes nodes) done ($(($(date +%s) - t0))s)"
done

CSV=$OUT/$NAME.csv
{
	echo "size,nodes,tree_bytes,tree_bytes_per_node,load_ms,start_ms,start_min_ms,rss_kb,hwm_kb,rss_bytes_per_node,hwm_bytes_per_node,rss_walked_kb,runs"
	base=$(awk -F, '$1 == "0" { print $8 }' "$RAW" | median)
	basehwm=$(awk -F, '$1 == "0" { print $9 }' "$RAW" | median)
	for size in $SIZES; do
		sel=$(awk -F, -v s="$size" '$1 == s' "$RAW")
		[ -n "$sel" ] || continue
		nodes=$(echo "$sel" | head -1 | cut -d, -f3)
		tb=$(echo "$sel" | head -1 | cut -d, -f4)
		load=$(echo "$sel" | head -1 | cut -d, -f5)
		st=$(echo "$sel" | cut -d, -f7 | median)
		stmin=$(echo "$sel" | cut -d, -f7 | sort -n | head -1)
		rss=$(echo "$sel" | cut -d, -f8 | median)
		hwm=$(echo "$sel" | cut -d, -f9 | median)
		wr=$(echo "$sel" | cut -d, -f10 | grep . | median || true)
		echo "$size $nodes $tb $load $st $stmin $rss $hwm $base $basehwm ${wr:-NaN} $(echo "$sel" | wc -l)" |
			awk '{ printf "%s,%d,%.0f,%.1f,%.0f,%.0f,%.0f,%d,%d,%.1f,%.1f,%s,%d\n", $1, $2, $3, $3 / $2, $4 / 1e6,
				$5 / 1e6, $6 / 1e6, $7, $8, ($7 - $9) * 1024 / $2, ($8 - $10) * 1024 / $2, $11, $12 }'
	done
} >"$CSV"

MD=$OUT/$NAME.md
{
	echo "# bench/memory: daemon memory and start-up time per tree size"
	echo
	echo "$(machine_line). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "Trees: \`tree /t depth=D fanout=F files=50% links=10% seed=1\` (1e7: files=57% to land"
	echo "near 10^7; 5e7: depth=7 fanout=45 files=66%; 1e8: depth=6 fanout=50 files=53%), 40% directories"
	echo "as in the default /tree. chainfs -o follow=kernel,$BIG_OPTS (the default max_meta holds ~90M nodes),"
	echo "median of $RUNS start-ups per size (1 from 1e7 up), caches dropped before each."
	echo "start = exec of chainfs to a mount whose root answers stat (spec parse + build + mount)."
	echo "RSS = VmRSS of the idle daemon after mounting; HWM = VmHWM (peak)."
	echo "bytes/node = (RSS − RSS of the same daemon serving an empty tree, $(awk -F, '$1 == "0" { print $8 }' "$RAW" | median) kB) / nodes."
	echo "tree bytes = the tree's own accounting (cfs_tree_stats().bytes, loaded in-process by"
	echo "bench_treemem: what \`chainfsctl MNT stats\` shows under tree:); load = that in-process spec load."
	echo "\"RSS after find\": after a find over the whole mount (kernel mode; sizes up to 1e5 only)."
	echo
	echo "| size | nodes | tree bytes/node | RSS kB | RSS bytes/node | HWM kB | HWM bytes/node | RSS after find kB | in-process load ms | start ms (median) | start ms (min) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk -F, 'NR > 1 { printf "| %s | %d | %.1f | %d | %.1f | %d | %.1f | %s | %.0f | %.0f | %.0f |\n", $1, $2, $4, $8, $10, $9, $11, $12, $5, $6, $7 }' "$CSV"
	echo
	[ "$NAME" = memory ] && echo "![memory.png](memory.png)"
} >"$MD"
if [ "$NAME" = memory_big ]; then
	cat "$MD"
	bench_log "memory: wrote $CSV $MD"
	exit 0
fi

# Memory per written 4 KiB page: tree accounting and RSS, dense and 1 MiB apart.
PAGES=65536
[ "${BENCH_QUICK:-}" = 1 ] && PAGES=8192
PCSV=$OUT/memory_pages.csv
{
	echo "layout,pages,tree_bytes_per_page,rss_bytes_per_page,write_ns_per_page"
	for layout in dense sparse; do
		"$BUILD/bench_treemem" --pages "$PAGES" $layout | tr ' ' ,
	done
} >"$PCSV"
{
	echo
	echo "Written file data, $PAGES pages of 4 KiB through cfs_tree_write in one process"
	echo "(dense: back to back in one file; sparse: 1 MiB apart, each page in its own group):"
	echo
	echo "| layout | pages | tree bytes/page | RSS bytes/page | write ns/page |"
	echo "|---|---:|---:|---:|---:|"
	awk -F, 'NR > 1 { printf "| %s | %d | %.1f | %.1f | %.0f |\n", $1, $2, $3, $4, $5 }' "$PCSV"
} >>"$MD"

if command -v gnuplot >/dev/null; then
	awk -F, 'NR > 1 { print $2, $4, $10, $11, $6 }' "$CSV" >"$W/mem.dat"
	gnuplot <<-EOF
		set terminal pngcairo size 1200,500 font ",10"
		set output "$OUT/memory.png"
		set multiplot layout 1,2 title "chainfs memory and start-up per tree size"
		set logscale x
		set grid
		set xlabel "nodes"
		set key top left
		set title "bytes per node"
		set ylabel "bytes"
		set yrange [0:*]
		plot "$W/mem.dat" using 1:2 with linespoints lw 2 title "tree accounting", \
		     "$W/mem.dat" using 1:3 with linespoints lw 2 title "daemon RSS (minus empty)", \
		     "$W/mem.dat" using 1:4 with linespoints title "daemon HWM (minus empty)", \
		     120 with lines dt 2 title "target 120"
		set title "start to answering mount"
		set ylabel "ms"
		set logscale y
		set yrange [*:*]
		plot "$W/mem.dat" using 1:5 with linespoints lw 2 title "chainfs start (median)", \
		     2000 with lines dt 2 title "target 2 s (1e6)"
		unset multiplot
	EOF
fi
cat "$MD"
bench_log "memory: wrote $CSV $MD $OUT/memory.png"
