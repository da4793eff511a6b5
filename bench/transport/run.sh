#!/bin/sh
# bench/transport: chainfs's request transports side by side (issue 16, FUSE over io_uring:
# the round trip made cheaper without burning a CPU). Writes bench/results/transport.csv
# (medians per workload, variant and phase), transport_rtt.csv (round-trip quantiles),
# transport_rtt_hist.csv (the round-trip histograms, summed over rounds), transport.md and
# transport_rtt.png; raw runs and daemon logs stay in bench/results/tmp/transport.
#
# Variants (names used everywhere):
#   dev-spin0      -o follow=kernel,spin=0                   /dev/fuse, never busy-polls
#   dev-spin50     -o follow=kernel                          /dev/fuse, the default 50 µs spin
#   uring-spin0    -o follow=kernel,transport=uring,spin=0   FUSE over io_uring, no spin
#   uring-spin50   -o follow=kernel,transport=uring          FUSE over io_uring, 50 µs spin
#   uring-pinned   uring-spin0 with the daemon (taskset on the mount command: it inherits the
#                  mask) and the workload both on CPU 0: a diagnostic, the cost floor without
#                  cross-CPU wake-ups
# The uring variants are left out, with a log line, on a kernel without FUSE over io_uring
# (bench_uring_on puts the module parameter back when the run ends).
#
# Workloads, each on a fresh mount (a new daemon) after dropping the caches, over the default
# embedded tree (/tree, ~94k nodes), run in the mount's root, timed by bench_timeit with the
# daemon's CPU (-p):
#   find          find tree, cold then warm (the same command again on that mount)
#   ls_lR         ls -lR tree, cold then warm
#   tar           tar cf - tree | wc -c, cold
#   find4         4 concurrent find tree, cold
#   server_chain  -o follow=server (same transport and spin) over a spec of CHAIN_K distinct
#                 1000-link chains (`chain /c1000/kI 1000 ../target`), stat -L of each once
#                 (one stat process), cold: the daemon follows each chain itself
# rtt: bench_rtt (bench/transport/rtt.c) on a one-file mount with attr_timeout=0 and
# entry_timeout=0 added, so that each fstat() is one GETATTR round trip: RTT_N timed calls
# per run, quantiles and a log-bucket histogram; the daemon's CPU per call from bench_timeit.
# Each round runs every variant once per workload (and once for rtt), in rotating order.
# The tables and the plot come from bench/transport/report.sh (rerunnable on the CSVs).
#
# BUILD: build directory (default build). TRANSPORT_RUNS: rounds (default 5).
# TRANSPORT_RTT_N: fstat() calls per rtt run (default 100000, ~1.5-3 s here).
# BENCH_QUICK=1: a smoke run on a small tree, one round, 5000 calls, results in
# bench/results/tmp/quick (~20 s). A round takes about 2.7 minutes on a quiet 2-vCPU machine
# (TRANSPORT_RUNS=3: 8 minutes; the default 5: about 14).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. bench/walk/lib.sh

QUICK=${BENCH_QUICK:-}
if [ "$QUICK" = 1 ]; then
	RUNS=${TRANSPORT_RUNS:-1} RTT_N=${TRANSPORT_RTT_N:-5000} CHAIN_K=20 TMO=60
	OUT=bench/results/tmp/quick
	TMP=bench/results/tmp/quick/transport
else
	RUNS=${TRANSPORT_RUNS:-5} RTT_N=${TRANSPORT_RTT_N:-100000} CHAIN_K=300 TMO=600
	OUT=bench/results
	TMP=bench/results/tmp/transport
fi
mkdir -p "$OUT" "$TMP"
for b in chainfs bench_timeit bench_rtt; do
	[ -x "$BUILD/$b" ] || make --no-print-directory BUILD="$BUILD" "$BUILD/$b"
done
TIMEIT=$BUILD/bench_timeit
command -v taskset >/dev/null || bench_die "transport: taskset is missing (util-linux)"

bench_init transport
W=$BENCH_WORK
mkdir -p "$W/mnt" "$W/spec"

