#!/bin/sh
# tools/check-summary.sh: how `make check` counts (tools/check.sh runs the suites).
#
#   check-summary.sh count LOG STATUS   "P F S": one suite's passed and failed counts and
#                                       whether it skipped (1 or 0), from its output (LOG)
#                                       and its exit status
#   check-summary.sh total LIST         a line for each suite that failed or skipped, "N
#                                       skipped" when any did, then the total "N passed, N
#                                       failed" as the last line; exits 1 if anything failed
#                                       or nothing ran
#
# LIST has one line per suite run: NAME STATUS LOG (tab-separated, as tools/check.sh writes).
# What counts:
# - a Check suite: each "NN%: Checks: N, Failures: F, Errors: E" line, N-F-E passed, F+E failed;
# - else the last "NAME: N passed, N failed" line (tests/lib.sh's closing line; the fuzz
#   runner's, whose ", N interrupted" counts as failed);
# - else a suite that exited 0 saying "NAME: skipped: why" (tests/lib.sh's skip) ran nothing:
#   neither passed nor failed, but skipped, and the total says so;
# - else the suite is one test (a build, a benchmark script): passed if it exited 0;
# - a suite that exited non-zero yet counted no failure (it crashed, timed out, was killed
#   before its closing line) counts one failure more.
set -u

count() {
	log=$1
	st=$2
	[ -f "$log" ] || log=/dev/null
	awk -v st="$st" '
	/^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+/ {
		gsub(/,/, "")
		ck = 1; p += $3 - $5 - $7; f += $5 + $7
		next
	}
	/^[^ :]+: skipped: / { skip = 1 }
	/^[^ :]+: [0-9]+ passed, [0-9]+ failed/ {
		line = 1; lp = $2; lf = $4 + 0
		if ($7 == "interrupted") lf += $6
	}
	END {
		if (!ck && line) { p = lp; f = lf }
		else if (!ck && skip && st == 0) { s = 1 }
		else if (!ck) { p = (st == 0); f = (st != 0) }
		if (st != 0 && f == 0) f = 1
		print p + 0, f + 0, s + 0
	}' "$log"
}

total() {
	list=$1
	tp=0
	tf=0
	ts=0
	n=0
	tab=$(printf '\t')
	while IFS=$tab read -r name st log; do
		[ -n "$name" ] || continue
		set -- $(count "$log" "$st")
		p=$1 f=$2 s=$3
		tp=$((tp + p))
		tf=$((tf + f))
		ts=$((ts + s))
		n=$((n + 1))
		[ "$f" -eq 0 ] || echo "FAILED $name: $p passed, $f failed (exit status $st; log $log)"
		[ "$s" -eq 0 ] || echo "SKIPPED $name: $(sed -n 's/^[^ :]*: skipped: //p' "$log" | head -n 1)"
	done <"$list"
	if [ "$n" -eq 0 ]; then
		echo "FAILED: no suite ran"
		tf=$((tf + 1))
	fi
	[ "$ts" -eq 0 ] || echo "$ts skipped: neither passed nor failed"
	echo "$tp passed, $tf failed"
	[ "$tf" -eq 0 ]
}

case "${1:-}" in
count)
	[ $# -eq 3 ] || { echo "usage: check-summary.sh count LOG STATUS" >&2; exit 2; }
	count "$2" "$3"
	;;
total)
	[ $# -eq 2 ] || { echo "usage: check-summary.sh total LIST" >&2; exit 2; }
	total "$2"
	;;
*)
	echo "usage: check-summary.sh count LOG STATUS | total LIST" >&2
	exit 2
	;;
esac
