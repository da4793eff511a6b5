#!/bin/sh
# tools/callgraph.sh [DIR...]: the file-level call graph of every .c under DIR (default:
# resolver pollcore tree spec fusefs cli), and every circle in it. Exit status 0 when there
# is none, 1 when there is one or more, 2 when a file does not compile.
#
# A circle is a set of files where each one calls into the next and the last back into the
# first (A.c calls a function of B.c, and B.c, directly or through other files, calls one of
# A.c's): such files cannot be read, tested or built apart, one before the other.
#
# gcc (12 and later) writes each translation unit's call graph with -fcallgraph-info: one node
# a function, with the file:line of its definition, and one edge a direct call. Compiled at
# -O0 nothing is inlined, so the edges are the calls written in the source. A function defined
# in a header (a static inline) counts as the header's, so a header whose inline functions call
# back into the files that include it makes a circle too. Calls through a pointer are not
# edges (the callee is not known). Functions defined outside DIR (libc, GLib's headers) are
# left out. A global function defined in more than one file (each program's main) is resolved
# to the caller's own directory first.
#
# The output: one "circle:" line a circle (a strongly connected set of files; a header's
# function is named FILE.h:NAME), followed by each link inside it, with how many calls make it
# and the first of them ("  a.c -> b.c  2 call(s), e.g. a_fn -> b_fn (a.c:12:3)"), then a last
# line "callgraph: N files, N links between files, N circles" (N files: the .c files read).
#
# CALLGRAPH_CC (gcc: clang has no -fcallgraph-info) and CPPFLAGS_EXTRA may be set in the
# environment; the include paths are the build's own.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
CC=${CALLGRAPH_CC:-gcc}
[ $# -gt 0 ] || set -- resolver pollcore tree spec fusefs cli
TMP=$(mktemp -d /tmp/cfs-callgraph.XXXXXX) || exit 2
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM HUP

# the build's own preprocessor flags (include paths, the packages' headers, the API version)
CPPFLAGS_BUILD=$(make -s --no-print-directory print-cppflags) || exit 2
FLAGS="-std=c11 -O0 $CPPFLAGS_BUILD"

n=0
find "$@" -name '*.c' -type f | LC_ALL=C sort >"$TMP/files"
while read -r f; do
	n=$((n + 1))
	# shellcheck disable=SC2086 # FLAGS and CPPFLAGS_EXTRA are lists of words
	if ! $CC $FLAGS ${CPPFLAGS_EXTRA:-} -fcallgraph-info -c -o "$TMP/$n.o" "$f" \
		2>"$TMP/$n.err"; then
		echo "callgraph: $f does not compile:" >&2
		head -n 20 "$TMP/$n.err" >&2
		exit 2
	fi
	printf '%s\t%s\n' "$f" "$TMP/$n.ci" >>"$TMP/units"
done <"$TMP/files"
[ "$n" -gt 0 ] || {
	echo "callgraph: no .c file under $*" >&2
	exit 2
}

# Each unit's .ci (VCG): node lines 'node: { title: "T" label: "NAME\nFILE:LINE:COL..." }'
# (a declaration only when it ends in 'shape : ellipse'), edge lines
# 'edge: { sourcename: "T" targetname: "T" label: "FILE:LINE:COL" }'. Static functions'
# titles are "UNIT.c:name", so they never meet another unit's.
while IFS="	" read -r unit ci; do
	awk -v unit="$unit" '
	function field(s, key,   i, r) {
		i = index(s, key ": \"")
		if (!i) return ""
		r = substr(s, i + length(key) + 3)
		return substr(r, 1, index(r, "\"") - 1)
	}
	/^node:/ && !/shape : ellipse/ {
		split(field($0, "label"), l, "\\\\n")
		file = l[2]; sub(/:[0-9]+:[0-9]+$/, "", file); sub(/^\.\//, "", file)
		print "D\t" unit "\t" field($0, "title") "\t" l[1] "\t" file
	}
	/^edge:/ {
		print "E\t" unit "\t" field($0, "sourcename") "\t" field($0, "targetname") "\t" \
			field($0, "label")
	}' "$ci"
done <"$TMP/units" >"$TMP/graph"

awk -F '\t' -v nunits="$n" '
function dir(p) { sub(/\/[^\/]*$/, "", p); return p }
# the file that defines title T as seen from UNIT, "" when none of ours does
function target(unit, t,   k, i, best) {
	if ((unit SUBSEP t) in local) return local[unit, t]
	if (!(t in ndefs)) return ""
	best = defs[t, 1]
	for (i = 1; i <= ndefs[t]; i++)
		if (dir(defs[t, i]) == dir(unit)) best = defs[t, i]
	return best
}
$1 == "D" {
	# a header function is its own node: each includer has its own copy of it
	f = $5 ~ /\.h$/ ? $5 ":" $4 : $5
	local[$2, $3] = f
	name[$2, $3] = $4
	files[f] = 1
	if (index($3, ":") == 0 && !(($3 SUBSEP f) in seen)) {
		seen[$3, f] = 1
		defs[$3, ++ndefs[$3]] = f
	}
	next
}
$1 == "E" { e++; eu[e] = $2; es[e] = $3; et[e] = $4; el[e] = $5 }
END {
	for (i = 1; i <= e; i++) {
		a = target(eu[i], es[i]); b = target(eu[i], et[i])
		if (a == "" || b == "" || a == b) continue
		if (!((a SUBSEP b) in edge)) {
			ncross++
			succ[a] = succ[a] " " b
			# the first call stands for the others
			edge[a, b] = name[eu[i], es[i]] " -> " (((eu[i] SUBSEP et[i]) in name) ? \
				name[eu[i], et[i]] : et[i]) " (" el[i] ")"
		}
		ncalls[a, b]++
	}
	# reach[a, b]: b is reachable from a (transitive closure; a few dozen files)
	nf = 0
	for (f in files) fl[++nf] = f
	for (i = 1; i <= nf; i++) {
		split(succ[fl[i]], s, " ")
		for (j in s) reach[fl[i], s[j]] = 1
	}
	for (k = 1; k <= nf; k++)
		for (i = 1; i <= nf; i++)
			if ((fl[i] SUBSEP fl[k]) in reach)
				for (j = 1; j <= nf; j++)
					if ((fl[k] SUBSEP fl[j]) in reach) reach[fl[i], fl[j]] = 1
	# sorted, so that the output is the same from run to run
	for (i = 2; i <= nf; i++)
		for (j = i; j > 1 && fl[j - 1] > fl[j]; j--) { t = fl[j]; fl[j] = fl[j - 1]; fl[j - 1] = t }
	for (i = 1; i <= nf; i++) {
		a = fl[i]
		if (a in done || !((a SUBSEP a) in reach)) continue
		line = "circle:"; calls = ""; members = ""
		for (j = 1; j <= nf; j++) {
			b = fl[j]
			if (b == a || ((a SUBSEP b) in reach && (b SUBSEP a) in reach)) {
				done[b] = 1; line = line " " b; members = members " " b
			}
		}
		split(members, m, " ")
		for (j = 1; m[j] != ""; j++)
			for (k = 1; m[k] != ""; k++)
				if ((m[j] SUBSEP m[k]) in edge)
					calls = calls "\n  " m[j] " -> " m[k] "  " ncalls[m[j], m[k]] \
						" call(s), e.g. " edge[m[j], m[k]]
		print line calls
		ncircles++
	}
	printf "callgraph: %d files, %d links between files, %d circles\n", nunits, ncross, \
		ncircles
	exit (ncircles > 0 ? 1 : 0)
}' "$TMP/graph"
