#!/bin/sh
# Install the Debian packages chainfs needs to build, test and benchmark: apt-get update once,
# and only when something is missing. Without root, say what is missing and fail.
set -eu
pkgs="build-essential pkg-config libfuse3-dev fuse3 libglib2.0-dev libjson-glib-dev check
libev-dev clang libclang-rt-14-dev valgrind gnuplot-nox bindfs socat util-linux procps psmisc"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "chainfs: missing packages:$missing" >&2
	echo "chainfs: run 'make deps' as root, or: apt-get install -y$missing" >&2
	exit 1
fi
echo "chainfs: installing:$missing"
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
