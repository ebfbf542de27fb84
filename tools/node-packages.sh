#!/usr/bin/env bash
# Installs the Debian packages of the local cluster's node profile (a real
# node: pkg/localcluster), when missing and when run as root with apt-get:
# runc (the containers), containernetworking-plugins (bridge, host-local,
# loopback) and nftables (nft, for the sweep of kube-proxy's tables).
# Elsewhere it says so and succeeds: the node profile's tests then skip
# with one line naming what is missing. Idempotent.
set -euo pipefail

need=()
[ -x /usr/sbin/runc ] || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
[ -x /usr/sbin/nft ] || need+=(nftables)
if [ ${#need[@]} -eq 0 ]; then
	echo "the node profile's packages are installed (runc, containernetworking-plugins, nftables)"
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "the node profile's tests will skip: not root with apt-get to install ${need[*]}"
	exit 0
fi
echo "Installing Debian's ${need[*]} (the node profile's real node)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}"
