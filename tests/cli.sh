#!/bin/sh
# What a newcomer types first: chainfsctl's help and its errors name what is wrong, and the
# limits a user can set do what the manual says.
. "$(dirname "$0")/lib.sh"

check "chainfsctl --help exits 0" sh -c "'$CTL' --help >'$T/help' 2>'$T/help.err'"
check "chainfsctl --help prints the usage on stdout" grep -q "^usage: chainfsctl" "$T/help"
check "chainfsctl --help prints nothing else" test ! -s "$T/help.err"
for kw in hardlink append fault unmount; do
	check "chainfsctl's usage names $kw" grep -qw "$kw" "$T/help"
done
check "fuse-mount.sh --help exits 0" sh -c "'$FUSE_MOUNT' --help >'$T/fhelp' 2>&1"
check "fuse-mount.sh --help names its commands" grep -q "fuse-mount.sh -u MOUNTPOINT" "$T/fhelp"
check "fuse-mount.sh --help prints no script lines" sh -c "! grep -q '^set \|^here=\|()' '$T/fhelp'"
"$FUSE_MOUNT" >/dev/null 2>&1
check "fuse-mount.sh without arguments fails" test $? -ne 0
"$CTL" >/dev/null 2>"$T/err"
check "no arguments: exit 2" test $? -eq 2
check "no arguments: the mountpoint is named as missing" grep -q "missing MOUNTPOINT" "$T/err"
mkdir "$T/plain"
"$CTL" "$T/plain" ping >/dev/null 2>"$T/err"
check "a plain directory: exit 2" test $? -eq 2
check "a plain directory: 'not a chainfs mount'" grep -qx "chainfsctl: not a chainfs mount: $T/plain" "$T/err"

# make install: the programs and chainfs-mount, never the test helpers
check "make install into a staging dir" sh -c "make -s -C '$ROOT' BUILD='$BUILD' install DESTDIR='$T/inst' PREFIX=/usr >'$T/inst.log' 2>&1"
for b in chainfs chainfsctl chainfs-sweep chainfs-mount; do
	check "installed: $b" test -x "$T/inst/usr/bin/$b"
done
check "not installed: cfs-probe" test ! -e "$T/inst/usr/bin/cfs-probe"
comp=$T/inst/usr/share/bash-completion/completions
check "installed: bash completion for both" test -s "$comp/chainfsctl" -a -e "$comp/chainfs"
if command -v bash >/dev/null; then
	words=$(PATH="$T/inst/usr/bin:$PATH" bash -c ". '$comp/chainfsctl'; COMP_WORDS=(chainfsctl /mnt \"\"); COMP_CWORD=2; _chainfsctl; echo \"\${COMPREPLY[*]}\"")
	check "chainfsctl completes its commands ($words)" sh -c "echo '$words' | grep -qw drop && echo '$words' | grep -qw hardlink"
	rwords=$(PATH="$T/inst/usr/bin:$PATH" bash -c ". '$comp/chainfsctl'; COMP_WORDS=(chainfsctl /mnt resolve \"\"); COMP_CWORD=3; _chainfsctl; echo \"\${COMPREPLY[*]}\"")
	check "chainfsctl completes resolve's -l and nofollow ($rwords)" test "$rwords" = "-l nofollow"
	opts=$(PATH="$T/inst/usr/bin:$PATH" bash -c ". '$comp/chainfsctl'; COMP_WORDS=(chainfs -o f); COMP_CWORD=2; _chainfs; echo \"\${COMPREPLY[*]}\"")
	check "chainfs completes -o options ($opts)" sh -c "echo '$opts' | grep -qw follow="
fi
mkdir "$T/im"
check "the installed chainfs-mount mounts with the chainfs beside it" \
	sh -c "env -u CHAINFS '$T/inst/usr/bin/chainfs-mount' '$T/im' && test -e '$T/im/README'"
# the completion offers the daemon's own command table (control_cmds.h, spec.h): every word it
# completes is one the daemon knows, and it offers as many as chainfsctl --commands lists
# (unmount, which would end the mount, is left out)
if [ -n "$words" ]; then
	unknown=
	for w in $words; do
		[ "$w" = unmount ] && continue
		timeout 60 "$CTL" --json "$T/im" "$w" 2>&1 | grep -q '"unknown command' && unknown="$unknown $w"
	done
	check "the daemon knows every command the completion offers (unknown:$unknown)" test -z "$unknown"
	check "the completion offers every command" \
		test "$(echo $words | wc -w)" -eq "$("$CTL" --commands | wc -l)"
	check "... and the daemon still refuses one outside the table" \
		sh -c "timeout 60 '$CTL' --json '$T/im' nosuchcommand | grep -q '\"unknown command: nosuchcommand'"
fi
"$T/inst/usr/bin/chainfs-mount" -u "$T/im"

"$CHAINFS" --help >"$T/chelp" 2>&1
check "chainfs --help says which loop libfuse's thread options act on" \
	grep -q "^act only with -o loop=libfuse_mt" "$T/chelp"
