#!/bin/sh
# Server mode: a link that does not resolve (dangling, a loop, past the limits, or one the
# caller may not follow) shows as the link it is, so it can be listed, removed, renamed and
# replaced as on tmpfs; following it fails with the errno chainfs's walk found; and once it
# resolves it shows its target at the next lookup, and the reverse, with hour-long caches.
. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
: >"$T/empty.spec"
M=$T/m
mount_cfs "$M" -o "follow=server,allow_other,entry_timeout=3600,attr_timeout=3600" \
	"$T/empty.spec" || { fail "mount"; finish; exit 1; }
chmod 755 "$M"
R=$T/ref
mount_tmpfs "$R" || { fail "tmpfs"; finish; exit 1; }

# The issue's own commands.
mkdir "$M/w2" && echo one >"$M/w2/a" && ln -s nothere "$M/w2/l"
check "ls -la of a dangling link's directory" sh -c "ls -la '$M/w2' >'$T/ls' 2>'$T/ls.err'"
check "ls -la says nothing on stderr" test ! -s "$T/ls.err"
check "ls -l shows the link and its target" grep -q " l -> nothere$" "$T/ls"
check "rm of a dangling link" rm "$M/w2/l"
ln -s nothere "$M/w2/l"
check "rm -r of its directory" rm -r "$M/w2"

# The same script on tmpfs and on the mount: exit statuses and what find lists.
script() {
	cd "$1" || return 1
	mkdir d priv && chmod 700 priv && echo s >priv/f && chmod 711 .
	for c in "ln -s nothere d/dangling" "ln -s loop2 d/loop1" "ln -s loop1 d/loop2" \
		"ln -s ../priv/f d/noperm" "mv d/dangling d/renamed" "ln -sfn alsonot d/renamed" \
		"mv d/loop1 d/loop3" "ln -sfn loop3 d/loop2" "rm d/loop3" "ln -s nothere d/gone" \
		"rm d/gone" "mkdir d/sub" "ln -s ../../missing d/sub/up" "stat -L d/renamed" \
		"stat -L d/loop2" "cat d/noperm" "ln -s loopb d/loopa" "ln -s loopa d/loopb"; do
		sh -c "$c" >/dev/null 2>&1
		echo "$c: $?"
	done
	i=0
	while [ $i -lt 45 ]; do # a chain past the limit of 40
		ln -s c$((i + 1)) d/c$i
		i=$((i + 1))
	done
	echo x >d/c45
	echo "stat -L d/c0: $(stat -L d/c0 >/dev/null 2>&1; echo $?)"
	# %y%Y: the kind, and what following gives (N: dangling, L: a loop or too long); by
	# design a link that resolves shows in server mode as what it leads to: "lf" there is
	# "ff" here, and so on, so both sides write it as its target's kind
	find . -printf '%y%Y %p\n' | sed -E 's/^l([^NL?]) /\1\1 /' | LC_ALL=C sort
	echo "as uid 65534:"
	$NOBODY find d -printf '%y%Y %p\n' 2>&1 | sed -E 's/^l([^NL?]) /\1\1 /' | LC_ALL=C sort
	$NOBODY sh -c 'ls -l d/noperm >/dev/null 2>&1; echo "ls -l d/noperm: $?"'
}
(script "$R") >"$T/script.ref" 2>&1
(script "$M") >"$T/script.mnt" 2>&1
same_output "the same script on tmpfs and in server mode" "$T/script.ref" "$T/script.mnt"
check "the script saw broken links as links" grep -q "^lN ./d/renamed$" "$T/script.mnt"
check "... and loops" grep -q "^lL ./d/loopa$" "$T/script.mnt"
check "... and a chain too long" grep -q "^lL ./d/c0$" "$T/script.mnt"

# Following fails with the walk's errno: dangling, through a file, a loop, past max_total,
# past max_nest, and no search permission (and the kernel, following what readlink says,
# reaches the same one).
mkdir "$M/e" && echo f >"$M/e/file" && ln -s nothere "$M/e/dangling" &&
	ln -s file/x "$M/e/notdir" && ln -s self "$M/e/self" && ln -s ../priv/f "$M/e/noperm"
"$CTL" "$M" chain /e/long 41 /e/file >/dev/null
"$CTL" "$M" nest /e/deep 41 /e/file >/dev/null
for c in "ENOENT dangling" "ENOTDIR notdir" "ELOOP self" "ELOOP long" "ELOOP deep"; do
	set -- $c
	expect "$1" stat "$M/e/$2"
	expect "$1" open "$M/e/$2" r
	expect "ok link" lstat "$M/e/$2"
	check "$2: size is readlink's length" test "$(stat -c %s "$M/e/$2")" = \
		"$(readlink "$M/e/$2" | tr -d '\n' | wc -c)"
	check "chainfsctl resolve says $1 for $2" sh -c "'$CTL' '$M' resolve /e/$2 | grep -q '$1'"
done
check "a loop answers itself" test "$(readlink "$M/e/self")" = self
check "a dangling link answers its target" test "$(readlink "$M/e/dangling")" = nothere
check "uid 65534: EACCES" sh -c "$NOBODY '$PROBE' stat '$M/e/noperm' | grep -qx EACCES"
check "uid 65534: the link itself" sh -c "$NOBODY '$PROBE' lstat '$M/e/noperm' | grep -q '^ok link'"
expect "ok file" stat "$M/e/noperm" # root may search priv

# Resolvable later, and the reverse, at the next lookup with hour-long caches.
expect "ok link" lstat "$M/e/dangling"
echo now >"$M/e/nothere"
expect "ok file" lstat "$M/e/dangling"
expect "ok 4" cat "$M/e/dangling"
rm "$M/e/nothere"
expect "ok link" lstat "$M/e/dangling"
expect ENOENT stat "$M/e/dangling"
expect "ok link" lstat "$M/e/long"
"$CTL" "$M" limits total=100 nest=100 >/dev/null
expect "ok file" lstat "$M/e/long"
expect "ok file" lstat "$M/e/deep"
"$CTL" "$M" limits total=40 nest=40 >/dev/null
expect "ok link" lstat "$M/e/long"
"$CTL" "$M" mode kernel >/dev/null
expect "ok link" lstat "$M/e/notdir"
"$CTL" "$M" mode server >/dev/null
expect ENOTDIR stat "$M/e/notdir"
unmount_cfs "$M"
finish
