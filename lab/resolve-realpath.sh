# realpath walks links in user space, one readlink at a time: does it reach what open() reaches
# on chains of 40, 41 and 1000 links? (The kernel stops at 40; chainfs's own walk, in
# collapse and server mode, at its max_total, 40 too.)
. "$LAB_LIB"
about "realpath against open() on chains of 40, 41 and 1000 links: do they agree?"
program realpath
modes kernel collapse server
spec 'file /c/end "end\n"'
spec 'chain /c/40 40 end'
spec 'chain /c/41 41 end'
spec 'chain /c/1000 1000 end'
# for each chain: what the resolver answered (its status, and the content of the path it
# gave), against what open() reached; a line "differ" where they disagree
run 'for n in 40 41 1000; do
	p=$MNT/c/$n
	r=$(realpath "$p" 2>/dev/null) && r=$(cat "$r" 2>&1) || r=fails
	o=$(cat "$p" 2>/dev/null) || o=fails
	[ "$r" = "$o" ] && echo "$n agree: $o" || echo "$n differ: resolver $r, open $o"
done'
outcome reproduced 'grep -q differ "$LAB/out"'
outcome held '[ "$(grep -c agree "$LAB/out")" -eq 3 ]'
