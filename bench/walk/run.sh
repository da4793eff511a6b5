#!/bin/sh
# bench/walk: the same trees walked through chainfs (every follow mode and request loop),
# through bindfs, and on tmpfs directly. Writes bench/results/walk.csv (medians),
# walk_requests.csv (FUSE requests per workload), walk.md and walk.png; raw runs, daemon
# logs and the perf report stay in bench/results/tmp/walk.
#
# Trees:   default  the embedded default tree: /tree (~94k nodes), /wide (10k), /chains
#          big      tree /big depth=4 fanout=1000 files=99% links=0% (1,111,001 nodes)
# Contenders (names used everywhere):
#   tmpfs            the tree materialized on tmpfs (chainfs --materialize): the kernel alone
#   bindfs           bindfs (default options) over that tmpfs copy
#   cfs-kernel       chainfs -o follow=kernel (default loop: pollcore)
#   cfs-collapse     chainfs -o follow=collapse
#   cfs-server       chainfs -o follow=server: only where the walk stays bounded (no /tree:
#                    its links to directories expand into millions of paths)
#   cfs-libfuse      chainfs -o loop=libfuse (libfuse's single-threaded loop), follow=kernel
#   cfs-libfuse_mt   chainfs -o loop=libfuse_mt, follow=kernel
#   cfs-nospin       chainfs -o follow=kernel,spin=0: pollcore without its busy-poll window,
#                    so that the loops are also compared with the spin set apart
#   cfs-ro           chainfs -o follow=kernel,ro: the kernel keeps a directory's atime
#                    after an uncached READDIR only on a read-only mount (find, ls -lR)
#   cfs-uring        chainfs -o follow=kernel,transport=uring,spin=0: FUSE over io_uring,
#                    no spin (find, ls -lR), beside cfs-nospin (/dev/fuse, no spin) and
#                    cfs-kernel (/dev/fuse, the default spin); left out, with a log line, on a
#                    kernel without it. The module parameter is put back when the run ends.
# Every run: drop caches, fresh mount (a new daemon), tools re-read, the workload timed once
# (cold), then again on the same mount (warm). Rounds interleave contenders in rotating order.
# Which contender runs which workload is rounds_for() below; every pair runs 5 rounds (the
# median of 5), which takes the whole `make bench` to about 70 minutes on this 2-vCPU machine.
#
# BUILD: build directory (default build). BENCH_QUICK=1: a smoke run on small trees, one round,
# results in bench/results/tmp/quick. WALK_RUNS / WALK_RUNS2 / WALK_BIG_RUNS / WALK_BIG_LS_RUNS
# override the rounds (5 / 5 / 5 / 5); WALK_PROFILE=0 skips the request counts and the
# perf/pinning diagnostics.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. bench/walk/lib.sh

QUICK=${BENCH_QUICK:-}
if [ "$QUICK" = 1 ]; then
	RUNS=${WALK_RUNS:-1} RUNS2=${WALK_RUNS2:-1} BIG_RUNS=${WALK_BIG_RUNS:-1} TMO=60
	BIG_LS_RUNS=${WALK_BIG_LS_RUNS:-1}
	OUT=bench/results/tmp/quick
	TMP=bench/results/tmp/quick/walk
else
	RUNS=${WALK_RUNS:-5} RUNS2=${WALK_RUNS2:-5} BIG_RUNS=${WALK_BIG_RUNS:-5} TMO=600
	BIG_LS_RUNS=${WALK_BIG_LS_RUNS:-5}
	OUT=bench/results
	TMP=bench/results/tmp/walk
fi
PROFILE=${WALK_PROFILE:-1}
mkdir -p "$OUT" "$TMP"
for b in chainfs bench_timeit; do
	[ -x "$BUILD/$b" ] || make --no-print-directory BUILD="$BUILD" "$BUILD/$b"
done
command -v bindfs >/dev/null || bench_die "walk: bindfs is missing: make deps"
TIMEIT=$BUILD/bench_timeit

bench_init walk
W=$BENCH_WORK
mkdir -p "$W/mnt" "$W/spec"

