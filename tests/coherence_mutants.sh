#!/bin/sh
# The mutation check for tests/coherence.sh (run by hand, not by make check: ~15 minutes).
# Each invalidation coherence.c sends is removed in turn, in a copy of the tree; the copy is
# built and the property test run on a few seeds. Every mutant must make it fail: a kind of
# invalidation no seed misses is one the test cannot see. Prints one line per mutant.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SEEDS=${CHAINFS_SEEDS:-"2 3 5"}
STEPS=${CHAINFS_STEPS:-200}
W=$(mktemp -d /tmp/cfs-mutants.XXXXXX)
trap 'rm -rf "$W"' EXIT INT TERM
(cd "$ROOT" && git ls-files -z | xargs -0 cp --parents -t "$W") || exit 1
cd "$W" || exit 1
# warnings stay warnings: a removed call may leave a variable unused
build() { make -s -j2 all OPT="-O2 -g -Wno-error" >/dev/null 2>&1; }
build || { echo "the copy does not build"; exit 1; }
caught=0
missed=0
grep -n "cfs_notify_[a-z_]*(\|cfs_links_changed(d)" fusefs/coherence.c | grep -v "^[0-9]*:[a-z]" |
	while IFS=: read -r line text; do
		cp fusefs/coherence.c "$W/coherence.c.orig"
		sed -i "${line}s/cfs_[a-z_]*(.*);/(void)0;/" fusefs/coherence.c
		if ! build; then
			echo "line $line: does not build without it"
			cp "$W/coherence.c.orig" fusefs/coherence.c
			continue
		fi
		fails=""
		for s in $SEEDS; do
			out=$(CHAINFS_SEED=$s CHAINFS_STEPS=$STEPS timeout 600 sh tests/coherence.sh 2>&1 |
				awk '/^coherence: [0-9]+ passed/ { print $4 }')
			[ "${out:-0}" != 0 ] && fails="$fails seed $s: $out failed;"
		done
		text=$(printf '%s' "$text" | sed 's/^[[:space:]]*//')
		if [ -n "$fails" ]; then
			echo "caught  line $line ($text):$fails"
		else
			echo "MISSED  line $line ($text)"
		fi
		cp "$W/coherence.c.orig" fusefs/coherence.c
	done