# chainfs's help lists the follow modes from their table (follow.c); chainfsctl's, written
# out, must list the same
modes=$(sed -n 's/^ *-o follow=\([^ ]*\) .*/\1/p' "$T/chelp")
check "chainfsctl's usage lists chainfs's follow modes ($modes)" \
	grep -qxF "  mode [${modes:-none}] (no argument: the mode)" "$T/help"
check "chainfsctl's usage has no line ending in a space" not grep -q ' $' "$T/help"

# the control socket's directory must be ours alone: in /tmp anybody could make it first
mkdir "$T/cm" "$T/xdg"
for how in "mode 0777" "another owner" "a symlink"; do
	rm -rf "$T/xdg/chainfs"
	case $how in
	"mode 0777") mkdir -m 0777 "$T/xdg/chainfs" ;;
	"another owner") mkdir -m 0700 "$T/xdg/chainfs" && chown 65534 "$T/xdg/chainfs" ;;
	"a symlink") ln -s "$T/cm" "$T/xdg/chainfs" ;;
	esac
	XDG_RUNTIME_DIR=$T/xdg timeout 20 "$CHAINFS" "$T/cm" >"$T/err" 2>&1
	check "a socket directory with $how: refused" test $? -ne 0
	check "... saying why" grep -q "not a directory of uid .* closed to others" "$T/err"
	mountpoint -q "$T/cm" && fusermount3 -u "$T/cm"
done
rm -rf "$T/xdg/chainfs"

M=$T/mnt
mount_cfs "$M" -o follow=server || { fail "mount"; finish; exit 1; }
"$CTL" "$M" >/dev/null 2>"$T/err"
check "no command: exit 2" test $? -eq 2
check "no command: the command is named as missing" grep -q "missing COMMAND" "$T/err"
check "a chainfs mount answers" sh -c "'$CTL' '$M' ping | grep -q version"
# total=0: no link is followed, as RESOLVE_NO_SYMLINKS
"$CTL" "$M" limits total=0 >/dev/null || fail "limits total=0"
expect ELOOP stat "$M/chains/40"
expect "ok file" stat "$M/chains/target"
"$CTL" "$M" limits total=40 >/dev/null
expect "ok file" stat "$M/chains/40"
# a bare `mode` shows the mode and changes nothing; `limits` in kernel mode says whose walk
# its numbers bound
check "a bare mode shows the mode" sh -c "'$CTL' '$M' mode | grep -qx 'mode  *server'"
expect "ok file" stat "$M/chains/40"
check "limits in server mode: no note" not sh -c "'$CTL' '$M' limits | grep -q note"
"$CTL" "$M" mode kernel >/dev/null || fail "mode kernel"
check "a bare mode shows the new mode" sh -c "'$CTL' '$M' mode | grep -qx 'mode  *kernel'"
check "limits in kernel mode: says the kernel follows" \
	sh -c "'$CTL' '$M' limits total=1000 | grep -q 'note .*kernel follows links'"
unmount_cfs "$M"

# -o ro: the control socket's spec lines change nothing either; the last of ro and rw wins
mount_cfs "$M" -o ro || { fail "mount -o ro"; finish; exit 1; }
"$CTL" "$M" dir /made >/dev/null 2>"$T/err"
check "-o ro: a spec line is refused" test $? -ne 0
check "-o ro: and says why" grep -q "read-only (-o ro).*EROFS" "$T/err"
check "-o ro: nothing was made" test ! -e "$M/made"
unmount_cfs "$M"
mount_cfs "$M" -o ro,rw || { fail "mount -o ro,rw"; finish; exit 1; }
check "-o ro,rw: a spec line is taken" sh -c "'$CTL' '$M' dir /made >/dev/null && test -d '$M/made'"
unmount_cfs "$M"
# a spec line's arguments are words of their own, quoted for the spec lexer: escapes mean
# what they mean in a spec file's quoted words, blanks and quotes stay in their word
mount_cfs "$M" || { fail "mount"; finish; exit 1; }
tab=$(printf '\t')
spec_arg() { # WANT PATH ARGS...: chainfsctl M file PATH ARGS..., then PATH holds WANT (printf)
	want=$1 path=$2
	shift 2
	"$CTL" "$M" file "$path" "$@" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; return 1; }
	test "$(od -An -c "$M$path")" = "$(printf "$want" | od -An -c)"
}
check "an escape in an argument: a newline" spec_arg 'hello\n' /q/nl 'hello\n'
check "an escape in an argument: a carriage return (every escape of the lexer)" \
	spec_arg 'a\rb' /q/cr 'a\rb'
