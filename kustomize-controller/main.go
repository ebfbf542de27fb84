// Command kustomize-controller is Eddy's kustomize-controller: it reconciles
// Kustomization objects by building a source artifact's manifests with
// kustomize and applying them with server-side apply, pruning what left the
// source, correcting drift and checking health.
//
// It takes Flux's flag names and defaults (contract §9), so Flux's deployment
// manifests carry over; --kubeconfig or KUBECONFIG selects the cluster
// outside one.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/kustomize-controller/internal/controller"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
)

const controllerName = "kustomize-controller"

func main() {
	var (
		opts                  runtime.Options
		eventsAddr            string
		requeueDependency     time.Duration
		defaultServiceAccount string
		httpRetry             int
		artifactCacheMiB      int64
		concurrentSSA         int
	)
	opts.BindFlags(flag.CommandLine, 4, runtime.StrictPostBuildSubstitutions)
	flag.StringVar(&eventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
	flag.DurationVar(&requeueDependency, "requeue-dependency", 30*time.Second, "The wait before retrying a Kustomization whose source or dependencies are not ready.")
	flag.StringVar(&defaultServiceAccount, "default-service-account", "", "The service account impersonated when a Kustomization names none.")
	flag.IntVar(&httpRetry, "http-retry", 9, "The number of retries of an artifact download.")
	flag.IntVar(&concurrentSSA, "concurrent-ssa", 4, "The number of server-side apply dry-runs in flight per reconcile.")
	flag.Int64Var(&artifactCacheMiB, "artifact-cache-mib", controller.DefaultArtifactCacheBytes>>20,
		"The most file content, in MiB, of the source artifacts kept in memory between reconciles (beyond Flux: each revision is downloaded once).")
	flag.Parse()

	mgr, err := opts.NewManager(controllerName, sourcev1.AddToScheme, kustomizev1.AddToScheme)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
	r := &controller.KustomizationReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Config:    mgr.GetConfig(),
		Fetcher: &artifact.Fetcher{
			Client: &http.Client{Timeout: 30 * time.Second}, Retries: httpRetry,
			HostOverride: os.Getenv("SOURCE_CONTROLLER_LOCALHOST"), // Flux compatible
		},
		Events: events.NewRecorder(mgr.GetEventRecorderFor(controllerName), mgr.GetScheme(), eventsAddr, controllerName,
			ctrl.Log.WithName("events")),
		NoCrossNamespaceRefs:  opts.NoCrossNamespaceRefs,
		DefaultServiceAccount: defaultServiceAccount,
		RequeueDependency:     requeueDependency,
		JitterPercent:         opts.IntervalJitter,
		ArtifactCacheBytes:    artifactCacheMiB << 20,
		ConcurrentSSA:         concurrentSSA,
	}
	r.NonStrictSubstitutions = !opts.FeatureGates.Enabled(runtime.StrictPostBuildSubstitutions)
	if err := r.SetupWithManager(mgr, controller.Options{
		Concurrent: opts.Concurrent, MinRetry: opts.MinRetryDelay, MaxRetry: opts.MaxRetryDelay,
	}); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
	if err := runtime.Run(mgr, controllerName); err != nil {
		os.Exit(1)
	}
}
