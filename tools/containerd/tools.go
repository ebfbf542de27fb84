//go:build tools

// Package containerd pins the containerd release that tools/containerd.sh builds
// into bin/k8s for the local cluster's node profile: the daemon, its runc shim
// and ctr.
package containerd

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
