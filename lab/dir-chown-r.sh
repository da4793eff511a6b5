# chown -R: a directory swapped for a link to a sentinel directory while it descends; does the sentinel keep its owner?
. "$LAB_LIB"
about "chown -R: a directory swapped for a link to a sentinel directory while it descends; does the sentinel keep its owner?"
program chown
options abslinks=raw
outside dir sentinel 755
outside file sentinel/keep 'keep\n' 644
spec 'file /t/d/x "x\n"'
# chown's lstat of t/d, the first, as it descends, ends in a getattr of it
rule op=getattr path=/t/d comm=chown change=replace /t/d $LAB/sentinel
run 'chown -R 65534:65534 "$MNT/t"'
outcome reproduced '[ "$(stat -c %u:%g "$LAB/sentinel/keep")" != 0:0 ]'
outcome held '[ "$(stat -c %u:%g "$LAB/sentinel/keep")" = 0:0 ]'
