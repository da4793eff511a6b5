#!/bin/sh
# --materialize writes only data: a file's holes, a pattern of zeros and blocks of zeros stay
# holes (a 64 GiB sparse file and a terabyte of zeros take a few blocks, at once), and the
# limit on what it writes counts only that. A tree over the limit is refused before anything
# is made, with a message naming --max-bytes, which sets the limit (K, M, G, T; 0: none).
# All on a tmpfs of its own (4 GiB: a copy that wrote its zeros would not fit).
# check: once: it mounts nothing
. "$(dirname "$0")/lib.sh"

W=$T/fs
mount_tmpfs "$W" || { fail "tmpfs"; finish; exit 1; }
# mat DIR ARGS...: a fresh DIR, then chainfs --materialize ARGS... DIR (stderr in $T/err)
mat() {
	d=$W/$1
	shift
	rm -rf "$d" && mkdir "$d" && timeout 60 "$CHAINFS" --materialize "$@" "$d" 2>"$T/err"
}
# byte_at FILE OFFSET: the byte there, as od prints it
byte_at() {
	od -An -c -j "$2" -N 1 "$1" | tr -d ' '
}

# sparse: a hole of 64 GiB with 3 bytes in it; a terabyte of zeros with one byte
printf '%s\n' 'file /s' 'truncate /s 64G' 'append /s end at=32G' \
	'file /z size=1T pattern="\x00"' 'append /z y at=4G' 'file /p size=10000 pattern=ab' >"$T/sparse.spec"
check "a sparse tree materializes" mat sparse "$T/sparse.spec"
[ ! -s "$T/err" ] || cat "$T/err" >&2
check "the sparse file has its size" test "$(stat -c %s "$W/sparse/s" 2>/dev/null)" = $((64 << 30))
check "... and its data" test "$(byte_at "$W/sparse/s" $((32 << 30)))" = e
blocks=$(stat -c %b "$W/sparse/s" 2>/dev/null)
check "... in a few blocks, not 64 GiB of zeros (st_blocks $blocks)" test "${blocks:-999}" -le 64
check "the terabyte of zeros has its size" test "$(stat -c %s "$W/sparse/z" 2>/dev/null)" = $((1 << 40))
check "... and its byte" test "$(byte_at "$W/sparse/z" $((4 << 30)))" = y
blocks=$(stat -c %b "$W/sparse/z" 2>/dev/null)
check "... in a few blocks (st_blocks $blocks)" test "${blocks:-999}" -le 64
check "a pattern file is written whole" \
	test "$(head -c 10000 "$W/sparse/p" | tr -d ab | wc -c)" -eq 0 -a "$(stat -c %s "$W/sparse/p")" -eq 10000

# over the limit: refused before anything is made, the option named
printf '%s\n' 'dir /d' 'file /d/big size=1025M' >"$T/big.spec"
mat big "$T/big.spec"
st=$?
check "a tree of more than 1 GiB of data is refused (exit $st)" test "$st" -eq 1
check "... the message names --max-bytes" grep -q -- "--max-bytes" "$T/err"
check "... and the bytes" grep -q "1074790400 bytes" "$T/err"
check "... and nothing was made" test -z "$(ls -A "$W/big")"
printf '%s\n' 'file /m size=3M' 'file /s' 'truncate /s 1G' >"$T/mid.spec"
mat mid --max-bytes=2M "$T/mid.spec"
st=$?
check "--max-bytes=2M: 3 MiB of data is refused (exit $st)" test "$st" -eq 1
check "... naming --max-bytes=2097152" grep -q -- "--max-bytes=2097152" "$T/err"
check "--max-bytes=4M: the same tree is written" mat mid --max-bytes=4M "$T/mid.spec"
check "... all of it" test "$(stat -c %s "$W/mid/m")" -eq $((3 << 20))
check "--max-bytes=3072K: exactly the limit is allowed" mat mid --max-bytes=3072K "$T/mid.spec"
check "--max-bytes=0: no limit" mat mid --max-bytes=0 "$T/mid.spec"
check "--max-bytes=3145728 (plain bytes)" mat mid --max-bytes=3145728 "$T/mid.spec"
for bad in abc 1X -1 ""; do
	mat mid "--max-bytes=$bad" "$T/mid.spec"
	st=$?
	check "--max-bytes='$bad': a usage error (exit $st)" test "$st" -eq 2
	check "... naming --max-bytes" grep -q -- "--max-bytes" "$T/err"
done
mkdir "$T/nm"
MOUNTS="$MOUNTS $T/nm" # should it mount after all
timeout 20 "$CHAINFS" --max-bytes=1M "$T/mid.spec" "$T/nm" 2>"$T/err"
st=$?
check "--max-bytes without --materialize is refused (exit $st)" test "$st" -eq 2
check "... saying it goes with --materialize" grep -q -- "--max-bytes goes with --materialize" "$T/err"
finish
