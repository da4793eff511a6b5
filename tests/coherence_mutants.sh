#!/bin/sh
# The mutation check for the coherence tests (run by hand, not by make check: about a minute
# a mutant). Each invalidation coherence.c sends is removed in turn, in a copy of the tree;
# the copy is built and the property test run on a few seeds, then the scripts named in
# CHAINFS_MUTANT_TESTS (CHAINFS_MUTANT_LINES, a grep pattern, picks some of the calls). A
# mutant nothing notices is a kind of invalidation no test can see.
# One line per mutant: caught (by what) or MISSED.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SEEDS=${CHAINFS_SEEDS:-"2 3 5"}
STEPS=${CHAINFS_STEPS:-200}
TESTS=${CHAINFS_MUTANT_TESTS:-"tests/mount_server_coherence.sh tests/mount_perms.sh tests/mount_lines.sh tests/mount_types.sh tests/mount_inval.sh tests/mount_modes.sh tests/mount_faults.sh"}
W=$(mktemp -d /tmp/cfs-mutants.XXXXXX)
# a signal ends the run (not only the mutant in hand), the copy removed on the way out
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
(cd "$ROOT" && git ls-files -z | xargs -0 cp --parents -t "$W") || exit 1
cd "$W" || exit 1
# warnings stay warnings: a removed call may leave a variable unused
build() { make -s -j2 all CFLAGS_EXTRA=-Wno-error >/dev/null 2>&1; }
build || { echo "the copy does not build"; exit 1; }
cp fusefs/coherence.c "$W/coherence.c.orig"
grep -n "cfs_notify_\(entry\|inode\|attrs_now\)(\|cfs_drop_answered_links(d)" fusefs/coherence.c | grep -v "^[0-9]*:[a-z]" |
	grep "${CHAINFS_MUTANT_LINES:-.}" >"$W/calls"
while IFS=: read -r line text; do
	sed -i "${line}s/cfs_[a-z_]*(.*);/(void)0;/" fusefs/coherence.c
	if build; then
		by=""
		for s in $SEEDS; do
			out=$(CHAINFS_SEED=$s CHAINFS_STEPS=$STEPS timeout 600 sh tests/coherence.sh 2>&1 |
				awk '/^coherence: [0-9]+ passed/ { print $4 }')
			[ "${out:-0}" != 0 ] && by="$by coherence seed $s ($out);"
		done
		if [ -z "$by" ]; then
			for t in $TESTS; do
				timeout 900 sh "$t" >"$W/t.out" 2>&1 || { by="$by $t;"; break; }
			done
		fi
		text=$(printf '%s' "$text" | sed 's/^[[:space:]]*//')
		if [ -n "$by" ]; then
			echo "caught  line $line ($text):$by"
		else
			echo "MISSED  line $line ($text)"
		fi
	else
		echo "line $line: does not build without it"
	fi
	cp "$W/coherence.c.orig" fusefs/coherence.c
done <"$W/calls"
