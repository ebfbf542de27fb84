//go:build tools

// Package kubectl pins the kubectl built into bin/k8s by tools/kubectl.sh. It
// is a module of its own, apart from tools/, so that adding kubectl leaves
// the dependency set, and so the stamp, of the other bin/k8s binaries as
// they were.
package kubectl

import _ "k8s.io/kubernetes/cmd/kubectl"
