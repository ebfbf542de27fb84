// Command helm-controller is Eddy's helm-controller. It reconciles HelmRelease objects with the Helm SDK.
//
// It takes Flux's flag names and defaults, so Flux's deployment manifests
// carry over; --kubeconfig or KUBECONFIG selects the cluster outside one.
// The manager is built by controller.NewManager, as in the tests.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/eddyops/eddy/helm-controller/internal/controller"
	"github.com/eddyops/eddy/pkg/runtime"
)

func main() {
	var c controller.Config
	c.BindFlags(flag.CommandLine)
	flag.Parse()
	if err := c.SetupLogger(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controller.ControllerName, err)
		os.Exit(1)
	}
	mgr, err := controller.NewManager(c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controller.ControllerName, err)
		os.Exit(1)
	}
	if err := runtime.Run(mgr, controller.ControllerName); err != nil {
		os.Exit(1)
	}
}
