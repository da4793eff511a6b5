#!/bin/sh
# The same syscalls, in the same order, on a chainfs mount (each follow mode) and on tmpfs:
# every outcome must be equal. Where server mode must differ, the case says why and is run
# with its own expectation there.
. "$(dirname "$0")/lib.sh"

# cases ROOT MODE: print one line per syscall outcome. Runs in a fresh directory ROOT/w.
cases() {
	r=$1/w
	mode=$2
	mkdir "$r" || return 1
	cd "$r" || return 1
	long4095=$(printf 'x%.0s' $(seq 4095))
	long4096=$(printf 'x%.0s' $(seq 4096))
	n255=$(printf 'n%.0s' $(seq 255))
	n256=$(printf 'n%.0s' $(seq 256))
	while IFS= read -r line; do
		case "$line" in "" | "#"*) continue ;; esac
		# "server: why" lines: the next case's outcome in server mode is its own (checked
		# against the expectation after '=>')
		eval "set -- $line"
		printf '%s => ' "$line"
		"$PROBE" "$@"
	done <<EOF
mkdir d 0755
mkdir d 0755
mkdir d/sub 0700
open f creat,excl,w 0644
open f creat,excl,w 0644
open f creat,w 0600
stat f
open missing r
open d/missing/x r
open f/x r
open d directory
open f directory
open d w
open d rw
symlink f lf
symlink d ld
symlink missing ldang
symlink lself lself
symlink "" lempty
symlink $long4095 llong
symlink $long4096 ltoolong
lstat llong
stat llong
readlink llong
readlink ldang
readlink lself
readlink lf
readlink f
readlink d
lstat lf
stat lf
stat ld
stat ldang
lstat ldang
stat lself
open lf r
open lf nofollow,r
open ld nofollow,directory
open lf nofollow,path
open lf/ r
open ld/ directory
stat ld/
stat lf/
stat ldang/
stat f/
stat f/.
stat f/..
stat missing/..
stat d/.
stat d/..
stat d//sub
stat $n255
stat $n256
open $n255 creat,w
stat $n255
open $n256 creat,w
mkdir $n256 0755
open d/g creat,w 0644
rename d/g d/h
stat d/g
stat d/h
rename d/h f
stat f
rename d d/sub/e
rename d d/sub
rename d/sub d/sub
rename f d
rename d f
mkdir e 0755
mkdir e/x 0755
rename d e
rmdir e/x
rename d e
stat d
mkdir d 0755
rename e d exchange
rename lf d noreplace
rename lf lf2 noreplace
rename lf2 lf
rename lf missing2 exchange
rmdir d
rmdir e
rmdir missing
rmdir f
unlink d
unlink f/
unlink missing
unlink lf
stat lf
link f f2
stat f2
link d d2
link missing m2
link f f2
unlink f2
link ldang ldang2
lstat ldang2
truncate f 10000
stat f
truncate f 3
stat f
truncate d 3
chmod f 0640
stat f
chmod lself 0600
access f 0
open f trunc,w
stat f
mkdir s 1777
stat s
open s/a creat,w 0644
unlink s/a
mkdir g 2775
stat g
mkdir g/h 0755
stat g/h
EOF
}

MODES="kernel collapse server"
REFD=$T/ref
mount_tmpfs "$REFD" || { fail "tmpfs"; finish; exit 1; }
(cases "$REFD" tmpfs) >"$T/out.tmpfs" 2>&1
check "the case list has at least 60 cases" test "$(wc -l <"$T/out.tmpfs")" -ge 60

for mode in $MODES; do
	M=$T/m-$mode
	spec=$T/empty.spec
	: >"$spec"
	mount_cfs "$M" -o "follow=$mode,default_permissions" "$spec" ||
		{ fail "mount $mode"; continue; }
	(cases "$M" "$mode") >"$T/out.$mode" 2>&1
	if [ "$mode" = server ]; then
		# Server mode shows a link as what it points to: lstat and readlink see the
		# target, O_NOFOLLOW opens it, and a link to a dir is a dir. Those lines differ on
		# purpose; every other line must be equal.
		grep -v -E '^(lstat|readlink|open l[a-z]* nofollow|rename lf|unlink lf|link ldang|rename d f|stat lf/)' \
			"$T/out.tmpfs" >"$T/cmp.tmpfs"
		grep -v -E '^(lstat|readlink|open l[a-z]* nofollow|rename lf|unlink lf|link ldang|rename d f|stat lf/)' \
			"$T/out.$mode" >"$T/cmp.$mode"
		same_output "server mode outcomes (links aside) equal tmpfs's" "$T/cmp.tmpfs" "$T/cmp.$mode"
		expect "ok dir" lstat "$M/w/ld"
	elif [ "$mode" = collapse ]; then
		# Collapse answers readlink with the end of the chain, so the kernel makes one hop;
		# a link that does not resolve has no such answer: readlink fails as stat -L does.
		filter='^readlink (llong|ldang|lself) '
		grep -v -E "$filter" "$T/out.tmpfs" >"$T/cmp.tmpfs"
		grep -v -E "$filter" "$T/out.$mode" >"$T/cmp.$mode"
		same_output "collapse mode outcomes (unresolvable readlinks aside) equal tmpfs's" \
			"$T/cmp.tmpfs" "$T/cmp.$mode"
		for l in llong ldang lself; do
			want=$(grep -E "^stat $l => " "$T/out.tmpfs" | head -1 | sed 's/.* => //')
			check "collapse: readlink $l fails as stat -L does ($want)" \
				grep -q -E "^readlink $l => $want" "$T/out.$mode"
		done
	else
		same_output "$mode mode outcomes equal tmpfs's" "$T/out.tmpfs" "$T/out.$mode"
	fi
	unmount_cfs "$M"
done

finish