VARIANTS="dev-spin0 dev-spin50 uring-spin0 uring-spin50 uring-pinned"
if ! bench_uring_on; then
	bench_log "transport: no FUSE over io_uring in this kernel: the uring variants left out"
	VARIANTS="dev-spin0 dev-spin50"
fi

# --- specs -----------------------------------------------------------------------------
if [ "$QUICK" = 1 ]; then
	echo 'tree /tree depth=3 fanout=10 files=50% links=10% seed=1' >"$W/spec/tree.spec"
	TREE_SPEC=$W/spec/tree.spec
else
	TREE_SPEC= # embedded
fi
CHAIN_SPEC=$W/spec/chains.spec
{
	printf '%s\n' 'file /target "you reached the end of the chain\n"'
	awk -v k="$CHAIN_K" 'BEGIN { for (i = 0; i < k; i++) printf "chain /c1000/k%d 1000 ../target\n", i }'
} >"$CHAIN_SPEC"
awk -v k="$CHAIN_K" 'BEGIN { for (i = 0; i < k; i++) printf "c1000/k%d\n", i }' >"$W/spec/chains.list"
printf '%s\n' 'file /f "round trip\n"' >"$W/spec/rtt.spec"

# outputs on tmpfs: writing them never waits for a disk
tmpfs_mount "$W/out" 1g

# --- variants --------------------------------------------------------------------------
# variant_opts VARIANT FOLLOW: the -o list
variant_opts() {
	case $1 in
	dev-spin0) echo "follow=$2,spin=0" ;;
	dev-spin50) echo "follow=$2" ;;
	uring-spin0 | uring-pinned) echo "follow=$2,transport=uring,spin=0" ;;
	uring-spin50) echo "follow=$2,transport=uring" ;;
	*) bench_die "unknown variant $1" ;;
	esac
}
# pin_of VARIANT: the command prefix that pins (daemon and workload alike)
pin_of() { case $1 in *-pinned) echo "taskset -c 0" ;; esac; }

# start VARIANT FOLLOW EXTRA_OPTS SPEC: mount on $MNT; sets DPID and PIN.
start() {
	PIN=$(pin_of "$1")
	# one mount point for all: ls -lR shows link bodies, absolute ones hold the mount's path
	MNT=$W/mnt/cfs
	_o=$(variant_opts "$1" "$2")${3:+,$3}
	# shellcheck disable=SC2086
	bench_daemon "$MNT" "$TMP/daemon.log" "chainfs $1" $PIN "$BUILD/chainfs" -f -o "$_o" \
		${4:+"$4"} "$MNT"
	# setsid and taskset exec: DPID is the daemon itself
	[ "$(cat "/proc/$DPID/comm" 2>/dev/null)" = chainfs ] ||
		bench_die "pid $DPID is $(cat "/proc/$DPID/comm" 2>/dev/null), not chainfs"
}
stop() {
	bench_umount "$MNT" "$DPID"
	MNT= DPID=
}

prewarm_tools() {
	for t in find ls tar stat wc cat sort cksum xargs sh; do
		command -v $t >/dev/null && $t --version >/dev/null 2>&1 || true
	done
	$PIN "$TIMEIT" -- true >/dev/null
}

# --- workloads -------------------------------------------------------------------------
workload_cmd() {
	case $1 in
	find) echo 'find tree >"$O" 2>"$O.err"' ;;
	ls_lR) echo 'ls -lR tree >"$O" 2>"$O.err"' ;;
	tar) echo 'tar cf - tree 2>"$O.err" | wc -c >"$O"' ;;
	find4) echo 'for i in 1 2 3 4; do find tree >"$O.$i" 2>"$O.err" & done; wait; cat "$O.1" >"$O"' ;;
	server_chain) echo "xargs -a '$W/spec/chains.list' stat -L -c '%n %s' >\"\$O\" 2>\"\$O.err\"" ;;
	esac
}
phases_of() { case $1 in find | ls_lR) echo "cold warm" ;; *) echo cold ;; esac; }
WORKLOADS="find ls_lR tar find4 server_chain"

