// Package controller holds image-automation-controller's manager and its
// ImageUpdateAutomation reconciler.
package controller

import (
	"flag"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
)

// ControllerName is the controller's name: its event source and
// leader-election lease prefix.
const ControllerName = "image-automation-controller"

// Config is image-automation-controller's command line: the shared runtime
// flags and its own, with Flux's names and defaults. main and the tests
// build the manager from it with NewManager.
type Config struct {
	controllerkit.Options
	// EventsAddr is the notification-controller's event endpoint; events are
	// POSTed there when set.
	EventsAddr string

	// RESTConfig is not a flag: nil means --kubeconfig, $KUBECONFIG or the
	// in-cluster account.
	RESTConfig *rest.Config
}

// BindFlags registers the flags on fs: every flag of Flux's
// image-automation-controller (its main.go, Flux v2.10), those Eddy does
// not act on parsed and logged or refused (controllerkit.IgnoreFlag,
// RefuseFlag, FluxGate).
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Options.BindFlags(fs, 4)
	fs.StringVar(&c.EventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
	c.IgnoreFlag(fs, controllerkit.StringFlag, "default-service-account", "", controllerkit.NoWorkloadIdentity, nil)
	const sshDefaults = "Eddy's SSH client offers the Go SSH library's default algorithms"
	c.IgnoreFlag(fs, controllerkit.ListFlag, "ssh-kex-algos", "", sshDefaults, nil)
	c.IgnoreFlag(fs, controllerkit.ListFlag, "ssh-hostkey-algos", "", sshDefaults, nil)
	// Flux's image-automation-controller gates (internal/features).
	c.FluxGate("GitForcePushBranch", true, false, true,
		"Eddy always makes the push branch from the checkout and force-pushes it, as Flux does by default")
	c.FluxGate("GitShallowClone", true, true, false,
		"Eddy clones the checked-out branch's whole history, so that a push rejected because the branch moved can be applied again on the new head")
	c.FluxGate("GitAllBranchReferences", true, true, false,
		"Eddy fetches only the checked-out branch, and the pushed branch when it moved")
	c.FluxGate("GitSparseCheckout", false, true, false, "Eddy checks out the whole tree")
}

// NewScheme returns image-automation-controller's scheme: the Kubernetes
// built-in kinds, source.toolkit.fluxcd.io (GitRepository) and
// image.toolkit.fluxcd.io.
func NewScheme() (*k8sruntime.Scheme, error) {
	return controllerkit.NewScheme(sourcev1.AddToScheme, imagev1.AddToScheme)
}

// NewManager builds image-automation-controller's manager from c: NewScheme,
// the runtime flags and the ImageUpdateAutomation reconciler. The caller
// starts the manager (controllerkit.Run in the binary).
func NewManager(c Config) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	mgr, err := c.Options.NewManager(ControllerName, c.RESTConfig, scheme, &imagev1.ImageUpdateAutomation{})
	if err != nil {
		return nil, err
	}
	rec := events.NewRecorder(mgr.GetEventRecorderFor(ControllerName), mgr.GetScheme(), c.EventsAddr, ControllerName,
		ctrl.Log.WithName("events")).WithAction("Reconcile")
	r := &AutomationReconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Events: rec,
		NoCrossNamespaceRefs: c.NoCrossNamespaceRefs, JitterPercent: c.IntervalJitter}
	if err := r.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Manager is NewManager for controllerkit.Main.
func (c *Config) Manager() (ctrl.Manager, error) { return NewManager(*c) }
