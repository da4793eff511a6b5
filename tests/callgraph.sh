#!/bin/sh
# tools/callgraph.sh, the check that no two files call each other in a circle: first on small
# made-up trees (a circle of two files, of three, through a header's inline function; none in
# a chain; static functions of the same name in two files are not a link), then on the
# project's own sources. Needs no mount.
. "$(dirname "$0")/lib.sh"
CG=$ROOT/tools/callgraph.sh

# src DIR FILE TEXT: a fixture source file
src() {
	mkdir -p "$(dirname "$T/$1/$2")"
	printf '%b' "$3" >"$T/$1/$2"
}
# graph DIR: the tool's output on DIR, its exit status in $st
graph() {
	out=$(sh "$CG" "$T/$1" 2>&1)
	st=$?
}
has_line() { printf '%s\n' "$out" | grep -qxF "$1"; }

src two a.c 'int a1(int);\nint b1(int);\nint a1(int x) { return b1(x); }\n'
src two b.c 'int a1(int);\nint b1(int);\nint b1(int x) { return x ? a1(x - 1) : 0; }\n'
graph two
check "two files calling each other: exit status 1 (got $st)" [ "$st" = 1 ]
check "two files calling each other: the circle is named" has_line "circle: $T/two/a.c $T/two/b.c"
check "two files calling each other: the call that makes it is shown" \
	has_line "  $T/two/b.c -> $T/two/a.c  1 call(s), e.g. b1 -> a1 ($T/two/b.c:3:28)"
check "two files calling each other: one circle counted" \
	has_line "callgraph: 2 files, 2 links between files, 1 circles"

src three a.c 'int b(void);\nint a(void) { return b(); }\n'
src three b.c 'int c(void);\nint b(void) { return c(); }\n'
src three c.c 'int a(void);\nint c(void) { return a(); }\n'
graph three
check "a circle through a third file: exit status 1" [ "$st" = 1 ]
check "a circle through a third file: the three files in one circle" \
	has_line "circle: $T/three/a.c $T/three/b.c $T/three/c.c"

src chain a.c 'int b(void);\nint a(void) { return b(); }\n'
src chain b.c 'int c(void);\nint b(void) { return c(); }\n'
src chain c.c 'int c(void) { return 0; }\n'
graph chain
check "a chain: exit status 0 (got $st)" [ "$st" = 0 ]
check "a chain: no circle" has_line "callgraph: 3 files, 2 links between files, 0 circles"

# the header's inline function calls back into the file that includes it
src header h.h 'int back(void);\nstatic inline int up(void) { return back(); }\n'
src header u.c '#include "h.h"\nint back(void) { return 1; }\nint use(void) { return up(); }\n'
graph header
check "a header's inline function calling back: exit status 1" [ "$st" = 1 ]
check "a header's inline function calling back: the function is named" \
	has_line "circle: $T/header/h.h:up $T/header/u.c"
# the same header used without calling its inline function: no link to it
src header2 h.h 'int back(void);\nstatic inline int up(void) { return back(); }\n'
src header2 u.c '#include "h.h"\nint back(void) { return 1; }\n'
graph header2
check "an unused inline function links nothing" [ "$st" = 0 ]

# a static function is its own file's, whatever its name; main is each program's
src statics a.c 'int b(void);\nstatic int h(void) { return b(); }\nint a(void) { return h(); }\n'
src statics b.c 'static int h(void) { return 2; }\nint b(void) { return h(); }\n'
src statics p/main.c 'int a(void);\nint main(void) { return a(); }\n'
src statics q/main.c 'int b(void);\nint main(void) { return b(); }\n'
graph statics
check "static functions of one name in two files: no circle (got $st)" [ "$st" = 0 ]

src broken a.c 'int a(void) { return nope; }\n'
graph broken
check "a file that does not compile: exit status 2 (got $st)" [ "$st" = 2 ]

# the project's own sources (fusefs/, resolver/, pollcore/)
out=$(sh "$CG" 2>&1)
st=$?
printf '%s\n' "$out" | grep -v '^  '
check "the sources: no circle between files (exit status $st)" [ "$st" = 0 ]
finish
