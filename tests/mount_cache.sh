#!/bin/sh
# What the kernel keeps, and that it is never wrong: with -o opens=skip (the default) the
# kernel stops sending OPEN, OPENDIR, RELEASE(DIR) and FLUSH, so a warm walk reaches the
# daemon almost never (counted by `stats`); O_TRUNC still truncates; open faults are refused
# with the option that allows them; and in every follow mode, with either opens= setting, a
# directory's listing (names and d_type, as getdents gives them) shows every change at once:
# changes in that directory, changes elsewhere that change what a link leads to (server
# mode), changes through another path to the same directory, control-socket generators and
# mode switches.
# check: long: six finds of the default tree
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || { echo "mount_cache: needs python3 (os.scandir)"; exit 1; }

# ls_types DIR: "name:kind ..." from getdents alone (d_type; no stat unless DT_UNKNOWN). One
# python3 process answers every call (started by ls_server, below): a directory's path goes
# in on one fifo, its listing (or the error, on one line) comes back on the other.
ls_types() (
	trap '' PIPE # (a subshell: that process gone is an answer that fails, not this script's end)
	printf '%s\n' "$1" 2>/dev/null >&3
	IFS= read -r ls <&4 || ls="ls_types: the listing process is gone"
	printf '%s\n' "$ls"
)
ls_server() {
	mkfifo "$T/ls.in" "$T/ls.out"
	timeout 600 python3 -c '
import os, sys
with open(sys.argv[1], "rb") as req, open(sys.argv[2], "w") as rep:
    for line in req:
        d = os.fsdecode(line[:-1])
        try:
            out = []
            for e in sorted(os.scandir(d), key=lambda e: e.name):
                k = "dir" if e.is_dir(follow_symlinks=False) else "link" if e.is_symlink() else "file"
                out.append(e.name + ":" + k)
            rep.write(" ".join(out) + "\n")
        except OSError as e:
            rep.write("%s: %s\n" % (type(e).__name__, e))
        rep.flush()' "$T/ls.in" "$T/ls.out" &
	PIDS="$PIDS $!"
	exec 3>"$T/ls.in" 4<"$T/ls.out"
}
# listing WANT DIR: ls_types DIR must print WANT
listing() {
	got=$(ls_types "$2")
	if [ "$got" = "$1" ]; then pass; else fail "listing of $2: want '$1', got '$got'"; fi
}
# listed NAME:KIND DIR: ls_types DIR shows that entry
listed() {
	got=$(ls_types "$2")
	case " $got " in
	*" $1 "*) pass ;;
	*) fail "listing of $2: want '$1' in '$(printf '%s' "$got" | cut -c1-60)...'" ;;
	esac
}
reset() { timeout 30 "$CTL" -s "$1" stats reset >/dev/null; }

