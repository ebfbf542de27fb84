#!/usr/bin/env bash
# Builds containerd (github.com/containerd/containerd/v2, the release of
# tools/containerd/go.mod) from its Go source, through the Go module proxy, into
# bin/k8s/: containerd, containerd-shim-runc-v2 and ctr, for the local cluster's node
# profile (its real node's container runtime; runc and the CNI plugins are Debian's).
# Downloads no prebuilt binary. Idempotent: its own stamp file, bin/k8s/.containerd-stamp,
# records what was built; nothing is rebuilt while it matches. It is apart from build.sh
# so that a containerd update changes neither the inputs nor the stamp of the other
# bin/k8s binaries.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${EDDY_K8S_BIN_DIR:-$root/bin/k8s}
mod=$here/containerd
bins=(containerd containerd-shim-runc-v2 ctr)
# containerd's BUILDING.md: these snapshotters need C libraries and are not used here.
tags=no_btrfs,no_devmapper,no_zfs

# tools/containerd is its own module, outside the workspace.
export GOWORK=off
VERSION=$(cd "$mod" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)

stamp_want=$(
	echo "containerd=$VERSION tags=$tags $(go env GOVERSION)"
	cat "$mod/go.mod" "$mod/go.sum" "$0" | sha256sum | cut -d' ' -f1
)
complete=1
for b in "${bins[@]}"; do [ -x "$out/$b" ] || complete=0; done
if [ "$complete" = 1 ] && [ "$(cat "$out/.containerd-stamp" 2>/dev/null)" = "$stamp_want" ]; then
	echo "$out/containerd is up to date (containerd $VERSION)"
	exit 0
fi

mkdir -p "$out"
rm -f "$out/.containerd-stamp"
start=$(date +%s)
echo "Building containerd $VERSION into $out (first time: a few minutes on 2 cores; cached afterwards)"

pkg=github.com/containerd/containerd/v2
# The version containerd reports (containerd --version, the CRI version kubelet logs).
ldflags="-s -w -X $pkg/version.Version=$VERSION -X $pkg/version.Package=$pkg"
cd "$mod"
# Static, as containerd's release builds: the shim is started from the daemon's directory.
CGO_ENABLED=0 go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out/" \
	"$pkg/cmd/containerd" "$pkg/cmd/containerd-shim-runc-v2" "$pkg/cmd/ctr"

echo "$stamp_want" > "$out/.containerd-stamp"
echo "$out/containerd built in $(( $(date +%s) - start ))s: $("$out/containerd" --version)"
