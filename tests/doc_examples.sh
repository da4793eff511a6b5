#!/bin/sh
# The docs' examples run as written. Read from the docs at run time (never copied here):
# - README.md: every block fenced as ```sh, but the first (`make demo` / `make check`: CI runs
#   those itself, and each takes minutes). Blocks fenced otherwise are not commands (the spec
#   synopsis, an fstab line, a JSON line) and are left alone. A line ending in `\` goes on.
# - every man page's EXAMPLES (.nf ... .fi): a section 5 page's (chainfs-spec(5)) is a spec,
#   loaded by a mount of its own that must succeed; any other page's are command lines.
# Each command line runs in order, one `sh -c` each, in the temp dir $T (so relative files,
# my.spec, run.jsonl, land there), and must exit 0. Conventions a doc line may use:
# - a trailing comment `# fails: WHY`: the line is expected to exit non-zero (and must);
# - a trailing comment `# not run here: WHY`: not run, reported as not run (never as passed);
# - a trailing comment ending in `: "TEXT"` (`# mount, run, unmount: "regular file"`): the
#   line's output must hold TEXT;
# - a spec line's comment `# EXXX in the kernel`: stat through it gives EXXX (cfs-probe).
# Placeholders map into $T: /mnt/NAME to $T/mnt/NAME (made first), /tmp/NAME to $T/tmp/NAME,
# build/ to $BUILD/, ./fuse-mount.sh and chainfs-mount to $FUSE_MOUNT, a bare chainfs,
# chainfsctl or chainfs-sweep to $BUILD's (through PATH), chainfs-lab and lab/ to the
# repository's, /run/chainfs/NAME-HASH.sock to the
# socket of the mount named NAME; XDG_RUNTIME_DIR is $T/xdg, so sockets, pid and log files
# go there. chainfs-sweep runs with one repetition of lengths 1,41 and nesting 1 (the doc's
# values take minutes). my.spec is a small spec made here. Each document starts with nothing
# mounted.
# check: once: the docs' examples name no transport, so they run over /dev/fuse as written
. "$(dirname "$0")/lib.sh"

export XDG_RUNTIME_DIR="$T/xdg"
mkdir -m 0700 "$XDG_RUNTIME_DIR"
mkdir -p "$T/bin" "$T/tmp" "$T/mnt"
ln -s "$FUSE_MOUNT" "$T/bin/chainfs-mount"
for b in chainfs chainfsctl chainfs-sweep; do
	ln -s "$BUILD/$b" "$T/bin/$b"
done
ln -s "$ROOT/lab/chainfs-lab" "$T/bin/chainfs-lab"
ln -s "$ROOT/lab" "$T/lab" # the lab's experiments, which the docs copy from
export PATH="$T/bin:$PATH"
printf '%s\n' '# my.spec for the README' 'file /t/end "the end\n"' 'chain /t/c3 3 end' \
	'loop /t/ring 2' >"$T/my.spec"
notrun=0