# --- the trees -------------------------------------------------------------------------
# default: the embedded tree (a small look-alike in a quick run); big: 1e6 nodes, no links,
# so that every follow mode (server too) walks it.
if [ "$QUICK" = 1 ]; then
	cat >"$W/spec/default.spec" <<-'EOF'
		dir /chains
		file /chains/target "end\n"
		chain /chains/5 5 target
		chain /chains/40 40 target
		chain /chains/41 41 target
		wide /wide 300 prefix=f
		tree /tree depth=3 fanout=10 files=50% links=10% seed=1
	EOF
	DEFAULT_SPEC=$W/spec/default.spec
	echo 'tree /big depth=2 fanout=100 files=99% links=0% seed=7' >"$W/spec/big.spec"
else
	DEFAULT_SPEC= # embedded
	echo 'tree /big depth=4 fanout=1000 files=99% links=0% seed=7' >"$W/spec/big.spec"
fi
BIG_SPEC=$W/spec/big.spec
spec_of() { if [ "$1" = big ]; then echo "$BIG_SPEC"; else echo "$DEFAULT_SPEC"; fi; }

bench_log "walk: materializing the trees on tmpfs"
tmpfs_mount "$W/tmpfs" 12g
# outputs go to tmpfs too: writing them never waits for a disk
mkdir -p "$W/tmpfs/out"
ln -s "$W/tmpfs/out" "$W/out"
for set in default big; do
	mkdir "$W/tmpfs/$set"
	# shellcheck disable=SC2046
	"$BUILD/chainfs" --materialize $(spec_of $set) "$W/tmpfs/$set" ||
		bench_die "materialize $set failed"
done
NODES_DEFAULT=$(find "$W/tmpfs/default/tree" | wc -l)
NODES_BIG=$(find "$W/tmpfs/big/big" | wc -l)
DIRS_DEFAULT=$(find "$W/tmpfs/default/tree" -type d | wc -l)
DIRS_BIG=$(find "$W/tmpfs/big/big" -type d | wc -l)
bench_log "walk: /tree $NODES_DEFAULT nodes ($DIRS_DEFAULT dirs), /big $NODES_BIG nodes ($DIRS_BIG dirs)"

# --- workloads -------------------------------------------------------------------------
# Each runs in the contender's root; its output goes to $O (checked across contenders).
workload_cmd() {
	case $1 in
	find) echo 'find tree >"$O" 2>"$O.err"' ;;
	find_f) echo 'find tree -type f >"$O" 2>"$O.err"' ;;
	ls_lR) echo 'ls -lR tree >"$O" 2>"$O.err"' ;;
	du_s) echo 'du -s tree >"$O" 2>"$O.err"' ;;
	tar) echo 'tar cf - tree 2>"$O.err" | wc -c >"$O"' ;;
	# every link under /chains: the chains 5, 40, 41 (ELOOP), 1000 (ELOOP) and each link
	# inside them, itself a chain of its position's length; errors are part of the work
	stat_chains) echo 'stat -L -c "%n %s %F" chains/* chains/.*.chain/* >"$O" 2>"$O.err"; true' ;;
	readdir_wide) echo 'ls -f wide >"$O" 2>"$O.err"' ;;
	find4) echo 'for i in 1 2 3 4; do find tree >"$O.$i" 2>"$O.err" & done; wait; cat "$O.1" >"$O"' ;;
	big_find) echo 'find big >"$O" 2>"$O.err"' ;;
	big_ls_lR) echo 'ls -lR big >"$O" 2>"$O.err"' ;;
	esac
}
DEFAULT_WORKLOADS="find ls_lR find4 stat_chains readdir_wide find_f du_s tar"
BIG_WORKLOADS="big_find big_ls_lR"
DEFAULT_CONTENDERS="tmpfs bindfs cfs-kernel cfs-collapse cfs-server cfs-libfuse cfs-libfuse_mt cfs-nospin cfs-ro cfs-uring"
if ! bench_uring_on; then
	bench_log "walk: no FUSE over io_uring in this kernel: cfs-uring left out"
	DEFAULT_CONTENDERS=$(echo "$DEFAULT_CONTENDERS" | sed 's/ cfs-uring//')
fi
BIG_CONTENDERS="tmpfs bindfs cfs-kernel cfs-server cfs-libfuse"

