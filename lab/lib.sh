# lab/lib.sh: what a lab experiment is written in (sourced by each lab/NAME.sh, run by
# chainfs-lab; see man chainfs-lab). An experiment only declares: the tree (spec), what lives
# beside the mount (outside), the fault rules, the command under test and the outcomes. The
# declarations record; nothing runs until chainfs-lab has read the whole file, so a malformed
# experiment (FILE:LINE: message) runs nothing.
#
# chainfs-lab sets, before the experiment is read:
#   LAB   the experiment's own directory (everything it makes lives there)
#   MNT   the mountpoint, $LAB/mnt
#   MODE  the follow mode of this run (kernel, collapse or server)

LAB_PROGRAM=
LAB_VERSION_CMD=
LAB_MODES=kernel
LAB_OPTS=
LAB_TIMEOUT=30
LAB_ABOUT=
LAB_SPEC=()
LAB_SPEC_AT=()
LAB_RULES=()
LAB_RULES_AT=()
LAB_OUTSIDE=()
LAB_RUN=
LAB_OUTCOMES=()
LAB_ERRORS=0

# lab_bad LINE MESSAGE: a malformed declaration; counted, the whole file is still read
lab_bad() {
	echo "$LAB_FILE:$1: $2" >&2
	LAB_ERRORS=$((LAB_ERRORS + 1))
}

# about TEXT: one line saying what the experiment shows
about() { LAB_ABOUT="$*"; }

# program NAME [VERSION COMMAND...]: the program under test; its version is the first line of
# `NAME --version` unless a command is given
program() {
	[ $# -ge 1 ] || { lab_bad "${BASH_LINENO[0]}" "program: a name is needed"; return; }
	LAB_PROGRAM=$1
	shift
	LAB_VERSION_CMD="$*"
}

# modes MODE...: the follow modes the experiment applies to (default: kernel)
modes() {
	local m
	[ $# -ge 1 ] || lab_bad "${BASH_LINENO[0]}" "modes: at least one of kernel, collapse, server"
	for m in "$@"; do
		case $m in
		kernel | collapse | server) ;;
		*) lab_bad "${BASH_LINENO[0]}" "modes: unknown follow mode '$m' (kernel, collapse, server)" ;;
		esac
	done
	LAB_MODES="$*"
}

# options OPT[,OPT...]: more chainfs -o options (abslinks=raw: a link may name a host path)
options() {
	case "$*" in
	*follow=* | *ctl=* | *faults=* | *transport=*)
		lab_bad "${BASH_LINENO[0]}" "options: follow, ctl, faults and transport are chainfs-lab's" ;;
	*) LAB_OPTS="${LAB_OPTS:+$LAB_OPTS,}$*" ;;
	esac
}

# timeout SECONDS: the run is stopped after that long and counts as error (default 30)
timeout() {
	case $1 in
	'' | *[!0-9]* | 0) lab_bad "${BASH_LINENO[0]}" "timeout: seconds, a whole number above 0" ;;
	*) LAB_TIMEOUT=$1 ;;
	esac
}

# spec LINE: one line of the mount's tree (man chainfs-spec)
spec() {
	LAB_SPEC+=("$*")
	LAB_SPEC_AT+=("${BASH_LINENO[0]}")
}

