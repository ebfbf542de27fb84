#!/usr/bin/env bash
# Builds Flux's own controllers (the releases of FLUX_VERSION's line, from their
# Go module source through the Go module proxy) into bin/flux-<name>: `make bench`
# runs them beside Eddy's on the same API server. Downloads no prebuilt binary.
# Idempotent: a controller is rebuilt only when its stamp names another version.
# With arguments, builds only the named controllers (e.g. helm-controller).
set -euo pipefail

# Flux 2.9.5 ships kustomize-controller v1.9.5, source-controller v1.9.5,
# helm-controller v1.6.4 and notification-controller v1.9.4 (its go.mod); the
# module proxy here serves these releases of the same minor versions.
declare -A VERSIONS=(
	[kustomize-controller]=v1.9.6
	[source-controller]=v1.9.6
	[helm-controller]=v1.6.2
	[notification-controller]=v1.9.0
)

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
mkdir -p "$root/bin"

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(kustomize-controller source-controller helm-controller notification-controller)

# -mod=mod: the api module is taken from the proxy (below), which the module's
# go.sum does not list; the go command checks it against the checksum database.
export GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
for name in "${names[@]}"; do
	version=${VERSIONS[$name]:-}
	[ -n "$version" ] || { echo "flux-controllers.sh: no Flux controller named $name" >&2; exit 2; }
	out=$root/bin/flux-$name
	stamp=$root/bin/.flux-$name.version
	if [ -x "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
		echo "bin/flux-$name is up to date ($version)"
		continue
	fi
	start=$(date +%s)
	echo "Building Flux's $name $version into $out (first time: several minutes on 2 cores)"
	work=$(mktemp -d)
	mod=github.com/fluxcd/$name@$version
	src=$(go mod download -json "$mod" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[ -n "$src" ] || { echo "go mod download $mod: no module directory" >&2; rm -rf "$work"; exit 1; }
	# Built in a copy: the module cache is read-only and the build writes nothing there.
	cp -R "$src/." "$work/src"
	chmod -R u+w "$work/src"
	# The release's go.mod points its api module at ./api, which the module zip
	# leaves out (a nested module): take the api release of the same version.
	(cd "$work/src" && go mod edit -dropreplace "github.com/fluxcd/$name/api")
	# source-controller v1.9.6 needs fluxcd/pkg/artifact v0.18.3, which the proxy
	# here does not serve; v0.18.0 is the nearest served patch release.
	if [ "$name" = source-controller ]; then
		(cd "$work/src" && go mod edit -replace github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.0)
	fi
	(cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$work/bin" .)
	mv "$work/bin" "$out"
	echo "$version" > "$stamp"
	rm -rf "$work"
	echo "bin/flux-$name built in $(( $(date +%s) - start ))s"
done
