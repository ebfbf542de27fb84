#!/usr/bin/env bash
# Builds CoreDNS (github.com/coredns/coredns, the version tools/coredns/go.mod pins) from
# its Go source, through the Go module proxy, into bin/k8s/coredns: the local cluster's
# DNS (pkg/localcluster dns.go). tools/coredns/main.go compiles in only the plugins a
# cluster needs (CoreDNS's compile-time plugin selection). Downloads no prebuilt binary.
# Idempotent: its own stamp file, bin/k8s/.coredns-stamp, records what was built; nothing
# is rebuilt while it matches. It is apart from build.sh so that CoreDNS changes neither
# the inputs nor the stamp of the other bin/k8s binaries.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${EDDY_K8S_BIN_DIR:-$root/bin/k8s}
mod=$here/coredns

# tools/coredns is its own module, outside the workspace: CoreDNS pins its own
# client-go and dependencies.
export GOWORK=off
COREDNS_VERSION=$(cd "$mod" && go list -m -f '{{.Version}}' github.com/coredns/coredns)

stamp_want=$(
	echo "coredns=$COREDNS_VERSION $(go env GOVERSION)"
	cat "$mod/go.mod" "$mod/go.sum" "$mod/main.go" "$0" | sha256sum | cut -d' ' -f1
)
if [ -x "$out/coredns" ] && [ "$(cat "$out/.coredns-stamp" 2>/dev/null)" = "$stamp_want" ]; then
	echo "bin/k8s/coredns is up to date (coredns $COREDNS_VERSION)"
	exit 0
fi

mkdir -p "$out"
rm -f "$out/.coredns-stamp"
start=$(date +%s)
echo "Building CoreDNS $COREDNS_VERSION into $out (first time: 4 to 7 minutes on 2 cores; cached afterwards)"

# CoreDNS's -version prints its own version (coremain.CoreVersion); GitCommit is left empty.
cd "$mod"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/coredns.new" .
mv "$out/coredns.new" "$out/coredns"

echo "$stamp_want" > "$out/.coredns-stamp"
echo "bin/k8s/coredns built in $(( $(date +%s) - start ))s: $("$out/coredns" -version | head -1)"
