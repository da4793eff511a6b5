#!/bin/sh
# Races on purpose (issue 27): a fault rule with change= swaps a directory for a link exactly
# between a program's check and its use, so the TOCTOU race reproduces every time. Three
# programs (cfs-race-check): lstat then open, stat then chown (chown -R's walk), and mkdir -p
# (a component checked to be a directory, then used). In each follow mode: each use lands on
# the planted target in every run with the rule, in none without it, and in none when the
# rule names another pid or uid; `before`, nth=, several lines (all or none: one whose last line
# fails leaves the tree and the mount as they were), the log and stats; bad rules are refused
# and leave the rules and the tree as they were.
# check: long: thousands of rules and runs
. "$(dirname "$0")/lib.sh"

RACE=$BUILD/cfs-race-check
RUNS=${RACE_RUNS:-100}
cat >"$T/spec" <<'SPEC'
dir /race
file /race/planted/f "planted\n"
dir /race/plantdir
dir /keep
file /keep/x "x\n"
SPEC

# KIND=open|chown|mkdir runs MNT TAG RULE: RUNS fresh directories /race/TAG$i holding what
# KIND's program meets there, and (unless RULE is "-") for each the rule RULE with @ standing
# for it (fired once, a rule is spent: it stands no more); then the program, once in each;
# prints how many uses landed on the planted target. open and chown use @/f (planted:
# /race/planted/f), mkdir makes @/a/b/c where @/a/b stands (planted: /race/plantdir). The
# directories are made through the mount and the rules go in one connection, before any
# program runs (each rule names its own directory); the runs are one cfs-race-check reading
# their paths, one after the other: a run costs its syscalls alone.
runs() {
	_m=$1 _tag=$2 _rule=$3
	for _i in $(seq "$RUNS"); do
		case ${KIND:-open} in
		mkdir) echo "$_m/race/$_tag$_i/a/b" ;;
		*) echo "$_m/race/$_tag$_i" ;;
		esac
	done | xargs mkdir -p || echo "could not make the directories" >&2
	if [ "${KIND:-open}" != mkdir ]; then
		for _i in $(seq "$RUNS"); do
			echo original >"$_m/race/$_tag$_i/f" || echo "could not make f in $_tag$_i" >&2
		done
	fi
	if [ "$_rule" != - ]; then
		_added=$(seq "$RUNS" | awk -v rule="$_rule" -v dir="/race/$_tag" \
			'{ r = rule; gsub(/@/, dir $1, r); print "fault add " r }' |
			timeout 60 socat -t 60 - "UNIX-CONNECT:$SOCK" | grep -c '"ok":true')
		[ "$_added" -eq "$RUNS" ] || echo "rules added: $_added of $RUNS: $_rule" >&2
	fi
	case ${KIND:-open} in
	open) set -- /f "" "$_m/race/planted/f" ;;
	chown) set -- /f chown "$_m/race/planted/f" ;;
	mkdir) set -- /a/b/c mkdir-p "$_m/race/plantdir" ;;
	esac
	_out=$(seq "$RUNS" | sed "s|.*|$_m/race/$_tag&$1|" | timeout 300 "$RACE" $2 - "$3")
	printf '%s\n' "$_out" | grep -vx 'planted\|original' | sed "s|^|$_tag (${KIND:-open}): |" >&2
	[ "$(printf '%s\n' "$_out" | grep -c .)" -eq "$RUNS" ] || echo "$_tag: not $RUNS runs" >&2
	ctl fault clear >/dev/null # the spent rules, and those that never fired
	printf '%s\n' "$_out" | grep -cx planted
}
# faults KEY: that number of `stats`' faults
faults() {
	raw stats | python3 -c 'import json, sys; print(json.load(sys.stdin)["faults"][sys.argv[1]])' "$1"
}
# raw_all_hits_have_pid: every hit in the log names the pid that sent its request
raw_all_hits_have_pid() {
	raw 'fault log' | python3 -c 'import json, sys
log = json.load(sys.stdin)["log"]
sys.exit(not log or any(h["pid"] <= 0 for h in log))'
}
# rules: how many rules `fault list` shows
rules() {
	raw 'fault list' | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["faults"]))'
}
# refused WHAT RULE: `fault add RULE` is an error naming WHAT; no rule added, tree as before
refused() {
	_before=$(rules)
	ctl dump >"$T/before.spec"
	_out=$(ctl fault add $2 2>&1)
	_rc=$?
	check "refused: $2 ($_out)" test $_rc -ne 0
	check "... saying why" has "$_out" "$1"
	check "... no rule added" test "$(rules)" = "$_before"
	ctl dump >"$T/after.spec"
	same_output "... the tree" "$T/before.spec" "$T/after.spec"
}

