// Command image-automation-controller is Eddy's image-automation-controller:
// it reconciles ImageUpdateAutomation objects (image.toolkit.fluxcd.io/v1):
// it clones the GitRepository they name with go-git, sets the images their
// ImagePolicies resolved into the marked YAML fields (the Setters strategy),
// commits (signed if asked) and pushes.
//
// It takes Flux's flag names and defaults (Flux's image-automation-controller
// main.go, Flux v2.10), so Flux's deployment manifests carry over;
// --kubeconfig or KUBECONFIG selects the cluster outside one. The manager is
// built by controller.NewManager, as in the tests.
package main

import (
	"github.com/eddyops/eddy/image-automation-controller/internal/controller"
	"github.com/eddyops/eddy/pkg/controllerkit"
)

func main() {
	var c controller.Config
	controllerkit.Main(controller.ControllerName, &c)
}
