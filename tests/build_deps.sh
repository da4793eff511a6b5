#!/bin/sh
# The build's header lists hold whichever way BUILD is spelled: an object built with an
# absolute BUILD (as the tests' `make install` does) must still be rebuilt by a later make
# with the relative one when a header it includes changes, and the other way round; else the
# daemon links objects built against two layouts of one struct. `make -q -W HEADER` asks
# whether the object would be rebuilt were HEADER new, without touching any file. Needs no
# mount.
. "$(dirname "$0")/lib.sh"

B=build-deps.$$ # inside the tree: its relative and absolute names differ
trap 'rm -rf "${ROOT:?}/$B"; cleanup' EXIT
OBJ=fusefs/errname.o
built() { # BUILD: make the object with BUILD spelled so
	make -s -C "$ROOT" BUILD="$1" "$1/$OBJ" >"$T/make.log" 2>&1
}
stale() { # BUILD: make -q says the object is out of date when its header changes
	(cd "$ROOT" && make -q -W fusefs/errname.h BUILD="$1" "$1/$OBJ" >/dev/null 2>&1)
	[ $? = 1 ]
}
check "an object built with an absolute BUILD" built "$ROOT/$B"
check "... is rebuilt by a relative BUILD when its header changes" stale "$B"
check "... and by an absolute one" stale "$ROOT/$B"
rm -rf "${ROOT:?}/$B"
check "an object built with a relative BUILD" built "$B"
check "... is rebuilt by an absolute BUILD when its header changes" stale "$ROOT/$B"
check "... and by a relative one" stale "$B"
check "... and is up to date when nothing changed" sh -c "cd '$ROOT' && make -q BUILD='$B' '$B/$OBJ'"
finish
