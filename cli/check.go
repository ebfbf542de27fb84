package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"time"

	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/health"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubernetesConstraint is the oldest Kubernetes the controllers support,
// flux v2.9's constraint (flux2:cmd/flux/check.go kubernetesConstraints).
const kubernetesConstraint = ">=1.33.0-0"

var minKubernetes = kversion.MustParseSemantic("1.33.0-0")

// The install labels, flux's (flux2:pkg/manifestgen): `eddy check`, `eddy
// version` and the flux CLI find the controllers and CRDs by part-of=flux.
const (
	partOfLabel  = "app.kubernetes.io/part-of"
	partOfValue  = "flux"
	versionLabel = "app.kubernetes.io/version"
)

// bootstrapLabels are set on the CRDs by the kustomize-controller that
// applies them: their presence means the installation was bootstrapped.
var bootstrapLabels = []string{"kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace"}

// errCheckFailed ends a check that printed its failures: main prints it as
// flux's last line, "✗ check failed", and exits 1.
var errCheckFailed = errors.New("check failed")

func newCheckCommand(g *globalFlags) *cobra.Command {
	var pre bool
	var pollInterval time.Duration
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check requirements and installation",
		Long: `Check the Kubernetes version against the controllers' requirement and, unless --pre, the
installation in the namespace of -n: the distribution, the controllers' Deployments (labelled
app.kubernetes.io/part-of=flux; waits until each is ready, up to --timeout) and the CRDs.
It exits 1 after "✗ check failed" when a check fails.`,
		Example: "  # Run pre-installation checks\n  eddy check --pre\n\n  # Run installation checks\n  eddy check",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			return runCheck(cmd.Context(), ui.New(cmd.OutOrStdout()), cfg, checkOptions{
				namespace: g.namespace, pre: pre, poll: pollInterval, timeout: g.timeout})
		},
	}
	cmd.Flags().BoolVar(&pre, "pre", false, "only run pre-installation checks")
	cmd.Flags().DurationVar(&pollInterval, "poll-interval", 5*time.Second, "how often to poll a controller's Deployment that is not ready yet")
	return cmd
}

// checkOptions are the flags of `eddy check`.
type checkOptions struct {
	namespace string
	pre       bool
	// poll is how often a Deployment not ready is read again; timeout
	// (--timeout) bounds the wait for each Deployment and each other section.
	poll, timeout time.Duration
}

// runCheck prints flux check's sections (flux2:cmd/flux/check.go): the
// prerequisites, then, unless pre, the version in the cluster, the
// controllers and the CRDs. A failed section does not stop the next ones,
// except an API server that does not answer.
func runCheck(parent context.Context, u *ui.UI, cfg *rest.Config, o checkOptions) error {
	ctx, cancel := context.WithTimeout(parent, o.timeout)
	defer cancel()
	u.Action("checking prerequisites")
	ok, reachable := kubernetesCheck(u, cfg)
	if o.pre || !reachable {
		if !ok {
			return errCheckFailed
		}
		u.Success("prerequisites checks passed")
		return nil
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	u.Action("checking version in cluster")
	if info, err := clusterInfo(ctx, c); err != nil {
		u.Failure("checking failed: %s", err)
		ok = false
	} else {
		if d := info.distribution(); d != "" {
			u.Success("distribution: %s", d)
		}
		u.Success("bootstrapped: %t", info.bootstrapped)
	}
	u.Action("checking controllers")
	if !controllersCheck(parent, u, c, o) {
		ok = false
	}
	u.Action("checking crds")
	cctx, cancel := context.WithTimeout(parent, o.timeout)
	defer cancel()
	if !crdsCheck(cctx, u, c) {
		ok = false
	}
	if !ok {
		return errCheckFailed
	}
	u.Success("all checks passed")
	return nil
}

// kubernetesCheck prints the server's version against kubernetesConstraint.
// reachable is false when the API server did not answer.
func kubernetesCheck(u *ui.UI, cfg *rest.Config) (ok, reachable bool) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		u.Failure("Kubernetes client initialization failed: %s", err)
		return false, false
	}
	info, err := dc.ServerVersion()
	if err != nil {
		u.Failure("Kubernetes API call failed: %s", err)
		return false, false
	}
	v, err := kversion.ParseSemantic(info.GitVersion)
	if err != nil {
		u.Failure("Kubernetes version can't be determined")
		return false, true
	}
	if !v.AtLeast(minKubernetes) {
		u.Failure("Kubernetes version %s does not match %s", info.GitVersion, kubernetesConstraint)
		return false, true
	}
	u.Success("Kubernetes %s %s", v, kubernetesConstraint)
	return true, true
}

