# cp -r: the file it checked (lstat) is swapped for a link to a secret before it opens it
. "$LAB_LIB"
about "cp -r: a file swapped for a link between lstat and open; does the copy hold the secret?"
program cp
options abslinks=raw
outside file secret 'secret\n'
spec 'file /src/f "mine\n"'
# cp's lstat of src/f ends in a getattr of it, the first (the open's own walk makes the next)
rule op=getattr path=/src/f comm=cp change=replace /src/f $LAB/secret
run 'cp -r "$MNT/src" copy'
# reproduced: the copy is the secret; held: cp refused it (O_NOFOLLOW: ELOOP), or copied the
# link as a link, or the original file
outcome reproduced 'grep -qx secret "$LAB/work/copy/f"'
outcome held '[ ! -e "$LAB/work/copy/f" ] || [ -L "$LAB/work/copy/f" ] || grep -qx mine "$LAB/work/copy/f"'
