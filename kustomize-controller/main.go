// Command kustomize-controller is Eddy's kustomize-controller: it reconciles
// Kustomization objects by building a source artifact's manifests with
// kustomize and applying them with server-side apply, pruning what left the
// source, correcting drift and checking health.
//
// It takes Flux's flag names and defaults (contract §9), so Flux's deployment
// manifests carry over; --kubeconfig or KUBECONFIG selects the cluster
// outside one. The manager is built by controller.NewManager, as in the
// tests.
package main

import (
	"github.com/eddyops/eddy/kustomize-controller/internal/controller"
	"github.com/eddyops/eddy/pkg/controllerkit"
)

func main() {
	var c controller.Config
	controllerkit.Main(controller.ControllerName, &c)
}
