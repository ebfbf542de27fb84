// Command helm-controller is Eddy's helm-controller. Today it is an empty
// manager: it takes the shared runtime flags, serves /healthz, /readyz and
// metrics and takes part in leader election, and reconciles nothing;
// HelmRelease objects are left alone until its reconciler lands (on the
// skeleton of pkg/reconcile).
//
// It takes Flux's flag names and defaults, so Flux's deployment manifests
// carry over; --kubeconfig or KUBECONFIG selects the cluster outside one.
// The manager is built by controller.NewManager, as in the tests.
package main

import (
	"github.com/eddyops/eddy/helm-controller/internal/controller"
	"github.com/eddyops/eddy/pkg/runtime"
)

func main() {
	var c controller.Config
	runtime.Main(controller.ControllerName, &c)
}
