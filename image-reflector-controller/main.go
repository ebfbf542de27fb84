// Command image-reflector-controller is Eddy's image-reflector-controller:
// it scans container registries for the tags of ImageRepository objects
// and resolves ImagePolicy objects to the latest tag (and digest) they
// select, as Flux's image-reflector-controller does
// (image.toolkit.fluxcd.io/v1).
//
// It takes the flag names and defaults of Flux's image-reflector-controller
// (Flux v2.10, its main.go and the shared runtime flags, contract §9), so
// Flux's deployment manifests carry over; --kubeconfig or KUBECONFIG selects
// the cluster outside one. The manager is built by controller.NewManager,
// as in the tests. Its own flags:
//
//	--storage-path=/data                  where the scanned tags are stored
//	--storage-compression-threshold=64    KiB of tags above which a tag file is gzipped
//	--requeue-dependency=30s              wait before retrying a policy whose repository is not ready
//	--events-addr=                        notification-controller's event endpoint
//	--max-tags=20000                      beyond Flux: the most tags a scan keeps
package main

import (
	"github.com/eddyops/eddy/image-reflector-controller/internal/controller"
	"github.com/eddyops/eddy/pkg/controllerkit"
)

func main() {
	var c controller.Config
	controllerkit.Main(controller.ControllerName, &c)
}
