#!/bin/sh
# bench/resolver: ns per link of serial chains (1 .. 1e6 links) and nestings (2 .. 1e4) for
# rs_resolve, the recursive reference resolver, the kernel's stat() of the same chains on
# tmpfs (up to 40 links), and rs_resolve over a synthetic tree (the walk without the tree's
# cache misses). Writes bench/results/resolver.csv, resolver.md and resolver.png.
#
# BUILD: build directory holding bench_resolver (default: build).
# BENCH_QUICK=1: a seconds-long smoke run (5 rounds of ~2 ms measurements); its results go
# to bench/results/tmp/quick so that they never replace a full run's.
#
# The kernel's chains live on a tmpfs mounted for the run on a temporary directory (root), or
# else in /dev/shm; both are removed on exit.
set -eu
cd "$(dirname "$0")/../.."

BUILD=${BUILD:-build}
BIN=$BUILD/bench_resolver
if [ "${BENCH_QUICK:-}" = 1 ]; then
	ARGS="--quick --runs 5"
	OUT=bench/results/tmp/quick
else
	ARGS="--runs 11"
	OUT=bench/results
fi
TMP=bench/results/tmp/resolver
mkdir -p "$OUT" "$TMP"
[ -x "$BIN" ] || make --no-print-directory BUILD="$BUILD" "$BIN"

KDIR=$(mktemp -d "${TMPDIR:-/tmp}/chainfs-bench-resolver.XXXXXX")
MOUNTED=
cleanup() {
	[ -n "$MOUNTED" ] && umount "$KDIR" 2>/dev/null
	rm -rf "$KDIR" "${SHM:-}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if mount -t tmpfs -o size=16m,mode=0755 chainfs-bench "$KDIR" 2>/dev/null; then
	MOUNTED=1
	KFS=$KDIR
elif [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
	SHM=$(mktemp -d /dev/shm/chainfs-bench-resolver.XXXXXX)
	KFS=$SHM
else
	echo "resolver: no tmpfs (not root, no /dev/shm): the kernel column stays empty" >&2
	KFS=
fi

echo "resolver: chains and nestings, rs_resolve vs reference vs kernel stat (tmpfs: ${KFS:-none})"
# shellcheck disable=SC2086
"$BIN" $ARGS ${KFS:+--tmpfs "$KFS"} --csv "$OUT/resolver.csv" --md "$OUT/resolver.md"

# Wide table for the plot: shape links rs ref kernel synth (NaN where not run).
awk -F, '
	NR == 1 { next }
	{ v[$1 "," $2 "," $3] = ($4 == "" ? "NaN" : $4); if (!(($1 "," $2) in seen)) { seen[$1 "," $2] = 1; order[++n] = $1 " " $2 } }
	END {
		split("rs_resolve reference kernel_stat rs_resolve_synth", c, " ")
		for (i = 1; i <= n; i++) {
			split(order[i], k, " ")
			line = order[i]
			for (j = 1; j <= 4; j++) line = line " " v[k[1] "," k[2] "," c[j]]
			print line
		}
	}' "$OUT/resolver.csv" >"$TMP/wide.dat"

if command -v gnuplot >/dev/null; then
	gnuplot -e "data='$TMP/wide.dat'; out='$OUT/resolver.png'" bench/resolver/plot.gp
	echo "resolver: wrote $OUT/resolver.png"
fi
cat "$OUT/resolver.md"
echo "resolver: wrote $OUT/resolver.csv $OUT/resolver.md"
