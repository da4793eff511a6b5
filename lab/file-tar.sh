# tar c: the file it checked (lstat) is swapped for a link to a secret before it opens it
. "$LAB_LIB"
about "tar c: a file swapped for a link between lstat and open; does the archive hold the secret?"
program tar
options abslinks=raw
outside file secret 'secret\n'
spec 'file /src/f "mine\n"'
# tar's lstat of src/f ends in a getattr of it, the first
rule op=getattr path=/src/f comm=tar change=replace /src/f $LAB/secret
run 'tar -cf a.tar -C "$MNT" src; tar -xOf a.tar src/f >f 2>/dev/null'
outcome reproduced 'grep -qx secret "$LAB/work/f"'
outcome held '! grep -q secret "$LAB/work/f"'