# timed WORKLOAD OUTFILE: one run in $MNT; prints bench_timeit's line + an output check.
timed() {
	_cmd="cd '$MNT' && O='$2' && $(workload_cmd "$1")"
	# shellcheck disable=SC2086
	_r=$($PIN "$TIMEIT" -t "$TMO" -p "$DPID" -- "$_cmd")
	# order-free: lines and a checksum of the sorted output, the same for every variant
	echo "$_r $(LC_ALL=C sort "$2" | cksum | awk '{ print $1 "-" $2 }')"
}

RAW=$TMP/transport_runs.csv
echo "workload,variant,round,phase,wall_ns,client_user_ns,client_sys_ns,daemon_user_ns,daemon_sys_ns,busy_ns,status,out_check" >"$RAW"

# one_run WORKLOAD VARIANT ROUND
one_run() {
	drop_caches
	if [ "$1" = server_chain ]; then
		start "$2" server max_total=2000,max_nest=40 "$CHAIN_SPEC"
	else
		start "$2" kernel "" "$TREE_SPEC"
	fi
	prewarm_tools
	for phase in $(phases_of "$1"); do
		line=$(timed "$1" "$W/out/o")
		echo "$1,$2,$3,$phase,$(echo "$line" | tr ' ' ',')" >>"$RAW"
		st=$(echo "$line" | awk '{ print $7 }')
		[ "$st" = 0 ] || bench_log "  $2 $1 $phase: exit status $st"
		if [ "$st" = 124 ]; then break; fi
	done
	stop
}

RTT_RAW=$TMP/transport_rtt_runs.csv
RTT_HRAW=$TMP/transport_rtt_hist_runs.csv
echo "variant,round,calls,errors,p50_ns,p90_ns,p99_ns,p999_ns,max_ns,mean_ns,wall_ns,client_user_ns,client_sys_ns,daemon_user_ns,daemon_sys_ns,busy_ns,status" >"$RTT_RAW"
echo "variant,round,lo_ns,hi_ns,count" >"$RTT_HRAW"

# rtt_run VARIANT ROUND
rtt_run() {
	drop_caches
	start "$1" kernel attr_timeout=0,entry_timeout=0 "$W/spec/rtt.spec"
	prewarm_tools
	# shellcheck disable=SC2086
	_tl=$($PIN "$TIMEIT" -t "$TMO" -p "$DPID" -- \
		"'$BUILD/bench_rtt' -n $RTT_N -H '$W/out/hist' '$MNT/f' >'$W/out/rtt'")
	stop
	_st=$(echo "$_tl" | awk '{ print $7 }')
	[ "$_st" = 0 ] || bench_log "  $1 rtt: exit status $_st"
	echo "$1,$2,$(tr ' ' , <"$W/out/rtt"),$(echo "$_tl" | tr ' ' ,)" >>"$RTT_RAW"
	awk -v v="$1" -v r="$2" '{ print v "," r "," $1 "," $2 "," $3 }' "$W/out/hist" >>"$RTT_HRAW"
}

t_start=$(date +%s)
bench_log "transport: $RUNS rounds of $VARIANTS; workloads $WORKLOADS rtt"
r=0
while [ $r -lt "$RUNS" ]; do
	wi=0
	for w in $WORKLOADS rtt; do
		# shellcheck disable=SC2086
		for v in $(rotate $((r + wi)) $VARIANTS); do
			if [ $w = rtt ]; then rtt_run "$v" $r; else one_run $w "$v" $r; fi
		done
		wi=$((wi + 1))
	done
	r=$((r + 1))
	bench_log "transport: round $r/$RUNS done ($(($(date +%s) - t_start))s)"
done

