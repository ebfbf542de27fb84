// Command source-watcher is Eddy's source-watcher: it reconciles
// ArtifactGenerator objects (source.extensions.fluxcd.io/v1beta1), composing
// new artifacts from the artifacts of sources (GitRepository,
// OCIRepository, Bucket, HelmChart, ExternalArtifact), storing and serving
// them over HTTP as source-controller does, and publishing each as an
// ExternalArtifact for Kustomizations to apply (kustomize-controller with
// --feature-gates=ExternalArtifact=true), as Flux's source-watcher (Flux 2.7
// and later).
//
// It takes the flag names and defaults of Flux's source-watcher
// (--storage-path, --storage-addr, --storage-adv-addr,
// --artifact-retention-ttl, --artifact-retention-records,
// --requeue-dependency=5s, --http-retry=9, --events-addr and the shared
// runtime flags); --kubeconfig or KUBECONFIG selects the cluster outside
// one. The manager is built by controller.NewManager, as in the tests.
package main

import (
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/source-watcher/internal/controller"
)

func main() {
	var c controller.Config
	controllerkit.Main(controller.ControllerName, &c)
}