swap='op=getattr path=@/f change=replace @ /race/planted'
for mode in kernel collapse server; do
	M=$T/$mode
	SOCK=$T/$mode.sock
	mount_cfs "$M" -o "ctl=$SOCK,follow=$mode" "$T/spec" || {
		fail "mount $mode"
		continue
	}
	ctl stats reset >/dev/null
	n=$(runs "$M" a "when=after $swap")
	check "$mode: after the lstat, the open lands on the planted file ($n of $RUNS)" \
		test "$n" -eq "$RUNS"
	check "$mode: stats counts each change" test "$(faults changes)" -eq "$RUNS"
	check "$mode: ... none failed" test "$(faults changes_failed)" -eq 0
	n=$(runs "$M" b -)
	check "$mode: without the rule, never ($n of $RUNS)" test "$n" -eq 0
	n=$(runs "$M" c "pid=1 $swap")
	check "$mode: a rule for another pid: never ($n of $RUNS)" test "$n" -eq 0
	check "$mode: ... and it never fired" test "$(faults changes)" -eq "$RUNS"
	n=$(RUNS=5 runs "$M" d "uid=65534 $swap")
	check "$mode: a rule for another uid: never ($n of 5)" test "$n" -eq 0
	n=$(RUNS=5 runs "$M" e "comm=cfs-race-check $swap")
	check "$mode: a rule for the checker's name: every time ($n of 5)" test "$n" -eq 5
	# stat then chown: the chown changes the planted file's owner
	for k in chown mkdir; do
		if [ $k = chown ]; then
			rule='op=getattr path=@/f change=replace @ /race/planted'
			what="after the stat, the chown changes the planted file's owner"
		else
			rule='op=getattr path=@/a/b change=replace @/a/b /race/plantdir'
			what="after mkdir -p checks a/b, c is made in the planted directory"
		fi
		was=$(faults changes)
		n=$(KIND=$k runs "$M" ${k}a "when=after $rule")
		check "$mode: $what ($n of $RUNS)" test "$n" -eq "$RUNS"
		check "$mode: $k: stats counts each change" \
			test "$(faults changes)" -eq $((was + RUNS))
		n=$(KIND=$k runs "$M" ${k}b -)
		check "$mode: $k without the rule, never ($n of $RUNS)" test "$n" -eq 0
		n=$(KIND=$k runs "$M" ${k}c "pid=1 $rule")
		check "$mode: $k, a rule for another pid: never ($n of $RUNS)" test "$n" -eq 0
		check "$mode: $k ... and it never fired" \
			test "$(faults changes)" -eq $((was + RUNS))
	done
	check "$mode: ... none failed" test "$(faults changes_failed)" -eq 0
	n=$(RUNS=5 runs "$M" f "op=getattr path=@/f change=rename @ @.old; link @ /race/planted")
	check "$mode: two lines, a rename and a link: every time ($n of 5)" test "$n" -eq 5
	# before: the lookup of the directory already meets the link
	ctl file /race/g/f 'original\n' >/dev/null
	ctl fault add op=lookup path=/race/g when=before change=replace /race/g /race/planted \
		>/dev/null
	check "$mode: before: the request itself sees the new tree" \
		test "$(cat "$M/race/g/f")" = planted
	log=$(ctl fault log)
	check "$mode: fault log shows the change" has "$log" "change replace /race/g /race/planted: applied"
	check "$mode: ... and who sent the request" raw_all_hits_have_pid
	ctl fault clear >/dev/null
	# nth=2: the second lstat-and-open pair of the same path
	ctl file /race/h/f 'original\n' >/dev/null
	ctl fault add op=getattr path=/race/h/f nth=2 change=replace /race/h /race/planted >/dev/null
	check "$mode: nth=2: not at the first match" test "$("$RACE" "$M/race/h/f" "$M/race/planted/f")" = original
	r=$("$RACE" "$M/race/h/f" "$M/race/planted/f")
	check "$mode: nth=2: at the second ($r)" test "$r" = planted
	check "$mode: ... then it is spent" has "$(raw 'fault list')" '"spent":true'
	ctl fault clear >/dev/null
	# all or none: a rule whose last line fails leaves the tree as it was (times and all), and
	# the mount shows nothing of its first lines
	ctl file /race/k/f 'original\n' >/dev/null
	cat "$M/race/k/f" >/dev/null # the kernel holds /race/k and its file
	ctl dump >"$T/$mode.before"
	was=$(faults changes_failed)
	raw "fault add op=getattr path=/race/k/f change=rename /race/k /race/k.old; \
link /race/k /race/planted; hardlink /race/k.old/g /race/k.old/f; unlink /race/k.old/none" |
		grep -q '"ok":true' || fail "$mode: the rule of three lines was not added"
	r=$("$RACE" "$M/race/k/f" "$M/race/planted/f")
	check "$mode: a change whose last line fails: the use meets the old tree ($r)" \
		test "$r" = original
	check "$mode: ... the failure is counted" test "$(faults changes_failed)" -eq $((was + 1))
	check "$mode: ... and logged, with its undo" has "$(ctl fault log)" \
		"unlink /race/k.old/none): No such file or directory; the lines before it were undone"
	ctl dump >"$T/$mode.after"
	same_output "$mode: ... the dump, times included" "$T/$mode.before" "$T/$mode.after"
	check "$mode: ... the renamed name is not seen" not test -e "$M/race/k.old"
	check "$mode: ... /race/k is the directory still" test -d "$M/race/k" -a ! -L "$M/race/k"
	check "$mode: ... holding its file" test "$(cat "$M/race/k/f")" = original
	check "$mode: ... with one name" test "$(stat -c %h "$M/race/k/f")" = 1
	check "$mode: ... not the planted one" not test "$(cat "$M/race/k/f")" = planted
	ctl fault clear >/dev/null
	unmount_cfs "$M"
