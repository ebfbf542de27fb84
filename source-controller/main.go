// Command source-controller is Eddy's source-controller: it reconciles
// GitRepository objects into tar.gz artifacts and HelmRepository objects
// into index artifacts, and serves them over HTTP.
//
// It takes Flux's flag names and defaults (contract §9), so Flux's deployment
// manifests carry over; --kubeconfig or KUBECONFIG selects the cluster
// outside one. The manager is built by controller.NewManager, as in the
// tests.
package main

import (
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/source-controller/internal/controller"
)

func main() {
	var c controller.Config
	controllerkit.Main(controller.ControllerName, &c)
}
