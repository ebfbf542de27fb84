#!/usr/bin/env bash
# Compiles the pod sandbox's pause binary from Kubernetes' build/pause/linux/pause.c, taken
# from the k8s.io/kubernetes module tools/go.mod pins (the Go module cache; no image is pulled),
# with the host's gcc as Kubernetes' build/pause/Makefile does (-Os -Wall -Werror -static,
# -DVERSION=v<TAG>-<kubernetes version>), stripped, into $1 (default bin/linux_amd64/pause).
# Prints "<pause TAG> <kubernetes version>" (e.g. "3.10.2 v1.37.2") on stdout. linux/amd64 hosts
# only: the node runs here. Same gcc and libc, same bytes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-$root/bin/linux_amd64/pause}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac

if [ "$(uname -m)" != x86_64 ]; then
	echo "pause.sh: the node images are built for linux/amd64, on an x86_64 host (this is $(uname -m))" >&2
	exit 1
fi
for t in gcc strip; do
	command -v "$t" >/dev/null || { echo "pause.sh: no $t: on Debian, apt-get install gcc libc6-dev binutils" >&2; exit 1; }
done

cd "$here"
export GOWORK=off # tools/ is its own module, outside the workspace
json=$(go mod download -json k8s.io/kubernetes)
dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$json")
k8s=$(sed -n 's/^\t"Version": "\(.*\)",$/\1/p' <<<"$json")
src=$dir/build/pause/linux/pause.c
[ -f "$src" ] || { echo "pause.sh: $src not found in k8s.io/kubernetes $k8s" >&2; exit 1; }
tag=$(sed -n 's/^TAG ?= *//p' "$dir/build/pause/Makefile")
[ -n "$tag" ] || { echo "pause.sh: no TAG in $dir/build/pause/Makefile" >&2; exit 1; }

mkdir -p "$(dirname "$out")"
gcc -Os -Wall -Werror -static "-DVERSION=v$tag-$k8s" -o "$out.tmp" "$src"
strip "$out.tmp"
mv "$out.tmp" "$out"
echo "$tag $k8s"