done

# --- bad rules: a clear error, no rule added, the tree unchanged ----------------------------
M=$T/bad
SOCK=$T/bad.sock
mount_cfs "$M" -o "ctl=$SOCK" "$T/spec" || { fail "mount"; finish; exit 1; }
ctl fault add op=getattr path=/keep/none errno=EIO >/dev/null # one rule stands meanwhile
refused "unknown op" "op=getattrr path=/keep/x change=unlink /keep/x"
refused "unknown keyword" "op=getattr path=/keep/x change=frobnicate /keep/x"
refused "missing argument" "op=getattr path=/keep/x change=unlink /keep/x; link /keep/y"
refused "rename FROM TO" "op=getattr path=/keep/x change=rename /keep/x"
refused "absolute" "op=getattr path=/keep/x change=unlink keep/x"
refused "an empty line" "op=getattr path=/keep/x change=unlink /keep/x;"
refused "when must be" "op=getattr path=/keep/x when=later change=unlink /keep/x"
refused "when= goes with change=" "op=getattr path=/keep/x when=after errno=EIO"
refused "is a rule of its own" "op=getattr path=/keep/x errno=EIO change=unlink /keep/x"
refused "nth= and count=" "op=getattr path=/keep/x nth=0 change=unlink /keep/x"
refused "comm=" "op=getattr path=/keep/x comm=a-name-of-sixteen change=unlink /keep/x"
refused "pid= and uid=" "op=getattr path=/keep/x pid=me change=unlink /keep/x"
refused "does not edit a node in place" "op=getattr path=/keep/x change=append /keep/x more"
# a change that parses but fails when it runs: logged and counted, the tree as it was
ctl dump >"$T/before.spec"
ctl fault add op=getattr path=/keep/x change=rmdir /keep >/dev/null
stat "$M/keep/x" >/dev/null
check "a change that fails is logged with why" has "$(ctl fault log)" "rmdir /keep): Directory not empty"
check "... and counted" test "$(faults changes_failed)" -eq 1
check "... and a hit" test "$(faults hits)" -ge 1
ctl stats reset >/dev/null
check "stats reset: changes start again" test "$(faults changes)" -eq 0
check "... failed ones too" test "$(faults changes_failed)" -eq 0
check "... and hits" test "$(faults hits)" -eq 0
check "... the rules stay, as levels" test "$(faults rules)" -eq 2
check "... and the log" has "$(ctl fault log)" "rmdir /keep): Directory not empty"
ctl dump >"$T/after.spec"
same_output "... the tree" "$T/before.spec" "$T/after.spec"
check "the daemon keeps serving" test "$(cat "$M/keep/x")" = x
ctl fault clear >/dev/null
unmount_cfs "$M"

# a read-only mount refuses change rules, saying why
M=$T/ro
SOCK=$T/ro.sock
mount_cfs "$M" -o "ctl=$SOCK,ro" "$T/spec" || { fail "mount ro"; finish; exit 1; }
refused "read-only" "op=getattr path=/keep/x change=unlink /keep/x"
unmount_cfs "$M"
finish