# rounds_for WORKLOAD CONTENDER: how many rounds that pair runs (0: not at all).
# - cfs-server only where the walk stays bounded: /tree's links to directories, followed by
#   the daemon, expand into millions of paths.
# - RUNS where a target is decided: find and ls -lR (tmpfs, bindfs for cold find, kernel
#   mode, libfuse's loop, pollcore without spinning, read-only), find4 (kernel mode vs
#   libfuse_mt); the cheap /chains and /wide.
# - RUNS2 for the other pairs (5 as well unless lowered for a shorter run); collapse mode
#   only where it differs from kernel mode (it answers readlink differently: ls -lR, tar,
#   stat_chains) plus find; libfuse's loops only on the loop comparisons (find, ls -lR,
#   find4, the cheap ones).
# - /big: find for every contender but collapse and libfuse_mt (no links, so collapse is
#   kernel mode; the loops are compared on /tree), BIG_RUNS rounds; ls -lR only tmpfs and
#   kernel mode, BIG_LS_RUNS rounds (bindfs takes a minute or more per run there: a LOOKUP
#   and GETXATTRs per entry).
rounds_for() {
	case $2 in cfs-server) case $1 in stat_chains | readdir_wide | big_*) ;; *) echo 0 && return ;; esac ;; esac
	case $2 in cfs-nospin | cfs-ro | cfs-uring) case $1 in find | ls_lR) ;; *) echo 0 && return ;; esac ;; esac
	if [ "$QUICK" = 1 ]; then
		echo 1
		return
	fi
	case $1:$2 in
	find:tmpfs | find:bindfs | find:cfs-kernel | find:cfs-libfuse | find:cfs-nospin | find:cfs-ro | find:cfs-uring) echo "$RUNS" ;;
	find:*) echo "$RUNS2" ;;
	ls_lR:tmpfs | ls_lR:cfs-kernel | ls_lR:cfs-libfuse | ls_lR:cfs-nospin | ls_lR:cfs-ro | ls_lR:cfs-uring) echo "$RUNS" ;;
	ls_lR:*) echo "$RUNS2" ;;
	find4:tmpfs | find4:cfs-kernel | find4:cfs-libfuse_mt) echo "$RUNS" ;;
	find4:cfs-collapse) echo 0 ;;
	find4:*) echo "$RUNS2" ;;
	stat_chains:* | readdir_wide:*) echo "$RUNS" ;;
	find_f:tmpfs | find_f:bindfs | find_f:cfs-kernel) echo "$RUNS2" ;;
	du_s:tmpfs | du_s:bindfs | du_s:cfs-kernel) echo "$RUNS2" ;;
	tar:tmpfs | tar:bindfs | tar:cfs-kernel | tar:cfs-collapse) echo "$RUNS2" ;;
	big_find:*) echo "$BIG_RUNS" ;;
	big_ls_lR:tmpfs | big_ls_lR:cfs-kernel) echo "$BIG_LS_RUNS" ;;
	*) echo 0 ;;
	esac
}

cfs_opts() {
	case $1 in
	cfs-kernel) echo "-o follow=kernel" ;;
	cfs-kernel-t0) echo "-o follow=kernel,entry_timeout=0,attr_timeout=0" ;;
	cfs-collapse) echo "-o follow=collapse" ;;
	cfs-server) echo "-o follow=server" ;;
	cfs-libfuse) echo "-o follow=kernel,loop=libfuse" ;;
	cfs-libfuse_mt) echo "-o follow=kernel,loop=libfuse_mt" ;;
	cfs-nospin) echo "-o follow=kernel,spin=0" ;;
	cfs-ro) echo "-o follow=kernel,ro" ;;
	cfs-uring) echo "-o follow=kernel,transport=uring,spin=0" ;;
	esac
}

# start CONTENDER SET [extra daemon args]: sets ROOT, DPID ("" for tmpfs), MNT.
start() {
	_c=$1 _set=$2
	shift 2
	DPID= MNT=
	case $_c in
	tmpfs) ROOT=$W/tmpfs/$_set ;;
	bindfs)
		MNT=$W/mnt/bindfs
		bindfs_mount "$W/tmpfs/$_set" "$MNT" "$W/daemon.log" "$@"
		ROOT=$MNT
		;;
	cfs-*)
		MNT=$W/mnt/$_c
		# shellcheck disable=SC2046
		cfs_mount "$MNT" "$W/daemon.log" $(cfs_opts "$_c") "$@" $(spec_of "$_set")
		ROOT=$MNT
		;;
	esac
}
stop() {
	[ -n "$MNT" ] && bench_umount "$MNT" "$DPID"
	MNT= DPID=
}