# outside file NAME TEXT [MODE] | outside dir NAME [MODE] | outside link NAME TARGET: made in
# $LAB, beside the mount (a secret to leak, a sentinel that must stay as it is); NAME is
# relative to $LAB and never climbs out of it
outside() {
	local at kind=${1:-} name=${2:-}
	at=${BASH_LINENO[0]}
	case $name in
	'' | /* | .. | ../* | */.. | */../* | mnt | mnt/* | ctl.sock | out | err | work | work/* | outcome | why | *.log | tree.spec | rules | mount.*)
		lab_bad "$at" "outside: '$name': a name below \$LAB, not one of chainfs-lab's own"
		return
		;;
	esac
	case $kind in
	file) [ $# -ge 3 ] && [ $# -le 4 ] || { lab_bad "$at" "outside file NAME TEXT [MODE]"; return; } ;;
	dir) [ $# -ge 2 ] && [ $# -le 3 ] || { lab_bad "$at" "outside dir NAME [MODE]"; return; } ;;
	link) [ $# -eq 3 ] || { lab_bad "$at" "outside link NAME TARGET"; return; } ;;
	*) lab_bad "$at" "outside: '$kind': file, dir or link"; return ;;
	esac
	if [ $# -ge 3 ] && [ "$kind" != link ]; then
		case ${!#} in
		[0-7][0-7][0-7] | [0-7][0-7][0-7][0-7]) ;;
		*) [ "$kind" = dir ] && { lab_bad "$at" "outside dir: '${!#}': an octal mode"; return; } ;;
		esac
	fi
	local IFS=$'\x1f'
	LAB_OUTSIDE+=("$*")
}

# the words of a fault rule before change=, as `chainfsctl fault add` takes them
lab_rule_word() {
	case $1 in
	op=* | path=* | when=before | when=after | once | every | nth=* | count=* | pid=* | uid=* | \
		comm=* | prob=* | seed=* | errno=* | delay=* | short=* | nowrite | hold | hold=*) return 0 ;;
	esac
	return 1
}

# rule WORDS...: a fault rule, as `chainfsctl MNT fault add` takes it; it stands from the
# mount's first request (-o faults=), so a rule that changes the tree or holds names the
# program with comm= and the harness's own syscalls pass it by
rule() {
	local at w comm= act=
	at=${BASH_LINENO[0]}
	for w in "$@"; do
		case $w in
		change=*)
			act=change
			break
			;;
		comm=*) comm=1 ;;
		hold | hold=*) act=hold ;;
		esac
		lab_rule_word "$w" || { lab_bad "$at" "rule: unknown word '$w'"; return; }
	done
	case "$*" in op=*) ;; *) lab_bad "$at" "rule: op= comes first"; return ;; esac
	[ -n "$act" ] && [ -z "$comm" ] &&
		{ lab_bad "$at" "rule: a $act rule needs comm=NAME (the harness must pass it by)"; return; }
	LAB_RULES+=("$*")
	LAB_RULES_AT+=("$at")
}

# run SCRIPT: the command under test, a shell script run by sh in $LAB/work (made empty);
# its exit status is $STATUS in the outcomes, its output $LAB/out and $LAB/err
run() {
	[ -z "$LAB_RUN" ] || { lab_bad "${BASH_LINENO[0]}" "run: given twice"; return; }
	[ $# -eq 1 ] && [ -n "$1" ] || { lab_bad "${BASH_LINENO[0]}" "run: one script (quote it)"; return; }
	LAB_RUN=$1
}

# outcome NAME CONDITION: after the command, the first outcome whose CONDITION (a shell
# test, with $LAB, $MNT, $STATUS) holds is the run's; none: error
outcome() {
	local at
	at=${BASH_LINENO[0]}
	case ${1:-} in
	reproduced | held | works | broken) ;;
	*)
		lab_bad "$at" "outcome: '${1:-}': reproduced, held, works or broken"
		return
		;;
	esac
	[ $# -eq 2 ] || { lab_bad "$at" "outcome NAME 'CONDITION'"; return; }
	LAB_OUTCOMES+=("$1 $2")
}

# lab_complete: what every experiment must declare
lab_complete() {
	[ -n "$LAB_PROGRAM" ] || lab_bad 1 "no program declared"
	[ -n "$LAB_RUN" ] || lab_bad 1 "no run declared"
	[ ${#LAB_OUTCOMES[@]} -gt 0 ] || lab_bad 1 "no outcome declared"
	[ "$LAB_ERRORS" -eq 0 ]
}

# --- what chainfs-lab runs once the file is read (CFS, CFS_CTL, CFS_TRANSPORT from it) --------

# lab_describe: the experiment as chainfs-lab reads it, one "key value" a line
lab_describe() {
	echo "program $LAB_PROGRAM"
	echo "version_cmd ${LAB_VERSION_CMD:-$LAB_PROGRAM --version}"
	echo "modes $LAB_MODES"
	echo "timeout $LAB_TIMEOUT"
	echo "about $LAB_ABOUT"
}

# lab_make_outside: the secrets and sentinels, in $LAB
lab_make_outside() {
	local e kind name
	for e in "${LAB_OUTSIDE[@]}"; do
		IFS=$'\x1f' read -r -a w <<<"$e"
		kind=${w[0]} name=$LAB/${w[1]}
		mkdir -p "$(dirname "$name")" || return 1
		case $kind in
		file) printf '%b' "${w[2]}" >"$name" && { [ -z "${w[3]:-}" ] || chmod "${w[3]}" "$name"; } ;;
		dir) mkdir -p "$name" && { [ -z "${w[2]:-}" ] || chmod "${w[2]}" "$name"; } ;;
		link) ln -s "${w[2]}" "$name" ;;
		esac || return 1
	done
}

# lab_where FILE LINES...: chainfs's "FILE:N: why" for the spec or rules file chainfs-lab
# wrote, as the experiment's own "EXPERIMENT:LINE: why"
lab_where() {
	local file=$1 line n rest
	shift
	local -a at=("$@")
	while IFS= read -r line; do
		case $line in
		*"$file:"[0-9]*)
			rest=${line#*"$file:"}
			n=${rest%%:*}
			echo "$LAB_FILE:${at[n - 1]:-?}:${rest#*:}"
			;;
		esac
	done
}

# lab_mount: the tree and its rules on $MNT; status 2 (and FILE:LINE) when chainfs refuses
# the experiment's spec or rules, 1 for any other failure
lab_mount() {
	local rc o
	mkdir -p "$MNT" "$LAB/work" || return 1
	printf '%s\n' "${LAB_SPEC[@]}" >"$LAB/tree.spec"
	printf '%s\n' "${LAB_RULES[@]}" >"$LAB/rules"
	o="follow=$MODE,ctl=$LAB/ctl.sock,faults=$LAB/rules${LAB_OPTS:+,$LAB_OPTS}"
	o="$o${CFS_TRANSPORT:+,transport=$CFS_TRANSPORT}"
	# chainfs itself returns once the mount answers (and its daemon is on its own)
	"$CFS" -o "$o" "$LAB/tree.spec" "$MNT" >"$LAB/mount.out" 2>"$LAB/mount.err"
	rc=$?
	[ $rc -eq 0 ] && return 0
	if [ $rc -eq 2 ]; then
		{
			lab_where "$LAB/tree.spec" "${LAB_SPEC_AT[@]}" <"$LAB/mount.err"
			lab_where "$LAB/rules" "${LAB_RULES_AT[@]}" <"$LAB/mount.err"
		} >"$LAB/where"
		if [ -s "$LAB/where" ]; then
			cat "$LAB/where" >&2
			return 2
		fi
	fi
	sed 's/^/  /' "$LAB/mount.err" >&2
	return 1
}

# lab_fired: every rule that changes the tree or holds fired at least once (else the run
# raced nothing, and is an error saying which rule); the log stays in $LAB/faults.log
lab_fired() {
	local n
	"$CFS_CTL" -s "$LAB/ctl.sock" fault log >"$LAB/faults.log" 2>&1
	# one rule a line, in the order they were added (the file's)
	n=$("$CFS_CTL" -s "$LAB/ctl.sock" --json fault list 2>/dev/null | sed 's/},{/}\n{/g' |
		grep -n '"hits":0[,}]' | grep -E '"change":"[^"]|"hold":true' | head -1 | cut -d: -f1)
	[ -z "$n" ] && return 0
	echo "the rule at $LAB_FILE:${LAB_RULES_AT[${n:-1} - 1]} never fired" >"$LAB/why"
	return 1
}

# lab_one: one run: mount, the command, the outcome (in $LAB/outcome; none: error). The
# unmount is chainfs-lab's, which also runs it after a timeout.
lab_one() {
	local rc i name cond
	lab_make_outside || { echo "could not make what lives beside the mount" >&2; return 1; }
	lab_mount || return
	export LAB MNT MODE
	(cd "$LAB/work" && exec sh -c "$LAB_RUN") >"$LAB/out" 2>"$LAB/err" </dev/null
	STATUS=$?
	lab_fired || return 0
	for i in "${!LAB_OUTCOMES[@]}"; do
		name=${LAB_OUTCOMES[i]%% *}
		cond=${LAB_OUTCOMES[i]#* }
		if (eval "$cond") >/dev/null 2>&1; then
			echo "$name" >"$LAB/outcome"
			return 0
		fi
	done
	echo "no outcome's condition held (exit status $STATUS)" >"$LAB/why"
	return 0
}