check "an argument with a blank is one word" spec_arg 'a b' /q/blank 'a b'
check "a path with a blank" spec_arg 'x' '/q/with space' x
check "a raw tab" spec_arg 'tab\there' /q/tab "tab${tab}here"
check "quotes inside" spec_arg 'say "hi"' /q/quote 'say "hi"'
check "a lone backslash" spec_arg 'x\\' /q/bs 'x\'
check "an argument quoted already is sent as it is" spec_arg 'more\n' /q/pre '"more\n"'
check "an attribute's value with a blank" spec_arg 'a ba ba ' /q/pat size=8 'pattern=a b'
check "an attribute stays an attribute" sh -c "'$CTL' '$M' dir /q/d mode=0700 >/dev/null &&
	test \"\$(stat -c %a '$M/q/d')\" = 700"
check "a whole line as one argument still works" \
	sh -c "'$CTL' '$M' 'file /q/line \"x y\"' >/dev/null && test \"\$(cat '$M/q/line')\" = 'x y'"
unmount_cfs "$M"

# resolve: "1 link", and a loop named as one, not as a limit reached
printf 'file /t x\nlink /one t\nloop /ring 3\nchain /c41 41 t\ndir /sub mode=0750 uid=65534 gid=54321\nlink /sub/up ../t\n' >"$T/r.spec"
mount_cfs "$M" "$T/r.spec" || { fail "mount"; finish; exit 1; }
"$CTL" "$M" resolve one >"$T/r.out"
check "resolve: 1 link, not 1 links" grep -q "), 1 link, deepest" "$T/r.out"
"$CTL" "$M" resolve ring >"$T/r.out"
check "resolve: a loop says so" grep -q "ELOOP: a loop, the walk came back" "$T/r.out"
"$CTL" "$M" resolve c41 >"$T/r.out"
check "resolve: the limit is no loop" grep -qx "  ELOOP (after [0-9]* links)" "$T/r.out"
# any path on the mount names it, as findmnt -T finds a path's mount: a directory in it for
# the mount, a host path in it (through a host link too) for the path in the tree; a path
# elsewhere, which the tree has not either, is said to be elsewhere
check "a directory in the mount names the mount" sh -c "'$CTL' '$M/sub' ping | grep -q version"
check "a link in the mount names the mount" sh -c "'$CTL' '$M/sub/up' ping | grep -q version"
"$CTL" "$M" resolve "$M/c41" >"$T/r.out"
check "resolve of a host path on the mount walks its tree path" \
	grep -q "^ l c41 -> .c41.chain/40" "$T/r.out"
ln -s "$M" "$T/alias"
check "... reached through a host link" \
	sh -c "'$CTL' '$T/alias/sub' resolve '$T/alias/one' | grep -q '), 1 link, deepest'"
check "an absolute path in the tree still is one" \
	sh -c "'$CTL' '$M' resolve /one | grep -q '), 1 link, deepest'"
"$CTL" "$M" resolve "$T/plain" >"$T/r.out" 2>"$T/err"
check "resolve of a path on another filesystem: exit 2" test $? -eq 2
check "... saying it is not on the mount" \
	grep -q "^chainfsctl: $T/plain: on .* at .*, not on the chainfs mount at $M (nor a path in its tree: ENOENT)" "$T/err"
# resolve -l: mode, owner and group at each step, as namei -l (the JSON has them too)
nobody=$(getent passwd 65534 | cut -d: -f1)
"$CTL" "$M" resolve -l "$M/sub/up" >"$T/r.out"
check "resolve -l: the root's mode and owner" grep -Eq '^drwxr-xr-x +root +root +/$' "$T/r.out"
check "resolve -l: a directory's own (names, or numbers without one)" \
	grep -Eq "^drwxr-x--- +${nobody:-65534} +54321 +sub\$" "$T/r.out"
check "resolve -l: the link's, with its target" \
	grep -Eq '^lrwxrwxrwx +root +root +up -> \.\./t$' "$T/r.out"
check "resolve -l: a nested step indented after the columns" \
	awk '/^d.* \/$/ { a = length($0) } /^-rw-r--r-- .* t$/ { b = length($0) } END { exit !(a && b == a + 2) }' "$T/r.out"
check "resolve --json: mode, uid, gid of each step" \
	has "$("$CTL" --json "$M" resolve sub)" '"mode":16872,"uid":65534,"gid":54321'
# fault list names a delay-only rule's effect; fault log's times are ISO 8601, local
"$CTL" "$M" fault add op=getattr path=/t delay=1 >/dev/null
check "fault list: a delay-only rule's effect is delay" \
	sh -c "'$CTL' '$M' fault list | grep -Eq '^ +1 getattr +/t +delay '"
"$CTL" "$M" fault add op=lookup path=/nosuch errno=EIO >/dev/null
stat "$M/nosuch" >/dev/null 2>&1
check "fault log: the time of a hit as ISO 8601" sh -c "'$CTL' '$M' fault log |
	grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} +2 lookup '"
unmount_cfs "$M"

# chainfs --help names the options the completion offers after -o
for o in ro fsname=; do
	check "chainfs --help names -o $o" grep -q -- "-o $o" "$T/chelp"
done
finish
