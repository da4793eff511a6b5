#!/bin/sh
# chainfs-sweep on a small matrix: one row per cell, ns per link in every row that resolved (none where the walk failed),
# the kernel's ELOOP past 40 links in kernel mode and on the copy, chainfs's own answer in the
# other modes, requests counted for cold walks, parameters in the header, and a plot.
# check: once: chainfs-sweep mounts through its own options
. "$(dirname "$0")/lib.sh"

SWEEP=$BUILD/chainfs-sweep
CSV=$T/sweep.csv
TMPDIR=$T timeout 600 "$SWEEP" --lengths=2,41 --nests=2 --ops=stat,readlink,ls --reps=3 \
	--csv="$CSV" --plot="$T/sweep.png" 2>"$T/sweep.err"
check "chainfs-sweep exits 0" test $? -eq 0
check "progress went to stderr" grep -q "chainfs kernel chain 41 stat cold" "$T/sweep.err"
check "the header names every parameter" \
	grep -q "^# lengths 2,41; nests 2; modes kernel,collapse,server; ops stat,readlink,ls" "$CSV"
rows=$(grep -vc '^#' "$CSV")
# per mode: chains 2 and 41 x 3 ops + nest 2 x 2 ops = 8 cells, cold and warm; the copy: 8
check "one row per cell ($rows with the column names)" test "$rows" -eq $((1 + 3 * 16 + 8))
check "ns_per_link is a number in every row that resolved" \
	awk -F, '!/^#/ && $1 != "fs" && $8 == "ok" && $12 !~ /^[0-9]+(\.[0-9]+)?$/ { bad = 1 } END { exit bad }' "$CSV"
nbad=$(awk -F, '!/^#/ && $1 != "fs" && $8 != "ok"' "$CSV" | wc -l)
check "ns_per_link is empty in the $nbad rows whose walk failed" \
	awk -F, '!/^#/ && $1 != "fs" && $8 != "ok" && $12 != "" { bad = 1 } END { exit bad }' "$CSV"
check "... of which there are some (ELOOP at 41 links)" test "$nbad" -gt 0
check "every result is ok, mixed or an errno's name" \
	awk -F, '!/^#/ && $1 != "fs" && $8 !~ /^(ok|mixed|E[A-Z][A-Z0-9]*)$/ { bad = 1 } END { exit bad }' "$CSV"
check "the copy's rows are warm only" \
	awk -F, '$1 == "copy" && $6 != "warm" { bad = 1 } END { exit bad }' "$CSV"
cell() { # FS MODE KIND LINKS OP CACHE: the cell's result column
	awk -F, -v k="$1,$2,$3,$4,$5,$6" 'index($0, k ",") == 1 { print $8 }' "$CSV"
}
for c in cold warm; do
	check "kernel mode: 41 links give ELOOP ($c)" test "$(cell chainfs kernel chain 41 stat $c)" = ELOOP
	check "collapse mode: 41 links resolve ($c)" test "$(cell chainfs collapse chain 41 stat $c)" = ok
	check "server mode: 41 links resolve ($c)" test "$(cell chainfs server chain 41 stat $c)" = ok
done
check "the copy: the kernel gives ELOOP at 41" test "$(cell copy tmpfs chain 41 stat warm)" = ELOOP
check "the copy: 2 links resolve" test "$(cell copy tmpfs chain 2 stat warm)" = ok
lookups=$(awk -F, '$1 == "chainfs" && $2 == "server" && $3 == "chain" && $4 == 41 &&
	$5 == "stat" && $6 == "cold" { print $13 }' "$CSV")
check "a cold server-mode walk asks the daemon ($lookups lookups a walk)" \
	awk -v n="${lookups:-0}" 'BEGIN { exit !(n >= 1) }'
check "the plot was drawn" test -s "$T/sweep.png"
check "no mount left behind" sh -c "! grep -q chainfs-sweep /proc/mounts"
"$SWEEP" --lengths=0 >/dev/null 2>"$T/bad.err"
check "a bad length is refused (exit 2)" test $? -eq 2
check "a bad length is named" grep -q "lengths" "$T/bad.err"
# each refusal names the option the user gave, never a stand-in
for opt in --modes=nosuch --ops=nosuch --reps=0 --nests=x; do
	"$SWEEP" "$opt" >/dev/null 2>"$T/bad.err"
	st=$?
	check "$opt: refused (exit $st)" test "$st" -eq 2
	check "$opt: the message names ${opt%%=*}" grep -q -- "bad value for ${opt%%=*}: " "$T/bad.err"
done
"$SWEEP" --nosuch >/dev/null 2>"$T/bad.err"
check "an unknown option is named as given" grep -q -- "'--nosuch'" "$T/bad.err"
check "no message names a stand-in --option" not grep -q -- "--option" "$T/bad.err"
check "--help says the copy's rows are warm only" \
	sh -c "'$SWEEP' --help | grep -q 'warm only'"
finish
