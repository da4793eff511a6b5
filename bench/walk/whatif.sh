#!/bin/sh
# bench/walk/whatif.sh: what the changes the walk profile points at would buy, measured
# before anyone makes them. Not part of `make bench` (the patch follows the daemon's code and
# may stop applying); run it by hand: sh bench/walk/whatif.sh
#
# It copies the committed sources (git archive HEAD) to a temporary directory twice, builds
# one as is (base) and one with bench/walk/whatif.patch, whose runtime switches are:
#   CFS_PROTO=noopendir   opendir answers ENOSYS when the kernel offers NO_OPENDIR: no
#                         OPENDIR/RELEASEDIR, and the kernel caches every listing
#                         (FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE is its default then)
#   CFS_PROTO=noopen      the same for open (NO_OPEN): no OPEN/RELEASE for files
#   CFS_PROTO=noflush     flush answers ENOSYS: the kernel stops sending FLUSH on close
#   CFS_PROTO=nodots      readdir leaves out "." and "..": an empty directory's first READDIR
#                         is then empty and ends the listing (one request instead of two)
#   CFS_PROTO_SPIN_US=N   pollcore keeps reading /dev/fuse for N µs before it sleeps in poll()
# and walks /tree (find, ls -lR, tar) with each variant, cold and warm, rounds interleaved,
# next to tmpfs and base with libfuse's loop; "+ro" mounts read-only (-o ro), which keeps the
# kernel from invalidating a directory's atime after READDIR. Writes
# bench/results/walk_whatif.csv and .md.
#
# WHATIF_RUNS: rounds (default 3). BENCH_QUICK=1: one round, small tree, tmp/quick.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. bench/walk/lib.sh
REPO=$(pwd)

if [ "${BENCH_QUICK:-}" = 1 ]; then
	RUNS=${WHATIF_RUNS:-1} OUT=bench/results/tmp/quick
else
	RUNS=${WHATIF_RUNS:-3} OUT=bench/results
fi
mkdir -p "$OUT"
TIMEIT=$REPO/$BUILD/bench_timeit
[ -x "$TIMEIT" ] || make --no-print-directory BUILD="$BUILD" "$BUILD/bench_timeit"

bench_init whatif
W=$BENCH_WORK
for v in base patched; do
	mkdir -p "$W/src-$v"
	git archive HEAD | tar -x -C "$W/src-$v"
done
(cd "$W/src-patched" && patch -s -p1 <"$REPO/bench/walk/whatif.patch") ||
	bench_die "whatif.patch does not apply to HEAD any more: refresh it"
bench_log "whatif: building base and patched daemons in $W"
for v in base patched; do
	make -s -C "$W/src-$v" BUILD=build build/chainfs >"$W/build-$v.log" 2>&1 ||
		{ cat "$W/build-$v.log" >&2; bench_die "build of $v failed"; }
done

if [ "${BENCH_QUICK:-}" = 1 ]; then
	printf '%s\n' 'tree /tree depth=3 fanout=10 files=50% links=10% seed=1' >"$W/spec"
	SPEC=$W/spec
else
	SPEC=
fi
tmpfs_mount "$W/tmpfs" 2g
mkdir "$W/tmpfs/copy" "$W/tmpfs/out"
# shellcheck disable=SC2086
"$REPO/$BUILD/chainfs" --materialize $SPEC "$W/tmpfs/copy"
DIRS=$(find "$W/tmpfs/copy/tree" -type d | wc -l)

# (noopen and noflush change nothing for find and ls -lR, which open no files: noopendir alone
# is the same as noopendir+noopen+noflush there)
VARIANTS="tmpfs base base-libfuse spin50 noopendir+noopen+noflush noopendir+noopen+noflush+ro noopendir+noopen+noflush+nodots"
runs_w() { # variant workload: does it run?
	case $2 in tar) case $1 in tmpfs | base | noopendir+noopen+noflush) return 0 ;; *) return 1 ;; esac ;; esac
	return 0
}
# variant -> binary, CFS_PROTO, spin, loop
vbin() { case $1 in base*) echo "$W/src-base/build/chainfs" ;; *) echo "$W/src-patched/build/chainfs" ;; esac; }
vproto() { echo "$1" | tr + '\n' | grep -E '^no' | paste -sd, -; }
vspin() { case $1 in *spin50*) echo 50 ;; *) echo 0 ;; esac; }
vro() { case $1 in *+ro) echo "-o ro" ;; esac; }

start_v() { # variant [-d]
	DPID= MNT=
	if [ "$1" = tmpfs ]; then
		ROOT=$W/tmpfs/copy
		return
	fi
	lo=$(vro "$1")
	[ "$1" = base-libfuse ] && lo="-o loop=libfuse"
	MNT=$W/mnt
	mkdir -p "$MNT"
	_t0=$(date +%s%N)
	# shellcheck disable=SC2086
	CFS_PROTO=$(vproto "$1") CFS_PROTO_SPIN_US=$(vspin "$1") setsid "$(vbin "$1")" -f $lo ${2:-} \
		$SPEC "$MNT" </dev/null >"$W/daemon.log" 2>&1 &
	DPID=$!
	BENCH_PIDS="$DPID $BENCH_PIDS"
	BENCH_MOUNTS="$MNT $BENCH_MOUNTS"
	bench_wait_mount "$MNT" "$DPID" 30 "$_t0" || bench_die "variant $1 did not mount"
	ROOT=$MNT
}
stop_v() { [ -n "$MNT" ] && bench_umount "$MNT" "$DPID"; MNT= DPID=; }
cmd_of() {
	case $1 in
	find) echo "find tree >'$W/tmpfs/out/o'" ;;
	ls_lR) echo "ls -lR tree >'$W/tmpfs/out/o' 2>/dev/null" ;;
	tar) echo "tar cf - tree | wc -c >'$W/tmpfs/out/o'" ;;
	esac
}

