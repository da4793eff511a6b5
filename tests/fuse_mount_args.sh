#!/bin/sh
# fuse-mount.sh's words and exit statuses: --run and --stats-out stand anywhere among the
# chainfs options; a bad option exits with chainfs's own status (2) and no word about an
# unmount that never was; COMMAND's status comes back; -u of a directory with nothing mounted
# fails and says so.
# check: once: fuse-mount.sh is run by hand here, over /dev/fuse
. "$(dirname "$0")/lib.sh"
M=$T/mnt
mkdir -p "$M"
export CHAINFS_STATE_DIR=$T/state
mkdir -m 700 "$CHAINFS_STATE_DIR"

# run WANT_STATUS NAME ARGS...: fuse-mount.sh ARGS exits with WANT_STATUS; stderr in $T/err
run() {
	want=$1 name=$2
	shift 2
	# shellcheck disable=SC2086 # TRANSPORT_OPTS is "" or two words
	"$FUSE_MOUNT" "$@" >"$T/out" 2>"$T/err"
	st=$?
	check "$name: exit status $want ($st)" test "$st" -eq "$want"
}

run 1 "-u, nothing mounted" -u "$M"
check "-u, nothing mounted: says so" grep -q "not mounted" "$T/err"

run 2 "a bad option" -o no_such_option=1 "$M"
check "a bad option: chainfs's message" grep -q "no_such_option" "$T/err"
check "a bad option: nothing mounted" not is_mounted "$M"
rm -f "$CHAINFS_STATE_DIR"/* # a failed mount keeps its log (printed above); --run's go
run 2 "--run, a bad option" --run true -o no_such_option=1
check "--run, a bad option: no word of an unmount" not_grep "not mounted" "$T/err"

# a server-mode mount answers a link's lstat with what it leads to
server='test -f "$MNT/chains/5" && ! test -L "$MNT/chains/5"'
run 0 "--run after the options" -o follow=server --run "$server"
run 0 "--run between the options" -o ro --run "$server" -o follow=server
run 1 "--run's command sees kernel mode by default" --run "$server"
run 7 "--run: the command's status" --run 'exit 7'
rm -f "$T/stats.json"
run 0 "--stats-out after the options" --run 'cat "$MNT/README"' -o follow=server \
	--stats-out "$T/stats.json"
check "--stats-out: a delta was written" grep -q '"delta"' "$T/stats.json"
# counts subtract; settings and levels are after's
delta_of() { # KEY...: "delta after" of stats.KEY (dotted)
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
def get(o, k):
    for p in k.split("."): o = o[p]
    return o
print(*(" ".join(str(get(d[w], k)) for w in ("delta", "after")) for k in sys.argv[2:]))' \
		"$T/stats.json" "$@"
}
for k in tree.nodes pollcore.spin_cpus pollcore.fds pollcore.largest_table; do
	set -- $(delta_of "$k")
	check "--stats-out: $k is a level, after's ($1 = $2)" test "$1" = "$2"
done
check "--stats-out: every level the daemon lists names a member of its stats" python3 -c '
import json, sys
after = json.load(open(sys.argv[1]))["after"]
for k in after["levels"]:
    o = after
    for p in k.split("."):
        o = o[p]' "$T/stats.json"
set -- $(delta_of requests.read)
check "--stats-out: requests.read counts the command's read ($1)" test "$1" -ge 1
run 1 "--run twice" --run true --run true
check "--run twice: says so" grep -q "given twice" "$T/err"
run 1 "--run without a command" -o ro --run
check "--run without a command: says so" grep -q "needs a COMMAND" "$T/err"
check "--run leaves no pid or log file behind" test -z "$(ls "$CHAINFS_STATE_DIR")"
run 2 "--run as an option's value is chainfs's to refuse" -o --run "$M"
check "nothing left mounted" not is_mounted "$M"
finish