# readme_lines FILE: "FILE:LINE<TAB>command" for each command line of its ```sh blocks but
# the first
readme_lines() {
	awk -v f="${1##*/}" '
	/^```sh[ \t]*$/ { blk++; inb = 1; next }
	/^```/ { inb = 0; next }
	!inb || blk < 2 { next }
	{
		if (cont == "") at = NR
		line = cont $0
		if (line ~ /\\$/) { cont = substr(line, 1, length(line) - 1); next }
		cont = ""
		if (line ~ /^[ \t]*(#|$)/) next
		print f ":" at "\t" line
	}' "$1"
}

# man_lines PAGE: "PAGE:LINE<TAB>text" for each line of its EXAMPLES' .nf blocks, roff escapes
# undone
man_lines() {
	awk -v f="${1##*/}" '
	/^\.SH/ { ex = ($0 ~ /^\.SH "?EXAMPLES/); nf = 0; next }
	!ex { next }
	/^\.nf/ { nf = 1; next }
	/^\.fi/ { nf = 0; next }
	!nf || /^\./ || /^[ \t]*$/ { next }
	{
		s = $0
		gsub(/\\-/, "-", s); gsub(/\\&/, "", s); gsub(/\\\(aq/, "\047", s)
		gsub(/\\e/, "\\", s)
		print f ":" NR "\t" s
	}' "$1"
}

# map CMD: the command with its placeholders moved into $T
map() {
	printf '%s\n' "$1" | sed -E \
		-e "s#(^|[ =;'\"])/tmp/#\\1$T/tmp/#g" \
		-e "s#(^|[ =;'\"])/mnt/#\\1$T/mnt/#g" \
		-e "s#(^|[ ;|&(])build/#\\1$BUILD/#g" \
		-e "s#(^|[ ;|&(])(\\./fuse-mount\\.sh|chainfs-mount)( |\$)#\\1$FUSE_MOUNT\\3#g" \
		-e 's#(chainfs-sweep .*)--lengths=[0-9,]+#\1--lengths=1,41#' \
		-e 's#(chainfs-sweep .*)--nests=[0-9,]+#\1--nests=1#' \
		-e 's#(chainfs-sweep .*)--reps=[0-9]+#\1--reps=1#'
}

# socks CMD: each /run/chainfs/NAME-HASH.sock replaced by the socket of the mount named NAME
socks() {
	c=$1
	for s in $(printf '%s\n' "$c" | grep -oE '/run/chainfs/[^ /]+-[0-9a-f]{16}\.sock'); do
		n=${s#/run/chainfs/}
		n=${n%-*}
		# none there: a path under $T all the same, never the host's /run/chainfs
		real=$XDG_RUNTIME_DIR/chainfs/${s##*/}
		for r in "$XDG_RUNTIME_DIR/chainfs/$n"-*.sock; do
			[ -S "$r" ] && real=$r && break
		done
		c=$(printf '%s\n' "$c" | sed "s#$s#$real#g")
	done
	printf '%s\n' "$c"
}

# reset: unmount whatever the examples mounted, so the next document starts afresh
reset() {
	for m in "$T"/mnt/*; do
		[ -d "$m" ] || continue
		if is_mounted "$m"; then
			"$FUSE_MOUNT" -u "$m" >/dev/null 2>&1 || umount "$m" 2>/dev/null
		fi
	done
}

# run_line WHERE LINE: run one command line as the doc says it behaves
run_line() {
	where=$1
	line=$2
	why=$(printf '%s\n' "$line" | sed -n 's/.*#[[:space:]]*not run here:[[:space:]]*//p')
	if [ -n "$why" ]; then
		echo "$TEST_NAME: not run: $where: $why"
		notrun=$((notrun + 1))
		return
	fi
	cmd=$(socks "$(map "$line")")
	for m in $(printf '%s\n' "$cmd" | grep -oE "$T/mnt/[^ /'\"]+"); do
		case " $MOUNTS " in *" $m "*) ;; *) MOUNTS="$MOUNTS $m" ;; esac
		mkdir -p "$m"
	done
	out=$T/out
	(cd "$T" && timeout 120 sh -c "$cmd") >"$out" 2>&1
	st=$?
	if printf '%s\n' "$line" | grep -qE '#[[:space:]]*fails:'; then
		if [ "$st" -ne 0 ]; then pass; else fail "$where: exited 0, the doc says it fails: $line"; fi
	elif [ "$st" -ne 0 ]; then
		fail "$where: exit $st: $line"
		tail -n 5 "$out" | sed 's/^/  | /' >&2
		return
	else
		pass
	fi
	want=$(printf '%s\n' "$line" | sed -n 's/.*#.*: "\([^"]*\)"[[:space:]]*$/\1/p')
	[ -z "$want" ] || check "$where: output holds \"$want\"" grep -qF -- "$want" "$out"
}

# run_doc FILE LINES: each line of LINES ("WHERE<TAB>command") in order
run_doc() {
	reset
	n=0
	tab=$(printf '\t')
	while IFS=$tab read -r where line; do
		[ -n "$where" ] || continue
		n=$((n + 1))
		run_line "$where" "$line" </dev/null
	done <<EOF
$2
EOF
	check "${1##*/}: examples found" test "$n" -gt 0
	reset
}

# run_spec PAGE LINES: the page's EXAMPLES as one spec, which must load; outcomes checked
run_spec() {
	reset
	spec=$T/example.spec
	printf '%s\n' "$2" | cut -f2- >"$spec"
	mnt=$T/mnt/spec-example
	if mount_cfs "$mnt" "$spec"; then
		pass
		tab=$(printf '\t')
		while IFS=$tab read -r where line; do
			e=$(printf '%s\n' "$line" | sed -n 's/.*#[[:space:]]*\(E[A-Z]*\) in the kernel.*/\1/p')
			[ -n "$e" ] || continue
			p=$(printf '%s\n' "$line" | awk '{ print $2 }')
			expect "$e" stat "$mnt$p"
		done <<EOF
$2
EOF
	else
		fail "${1##*/}: its EXAMPLES do not load as a spec: $(tail -n 3 "$mnt.log")"
	fi
	reset
}

run_doc README.md "$(readme_lines "$ROOT/README.md")"
for page in "$ROOT"/man/*.[1-9]; do
	lines=$(man_lines "$page")
	[ -n "$lines" ] || continue
	case "$page" in
	*.5) run_spec "$page" "$lines" ;;
	*) run_doc "$page" "$lines" ;;
	esac
done

[ "$notrun" -eq 0 ] || echo "$TEST_NAME: $notrun example lines not run (see above)"
finish
