# install -D: it makes the leading directories a/b/c, then copies to a/b/c/f by name; a/b is
# swapped for a link to a directory beside the mount in between
. "$LAB_LIB"
about "install -D x a/b/c/f: a parent swapped for a link after the directories are made; where does f land?"
program install
options abslinks=raw
outside dir planted/c 755
outside file x 'x\n'
spec 'dir /w/a/b'
# install's last directory step is the mkdir of c; its create of a/b/c/f comes after it
rule op=mkdir path=/w/a/b/c comm=install change=replace /w/a/b $LAB/planted
run 'install -D "$LAB/x" "$MNT/w/a/b/c/f"'
outcome reproduced 'grep -qx x "$LAB/planted/c/f"'
outcome held '[ ! -e "$LAB/planted/c/f" ]'
