#!/bin/sh
# bench/walk/compare.sh: two commits of chainfs side by side on the walks the issue's targets
# name (find, ls -lR and tar over the default /tree), next to tmpfs and bindfs, so a change
# that removes requests is judged by what it buys. Not part of `make bench` (it builds two
# daemons from git); run it by hand:
#
#   sh bench/walk/compare.sh BASE_REV [NEW_REV]      (NEW_REV defaults to HEAD)
#
# Both revisions are exported (git archive) to a temporary directory and built there, so the
# working tree is never touched. Variants:
#   tmpfs        the tree materialized on tmpfs: the kernel alone
#   bindfs       bindfs over that copy (find only: the cold-find target is against it)
#   base, new    chainfs -o follow=kernel built from BASE_REV and NEW_REV
#   new+answer   NEW_REV with -o opens=answer (every OPEN and OPENDIR reaches the daemon)
#   new+ro       NEW_REV mounted read-only: the kernel then keeps a directory's atime after an
#                uncached READDIR (fs/fuse/readdir.c, fuse_invalidate_atime), which on a
#                writable mount costs a GETATTR per directory on the first warm pass
#   new+xattrs   NEW_REV with -o xattrs=on (when NEW_REV has it; the default tree holds no
#                xattr, so new has them off): ls -l then asks two GETXATTR a name
# Phases: cold (caches dropped, fresh mount), warm (the second run: the issue's "warm") and
# warm2 (the third). Rounds interleave the variants in rotating order; medians are quoted.
# Then one `-d` run per chainfs variant counts the FUSE requests of find and tar.
# Writes bench/results/walk_compare.csv and .md.
#
# COMPARE_RUNS: rounds (default 3). COMPARE_VARIANTS: a subset of the variants, in order. BENCH_QUICK=1: one round on a small tree, tmp/quick.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. bench/walk/lib.sh
REPO=$(pwd)

[ $# -ge 1 ] || bench_die "usage: sh bench/walk/compare.sh BASE_REV [NEW_REV]"
BASE_REV=$(git rev-parse --short "$1") || bench_die "no revision $1"
NEW_REV=$(git rev-parse --short "${2:-HEAD}") || bench_die "no revision ${2:-HEAD}"
if [ "${BENCH_QUICK:-}" = 1 ]; then
	RUNS=${COMPARE_RUNS:-1} OUT=bench/results/tmp/quick
else
	RUNS=${COMPARE_RUNS:-3} OUT=bench/results
fi
mkdir -p "$OUT"
TIMEIT=$REPO/$BUILD/bench_timeit
[ -x "$TIMEIT" ] || make --no-print-directory BUILD="$BUILD" "$BUILD/bench_timeit"
command -v bindfs >/dev/null || bench_die "compare: bindfs is missing: make deps"

bench_init compare
W=$BENCH_WORK
for v in base new; do
	rev=$BASE_REV
	[ $v = new ] && rev=$NEW_REV
	mkdir -p "$W/src-$v"
	git archive "$rev" | tar -x -C "$W/src-$v"
	bench_log "compare: building $v ($rev)"
	make -s -C "$W/src-$v" BUILD=build build/chainfs >"$W/build-$v.log" 2>&1 ||
		{ cat "$W/build-$v.log" >&2; bench_die "build of $v ($rev) failed"; }
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

VARIANTS=${COMPARE_VARIANTS:-tmpfs bindfs base new new+answer new+ro new+xattrs}
WORKLOADS="find ls_lR tar"
runs_w() { # VARIANT WORKLOAD: does that pair run?
	case $1:$2 in
	bindfs:find | tmpfs:* | base:* | new:* | new+answer:* | new+xattrs:* | new+ro:find | \
		new+ro:ls_lR) return 0 ;;
	esac
	return 1
}
vbin() { case $1 in base) echo "$W/src-base/build/chainfs" ;; *) echo "$W/src-new/build/chainfs" ;; esac; }
vopts() {
	case $1 in
	new+answer) echo "-o follow=kernel,opens=answer" ;;
	new+ro) echo "-o follow=kernel,ro" ;;
	new+xattrs) echo "-o follow=kernel,xattrs=on" ;;
	*) echo "-o follow=kernel" ;;
	esac
}

start_v() { # VARIANT [-d]: sets ROOT, DPID, MNT
	DPID= MNT=
	case $1 in
	tmpfs)
		ROOT=$W/tmpfs/copy
		return
		;;
	bindfs)
		MNT=$W/mnt
		bindfs_mount "$W/tmpfs/copy" "$MNT" "$W/daemon.log" ${2:-}
		ROOT=$MNT
		return
		;;
	esac
	MNT=$W/mnt
	mkdir -p "$MNT"
	_t0=$(date +%s%N)
	# shellcheck disable=SC2046,SC2086
	setsid "$(vbin "$1")" -f $(vopts "$1") ${2:-} $SPEC "$MNT" </dev/null >"$W/daemon.log" 2>&1 &
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
	for w in $WORKLOADS; do
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
		bench_log "compare: round $((r + 1))/$RUNS $w done ($(($(date +%s) - t0))s)"
	done
	r=$((r + 1))
