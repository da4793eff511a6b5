#!/bin/sh
# Server mode: a change made through a link is seen at once under every name of what it
# changed (the directory's own path, every link to it, every hard link), as on tmpfs. Each
# scenario runs on a tmpfs and on chainfs mounts with hour-long timeouts and with the
# defaults; the outputs must be the same.
. "$(dirname "$0")/lib.sh"

M=$T/mnt
R=$T/ref
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
: >"$T/empty.spec"

# Through a directory link LE -> E, looked at through E (and the other way round). Every
# command runs from the root with relative paths, so error messages compare too.
through_dir_link() {
	mkdir E && ln -s E LE && ln -s E LE2
	echo old >E/c && cat E/c LE2/c
	# write a temp file, rename it over: the usual replace, through the link
	echo new >LE/c.tmp && mv LE/c.tmp LE/c
	cat E/c LE2/c
	echo hi >E/g && cat E/g LE2/g && rm LE/g
	stat -c '%n %h %s' E/g LE2/g
	cat E/g
	echo hi >E/h && cat E/h && rm LE/h
	echo again >E/h # a new file, not the removed one
	ls E && cat LE/h E/h && stat -c '%n %h %s' E/h LE/h
	touch E/a && stat -c '%n %h' E/a && mv LE/a LE/b
	stat -c '%n %h' E/a E/b LE2/a
	mkdir E/sub && stat -c '%n %h' E/sub LE2/sub && rmdir LE/sub
	stat -c '%n %h' E/sub LE2/sub
	ls LE2
	# the other way round: through E, looked at through the links
	echo x >E/r && cat LE/r && rm E/r
	cat LE/r LE2/r
	echo one >E/s && cat LE/s && echo two >E/s.tmp && mv E/s.tmp E/s
	cat LE/s LE2/s
	# hard links: a second name in the directory, changed through the link
	echo hard >E/f && ln E/f E/f2 && stat -c '%n %h %a' E/f E/f2 LE2/f2
	chmod 640 LE/f2 && echo harder >>LE/f
	stat -c '%n %h %a %s' E/f E/f2 LE2/f2
	cat E/f2
	rm LE/f2 && stat -c '%n %h' E/f LE2/f E/f2
	# nested: a directory below the link
	mkdir -p E/d/e && echo deep >E/d/e/k && cat E/d/e/k && rm LE/d/e/k
	cat E/d/e/k LE2/d/e/k
}

# l -> t: every round changes t through l, and the same process looks at t at once.
through_file_link() {
	echo 0 >t && ln -s t l
	perl -e 'for my $i (1 .. 200) {
		my $mode = $i % 2 ? 0640 : 0604;
		chmod($mode, "l") or die "chmod: $!";
		my @s = stat("t");
		printf "%d mode %o\n", $i, $s[2] & 07777;
		open(my $w, ">>", "l") or die "open l: $!";
		print $w "round $i\n";
		close($w);
		@s = stat("t");
		open(my $r, "<", "t") or die "open t: $!";
		my @lines = <$r>;
		printf "%d size %d last %s", $i, $s[7], $lines[-1];
	}' 2>&1
}

# Replies held until the kernel forgot the other names' answers: in one process, with no
# time between a change and the next look, through a directory link (rename over, remove)
# and through more links to one file than the attributes dropped before the reply (32).
at_once() {
	mkdir E && ln -s E LE && echo 0 >t
	for i in $(seq 1 40); do ln -s t "l$i"; done
	perl -e 'sub cat { open(my $f, "<", $_[0]) or return "$!\n"; local $/; <$f> }
	for my $i (1 .. 100) {
		open(my $w, ">", "LE/c.tmp") or die "create: $!";
		print $w "v$i\n";
		close($w);
		rename("LE/c.tmp", "LE/c") or die "rename: $!";
		print "$i E/c ", cat("E/c");
		open($w, ">", "E/g") or die "create g: $!";
		close($w);
		-e "E/g" or die "E/g: $!";
		unlink("LE/g") or die "unlink: $!";
		print "$i E/g ", (-e "E/g" ? "still there" : "gone"), "\n";
		open($w, ">>", "t") or die "t: $!";
		print $w "round $i\n";
		close($w);
		my %sizes;
		$sizes{(stat("l$_"))[7]}++ for 1 .. 40;
		print "$i sizes ", join(" ", map { "$_x$sizes{$_}" } sort keys %sizes), "\n";
	}' 2>&1
}

