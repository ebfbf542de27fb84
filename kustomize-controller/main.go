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
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
)

const controllerName = "kustomize-controller"

func main() {
	var opts runtime.Options
	opts.BindFlags(flag.CommandLine, 4)
	flag.Parse()
	if err := opts.SetupLogger(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := ctrl.Log.WithName(controllerName)

	scheme := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(sourcev1.AddToScheme(scheme))
	utilruntime.Must(kustomizev1.AddToScheme(scheme))
	mgr, err := opts.NewManager(controllerName, scheme)
	if err != nil {
		log.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	// The reconcilers of this controller's kinds are registered here as their
	// issues land; until then the manager only serves probes and metrics.
	log.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
