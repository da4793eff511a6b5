# python3 shutil.rmtree: a directory swapped for a link to a sentinel directory while it descends; is the sentinel left alone?
. "$LAB_LIB"
about "python3 shutil.rmtree: a directory swapped for a link to a sentinel directory while it descends; is the sentinel left alone?"
program python3
options abslinks=raw
outside dir sentinel 755
outside file sentinel/keep 'keep\n' 644
spec 'file /t/d/x "x\n"'
# python3's lstat of t/d, the first, as it descends, ends in a getattr of it
rule op=getattr path=/t/d comm=python3 change=replace /t/d $LAB/sentinel
run 'python3 -c "import shutil, sys; shutil.rmtree(sys.argv[1])" "$MNT/t"'
outcome reproduced '[ ! -e "$LAB/sentinel/keep" ]'
outcome held 'grep -qx keep "$LAB/sentinel/keep"'
