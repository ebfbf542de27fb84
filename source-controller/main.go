// Command source-controller is Eddy's source-controller. It reconciles GitRepository objects into tar.gz artifacts served over HTTP.
//
// It takes Flux's flag names and defaults, so Flux's deployment manifests
// carry over; --kubeconfig or KUBECONFIG selects the cluster outside one.
package main

import (
	"flag"
	"fmt"
	"os"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/runtime"
)

const controllerName = "source-controller"

func main() {
	var opts runtime.Options
	opts.BindFlags(flag.CommandLine, 2)
	flag.Parse()

	mgr, err := opts.NewManager(controllerName, sourcev1.AddToScheme)
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
