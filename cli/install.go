package main

import (
	"errors"
	"fmt"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"strings"
	"time"

	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newInstallCommand is `eddy install`: flux install's flags and steps
// (contract §7) with Eddy's images.
func newInstallCommand(g *globalFlags) *cobra.Command {
	def := install.DefaultOptions(version)
	o := def
	var export bool
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install or upgrade Eddy's controllers and CRDs in a cluster",
		Long: `Install or upgrade Eddy's controllers and CRDs in a cluster, as flux install does.
The manifests are built from Eddy's own kustomize bases (config/ of the source), so no
network is needed to build them. Running it again changes nothing unless a flag or the
version changed.`,
		Example: `  # Install into flux-system and wait for the controllers
  eddy install

  # Print the manifests instead, e.g. to apply or commit them
  eddy install --export > eddy-components.yaml
  eddy install --export | kubectl apply -f -

  # Three shards besides the main controllers (objects opt in with the label sharding.fluxcd.io/key=a, b or c)
  eddy install --shards=a,b,c

  # Flux's four controllers and application-controller, which runs Argo CD's Applications
  eddy install --components-extra=application-controller

  # With Flux's image automation: registry scans, tag policies and commits of new tags
  eddy install --components-extra=image-reflector-controller,image-automation-controller

  # With Flux's source-watcher: ArtifactGenerators composing ExternalArtifacts from sources
  eddy install --components-extra=source-watcher

  # Only the sources and Kustomizations, from a mirror registry
  eddy install --components=source-controller,kustomize-controller --registry=registry.example.com/eddyops`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Namespace = g.namespace
			u := ui.New(cmd.OutOrStdout())
			if export {
				data, err := install.Render(o)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			u.Action("generating manifests")
			objs, err := install.Objects(o)
			if err != nil {
				return err
			}
			u.Success("manifests build completed")
			return runInstall(cmd, g, u, objs, o)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&export, "export", false, "write the install manifests to stdout and exit (needs no cluster)")
	fs.StringVarP(&o.Version, "version", "v", def.Version, "the image tag of the controllers; this eddy's version by default")
	fs.StringSliceVar(&o.Components, "components", def.Components, "list of components, accepts comma-separated values")
	fs.StringSliceVar(&o.ComponentsExtra, "components-extra", nil, "list of components in addition to those supplied or defaulted, accepts comma-separated values: "+
		install.ImageReflectorController+", "+install.ImageAutomationController+" (Flux's image automation), "+
		install.ApplicationController+" (Argo CD's Applications, in namespace "+install.ApplicationNamespace+"), "+
		install.SourceWatcher+" (ArtifactGenerators)")
	fs.StringVar(&o.Registry, "registry", def.Registry, "container registry where the controller images are published")
	fs.BoolVar(&o.WatchAllNamespaces, "watch-all-namespaces", def.WatchAllNamespaces, "watch for custom resources in all namespaces, if set to false it will only watch the namespace where the controllers are installed")
	fs.StringVar(&o.LogLevel, "log-level", def.LogLevel, "log level of the controllers, one of: "+strings.Join(install.LogLevels, ", "))
	fs.BoolVar(&o.NetworkPolicy, "network-policy", def.NetworkPolicy, "deny ingress access to the controllers from other namespaces using network policies")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", def.ClusterDomain, "internal cluster domain")
	fs.StringSliceVar(&o.TolerationKeys, "toleration-keys", nil, "list of toleration keys used to schedule the controllers' pods onto nodes with matching taints")
	fs.StringSliceVar(&o.Shards, "shards", nil, "shard names, comma-separated: adds a source-, kustomize- and helm-controller Deployment per shard reconciling the objects labelled "+install.ShardLabel+"=<shard>; the main controllers then skip labelled objects")
	return cmd
}

// runInstall applies the bundle in flux's two stages and waits for the
// controllers' Deployments.
func runInstall(cmd *cobra.Command, g *globalFlags, u *ui.UI, objs []*unstructured.Unstructured, o install.Options) error {
	c, err := reachableClient(g)
	if err != nil {
		return err
	}
	ctx, cancel := g.ctx(cmd)
	defer cancel()

	u.Action("installing components in %s namespace", o.Namespace)
	stop := u.Spin(fmt.Sprintf("applying %d objects", len(objs)))
	changes, err := install.Apply(ctx, c, objs)
	stop()
	if err != nil {
		return fmt.Errorf("install failed: %w", err)
	}
	counts := map[ssa.Action]int{}
	for _, ch := range changes {
		counts[ch.Action]++
		if ch.Action != ssa.Unchanged {
			u.Info("%s", ch)
		}
	}
	if counts[ssa.Unchanged] == len(changes) {
		u.Success("installed objects unchanged")
	} else {
		u.Success("applied %d objects: %d created, %d configured, %d unchanged", len(changes),
			counts[ssa.Created], counts[ssa.Configured]+counts[ssa.Replaced], counts[ssa.Unchanged])
	}

	u.Waiting("verifying installation")
	stop = u.Spin("waiting for the controllers' deployments")
	err = install.WaitDeployments(ctx, c, objs, time.Second, func(name string) {
		u.Success("%s: deployment ready", name)
	})
	stop()
	if err != nil {
		return fmt.Errorf("install failed: %w", err)
	}
	u.Success("install finished")
	return nil
}

// reachableClient is a client of the configured cluster, once the API
// server answered; else one line saying it cannot be reached.
func reachableClient(g *globalFlags) (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	if err := install.Reachable(cfg); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

// newUninstallCommand is `eddy uninstall`, flux uninstall's steps and flags.
func newUninstallCommand(g *globalFlags) *cobra.Command {
	var o install.UninstallOptions
	var silent bool
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Uninstall Eddy's controllers and CRDs from a cluster, leaving the workloads they applied",
		Long: `Uninstall Eddy's controllers and CRDs, as flux uninstall does: the components labelled
app.kubernetes.io/part-of=flux in the namespace (and, beyond flux, waits for the controllers'
pods to stop, so that none adds a finalizer back), then the finalizers of every toolkit.fluxcd.io
object in all namespaces (so the workloads they applied are not pruned), then the CRDs, then
the namespace unless --keep-namespace.`,
		Example: `  # Uninstall, asking for confirmation
  eddy uninstall

  # Show what would be deleted, change nothing
  eddy uninstall --dry-run

  # Uninstall without asking, keeping the namespace
  eddy uninstall --silent --keep-namespace`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Namespace = g.namespace
			u := ui.New(cmd.OutOrStdout())
			c, err := reachableClient(g)
			if err != nil {
				return err
			}
			if !o.DryRun && !silent && !confirm(cmd, "Are you sure you want to delete Eddy and its custom resource definitions") {
				return errors.New("aborting")
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			if err := install.Uninstall(ctx, c, o, u); err != nil {
				return err
			}
			u.Success("uninstall finished")
			return nil
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.KeepNamespace, "keep-namespace", false, "skip namespace deletion")
	fs.BoolVar(&o.DryRun, "dry-run", false, "only print the objects that would be deleted")
	fs.BoolVarP(&silent, "silent", "s", false, "delete components without asking for confirmation")
	return cmd
}