prewarm_tools() {
	for t in find ls du tar stat wc cat sort cksum sh; do
		command -v $t >/dev/null && $t --version >/dev/null 2>&1 || true
	done
	"$TIMEIT" -- true >/dev/null
}

# timed WORKLOAD OUTFILE: one run in $ROOT; prints bench_timeit's line + output size + cksum.
timed() {
	_cmd="cd '$ROOT' && O='$2' && $(workload_cmd "$1")"
	_r=$("$TIMEIT" -t "$TMO" ${DPID:+-p "$DPID"} -- "$_cmd")
	# order-free: find prints in readdir order, which differs between tmpfs and chainfs
	if [ "$(wc -l <"$2")" -le 200000 ]; then
		_chk=$(LC_ALL=C sort "$2" | cksum | awk '{ print $1 "-" $2 }')
	else # too big to sort for every run: lines and bytes
		_chk=$(wc -lc <"$2" | awk '{ print "n" $1 "-" $2 }')
	fi
	echo "$_r $_chk"
}

RAW=$TMP/walk_runs.csv
echo "tree,workload,contender,round,phase,wall_ns,client_user_ns,client_sys_ns,daemon_user_ns,daemon_sys_ns,busy_ns,status,out_check" >"$RAW"

# one_run SET WORKLOAD CONTENDER ROUND
one_run() {
	drop_caches
	start "$3" "$1"
	prewarm_tools
	for phase in cold warm; do
		line=$(timed "$2" "$W/out/o")
		echo "$1,$2,$3,$4,$phase,$(echo "$line" | tr ' ' ',')" >>"$RAW"
		st=$(echo "$line" | awk '{ print $7 }')
		[ "$st" = 0 ] || bench_log "  $3 $2 $phase: exit status $st"
		if [ "$st" = 124 ]; then break; fi
	done
	stop
}

t_start=$(date +%s)
total=0
for set in default big; do
	if [ $set = default ]; then wl=$DEFAULT_WORKLOADS cs=$DEFAULT_CONTENDERS; else
		wl=$BIG_WORKLOADS cs=$BIG_CONTENDERS; fi
	for w in $wl; do for c in $cs; do total=$((total + $(rounds_for $w $c))); done; done
done
done_runs=0
for set in default big; do
	if [ $set = default ]; then wl=$DEFAULT_WORKLOADS cs=$DEFAULT_CONTENDERS; else
		wl=$BIG_WORKLOADS cs=$BIG_CONTENDERS; fi
	maxr=0
	for w in $wl; do for c in $cs; do
		k=$(rounds_for $w $c)
		[ "$k" -gt $maxr ] && maxr=$k
	done; done
	r=0
	while [ $r -lt $maxr ]; do
		wi=0
		for w in $wl; do
			ran=0
			# shellcheck disable=SC2086
			for c in $(rotate $((r + wi)) $cs); do
				[ $r -lt "$(rounds_for $w $c)" ] || continue
				one_run $set $w $c $r
				done_runs=$((done_runs + 1))
				ran=1
			done
			wi=$((wi + 1))
			[ $ran = 1 ] || continue
			el=$(($(date +%s) - t_start))
			bench_log "walk: $set round $((r + 1))/$maxr $w done ($done_runs/$total runs, ${el}s)"
		done
		r=$((r + 1))
	done
done