// installation is what the GitRepository CRD's labels say about the
// installation (flux2:cmd/flux/cluster_info.go).
type installation struct {
	partOf, version string
	bootstrapped    bool
}

// distribution is "<part-of>-<version>", or the version alone.
func (i installation) distribution() string {
	if i.partOf != "" {
		return i.partOf + "-" + i.version
	}
	return i.version
}

// clusterInfo reads the labels of the CRD gitrepositories.source.toolkit.fluxcd.io;
// a NotFound error when it is not installed.
func clusterInfo(ctx context.Context, c client.Client) (installation, error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := c.Get(ctx, types.NamespacedName{Name: "gitrepositories.source.toolkit.fluxcd.io"}, crd); err != nil {
		return installation{}, err
	}
	l := crd.Labels
	info := installation{partOf: l[partOfLabel], version: l[versionLabel], bootstrapped: true}
	for _, k := range bootstrapLabels {
		if _, found := l[k]; !found {
			info.bootstrapped = false
		}
	}
	return info, nil
}

// controllers lists the Deployments labelled part-of=flux in ns.
func controllers(ctx context.Context, c client.Client, ns string) ([]appsv1.Deployment, error) {
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{partOfLabel: partOfValue}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// controllersCheck waits until each controller's Deployment is ready
// (kstatus Current), up to o.timeout each, and prints its images; none at
// all is a failure.
func controllersCheck(parent context.Context, u *ui.UI, c client.Client, o checkOptions) bool {
	ns := o.namespace
	ctx, cancel := context.WithTimeout(parent, o.timeout)
	deps, err := controllers(ctx, c, ns)
	cancel()
	if err != nil {
		u.Failure("listing the controllers' Deployments failed: %s", err)
		return false
	}
	if len(deps) == 0 {
		u.Failure("no controllers found in the '%s' namespace with the label selector '%s=%s'", ns, partOfLabel, partOfValue)
		return false
	}
	ok := true
	for _, d := range deps {
		ctx, cancel := context.WithTimeout(parent, o.timeout)
		st := waitCurrent(ctx, u, c, types.NamespacedName{Namespace: ns, Name: d.Name}, o.poll)
		cancel()
		switch st {
		case status.CurrentStatus:
			u.Success("%s: deployment ready", d.Name)
		case status.NotFoundStatus:
			u.Failure("%s: deployment not found", d.Name)
			ok = false
		default:
			u.Failure("%s: deployment not ready", d.Name)
			ok = false
		}
		for _, ctr := range d.Spec.Template.Spec.Containers {
			u.Action("%s", ctr.Image)
		}
	}
	return ok
}

// waitCurrent polls a Deployment's kstatus every poll until it is Current
// or ctx ends, with a spinner while it waits; it returns the last status.
func waitCurrent(ctx context.Context, u *ui.UI, c client.Client, key types.NamespacedName, poll time.Duration) status.Status {
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		st := status.UnknownStatus
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		switch err := c.Get(ctx, key, obj); {
		case apierrors.IsNotFound(err):
			st = status.NotFoundStatus
		case err == nil:
			if res, err := health.Compute(obj); err == nil {
				st = res.Status
			}
		}
		if st == status.CurrentStatus || st == status.NotFoundStatus {
			return st
		}
		if stop == nil {
			stop = u.Spin(fmt.Sprintf("waiting for %s to be ready", key.Name))
		}
		select {
		case <-ctx.Done():
			return st
		case <-time.After(poll):
		}
	}
}

// crdsCheck prints each CRD labelled part-of=flux with its last stored
// version; none at all, or one without a stored version, is a failure.
func crdsCheck(ctx context.Context, u *ui.UI, c client.Client) bool {
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &list, client.MatchingLabels{partOfLabel: partOfValue}); err != nil {
		u.Failure("listing the CRDs failed: %s", err)
		return false
	}
	if len(list.Items) == 0 {
		u.Failure("no crds found with the label selector '%s=%s'", partOfLabel, partOfValue)
		return false
	}
	ok := true
	for _, crd := range list.Items {
		if v := crd.Status.StoredVersions; len(v) > 0 {
			u.Success("%s/%s", crd.Name, v[len(v)-1])
		} else {
			u.Failure("no stored versions for %s", crd.Name)
			ok = false
		}
	}
	return ok
}