# --- the fast path is negotiated: a warm find sends nothing per directory --------------------
M=$T/fast
S=$T/fast.sock
mount_cfs "$M" -o "ctl=$S" || { fail "mount"; finish; exit 1; }
dirs=$(find "$M/tree" -type d | wc -l)
check "the walk saw the tree ($dirs directories)" test "$dirs" -gt 1000
reset "$S"
find "$M/tree" >/dev/null
find "$M/tree" >/dev/null
n_od=$(req "$S" opendir) n_rd=$(req "$S" releasedir) n_dir=$(($(req "$S" readdir) + $(req "$S" readdirplus)))
check "warm finds: no OPENDIR ($n_od)" test "$n_od" -eq 0
check "warm finds: no RELEASEDIR ($n_rd)" test "$n_rd" -eq 0
# (the kernel may drop some inodes, and their listings with them, under memory pressure)
check "warm finds: listings kept ($n_dir READDIRs for $dirs directories)" test "$n_dir" -lt $((dirs / 20))
reset "$S"
find "$M/tree" >/dev/null
n=$(reqs "$S")
check "the third find: $n requests for $dirs directories" test "$n" -lt $((dirs / 20))
reset "$S"
cat "$M"/files/* "$M"/chains/target >/dev/null 2>&1
cat "$M"/files/* "$M"/chains/target >/dev/null 2>&1
n_o=$(req "$S" open) n_r=$(req "$S" release) n_f=$(req "$S" flush)
check "cat of files: at most the first OPEN reaches us ($n_o)" test "$n_o" -le 1
check "cat of files: no RELEASE ($n_r)" test "$n_r" -eq 0
check "cat of files: at most the first FLUSH ($n_f)" test "$n_f" -le 1
printf 'hello world\n' >"$M/files/trunc"
printf 'y\n' >"$M/files/trunc"
expect "ok 2" cat "$M/files/trunc"
expect "ok file 0644 2" stat "$M/files/trunc"
out=$("$CTL" -s "$S" fault add op=open path=/files/trunc errno=EIO 2>&1)
check "fault add op=open is refused, naming the option ($out)" \
	sh -c "printf '%s' '$out' | grep -q 'opens=answer'"
out=$("$CTL" -s "$S" fault add op=opendir path=/tree errno=EIO 2>&1)
check "fault add op=opendir is refused" sh -c "printf '%s' '$out' | grep -q 'opens=answer'"
check "fault add op=read is accepted" sh -c "'$CTL' -s '$S' fault add op=read path=/files/trunc errno=EIO >/dev/null"
check "... and nothing else was added" test "$("$CTL" -s "$S" --json fault list | grep -o '"op"' | wc -l)" -eq 1
"$CTL" -s "$S" fault clear >/dev/null
unmount_cfs "$M"

# --- opens=answer: every open reaches the daemon, and can be faulted -------------------------
mount_cfs "$M" -o "ctl=$S,opens=answer" || fail "mount opens=answer"
find "$M/tree" >/dev/null
reset "$S"
find "$M/tree" >/dev/null
n_od=$(req "$S" opendir)
check "opens=answer: a warm find opens every directory ($n_od of $dirs)" test "$n_od" -ge "$dirs"
n_dir=$(($(req "$S" readdir) + $(req "$S" readdirplus)))
check "opens=answer: listings are still kept ($n_dir)" test "$n_dir" -lt $((dirs / 20))
check "opens=answer: fault add op=open" \
	sh -c "'$CTL' -s '$S' fault add op=open path=/chains/target errno=EACCES >/dev/null"
expect EACCES open "$M/chains/target" r
"$CTL" -s "$S" fault clear >/dev/null
expect ok open "$M/chains/target" r
printf 'hello world\n' >"$M/files/trunc"
printf 'y\n' >"$M/files/trunc"
expect "ok 2" cat "$M/files/trunc"
unmount_cfs "$M"

# --- listings are never stale, in every mode ---------------------------------------------------
ls_server
for opens in skip answer; do
	for mode in kernel collapse server; do
		tag="$mode opens=$opens"
		L=$T/l-$mode-$opens
		LS=$L.sock
		# (the daemon does not keep the listing process's fifos)
		mount_cfs "$L" -o "follow=$mode,opens=$opens,ctl=$LS" 3>&- 4>&- ||
			{ fail "mount $tag"; continue; }
		mkdir "$L/t" "$L/u" "$L/t/d"
		printf A >"$L/t/a"
		printf B >"$L/t/b"
		ln -s a "$L/t/l"
		ln -s ../t/a "$L/u/x"
		ln -s ../t "$L/u/al"
		[ "$mode" = server ] && lk=file || lk=link
		[ "$mode" = server ] && ld=dir || ld=link
		listing "a:file b:file d:dir l:$lk" "$L/t"
		listing "al:$ld x:$lk" "$L/u"
		listing "al:$ld x:$lk" "$L/u" # (kept now)
		# in the directory itself
		rm "$L/t/l"
		ln -s d "$L/t/l"
		listing "a:file b:file d:dir l:$ld" "$L/t"
		mv "$L/t/l" "$L/t/l2"
		listing "a:file b:file d:dir l2:$ld" "$L/t"
		rm -d "$L/t/l2" # (server mode: a link to a directory is one, rmdir removes it)
		listing "a:file b:file d:dir" "$L/t"
		# elsewhere: u/x leads to t/a, which becomes a directory
		rm "$L/t/a"
		mkdir "$L/t/a"
		listing "al:$ld x:$ld" "$L/u"
		rmdir "$L/t/a"
		printf A >"$L/t/a"
		listing "al:$ld x:$lk" "$L/u"
		# through another path to the same directory (server mode: u/al is t itself)
		if [ "$mode" = server ]; then
			listing "a:file b:file d:dir" "$L/u/al"
			touch "$L/t/new"
			listing "a:file b:file d:dir new:file" "$L/u/al"
			touch "$L/u/al/new2"
			listing "a:file b:file d:dir new:file new2:file" "$L/t"
			rm "$L/u/al/new" "$L/t/new2"
			listing "a:file b:file d:dir" "$L/u/al"
			listing "a:file b:file d:dir" "$L/t"
		fi
		# a big directory: past its first READDIRPLUS (~128 KiB) the kernel reads plain READDIR, so a
		# link listed there has no dentry whose invalidation would reach the listing
		mkdir "$L/w"
		(cd "$L/w" && touch $(seq -f f%04g 1200) && ln -s ../t/a zz)
		ls_types "$L/w" >/dev/null
		ls_types "$L/w" >/dev/null
		rm "$L/t/a"
		mkdir "$L/t/a"
		listed "zz:$ld" "$L/w"
		rmdir "$L/t/a"
		printf A >"$L/t/a"
		listed "zz:$lk" "$L/w"
		# the control socket: a generator line, then the other modes and back
		"$CTL" -s "$LS" chain /t/gen 3 /t/b >/dev/null
		listing ".gen.chain:dir a:file b:file d:dir gen:$lk" "$L/t"
		"$CTL" -s "$LS" mode server >/dev/null
		listing "al:dir x:file" "$L/u"
		"$CTL" -s "$LS" mode kernel >/dev/null
		listing "al:link x:link" "$L/u"
		"$CTL" -s "$LS" mode "$mode" >/dev/null
		listing "al:$ld x:$lk" "$L/u"
		# unchanged listings are kept, also in server mode, unless opens are answered
		ls_types "$L/u" >/dev/null
		ls_types "$L/t" >/dev/null
		reset "$LS"
		ls_types "$L/u" >/dev/null
		ls_types "$L/t" >/dev/null
		n_dir=$(($(req "$LS" readdir) + $(req "$LS" readdirplus)))
		if [ "$opens" = skip ] || [ "$mode" != server ]; then
			check "$tag: unchanged listings are kept ($n_dir READDIRs)" test "$n_dir" -eq 0
		else
			check "$tag: listings are read again ($n_dir READDIRs)" test "$n_dir" -gt 0
		fi
		unmount_cfs "$L"
	done
done

finish
