# chmod -R: a directory swapped for a link to a sentinel directory while it descends; does the sentinel keep its mode?
. "$LAB_LIB"
about "chmod -R: a directory swapped for a link to a sentinel directory while it descends; does the sentinel keep its mode?"
program chmod
options abslinks=raw
outside dir sentinel 755
outside file sentinel/keep 'keep\n' 644
spec 'file /t/d/x "x\n"'
# chmod's lstat of t/d, the first, as it descends, ends in a getattr of it
rule op=getattr path=/t/d comm=chmod change=replace /t/d $LAB/sentinel
run 'chmod -R 700 "$MNT/t"'
outcome reproduced '[ "$(stat -c %a "$LAB/sentinel/keep")" != 644 ]'
outcome held '[ "$(stat -c %a "$LAB/sentinel/keep")" = 644 ]'
