# The other half of every fix: ordinary links must still work. cp -a copies a tree of an
# absolute link, a link with .., a link to an ancestor and a chain of 40 links; each must reach
# in the copy what it reaches on the mount.
. "$LAB_LIB"
about "cp -a of legitimate links (absolute, .., an ancestor, a chain of 40): do they still work?"
program cp
# kernel mode only, with abslinks=raw: link bodies as stored, the absolute one naming a file
# beside the mount (collapse mode answers the ends of chains instead, and in server mode the
# link to an ancestor is a directory that holds itself: a tree without end)
options abslinks=raw
outside file abs-target 'abs\n'
spec 'file /t/f "f\n"'
spec "link /t/abs $LAB/abs-target"
spec 'link /t/d/up ../f'
spec 'link /t/d/anc ..'
spec 'chain /t/c40 40 f'
run 'cp -a "$MNT/t" copy'
outcome works '[ "$STATUS" -eq 0 ] && c=$LAB/work/copy &&
	[ "$(cat "$c/abs")" = abs ] && [ "$(cat "$c/d/up")" = f ] &&
	[ "$(cat "$c/c40")" = f ] && [ "$(cat "$c/d/anc/f")" = f ]'
outcome broken true
