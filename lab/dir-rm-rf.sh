# rm -rf: a directory swapped for a link to a sentinel directory while it descends; is the sentinel left alone?
. "$LAB_LIB"
about "rm -rf: a directory swapped for a link to a sentinel directory while it descends; is the sentinel left alone?"
program rm
options abslinks=raw
outside dir sentinel 755
outside file sentinel/keep 'keep\n' 644
spec 'file /t/d/x "x\n"'
# rm's lstat of t/d, the first, as it descends, ends in a getattr of it
rule op=getattr path=/t/d comm=rm change=replace /t/d $LAB/sentinel
run 'rm -rf "$MNT/t"'
outcome reproduced '[ ! -e "$LAB/sentinel/keep" ]'
outcome held 'grep -qx keep "$LAB/sentinel/keep"'
