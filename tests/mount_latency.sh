#!/bin/sh
# `stats` latency: every request the daemon serves is in its op's histogram, every walk in
# the resolver's, quantiles are ordered, `stats reset` empties them, and `resolve` says how
# long its walk took.
# check: quiet: it checks the daemon's own timings of requests
. "$(dirname "$0")/lib.sh"

M=$T/mnt
mount_cfs "$M" -o follow=server || { fail "mount"; finish; exit 1; }

# section SECTION: "name value" for each "  name value" line under "SECTION:" in `stats`
section() {
	awk -v s="$1:" '$0 == s { on = 1; next } on && /^[^ ]/ { on = 0 }
		on && /^  [^ ]/ && NF == 2 { print $1, $2 }' "$T/stats"
}
# hist OP FIELD: FIELD of OP's latency histogram
hist() {
	awk -v op="  $1:" -v f="$2" '$0 == "latency:" { lat = 1; next } lat && /^[^ ]/ { lat = 0 }
		lat && $0 == op { on = 1; next } on && /^  [^ ]/ { on = 0 }
		on && $1 == f { print $2 }' "$T/stats"
}

"$CTL" "$M" stats reset >/dev/null
ls -lR "$M/tree" >/dev/null 2>&1
for i in 1 2 3 4 5; do stat -L "$M/chains/40" "$M/nest/8" >/dev/null; done
cat "$M/README" >/dev/null
"$CTL" "$M" stats >"$T/stats" || fail "stats"

section requests >"$T/requests"
check "requests were counted" test "$(wc -l <"$T/requests")" -ge 4
while read -r op n; do
	check "latency counts every $op request ($n)" test "$(hist "$op" count)" = "$n"
done <"$T/requests"
walks=$(section resolver | awk '$1 == "walks" { print $2 }')
check "the walk histogram counts every walk ($walks)" test "$(hist walk count)" = "$walks"
check "walks happened" test "${walks:-0}" -gt 0
for op in lookup readdirplus walk; do
	p50=$(hist $op p50_ns)
	p99=$(hist $op p99_ns)
	max=$(hist $op max_ns)
	check "$op: 0 < p50 <= p99 <= max ($p50 $p99 $max)" \
		test "${p50:-0}" -gt 0 -a "${p50:-0}" -le "${p99:-0}" -a "${p99:-0}" -le "${max:-0}"
done
check "the raw stats carry the buckets" sh -c "'$CTL' --json '$M' stats | grep -q '\"log2_buckets\":\\['"

"$CTL" "$M" stats reset >/dev/null
"$CTL" "$M" stats >"$T/stats"
check "reset empties the histograms (the stats request itself is not a FUSE one)" \
	test -z "$(hist lookup count)$(hist walk count)"

out=$("$CTL" --json "$M" resolve /chains/40)
ns=$(printf '%s' "$out" | sed -n 's/.*"duration_ns":\([0-9]*\).*/\1/p')
check "resolve reports its walk's duration ($ns ns)" test "${ns:-0}" -gt 0
check "chainfsctl shows it" sh -c "'$CTL' '$M' resolve /chains/40 | grep -q 'walked in [0-9]* ns'"
unmount_cfs "$M"
finish
