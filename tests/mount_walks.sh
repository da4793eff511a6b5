#!/bin/sh
# `stats` counts each walk along a chain once, with the links it followed: after `stat -L` of a
# chain of N links on a fresh mount, links_followed is N times walks, and walks is the number
# of requests that needed one, as the mount's own recording lists them: in collapse mode every
# lookup, getattr and readlink of the link (its size is the length of the chain's end), in
# server mode every lookup and readlink of it (a getattr answers the end's attributes). The
# second walk a server-mode lookup makes, with no rights, to tell whether its answer is the
# caller's alone, is counted apart as private_checks: one per lookup of the link.
. "$(dirname "$0")/lib.sh"

cat >"$T/walks.spec" <<'EOF'
dir /c
file /c/target "the end\n"
chain /c/1 1 target
chain /c/40 40 target
chain /c/1000 1000 target
EOF

# stat_of NAME: NAME's value in the resolver section of $T/stats
stat_of() {
	awk -v n="$1" '$0 == "resolver:" { on = 1; next } on && /^[^ ]/ { on = 0 }
		on && $1 == n { print $2 }' "$T/stats"
}
# recorded OPS PATH: the recorded requests of $T/rec.jsonl whose op is one of OPS (an ERE
# alternation) and whose path is PATH
recorded() {
	grep -Ec "\"op\":\"($1)\",.*\"path\":\"$2\"[,}]" "$T/rec.jsonl"
}

for mode in collapse server; do
	case $mode in
	collapse) walking="lookup|getattr|readlink" ;;
	server) walking="lookup|readlink" ;;
	esac
	for n in 1 40 1000; do
		M=$T/$mode.$n
		rm -f "$T/rec.jsonl"
		# a fresh mount for each: the kernel holds nothing yet, and the recording and the
		# counters both start with its first request
		mount_cfs "$M" -o "follow=$mode,max_total=2000,max_nest=2000,ctl=$SOCK" \
			-o "record=$T/rec.jsonl" "$T/walks.spec" || {
			fail "$mode: mount"
			continue
		}
		kind=$(stat -L -c %F "$M/c/$n" 2>&1)
		ctl record stop >/dev/null || fail "$mode $n: record stop"
		ctl stats >"$T/stats" || fail "$mode $n: stats"
		check "$mode: stat -L of a chain of $n reaches the file ($kind)" \
			test "$kind" = "regular file"
		walks=$(stat_of walks)
		links=$(stat_of links_followed)
		private=$(stat_of private_checks)
		needed=$(recorded "$walking" "/c/$n")
		lookups=$(recorded lookup "/c/$n")
		check "$mode $n: some request walked ($needed)" test "$needed" -gt 0
		check "$mode $n: walks ($walks) = requests that needed a walk ($needed)" \
			test "${walks:-x}" = "$needed"
		check "$mode $n: links_followed ($links) = $n x walks ($walks)" \
			test "${links:-x}" = "$((n * ${walks:-0}))"
		check "$mode $n: no walk failed" \
			test "$(stat_of eloop)/$(stat_of other_errors)" = "0/0"
		if [ $mode = server ]; then
			check "$mode $n: private_checks ($private) = lookups of the link ($lookups)" \
				test "${private:-x}" = "$lookups"
		else
			check "$mode $n: no private check ($private)" test "${private:-x}" = 0
		fi
		unmount_cfs "$M" || fail "$mode $n: unmount"
	done
done
finish
