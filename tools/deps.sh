#!/bin/sh
# tools/deps.sh [demo|check]: install the Debian 12 packages a target needs, only those
# missing, without recommends. One line says what is installed; apt's transcript goes to
# build/deps.log and is shown only when apt fails. apt-get update runs once, and only when
# something is missing. Without root: say what is missing and fail.
#   demo   make demo: build chainfs and mount it
#   check  make check, make bench and everything else (the default, as `make deps`)
set -eu
cd "$(dirname "$0")/.."

demo="build-essential pkg-config libfuse3-dev fuse3 libglib2.0-dev libjson-glib-dev liburing-dev"
# clang: the fuzz targets. libFuzzer and the sanitizer runtimes are in libclang-rt-14-dev, which
# clang only recommends. valgrind: mount_lifecycle and bench/poll; socat: control.sh; procps:
# pkill (crash.sh); python3: mount_cache.sh and coherence.sh; acl (setfacl, getfacl):
# mount_xattr.sh. libev-dev, bindfs, gnuplot-nox:
# the benchmarks' peers and plots, which make check's smoke run runs too. clang-format-14:
# make format-check. rsync (and python3): programs the lab's experiments run (make lab,
# tests/lab.sh).
check="$demo check clang libclang-rt-14-dev clang-format-14 valgrind socat procps python3
libev-dev bindfs gnuplot-nox acl rsync"

case "${1:-check}" in
demo) pkgs=$demo ;;
check) pkgs=$check ;;
*)
	echo "usage: tools/deps.sh [demo|check]" >&2
	exit 2
	;;
esac

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "chainfs: missing packages:$missing" >&2
	echo "chainfs: run 'make deps' as root, or: apt-get install --no-install-recommends$missing" >&2
	exit 1
fi
echo "chainfs: installing$missing and what they depend on (apt-get, no recommends)..."
mkdir -p build
log=build/deps.log
if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -q --no-install-recommends $missing; } >"$log" 2>&1; then
	tail -n 20 "$log" >&2
	echo "chainfs: apt-get failed; its whole transcript is in $log" >&2
	exit 1
fi
echo "chainfs: installed $(grep -c '^Setting up' "$log") packages (transcript: $log)"