# The same for attributes alone, where replies are never held (loop=libfuse): they are
# dropped before every reply, which needs no lock.
mode_through_file_link() {
	echo 0 >t && ln -s t l
	perl -e 'for my $i (1 .. 1000) {
		chmod($i % 2 ? 0640 : 0604, "l") or die "chmod: $!";
		my @s = stat("t");
		printf "%d mode %o\n", $i, $s[2] & 07777;
	}' 2>&1
}

# A directory along a link's path closed to others: uid 65534 is refused at once, as on tmpfs
# (server mode follows links itself, so only the daemon sees the directory in the walk).
closed_on_the_path() {
	mkdir D && echo s >D/t && ln -s D/t l && ln -s D LD
	$NOBODY cat l LD/t
	chmod 700 D
	$NOBODY cat l LD/t
	chmod 755 D
	$NOBODY cat l LD/t
}

run() { # run DIR FUNCTION: FUNCTION's output, run from DIR
	(cd "$1" && "$2" 2>&1)
}

mount_tmpfs "$R" || { fail "tmpfs"; finish; exit 1; }
for s in through_dir_link through_file_link closed_on_the_path at_once mode_through_file_link; do
	mkdir "$R/$s" && run "$R/$s" "$s" >"$T/$s.tmpfs"
done
check "tmpfs: a removed file is gone under every name" grep -q "cannot statx 'E/g'" \
	"$T/through_dir_link.tmpfs"
check "tmpfs: uid 65534 is refused past a closed directory" grep -q "denied" \
	"$T/closed_on_the_path.tmpfs"

for opts in follow=server,entry_timeout=3600,attr_timeout=3600 follow=server; do
	mount_cfs "$M" -o "$opts,allow_other" "$T/empty.spec" || { fail "mount $opts"; continue; }
	for s in through_dir_link through_file_link closed_on_the_path at_once; do
		mkdir "$M/$s" && run "$M/$s" "$s" >"$T/$s.cfs"
		same_output "$s, $opts == tmpfs" "$T/$s.tmpfs" "$T/$s.cfs"
	done
	unmount_cfs "$M"
done

# Removing a link to a directory (README, chainfs(1)): rmdir removes the link whatever the
# directory holds; unlink is refused (the kernel sees a directory); rm -rf empties the
# directory first, as the docs warn.
if mount_cfs "$M" -o follow=server "$T/empty.spec"; then
	mkdir "$M/E" && echo x >"$M/E/x" && ln -s E "$M/L1" && ln -s E "$M/L2"
	check "unlink of a link to a directory: EISDIR" not unlink "$M/L1" 2>/dev/null
	check "rmdir removes the link" rmdir "$M/L1"
	check "... and only the link" test "$(ls "$M")" = "$(printf 'E\nL2')" -a -f "$M/E/x"
	rm -rf "$M/L2"
	check "rm -rf of a link to a directory empties the directory" \
		test "$(ls "$M")" = E -a -z "$(ls "$M/E")"
	unmount_cfs "$M"
else
	fail "mount follow=server"
fi

s=mode_through_file_link
# libfuse's loop reads /dev/fuse only: this one runs there whatever CHAINFS_TRANSPORT says
opts=follow=server,entry_timeout=3600,attr_timeout=3600,loop=libfuse,transport=dev
if mount_cfs "$M" -o "$opts" "$T/empty.spec"; then
	mkdir "$M/$s" && run "$M/$s" "$s" >"$T/$s.cfs"
	same_output "$s, $opts == tmpfs" "$T/$s.tmpfs" "$T/$s.cfs"
	unmount_cfs "$M"
else
	fail "mount $opts"
fi

finish
