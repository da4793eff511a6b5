# du -a walks a tree; as it checks the directory a, a and the link l beside it swap what they
# hold (RENAME_EXCHANGE, made by the tree when the walk's own request comes, not by a loop):
# does the walk go on into what the link leads to, a directory beside the mount?
. "$LAB_LIB"
about "du -a: a directory and a link exchanged (RENAME_EXCHANGE) as the walk checks it; does it walk out?"
program du
options abslinks=raw
outside dir outside 755
outside file outside/secret 'secret\n'
spec 'file /t/a/mine "mine\n"'
spec "link /t/l $LAB/outside"
# the walk's lstat of t/a ends in a getattr of it, the first. (du 9.1 then says it cannot
# read t/a and aborts: SIGABRT, exit status 134; it walked nothing out, so: held)
rule op=getattr path=/t/a comm=du change=exchange /t/a /t/l
run 'du -a "$MNT/t" >list'
outcome reproduced 'grep -q /t/a/secret "$LAB/work/list"'
outcome held '! grep -q secret "$LAB/work/list"'
