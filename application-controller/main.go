// Command application-controller is Eddy's application-controller: it
// reconciles Argo CD's Application and AppProject objects
// (argoproj.io/v1alpha1) with Eddy's engine: sources fetched by
// source-controller, manifests rendered as Argo CD renders them (plain
// directories and jsonnet, kustomize, helm template), compared and applied
// with server-side apply, synced in Argo CD's phases and waves, with Argo
// CD's status on the Application.
//
// It takes Argo CD's flag names where Argo CD has them
// (--application-namespaces, the self-heal back-off) and Flux's runtime
// flags otherwise; --kubeconfig or KUBECONFIG selects the cluster outside
// one. The manager is built by controller.NewManager, as in the tests.
package main

import (
	"github.com/eddyops/eddy/application-controller/internal/controller"
	"github.com/eddyops/eddy/pkg/controllerkit"
)

func main() {
	var c controller.Config
	controllerkit.Main(controller.ControllerName, &c)
}