RAW=$W/runs.csv
: >"$RAW"
t0=$(date +%s)
r=0
while [ $r -lt "$RUNS" ]; do
	for w in find ls_lR tar; do
		set -- $VARIANTS
		k=$((r % $#))
		while [ $k -gt 0 ]; do x=$1 && shift && set -- "$@" "$x" && k=$((k - 1)); done
		for v in "$@"; do
			runs_w "$v" $w || continue
			drop_caches
			start_v "$v"
			for ph in cold warm warm2; do
				l=$("$TIMEIT" -t 600 ${DPID:+-p "$DPID"} -- "cd '$ROOT' && $(cmd_of $w)")
				echo "$v,$w,$ph,$r,$l" | tr ' ' ',' >>"$RAW"
			done
			stop_v
		done
		bench_log "whatif: round $((r + 1))/$RUNS $w done ($(($(date +%s) - t0))s)"
	done
	r=$((r + 1))
done

# Requests: one -d run per variant, find and tar, cold and warm.
REQ=$W/req.csv
: >"$REQ"
for v in $VARIANTS; do
	[ "$v" = tmpfs ] && continue
	for w in find tar; do
		runs_w "$v" $w || continue
		drop_caches
		start_v "$v" -d
		for ph in cold warm warm2; do
			sleep 0.2
			a=$(stat -c %s "$W/daemon.log")
			"$TIMEIT" -t 600 -- "cd '$ROOT' && $(cmd_of $w)" >/dev/null
			sleep 0.2
			b=$(stat -c %s "$W/daemon.log")
			n=$(tail -c +$((a + 1)) "$W/daemon.log" | head -c $((b - a)) | grep -ao 'opcode: [A-Z_]*' |
				awk '{ c[$2]++; t++ } END { s = ""; for (o in c) s = s (s ? " " : "") o "=" c[o]; print t + 0 "," s }')
			echo "$v,$w,$ph,$n" >>"$REQ"
		done
		stop_v
	done
done

CSV=$OUT/walk_whatif.csv
{
	echo "variant,workload,phase,runs,wall_ms,client_cpu_ms,daemon_cpu_ms,requests,opcodes"
	for v in $VARIANTS; do for w in find ls_lR tar; do for ph in cold warm warm2; do
		sel=$(awk -F, -v v="$v" -v w="$w" -v p="$ph" '$1 == v && $2 == w && $3 == p' "$RAW")
		[ -n "$sel" ] || continue
		wall=$(echo "$sel" | awk -F, '{ print $5 / 1e6 }' | median)
		cli=$(echo "$sel" | awk -F, '{ print ($6 + $7) / 1e6 }' | median)
		dmn=$(echo "$sel" | awk -F, '{ print ($8 + $9) / 1e6 }' | median)
		rq=$(awk -F, -v v="$v" -v w="$w" -v p="$ph" '$1 == v && $2 == w && $3 == p { print $4 "," $5 }' "$REQ")
		printf '%s,%s,%s,%d,%.1f,%.1f,%.1f,%s\n' "$v" "$w" "$ph" "$(echo "$sel" | wc -l)" "$wall" "$cli" "$dmn" "${rq:-,}"
	done; done; done
} >"$CSV"

MD=$OUT/walk_whatif.md
{
	echo "# bench/walk/whatif.sh: what removing requests would buy (prototype, not merged code)"
	echo
	echo "$(machine_line). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "The committed daemon (git HEAD $(git rev-parse --short HEAD)) built as is (base) and with"
	echo "bench/walk/whatif.patch (runtime switches, see the script). /tree: $DIRS directories."
	echo "Median wall ms of $RUNS interleaved rounds; requests from one \`-d\` run (find and tar)."
	echo "cold: fresh mount, caches dropped; warm: second run; warm2: third run. The first warm"
	echo "run still sends a GETATTR per directory: the kernel invalidates a directory's atime after"
	echo "an uncached READDIR (fs/fuse/readdir.c, writable mounts), and find and ls stat it."
	echo
	for w in find ls_lR tar; do
		echo "### $w"
		echo
		echo "| variant | cold ms | warm ms | warm2 ms | cold / tmpfs | warm / tmpfs | warm2 / tmpfs | cold requests | warm requests | warm2 requests |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		awk -F, -v w="$w" 'NR > 1 && $2 == w { v[$1, $3] = $5; q[$1, $3] = $8; if (!($1 in s)) { s[$1] = 1; o[++n] = $1 } }
		function r(a, b) { return (b > 0) ? sprintf("%.2f", a / b) : "–" }
		function c(x) { return (x == "") ? "–" : x }
		END { for (i = 1; i <= n; i++) { x = o[i]
			printf "| %s | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s | %s |\n", x, v[x, "cold"], v[x, "warm"], v[x, "warm2"],
				r(v[x, "cold"], v["tmpfs", "cold"]), r(v[x, "warm"], v["tmpfs", "warm"]), r(v[x, "warm2"], v["tmpfs", "warm2"]),
				c(q[x, "cold"]), c(q[x, "warm"]), c(q[x, "warm2"]) } }' "$CSV"
		echo
	done
	echo "Opcodes per variant (find and tar):"
	echo
	awk -F, 'NR > 1 && $8 != "" && ($2 == "find" || $2 == "tar") { printf "- %s %s %s: %s\n", $1, $2, $3, $9 }' "$CSV"
} >"$MD"
cat "$MD"
bench_log "whatif: wrote $CSV $MD"
