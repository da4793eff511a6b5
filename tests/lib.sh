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
# python3 is Debian's (tools/deps.sh installs it), not a version manager's shim found first
# in PATH: a shim is a shell script that costs half a CPU-second a start, and the scripts
# start python3 hundreds of times. Only that name is redirected.
if [ -x /usr/bin/python3 ]; then
	mkdir "$T/.bin" && ln -s /usr/bin/python3 "$T/.bin/python3" && PATH=$T/.bin:$PATH
fi
MOUNTS=""
PIDS=""
passed=0
failed=0

# FUSE over io_uring: the module parameter that lets the kernel offer it. uring_param Y|N
# sets it; cleanup puts back what it was, whatever happened.
URING_PARAM=/sys/module/fuse/parameters/enable_uring
URING_SAVED=""
uring_param() {
	[ -w "$URING_PARAM" ] || return 1
	[ -n "$URING_SAVED" ] || URING_SAVED=$(cat "$URING_PARAM")
	echo "$1" >"$URING_PARAM"
}

cleanup() {
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	for m in $MOUNTS; do
		"$FUSE_MOUNT" -u "$m" >/dev/null 2>&1
		umount "$m" 2>/dev/null
	done
	[ -z "$URING_SAVED" ] || echo "$URING_SAVED" >"$URING_PARAM"
	[ -n "${KEEP_T:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# CHAINFS_TRANSPORT=dev|uring|auto runs a suite's mounts over that transport (-o transport=,
# first, so a test's own -o transport= wins); uring and auto turn the module parameter on.
TRANSPORT_OPTS=${CHAINFS_TRANSPORT:+-o transport=$CHAINFS_TRANSPORT}
case "${CHAINFS_TRANSPORT:-dev}" in
dev) ;;
uring | auto)
	if [ ! -e "$URING_PARAM" ]; then
		echo "$TEST_NAME: skipped: this kernel has no FUSE over io_uring ($URING_PARAM)"
		exit 0
	fi
	uring_param Y || { echo "$TEST_NAME: cannot set $URING_PARAM" >&2; exit 1; }
	;;
*)
	echo "$TEST_NAME: CHAINFS_TRANSPORT=$CHAINFS_TRANSPORT: expected dev, uring or auto" >&2
	exit 2
	;;
esac

# mount_cfs MNT [chainfs options] [SPEC]: mount (returns once the mount answers)
mount_cfs() {
	m=$1
	shift
	mkdir -p "$m"
	MOUNTS="$MOUNTS $m"
	# shellcheck disable=SC2086 # TRANSPORT_OPTS is "" or two words
	CHAINFS_LOG=$m.log "$FUSE_MOUNT" $TRANSPORT_OPTS "$@" "$m"
}

# is_mounted DIR: something is mounted at DIR (as /proc/mounts spells it)
is_mounted() {
	awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts
}

# mount_tmpfs DIR: a tmpfs of our own, for references the kernel answers
mount_tmpfs() {
	mkdir -p "$1"
	mount -t tmpfs -o size=4g,mode=755 chainfs-ref "$1" && MOUNTS="$MOUNTS $1"
}

unmount_cfs() {
	"$FUSE_MOUNT" -u "$1"
}

# The control socket a test gives its mount (-o ctl=$SOCK), and the client on it.
CTL=$BUILD/chainfsctl
SOCK=$T/ctl.sock
# ctl ARGS: chainfsctl on $SOCK, with a deadline (CTL_TIMEOUT seconds, 60 by default)
ctl() {
	timeout "${CTL_TIMEOUT:-60}" "$CTL" -s "$SOCK" "$@"
}
# raw LINE: one request through the socket itself, the JSON line back
raw() {
	printf '%s\n' "$1" | timeout 30 socat -t 30 - "UNIX-CONNECT:$SOCK"
}
# has TEXT WORD: TEXT holds WORD, else say what it holds
has() {
	case "$1" in *"$2"*) return 0 ;; esac
	echo "  '$2' not in: $(printf '%s' "$1" | cut -c1-300)" >&2
	return 1
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

