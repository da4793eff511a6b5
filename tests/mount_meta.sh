#!/bin/sh
# Metadata is bounded as tmpfs bounds it: on a max_data=1M mount (max_meta follows it) uid
# 65534 making links with 4000-byte targets, or directories with 255-byte names, gets
# ENOSPC after about a megabyte of them, and the daemon's memory grows by about that much,
# not the 200 MB that 50,000 such links took before; statfs shows the room left as free
# inodes; removing them gives the room back, to the byte. A tmpfs of size=1m alongside for
# comparison (it counts a long link target as a 4 KiB page; names it does not count against
# size). A spec or a control line that does not fit fails naming the options.
. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
MAX=50000    # what uid 65534 tries to make: the issue's 50,000 links
RSS_MAX=32768 # KiB the daemon may grow by while full: the limit is 1 MiB, ASan adds its own
: >"$T/empty.spec"
M=$T/m
R=$T/ref
mount_cfs "$M" -o "max_data=1M,allow_other,ctl=$SOCK" "$T/empty.spec" ||
	{ fail "mount max_data=1M"; finish; exit 1; }
chmod 755 "$M"
mount_tmpfs_small() {
	mkdir -p "$1" && mount -t tmpfs -o size=1m,mode=755 chainfs-ref "$1" && MOUNTS="$MOUNTS $1"
}
mount_tmpfs_small "$R" || { fail "tmpfs size=1m"; finish; exit 1; }
for d in "$M" "$R"; do mkdir "$d/pub" && chmod 777 "$d/pub"; done
pid=$("$FUSE_MOUNT" --pid "$M")
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
meta() { ctl stats | awk '$1 == "meta_bytes" { print $2 }'; }
ffree() { stat -f -c %d "$1"; }

# fill DIR KIND: as uid 65534, KIND (link: 4000-byte targets; dir: 255-byte names) until a
# call fails or MAX were made: "COUNT ERRNO"
fill() {
	$NOBODY timeout 300 python3 - "$1" "$2" "$MAX" <<'PY'
import errno, os, sys
d, kind, most = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(most):
    try:
        if kind == "link":
            os.symlink("t" * 4000, os.path.join(d, "l%05d" % i))
        else:
            os.mkdir(os.path.join(d, "%05d" % i + "n" * 250))
    except OSError as e:
        print(i, errno.errorcode[e.errno])
        break
else:
    print(most, "none")
PY
}
# empty DIR: as uid 65534, remove what fill made
empty() { $NOBODY find "$1" -mindepth 1 -delete; }

base_meta=$(meta)
base_ffree=$(ffree "$M")
rss0=$(rss)
set -- $(fill "$M/pub" link)
links=$1 links_err=$2
check "links with 4000-byte targets stop with ENOSPC (after $links, got $2)" test "$2" = ENOSPC
check "... after about a megabyte of them ($links < 300)" test "$links" -gt 100 -a "$links" -lt 300
grown=$(($(rss) - rss0))
check "the daemon grew by $grown KiB (< $RSS_MAX)" test "$grown" -lt "$RSS_MAX"
check "statfs: no inode left (f_ffree $(ffree "$M"), $base_ffree before)" test "$(ffree "$M")" -lt 40
set -- $(fill "$R/pub" link)
echo "tmpfs size=1m: $1 links, then $2; chainfs max_data=1M: $links, then $links_err"
check "tmpfs size=1m refuses them too ($2 after $1)" test "$2" = ENOSPC

empty "$M/pub"
back() { [ "$(meta)" = "$base_meta" ]; }
check "removing them gives every byte back (meta_bytes $(meta), $base_meta before)" wait_for back
check "statfs: the inodes are back ($(ffree "$M"))" test "$(ffree "$M")" = "$base_ffree"
set -- $(fill "$M/pub" link)
check "the same number fits again ($1, then $2)" test "$1" = "$links" -a "$2" = ENOSPC
empty "$M/pub"
wait_for back

set -- $(fill "$M/pub" dir)
dirs=$1
check "directories with 255-byte names stop with ENOSPC (after $dirs, got $2)" test "$2" = ENOSPC
check "... after about a megabyte of them ($dirs < 3000)" test "$dirs" -gt 1000 -a "$dirs" -lt 3000
grown=$(($(rss) - rss0))
check "the daemon grew by $grown KiB (< $RSS_MAX)" test "$grown" -lt "$RSS_MAX"
check "a file with a short name is refused too" \
	not $NOBODY sh -c "echo x >'$M/pub/f'" 2>/dev/null
empty "$M/pub"
check "removing them gives every byte back" wait_for back
set -- $(fill "$M/pub" dir)
check "the same number fits again ($1, then $2)" test "$1" = "$dirs" -a "$2" = ENOSPC
empty "$M/pub"
wait_for back

# A control line that does not fit changes nothing and names the options.
out=$(ctl chain /c 20000 x 2>&1)
check "a control line past the limit fails" not test -e "$M/c"
check "... and changes nothing (meta_bytes $(meta))" test "$(meta)" = "$base_meta"
check "... naming max_meta" has "$out" "max_meta"
unmount_cfs "$M"

# A spec that does not fit: exit status 2, FILE:LINE and the options named, no mount.
awk 'BEGIN { for (i = 0; i < 400; i++) { printf "link /l%d ", i; for (j = 0; j < 4000; j++) printf "t"; print "" } }' \
	>"$T/big.spec"
mkdir "$T/nomount"
out=$("$CHAINFS" -f -o max_data=1M "$T/big.spec" "$T/nomount" 2>&1)
rc=$?
printf '%s\n' "$out" >"$T/big.err"
check "a spec past max_meta exits 2" test "$rc" -eq 2
check "... at its line" grep -Eq "big.spec:[0-9]+: " "$T/big.err"
check "... naming max_meta" has "$out" "max_meta"
check "... and mounts nothing" not grep -q " $T/nomount " /proc/mounts
M2=$T/m2
check "-o max_meta=4M lets it in" mount_cfs "$M2" -o max_data=1M,max_meta=4M "$T/big.spec"
check "... all of it" test -L "$M2/l399"
unmount_cfs "$M2"

# A generator past it: the message names the options, and the path at fault (40 KB deep) by
# its two ends only
printf 'deep /d 100000\n' >"$T/deep.spec"
out=$("$CHAINFS" -f -o max_data=1M "$T/deep.spec" "$T/nomount" 2>&1)
check "a deep line past max_meta exits 2" test $? -eq 2
check "... naming max_meta" has "$out" "max_meta"
check "... in a message of one short line ($(printf %s "$out" | wc -c) bytes)" \
	test "$(printf %s "$out" | wc -c)" -lt 600
finish
