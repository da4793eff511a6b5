# Shared by the mount-level tests (sourced). Gives a private temp dir, mounts that are always
# unmounted (trap, even when a test fails), assertions on syscall outcomes through cfs-probe,
# and the closing "NAME: N passed, N failed" line.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
CHAINFS=$BUILD/chainfs
PROBE=$BUILD/cfs-probe
FUSE_MOUNT=$ROOT/fuse-mount.sh
TEST_NAME=$(basename "$0" .sh)
export CHAINFS

T=$(mktemp -d /tmp/cfs-test.XXXXXX)
chmod 755 "$T" # other uids must be able to reach mounts below it
MOUNTS=""
PIDS=""
passed=0
failed=0

cleanup() {
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	for m in $MOUNTS; do
		"$FUSE_MOUNT" -u "$m" >/dev/null 2>&1
		umount "$m" 2>/dev/null
	done
	[ -n "${KEEP_T:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# mount_cfs MNT [chainfs options] [SPEC]: mount (returns once the mount answers)
mount_cfs() {
	m=$1
	shift
	mkdir -p "$m"
	MOUNTS="$MOUNTS $m"
	CHAINFS_LOG=$m.log "$FUSE_MOUNT" "$@" "$m"
}

# mount_tmpfs DIR: a tmpfs of our own, for references the kernel answers
mount_tmpfs() {
	mkdir -p "$1"
	mount -t tmpfs -o size=4g,mode=755 chainfs-ref "$1" && MOUNTS="$MOUNTS $1"
}

unmount_cfs() {
	"$FUSE_MOUNT" -u "$1"
}

pass() {
	passed=$((passed + 1))
}

fail() {
	failed=$((failed + 1))
	echo "FAIL: $*" >&2
}

# check DESCRIPTION COMMAND...: the command must succeed
check() {
	what=$1
	shift
	if "$@"; then pass; else fail "$what"; fi
}

# expect WANT OP ARGS...: cfs-probe's line must start with WANT ("ok", "ELOOP", ...)
expect() {
	want=$1
	shift
	got=$(timeout 30 "$PROBE" "$@" 2>&1)
	case "$got" in
	"$want" | "$want "*) pass ;;
	*) fail "$*: want '$want', got '$got'" ;;
	esac
}

# same_output DESCRIPTION FILE1 FILE2: the two files are equal (diff shown when not)
same_output() {
	if cmp -s "$2" "$3"; then
		pass
	else
		fail "$1 differ"
		diff "$2" "$3" | head -20 >&2
	fi
}

not() {
	! "$@"
}

not_grep() {
	! grep -q "$1" "$2"
}

# materialize_inroot DIR: rewrite DIR's absolute links as chainfs's kernel mode answers them
# (relative, never above DIR), so the kernel can walk the copy as if DIR were the root.
# perl-base is Essential in Debian: one process instead of one per link.
materialize_inroot() {
	(cd "$1" && find . -type l -lname '/*' -print0 | perl -0 -ne '
		chomp; my $l = $_; my $t = readlink($l) // next;
		$t =~ s{^(/+\.\.?(?=/|$))+}{}; $t =~ s{^/+}{};
		my $depth = ($l =~ tr{/}{}) - 1;
		my $new = join("/", ("..") x $depth, length($t) ? ($t) : ());
		$new = "." if $new eq "";
		unlink($l) && symlink($new, $l) or die "$l: $!\n";')
}

finish() {
	echo "$TEST_NAME: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
