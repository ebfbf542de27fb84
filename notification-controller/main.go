// Command notification-controller is Eddy's notification-controller. It routes events to Alert providers and turns webhooks into reconcile requests.
//
// It takes Flux's flag names and defaults, so Flux's deployment manifests
// carry over; --kubeconfig or KUBECONFIG selects the cluster outside one.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/eddyops/eddy/pkg/runtime"
)

const controllerName = "notification-controller"

func main() {
	var opts runtime.Options
	opts.BindFlags(flag.CommandLine, 4)
	flag.Parse()

	mgr, err := opts.NewManager(controllerName)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
	// The reconcilers of this controller's kinds are registered here as their
	// issues land; until then the manager serves probes and metrics only.
	if err := runtime.Run(mgr, controllerName); err != nil {
		os.Exit(1)
	}
}