# --- medians ---------------------------------------------------------------------------
CSV=$OUT/walk.csv
awk -F, "$BENCH_AWK_STATS"'NR > 1 {
	k = $1 "," $2 "," $3 "," $5
	n[k]++; ok[k] += ($12 == 0)
	wall[k, n[k]] = $6 / 1e6
	cli[k, n[k]] = ($7 + $8) / 1e6
	dmn[k, n[k]] = ($9 + $10) / 1e6
	oth[k, n[k]] = ($11 - $7 - $8 - $9 - $10) / 1e6
	x = $13 # (an assignment to chk[k] would create it before the test)
	if (k in chk && chk[k] != x) x = "varies"
	chk[k] = x
	if (!(k in seen)) { seen[k] = 1; order[++m] = k }
}
BEGIN { print "tree,workload,contender,phase,runs,ok_runs,wall_ms,wall_min_ms,wall_max_ms,client_cpu_ms,daemon_cpu_ms,others_cpu_ms,out_check" }
END {
	for (i = 1; i <= m; i++) {
		k = order[i]
		printf "%s,%d,%d,%.2f,%.2f,%.2f,%.1f,%.1f,%.1f,%s\n", k, n[k], ok[k], med(wall, k, n[k]),
			mn(wall, k, n[k]), mx(wall, k, n[k]), med(cli, k, n[k]), med(dmn, k, n[k]),
			med(oth, k, n[k]), chk[k]
	}
}' "$RAW" >"$CSV"

