// Command kustomize-controller is Eddy's kustomize-controller. It reconciles Kustomization objects: build, server-side apply, prune, health checks.
//
// It takes Flux's flag names and defaults, so Flux's deployment manifests
// carry over; --kubeconfig or KUBECONFIG selects the cluster outside one.
package main

import (
	"flag"
	"fmt"
	"os"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/runtime"
)

const controllerName = "kustomize-controller"

func main() {
	var opts runtime.Options
	opts.BindFlags(flag.CommandLine, 4)
	flag.Parse()

	mgr, err := opts.NewManager(controllerName, sourcev1.AddToScheme, kustomizev1.AddToScheme)
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
