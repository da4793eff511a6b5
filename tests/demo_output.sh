#!/bin/sh
# `make demo` read by a newcomer through a pipe: every command it shows can be retyped (no
# unexpanded $VARIABLE, chainfsctl named by a path that exists), no escape codes off a
# terminal, the explanations it promises, and its mount gone when it says it unmounted.
# check: once: make demo mounts as a newcomer would, over /dev/fuse
. "$(dirname "$0")/lib.sh"

out=$T/demo.out
# a make of our own: the caller's flags (V=1, a jobserver) are not the demo's business
(cd "$ROOT" && MAKEFLAGS= timeout 300 make --no-print-directory demo BUILD="$BUILD") 2>&1 |
	cat >"$out"
mnt=$(sed -n 's/^chainfs is mounted at \([^ ]*\) .*/\1/p' "$out")
# should the demo leave its mount behind, the trap unmounts it
[ -n "$mnt" ] && MOUNTS="$MOUNTS $mnt"

check "the demo says where it mounted" test -n "$mnt"
check "no escape codes in piped output" sh -c "! LC_ALL=C grep -q \"\$(printf '\\033')\" '$out'"
check "no unexpanded variables" sh -c "! grep -nE '\\\$[A-Za-z_{(]' '$out'"
check "the commands shown are run" grep -q '^\$ ls -l chains$' "$out"
ctl=$(sed -n 's/^\$ \([^ ]*chainfsctl\) \. limits .*/\1/p' "$out")
check "chainfsctl is shown by a path that runs: '$ctl'" test -x "$ctl"
check "the limits it set are answered" grep -q '^total  *2000$' "$out"
check "server mode follows 1000 links" grep -q '^chains/1000: regular file$' "$out"
check "the hidden .N.chain directories are explained" \
	grep -q '^(chains/N is the first of N links.*hidden chains/\.N\.chain/' "$out"
check "the abs/ rewrite is explained with what readlink answered" \
	grep -qE '^\(abs/ links .*stay inside the mount: abs/target, stored /chains/target, reads [^ ]*chains/target\)$' "$out"
check "the resolve trace's markers are explained" grep -q '^(one line a step: d a directory' "$out"
check "it says it unmounted" grep -q "^Unmounted $mnt and removed it\.$" "$out"
check "and it did" sh -c "! grep -q ' $mnt ' /proc/mounts && test ! -e '$mnt'"
help=$(sed -n 's/.* \([^ ]*chainfs\) --help lists the$/\1/p' "$out")
check "the --help it names, '$help', runs from where make demo ran" sh -c \
	"cd '$ROOT' && test -n '$help' && '$help' --help >/dev/null 2>&1"
[ "$failed" -eq 0 ] || sed 's/^/  | /' "$out" | tail -n 40 >&2
finish