# --- profile: FUSE requests per workload, where the time goes ----------------------------
REQ= PIN=
if [ "$PROFILE" = 1 ]; then
	REQ=$OUT/walk_requests.csv
	echo "tree,workload,contender,phase,wall_ms,requests,opcode_counts" >"$REQ"
	# count_ops LOG FROM TO: "OPCODE=N;..." for the log bytes FROM..TO
	count_ops() {
		tail -c +$(($2 + 1)) "$1" | head -c $(($3 - $2)) | grep -ao 'opcode: [A-Z_]*' |
			awk '{ c[$2]++; t++ } END { for (o in c) printf "%d %s\n", c[o], o; print t, "TOTAL" }' |
			sort -rn | awk '$2 == "TOTAL" { t = $1; next } { s = s (s ? ";" : "") $2 "=" $1 }
				END { print t + 0 "," s }'
	}
	# contender:workload,workload... (cfs-kernel-t0: kernel mode with both timeouts 0, to
	# see what the kernel's caches save)
	if [ "$QUICK" = 1 ]; then
		PROFILE_PAIRS="cfs-kernel:find,ls_lR bindfs:find,ls_lR"
	else
		PROFILE_PAIRS=${WALK_PROFILE_PAIRS:-"cfs-kernel:find,ls_lR,du_s,tar,stat_chains,readdir_wide,find4 bindfs:find,ls_lR,stat_chains,readdir_wide cfs-kernel-t0:find cfs-collapse:ls_lR,stat_chains cfs-server:stat_chains,readdir_wide"}
	fi
	for pair in $PROFILE_PAIRS; do
		c=${pair%%:*}
		for w in $(echo "${pair#*:}" | tr , ' '); do
			drop_caches
			start $c default -d
			prewarm_tools
			for phase in cold warm; do
				sleep 0.2
				a=$(stat -c %s "$W/daemon.log")
				line=$(timed "$w" "$W/out/o")
				sleep 0.2 # the daemon logs the last replies
				b=$(stat -c %s "$W/daemon.log")
				ms=$(echo "$line" | awk '{ printf "%.1f", $1 / 1e6 }')
				echo "default,$w,$c,$phase,$ms,$(count_ops "$W/daemon.log" "$a" "$b")" >>"$REQ"
			done
			stop
		done
		bench_log "walk: request counts for $c done"
	done
	# The big tree: how the request count grows with 1e6 nodes (find, chainfs and bindfs).
	[ "$QUICK" = 1 ] && BIG_PROFILE= || BIG_PROFILE="cfs-kernel bindfs"
	for c in $BIG_PROFILE; do
		drop_caches
		start $c big -d
		prewarm_tools
		for phase in cold warm; do
			sleep 0.2
			a=$(stat -c %s "$W/daemon.log")
			line=$(timed big_find "$W/out/o")
			sleep 0.2
			b=$(stat -c %s "$W/daemon.log")
			ms=$(echo "$line" | awk '{ printf "%.1f", $1 / 1e6 }')
			echo "big,big_find,$c,$phase,$ms,$(count_ops "$W/daemon.log" "$a" "$b")" >>"$REQ"
		done
		stop
	done

	# Where a round trip's time goes: find with the daemon and the walk pinned to one CPU
	# (no cross-CPU wake-up) against the same unpinned, interleaved.
	PIN=$OUT/walk_pinned.csv
	echo "variant,round,phase,wall_ns,client_user_ns,client_sys_ns,daemon_user_ns,daemon_sys_ns,busy_ns,status,out_check" >"$PIN"
	pr=0
	[ "$QUICK" = 1 ] && PIN_RUNS=0 || PIN_RUNS=${WALK_PIN_RUNS:-2}
	while [ $pr -lt "$PIN_RUNS" ]; do
		for v in ${WALK_PIN_VARIANTS:-unpinned pinned-cpu0}; do
			drop_caches
			case $v in *libfuse) lo="-o loop=libfuse" ;; *) lo= ;; esac
			case $v in
			pinned*)
				# shellcheck disable=SC2086
				MNT=$W/mnt/pin && cfs_mount "$MNT" "$W/daemon.log" $lo ${DEFAULT_SPEC:+"$DEFAULT_SPEC"}
				taskset -a -p -c 0 "$DPID" >/dev/null
				ROOT=$MNT
				TIMEIT_PFX="taskset -c 0"
				;;
			*)
				# shellcheck disable=SC2086
				MNT=$W/mnt/pin && cfs_mount "$MNT" "$W/daemon.log" $lo ${DEFAULT_SPEC:+"$DEFAULT_SPEC"}
				ROOT=$MNT
				TIMEIT_PFX=
				;;
			esac
			prewarm_tools
			for phase in cold warm; do
				l=$($TIMEIT_PFX "$TIMEIT" -t "$TMO" -p "$DPID" -- "cd '$ROOT' && find tree >'$W/out/o'")
				echo "$v,$pr,$phase,$(echo "$l" | tr ' ' ','),-" >>"$PIN"
			done
			stop
		done
		pr=$((pr + 1))
	done
	bench_log "walk: pinned/unpinned diagnostic done"

	# perf: a system-wide CPU profile of one cold find per loop, when perf works here.
	PERF=$OUT/walk_perf.txt
	: >"$PERF"
	if [ "$QUICK" = 1 ]; then
		echo "perf: skipped in a quick run" >"$PERF"
	elif command -v perf >/dev/null && perf record -q -e cpu-clock -o "$W/p.test" true >/dev/null 2>&1; then
		for c in cfs-kernel cfs-libfuse; do
			drop_caches
			start $c default
			prewarm_tools
			perf record -q -a -g -e cpu-clock -o "$W/perf.data" -- \
				sh -c "cd '$ROOT' && find tree >'$W/out/o'" >/dev/null 2>&1 || true
			stop
			# system-wide: other tenants' processes show up too; the symbols are restricted to
			# the walk (find), the daemon and the idle loop (swapper), as % of all samples
			{
				echo "=== $c: cold find over /tree, perf record -a -g -e cpu-clock ($(nproc) vCPU)"
				echo "--- share of all samples per command"
				perf report -i "$W/perf.data" --stdio --no-children --sort comm 2>/dev/null |
					grep -E '^ +[0-9.]+%' | head -8
				echo "--- top symbols of find, chainfs and the idle loop"
				perf report -i "$W/perf.data" --stdio --no-children --sort comm,sym \
					--comms find,chainfs,swapper 2>/dev/null | grep -E '^ +[0-9.]+%' | head -20
				echo "--- callers of the top kernel symbols (-g caller)"
				perf report -i "$W/perf.data" --stdio --no-children --sort comm,sym \
					--comms find,chainfs -g caller,0.5,callee --percent-limit 3 2>/dev/null |
					grep -v '^#' | grep -v '^$' | head -90
			} >>"$PERF"
		done
		bench_log "walk: perf profiles in $PERF"
	else
		echo "perf is not usable here (perf record -e cpu-clock failed)" >"$PERF"
	fi
fi

# --- Markdown and plot -----------------------------------------------------------------
MD=$OUT/walk.md
sh bench/walk/report.sh "$CSV" "$REQ" "$PIN" "$MD" "$OUT/walk.png" \
	"$NODES_DEFAULT" "$DIRS_DEFAULT" "$NODES_BIG" "$DIRS_BIG" "$RUNS" "$BIG_RUNS"
cat "$MD"
bench_log "walk: wrote $CSV ${REQ:+$REQ }$MD $OUT/walk.png in $(($(date +%s) - t_start))s"
