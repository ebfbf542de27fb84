#!/usr/bin/env bash
# Builds the local cluster's binaries from upstream Go source (through the Go module
# proxy) into bin/k8s/: kube-apiserver, kube-controller-manager, kube-scheduler, etcd,
# kubelet and kube-proxy (the node profile's real node),
# kwok, plus kwok's fast stage files. Downloads no prebuilt binary. Idempotent: a
# stamp file records what was built; nothing is rebuilt while it matches.
set -euo pipefail

K8S_VERSION=v1.37.2
KWOK_VERSION=v0.8.0

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=k8s-ldflags.sh
source "$here/k8s-ldflags.sh"
root=$(cd "$here/.." && pwd)
out=${EDDY_K8S_BIN_DIR:-$root/bin/k8s}
bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd kwok)

stamp_want=$(
	echo "kubernetes=$K8S_VERSION kwok=$KWOK_VERSION $(go env GOVERSION)"
	cat "$here/go.mod" "$here/go.sum" "$here/cmd/etcd/main.go" "$0" "$here/k8s-ldflags.sh" | sha256sum | cut -d' ' -f1
)
complete=1
for b in "${bins[@]}"; do [ -x "$out/$b" ] || complete=0; done
[ -f "$out/stages/node-fast/node-initialize.yaml" ] || complete=0
if [ "$complete" = 1 ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp_want" ]; then
	echo "$out is up to date (kubernetes $K8S_VERSION, kwok $KWOK_VERSION)"
	exit 0
fi

mkdir -p "$out"
rm -f "$out/.stamp"
start=$(date +%s)
if [ -f "$out/kube-apiserver" ]; then
	echo "Rebuilding the local cluster's binaries into $out: tools/ or Go changed since the last build (minutes from the Go build cache)"
else
	echo "Building the local cluster's binaries into $out (first time: about 15 minutes on 2 cores; cached afterwards)"
fi

ldflags=$(k8s_ldflags "$K8S_VERSION")

cd "$here"
export GOWORK=off # tools/ is its own module, outside the workspace
echo "==> kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, etcd (k8s.io/kubernetes $K8S_VERSION)"
go build -trimpath -ldflags "$ldflags" -o "$out/" \
	k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kubelet \
	k8s.io/kubernetes/cmd/kube-proxy \
	./cmd/etcd

echo "==> kwok (sigs.k8s.io/kwok $KWOK_VERSION)"
# kwok's go.mod has no replace directives, so it builds with its own dependency set.
GOBIN="$out" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"

echo "==> kwok stages (node-fast, node heartbeat-with-lease, pod-fast)"
go mod download "sigs.k8s.io/kwok@$KWOK_VERSION"
kwokdir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
for s in node/fast:node-fast node/heartbeat-with-lease:node-heartbeat-with-lease pod/fast:pod-fast; do
	src=${s%%:*}; dst=${s##*:}
	rm -rf "$out/stages/$dst"; mkdir -p "$out/stages/$dst"
	for f in "$kwokdir/kustomize/stage/$src"/*.yaml; do
		[ "$(basename "$f")" = kustomization.yaml ] && continue
		install -m 0644 "$f" "$out/stages/$dst/"
	done
done

echo "$stamp_want" > "$out/.stamp"
echo "$out built in $(( $(date +%s) - start ))s: $("$out/kube-apiserver" --version)"
