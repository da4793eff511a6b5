# find -delete: a directory swapped for a link to a sentinel directory while it descends; is the sentinel left alone?
. "$LAB_LIB"
about "find -delete: a directory swapped for a link to a sentinel directory while it descends; is the sentinel left alone?"
program find
options abslinks=raw
outside dir sentinel 755
outside file sentinel/keep 'keep\n' 644
spec 'file /t/d/x "x\n"'
# find's lstat of t/d, the first, as it descends, ends in a getattr of it
rule op=getattr path=/t/d comm=find change=replace /t/d $LAB/sentinel
run 'find "$MNT/t" -delete'
outcome reproduced '[ ! -e "$LAB/sentinel/keep" ]'
outcome held 'grep -qx keep "$LAB/sentinel/keep"'