# --- medians ---------------------------------------------------------------------------
CSV=$OUT/transport.csv
awk -F, "$BENCH_AWK_STATS"'NR > 1 {
	k = $1 "," $2 "," $4
	n[k]++; ok[k] += ($11 == 0)
	wall[k, n[k]] = $5 / 1e6
	cli[k, n[k]] = ($6 + $7) / 1e6
	dmn[k, n[k]] = ($8 + $9) / 1e6
	x = $12 # (an assignment to chk[k] would create it before the test)
	if (k in chk && chk[k] != x) x = "varies"
	chk[k] = x
	if (!(k in seen)) { seen[k] = 1; order[++m] = k }
}
END {
	for (i = 1; i <= m; i++) {
		k = order[i]
		printf "%s,%d,%d,%.2f,%.2f,%.2f,%.1f,%.1f,%s\n", k, n[k], ok[k], med(wall, k, n[k]),
			mn(wall, k, n[k]), mx(wall, k, n[k]), med(cli, k, n[k]), med(dmn, k, n[k]), chk[k]
	}
}' "$RAW" >"$W/csv.body"
# workloads in run order, variants in the order above
{
	echo "workload,variant,phase,runs,ok_runs,wall_ms,wall_min_ms,wall_max_ms,client_cpu_ms,daemon_cpu_ms,out_check"
	for w in $WORKLOADS; do for ph in cold warm; do for v in $VARIANTS; do
		awk -F, -v w=$w -v v=$v -v p=$ph '$1 == w && $2 == v && $3 == p' "$W/csv.body"
	done; done; done
} >"$CSV"

# rtt: per variant, the median over rounds of each quantile, the largest max, the daemon's
# and the caller's CPU per call; the histograms summed over rounds.
RCSV=$OUT/transport_rtt.csv
HCSV=$OUT/transport_rtt_hist.csv
{
	echo "variant,runs,calls_per_run,errors,p50_us,p90_us,p99_us,p999_us,max_us,mean_us,client_cpu_us_per_call,daemon_cpu_us_per_call"
	for v in $VARIANTS; do
		sel=$(awk -F, -v v="$v" 'NR > 1 && $1 == v' "$RTT_RAW")
		[ -n "$sel" ] || continue
		q() { echo "$sel" | awk -F, -v c="$1" '{ print $c / 1000 }' | median; }
		printf '%s,%d,%d,%d,%.2f,%.2f,%.2f,%.2f,%.1f,%.2f,%.2f,%.2f\n' "$v" \
			"$(echo "$sel" | wc -l)" "$(echo "$sel" | head -1 | cut -d, -f3)" \
			"$(echo "$sel" | awk -F, '{ e += $4 } END { print e + 0 }')" \
			"$(q 5)" "$(q 6)" "$(q 7)" "$(q 8)" \
			"$(echo "$sel" | awk -F, '$9 > m { m = $9 } END { print m / 1000 }')" "$(q 10)" \
			"$(echo "$sel" | awk -F, '{ print ($12 + $13) / $3 / 1000 }' | median)" \
			"$(echo "$sel" | awk -F, '{ print ($14 + $15) / $3 / 1000 }' | median)"
	done
} >"$RCSV"
{
	echo "variant,lo_us,hi_us,count,cdf"
	for v in $VARIANTS; do
		awk -F, -v v="$v" 'NR > 1 && $1 == v { c[$3] += $5; hi[$3] = $4; t += $5 }
		END { for (lo in c) print lo, hi[lo], c[lo], t }' "$RTT_HRAW" | sort -n |
			awk -v v="$v" '{ s += $3; printf "%s,%.3f,%.3f,%d,%.6f\n", v, $1 / 1000, $2 / 1000, $3, s / $4 }'
	done
} >"$HCSV"

# --- Markdown and plot -----------------------------------------------------------------
[ -n "$TREE_SPEC" ] && TREE="a small quick-run tree" || TREE="the embedded /tree (~94k nodes)"
MD=$OUT/transport.md
sh bench/transport/report.sh "$OUT" "$RUNS" "$RTT_N" "$CHAIN_K" "$TREE" "$(($(date +%s) - t_start))"
cat "$MD"
bench_log "transport: wrote $CSV $RCSV $HCSV $MD $OUT/transport_rtt.png in $(($(date +%s) - t_start))s"
