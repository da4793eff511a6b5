# rsync -a (local copy): the file its sender listed (lstat) is swapped for a link to a secret
# before it opens it to send its data
. "$LAB_LIB"
about "rsync -a: a file swapped for a link between lstat and open; does the copy hold the secret?"
program rsync
options abslinks=raw
outside file secret 'secret\n'
spec 'file /src/f "mine\n"'
# the sender's lstat of src/f, as it builds the file list, ends in a getattr of it, the first
rule op=getattr path=/src/f comm=rsync change=replace /src/f $LAB/secret
run 'rsync -a "$MNT/src/" copy/'
outcome reproduced 'grep -qx secret "$LAB/work/copy/f"'
outcome held '[ ! -e "$LAB/work/copy/f" ] || [ -L "$LAB/work/copy/f" ] || grep -qx mine "$LAB/work/copy/f"'