done

# Requests: one -d run per chainfs variant, find and tar, each phase.
REQ=$W/req.csv
: >"$REQ"
for v in $VARIANTS; do
	case $v in tmpfs | bindfs) continue ;; esac
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

CSV=$OUT/walk_compare.csv
{
	echo "variant,workload,phase,runs,wall_ms,wall_min_ms,wall_max_ms,client_cpu_ms,daemon_cpu_ms,requests,opcodes"
	for v in $VARIANTS; do for w in $WORKLOADS; do for ph in cold warm warm2; do
		sel=$(awk -F, -v v="$v" -v w="$w" -v p="$ph" '$1 == v && $2 == w && $3 == p' "$RAW")
		[ -n "$sel" ] || continue
		wall=$(echo "$sel" | awk -F, '{ print $5 / 1e6 }' | median)
		lo=$(echo "$sel" | awk -F, '{ print $5 / 1e6 }' | sort -g | head -1)
		hi=$(echo "$sel" | awk -F, '{ print $5 / 1e6 }' | sort -g | tail -1)
		cli=$(echo "$sel" | awk -F, '{ print ($6 + $7) / 1e6 }' | median)
		dmn=$(echo "$sel" | awk -F, '{ print ($8 + $9) / 1e6 }' | median)
		rq=$(awk -F, -v v="$v" -v w="$w" -v p="$ph" '$1 == v && $2 == w && $3 == p { print $4 "," $5 }' "$REQ")
		printf '%s,%s,%s,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%s\n' "$v" "$w" "$ph" "$(echo "$sel" | wc -l)" \
			"$wall" "$lo" "$hi" "$cli" "$dmn" "${rq:-,}"
	done; done; done
} >"$CSV"

MD=$OUT/walk_compare.md
{
	echo "# bench/walk/compare.sh: chainfs $BASE_REV (base) against $NEW_REV (new)"
	echo
	echo "$(machine_line). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "/tree: $DIRS directories. Median wall ms of $RUNS interleaved rounds (min–max in the CSV);"
	echo "requests from one \`-d\` run. cold: caches dropped, fresh mount; warm: the second run (the"
	echo "issue's warm); warm2: the third. new+ro: mounted read-only, which keeps the kernel from"
	echo "dropping a directory's atime after an uncached READDIR; new+answer: -o opens=answer;"
	echo "new+xattrs: -o xattrs=on."
	echo
	for w in $WORKLOADS; do
		echo "### $w"
		echo
		echo "| variant | cold ms | warm ms | warm2 ms | cold / tmpfs | warm / tmpfs | warm2 / tmpfs | bindfs / cold | cold requests | warm requests | warm2 requests |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		awk -F, -v w="$w" 'NR > 1 && $2 == w { v[$1, $3] = $5; q[$1, $3] = $10; if (!($1 in s)) { s[$1] = 1; o[++n] = $1 } }
		function r(a, b) { return (a > 0 && b > 0) ? sprintf("%.2f", a / b) : "–" }
		function c(x) { return (x == "") ? "–" : x }
		END { for (i = 1; i <= n; i++) { x = o[i]
			printf "| %s | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", x, v[x, "cold"], v[x, "warm"], v[x, "warm2"],
				r(v[x, "cold"], v["tmpfs", "cold"]), r(v[x, "warm"], v["tmpfs", "warm"]), r(v[x, "warm2"], v["tmpfs", "warm2"]),
				r(v["bindfs", "cold"], v[x, "cold"]), c(q[x, "cold"]), c(q[x, "warm"]), c(q[x, "warm2"]) } }' "$CSV"
		echo
	done
	echo "Each variant's median against base's (below 1: faster), workload by phase:"
	echo
	echo "| variant | find cold | find warm | find warm2 | ls_lR cold | ls_lR warm | ls_lR warm2 | tar cold | tar warm | tar warm2 |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk -F, 'NR > 1 { v[$1, $2, $3] = $5; if (!($1 in s)) { s[$1] = 1; o[++n] = $1 } }
	END { for (i = 1; i <= n; i++) { x = o[i]; if (x == "base" || x == "tmpfs" || x == "bindfs") continue
		l = "| " x; split("find ls_lR tar", ws, " ")
		for (j = 1; j <= 3; j++) { split("cold warm warm2", ps, " "); for (k = 1; k <= 3; k++) {
			a = v[x, ws[j], ps[k]]; b = v["base", ws[j], ps[k]]
			l = l " | " ((a > 0 && b > 0) ? sprintf("%.2f", a / b) : "–") } }
		print l " |" } }' "$CSV"
	echo
	echo "Opcodes per variant (find and tar):"
	echo
	awk -F, 'NR > 1 && $10 != "" { printf "- %s %s %s: %s\n", $1, $2, $3, $11 }' "$CSV"
} >"$MD"
cat "$MD"
bench_log "compare: wrote $CSV $MD"
