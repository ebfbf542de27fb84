// Command helm-controller is Eddy's helm-controller: it reconciles
// HelmRelease objects (helm.toolkit.fluxcd.io/v2) with the Helm v3 SDK,
// installing, upgrading, testing, rolling back and uninstalling their
// releases as Flux's helm-controller does. It takes the shared runtime
// flags, serves /healthz, /readyz and metrics and takes part in leader
// election.
//
// It takes Flux's flag names and defaults, so Flux's deployment manifests
// carry over; --kubeconfig or KUBECONFIG selects the cluster outside one.
// The manager is built by controller.NewManager, as in the tests.
package main

import (
	"github.com/eddyops/eddy/helm-controller/internal/controller"
	"github.com/eddyops/eddy/pkg/controllerkit"
)

func main() {
	var c controller.Config
	controllerkit.Main(controller.ControllerName, &c)
}
