# A script's `mkdir -p a/b/c && echo x > a/b/c/f`: a/b is swapped for a link to a directory
# beside the mount once mkdir made c, before the shell's path-based open of a/b/c/f
. "$LAB_LIB"
about "mkdir -p a/b/c && echo x > a/b/c/f: a parent swapped for a link before the write; where does f land?"
program mkdir
options abslinks=raw
outside dir planted/c 755
spec 'dir /w/a/b'
# mkdir -p's last step is the mkdir of c; the shell's open of a/b/c/f comes after it
rule op=mkdir path=/w/a/b/c comm=mkdir change=replace /w/a/b $LAB/planted
run 'cd "$MNT/w" && mkdir -p a/b/c && echo x >a/b/c/f'
outcome reproduced 'grep -qx x "$LAB/planted/c/f"'
outcome held '[ ! -e "$LAB/planted/c/f" ]'
