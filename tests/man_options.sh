#!/bin/sh
# Each program's --help and its man page name the same options: every option the help lists
# has an entry in the page's OPTIONS section, and every entry there is one the help names
# (chainfs: its own options against chainfs(1); libfuse's, which the page may describe too,
# count as the help's). A page left behind by a new option, or an option the page made up,
# fails here. make install installs every page (tests/cli.sh installs the programs).
# check: once: it mounts nothing
. "$(dirname "$0")/lib.sh"

# opts: the option names in the text on stdin, one a line: -o NAME, --NAME or -X
opts() {
	grep -oE -- '(^|[ ,[])(-o [a-z_]+|--?[a-zA-Z][a-zA-Z-]*)' | sed 's/^[ ,[]//' | sort -u
}

# page_opts PAGE: the names in the entries (.TP's next line) of the page's OPTIONS section,
# roff's fonts, quotes and escaped dashes undone
page_opts() {
	awk '/^\.SH/ { in_opts = ($0 ~ /^\.SH "?OPTIONS/); next }
	in_opts && tp { print; tp = 0 }
	in_opts && /^\.TP/ { tp = 1 }' "$1" |
		sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/"//g' -e 's/^\.B[IR]* //' | opts
}

# compare NAME HELP_OPTS HELP PAGE: HELP_OPTS (the options the help lists) all in PAGE's
# OPTIONS; PAGE's entries all named in the file HELP (the whole help: -o NAME as NAME)
compare() {
	name=$1 page=$ROOT/man/$4
	entries=$(page_opts "$page")
	check "$name: the help lists options ($(echo $2))" test -n "$2"
	check "$name: $4 has an OPTIONS section ($(echo "$entries" | wc -l) entries)" \
		test -n "$entries"
	for o in $(echo "$2" | tr ' ' '@'); do
		o=$(echo "$o" | tr '@' ' ')
		check "$name: $4 has an entry for $o" \
			sh -c 'printf "%s\n" "$1" | grep -qxF -- "$2"' - "$entries" "$o"
	done
	for o in $(echo "$entries" | tr ' ' '@'); do
		o=$(echo "$o" | tr '@' ' ')
		check "$name: --help names $4's $o" grep -qwF -- "${o#-o }" "$3"
	done
}

# chainfs-sweep: the option lines of its usage
"$BUILD/chainfs-sweep" --help >"$T/sweep.help"
sweep=$(grep -E '^  -' "$T/sweep.help" | opts)
compare chainfs-sweep "$sweep" "$T/sweep.help" chainfs-sweep.1

# chainfs-lab: the option lines of its usage
"$ROOT/lab/chainfs-lab" --help >"$T/lab.help"
lab=$(grep -E '^  -' "$T/lab.help" | opts)
compare chainfs-lab "$lab" "$T/lab.help" chainfs-lab.1

# chainfs-mount (fuse-mount.sh): the usage lines of its help
"$FUSE_MOUNT" --help >"$T/mount.help"
mnt=$(grep -E '^  fuse-mount\.sh ' "$T/mount.help" | sed -E 's/^  fuse-mount\.sh //; s/   .*//' | opts)
compare chainfs-mount "$mnt" "$T/mount.help" chainfs-mount.1

# chainfs: its own options (before libfuse's), against the whole help for the page's entries
"$CHAINFS" --help >"$T/chainfs.help" 2>&1
own=$(sed -n '/^chainfs options:/,/^libfuse/p' "$T/chainfs.help" | grep -E '^    -' | opts)
compare chainfs "$own" "$T/chainfs.help" chainfs.1

# make install puts every page where man finds it
make -s -C "$ROOT" BUILD="$BUILD" install DESTDIR="$T/inst" PREFIX=/usr >"$T/inst.log" 2>&1 ||
	fail "make install: $(tail -n 3 "$T/inst.log")"
for page in "$ROOT"/man/*.[1-9]; do
	sec=${page##*.}
	check "installed: man$sec/${page##*/}" test -s "$T/inst/usr/share/man/man$sec/${page##*/}"
done
for p in chainfs-sweep chainfs-mount chainfs-lab; do
	check "installed: the page of $p" test -s "$T/inst/usr/share/man/man1/$p.1"
done
finish
