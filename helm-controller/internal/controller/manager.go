// Package controller holds helm-controller's manager constructor; the
// HelmRelease reconciler is registered here as its issue lands.
package controller

import (
	"flag"

	"github.com/eddyops/eddy/pkg/runtime"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// ControllerName is the controller's name: its event source and
// leader-election lease prefix.
const ControllerName = "helm-controller"

// Config is helm-controller's command line: the shared runtime flags with
// Flux's names and defaults (contract §9). main and the tests build the
// manager from it with NewManager.
type Config struct {
	runtime.Options
	// EventsAddr is --events-addr, notification-controller's event
	// endpoint; taken now so Flux's deployment args start the binary.
	EventsAddr string

	// RESTConfig is not a flag: nil means --kubeconfig, $KUBECONFIG or the
	// in-cluster account.
	RESTConfig *rest.Config
}

// BindFlags registers the flags on fs.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Options.BindFlags(fs, 4)
	fs.StringVar(&c.EventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
}

// NewScheme returns helm-controller's scheme: the Kubernetes built-in kinds
// (helm.toolkit.fluxcd.io joins when its reconciler lands).
func NewScheme() (*k8sruntime.Scheme, error) {
	return runtime.NewScheme()
}

// NewManager builds helm-controller's manager from c. Until the
// reconcilers of its kinds land it serves probes and metrics only. The
// caller starts it (runtime.Run in the binary).
func NewManager(c Config) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	return c.Options.NewManager(ControllerName, c.RESTConfig, scheme)
}

// Manager is NewManager for runtime.Main.
func (c *Config) Manager() (ctrl.Manager, error) { return NewManager(*c) }