# wait_for COND...: until COND holds, asked every 0.1 s, for up to $wait_s seconds (10 unless
# set); fails when the deadline passes. What a test waits for is the daemon's own account (a
# stats counter, a rule's hits) or the kernel's, never a fixed sleep.
wait_s=10
wait_for() {
	_wf=0
	while ! "$@"; do
		_wf=$((_wf + 1))
		[ $_wf -gt $((wait_s * 10)) ] && return 1
		sleep 0.1
	done
}

# gone PID: the process has exited; a zombie not yet reaped counts (kill -0 still reaches it)
gone() {
	[ -e "/proc/$1" ] || return 0
	[ "$(sed -n 's/.*) //p' "/proc/$1/stat" 2>/dev/null | cut -c1)" = Z ]
}
# held_once: the one fault rule on $SOCK has been hit once (a delay rule: it holds a request)
held_once() { ctl --json fault list 2>/dev/null | grep -q '"hits":1[,}]'; }

# req SOCK OP: how many OP requests the daemon counted since the last `stats reset`
req() {
	timeout 30 "$CTL" -s "$1" stats |
		awk -v op="$2" '/^requests:/ { s = 1; next } /^[a-z]/ { s = 0 }
			s && $1 == op { n = $2 } END { print n + 0 }'
}
# reqs SOCK: every request counted, one number
reqs() {
	timeout 30 "$CTL" -s "$1" stats |
		awk '/^requests:/ { s = 1; next } /^[a-z]/ { s = 0 } s { n += $2 } END { print n + 0 }'
}
# served SOCK N: the daemon has counted N requests or more (a walk is under way)
served() { [ "$(reqs "$1")" -ge "$2" ]; }
# settled SOCK: the daemon's notifier has sent every cache invalidation it queued (it sends
# them from a thread of its own, a moment after the reply that queued them)
settled() {
	[ "$(timeout 30 "$CTL" -s "$1" stats | awk '$1 == "invalidations_pending" { print $2 }')" = 0 ]
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

# Link texts differ by design between a kernel-mode mount and its materialized copy: the
# mount answers a target with a ".." or a leading "/" by its path through the mountpoint, the
# copy by a relative path. So a mount and its copy are compared by what their links lead to
# (follows), and the mount's answers are checked to stay inside it (answers_inside).
# follows ROOT: "path mode size" (or "path ERRNO") of what each link under ROOT leads to
follows() {
	(cd "$1" && perl -MFile::Find -e 'find({ no_chdir => 1, wanted => sub {
		return unless -l $_;
		my @s = stat($_);
		print "$_ ", (@s ? sprintf("%o %d", $s[2], $s[7]) : 0 + $!), "\n" } }, ".")' |
		LC_ALL=C sort)
}
# answers_inside ROOT: no link under ROOT answers a ".." or an absolute path (a host path: the
# mount climbs with its up name instead)
answers_inside() {
	perl -MFile::Find -e 'my ($root) = @ARGV; my $bad = 0;
		find({ no_chdir => 1, wanted => sub { return unless -l $_; my $t = readlink($_);
			if ($t =~ m{(^|/)\.\.(/|$)} || $t =~ m{^/}) {
				print STDERR "$_ -> $t\n"; $bad++ } } }, $root);
		exit($bad ? 1 : 0)' "$1"
}
# norm_ls: `ls -l` lines of links without their size and target (see above)
norm_ls() {
	sed -E 's/^(l[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+) +[0-9]+ (.*) -> .*$/\1 - \2/'
}

# skip WHY: the test cannot run here; says so in the line make check counts as skipped (neither
# passed nor failed, tools/check-summary.sh), and exits 0
skip() {
	echo "$TEST_NAME: skipped: $*"
	exit 0
}

finish() {
	echo "$TEST_NAME: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
