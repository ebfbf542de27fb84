#!/usr/bin/env bash
# Builds kubectl (k8s.io/kubernetes/cmd/kubectl, the Kubernetes release of
# tools/kubectl/go.mod, the same as the local cluster's) from its Go source, through
# the Go module proxy, into bin/k8s/kubectl: the e2e tests run an Argo CD user's
# kubectl lines with it. Downloads no prebuilt binary. Idempotent: its own stamp file,
# bin/k8s/.kubectl-stamp, records what was built; nothing is rebuilt while it matches.
# It is apart from build.sh so that adding kubectl changes neither the inputs nor the
# stamp of the other bin/k8s binaries.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=k8s-ldflags.sh
source "$here/k8s-ldflags.sh"
root=$(cd "$here/.." && pwd)
out=${EDDY_K8S_BIN_DIR:-$root/bin/k8s}
mod=$here/kubectl

# tools/kubectl is its own module, outside the workspace.
export GOWORK=off
K8S_VERSION=$(cd "$mod" && go list -m -f '{{.Version}}' k8s.io/kubernetes)

stamp_want=$(
	echo "kubectl=$K8S_VERSION $(go env GOVERSION)"
	cat "$mod/go.mod" "$mod/go.sum" "$0" "$here/k8s-ldflags.sh" | sha256sum | cut -d' ' -f1
)
if [ -x "$out/kubectl" ] && [ "$(cat "$out/.kubectl-stamp" 2>/dev/null)" = "$stamp_want" ]; then
	echo "bin/k8s/kubectl is up to date (kubernetes $K8S_VERSION)"
	exit 0
fi

mkdir -p "$out"
rm -f "$out/.kubectl-stamp"
start=$(date +%s)
echo "Building kubectl $K8S_VERSION into $out (first time: a few minutes on 2 cores; cached afterwards)"

ldflags=$(k8s_ldflags "$K8S_VERSION")

cd "$mod"
go build -trimpath -ldflags "$ldflags" -o "$out/kubectl.new" k8s.io/kubernetes/cmd/kubectl
mv "$out/kubectl.new" "$out/kubectl"

echo "$stamp_want" > "$out/.kubectl-stamp"
echo "bin/k8s/kubectl built in $(( $(date +%s) - start ))s: $("$out/kubectl" version --client | head -1)"
