#!/usr/bin/env bash
# Builds the real flux CLI (github.com/fluxcd/flux2/v2, FLUX_VERSION) from its Go
# module source, fetched through the Go module proxy, into bin/flux: the e2e tests
# drive it against Eddy to prove wire compatibility. Downloads no prebuilt binary.
# Idempotent: nothing is rebuilt while bin/flux reports FLUX_VERSION.
set -euo pipefail

FLUX_VERSION=2.9.5

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$root/bin/flux

if [ -x "$out" ] && [ "$("$out" --version 2>/dev/null)" = "flux version $FLUX_VERSION" ]; then
	echo "bin/flux is up to date (flux $FLUX_VERSION)"
	exit 0
fi

start=$(date +%s)
echo "Building the flux CLI $FLUX_VERSION into $out (first time: several minutes on 2 cores; cached afterwards)"
# The module is built on its own, with its own go.mod and go.sum: outside Eddy's
# workspace, whatever GOFLAGS the environment sets, and static.
export GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mod=github.com/fluxcd/flux2/v2@v$FLUX_VERSION
src=$(go mod download -json "$mod" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] || { echo "go mod download $mod: no module directory" >&2; exit 1; }

# cmd/flux embeds manifests/*.yaml, which flux's release build generates and the
# module zip leaves out; one placeholder lets it compile (only `flux install`
# without --manifests reads it, and the tests never run that).
cp -R "$src/." "$work/flux2"
chmod -R u+w "$work/flux2"
mkdir -p "$work/flux2/cmd/flux/manifests"
echo "# placeholder: the flux CLI built by Eddy's tools/flux.sh embeds no install manifests" \
	> "$work/flux2/cmd/flux/manifests/placeholder.yaml"

mkdir -p "$root/bin"
cd "$work/flux2"
go build -trimpath -ldflags "-s -w -X main.VERSION=$FLUX_VERSION" -o "$work/flux" ./cmd/flux
mv "$work/flux" "$out"
echo "bin/flux built in $(( $(date +%s) - start ))s: $("$out" --version)"
