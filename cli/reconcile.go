package main

import (
	"context"
	"fmt"
	"slices"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	imagev1 "github.com/eddyops/eddy/api/image/v1"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newReconcileCommand(g *globalFlags) *cobra.Command {
	rec := &cobra.Command{
		Use:   "reconcile",
		Short: "Ask a controller to reconcile an object now and wait for the result",
	}
	var withSource bool
	ks := &cobra.Command{
		Use:     "kustomization NAME",
		Aliases: []string{"ks"},
		Short:   "Reconcile a Kustomization (and, with --with-source, its source first)",
		Args:    exactName,
		Example: "  eddy reconcile kustomization flux-system --with-source",
		RunE: func(cmd *cobra.Command, args []string) error {
			k := &kustomizev1.Kustomization{}
			return g.reconcileObject(cmd, k, args[0], func(ctx context.Context, c client.Client, u *ui.UI, key types.NamespacedName) error {
				if withSource {
					kind := k.Spec.SourceRef.Kind
					if row, _ := kinds.ByKind(kustomizev1.KustomizationKind); !slices.Contains(row.SourceKinds, kind) {
						return fmt.Errorf("source kind %s of Kustomization %s is not supported yet", kind, key)
					}
					ns := k.Spec.SourceRef.Namespace
					if ns == "" {
						ns = k.Namespace
					}
					if err := reconcileSource(ctx, c, u, kind, types.NamespacedName{Namespace: ns, Name: k.Spec.SourceRef.Name}, false); err != nil {
						return err
					}
				}
				if err := status.Reconcile(ctx, c, u, k, key); err != nil {
					return err
				}
				u.Success("applied revision %s", k.Status.LastAppliedRevision)
				return nil
			})
		},
	}
	ks.Flags().BoolVar(&withSource, "with-source", false, "reconcile the Kustomization's source first")
	rec.AddCommand(ks)

	rec.AddCommand(newReconcileHelmReleaseCommand(g), newReconcileImageCommand(g))

	source := &cobra.Command{Use: "source", Short: "Reconcile a source"}
	// sourceCmd is `reconcile source <use> NAME` for the source kind.
	sourceCmd := func(use, kind, short, long string) *cobra.Command {
		return &cobra.Command{
			Use: use + " NAME", Short: short, Long: long, Args: exactName,
			Example: "  eddy reconcile source " + use + " podinfo",
			RunE: func(cmd *cobra.Command, args []string) error {
				return g.reconcile(cmd, func(ctx context.Context, c client.Client, u *ui.UI) error {
					return reconcileSource(ctx, c, u, kind, types.NamespacedName{Namespace: g.namespace, Name: args[0]}, false)
				})
			},
		}
	}
	source.AddCommand(
		sourceCmd("git", sourcev1.GitRepositoryKind, "Reconcile a GitRepository: fetch the branch's last commit now", ""),
		sourceCmd("oci", sourcev1.OCIRepositoryKind, "Reconcile an OCIRepository: resolve its reference and pull the artifact now", ""),
		sourceCmd("bucket", sourcev1.BucketKind, "Reconcile a Bucket: list its objects and fetch what changed now", ""),
		sourceCmd("helm", sourcev1.HelmRepositoryKind, "Reconcile a HelmRepository: fetch its index now",
			"Reconcile a HelmRepository: fetch its index now. An OCI HelmRepository has no reconciler (flux: static), so there is nothing to do."))
	var chartWithSource bool
	chart := &cobra.Command{
		Use:     "chart NAME",
		Short:   "Reconcile a HelmChart (and, with --with-source, its source first)",
		Args:    exactName,
		Example: "  eddy reconcile source chart flux-system-podinfo\n  eddy reconcile source chart flux-system-podinfo --with-source",
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.reconcile(cmd, func(ctx context.Context, c client.Client, u *ui.UI) error {
				return reconcileSource(ctx, c, u, sourcev1.HelmChartKind, types.NamespacedName{Namespace: g.namespace, Name: args[0]}, chartWithSource)
			})
		},
	}
	chart.Flags().BoolVar(&chartWithSource, "with-source", false, "reconcile the HelmChart's source first")
	source.AddCommand(chart)
	rec.AddCommand(source)
	return rec
}

// newReconcileHelmReleaseCommand is `reconcile helmrelease`: as flux, the
// request token also goes into forceAt (--force) and resetAt (--reset), and
// --with-source reconciles the HelmChart (and its source) first.
func newReconcileHelmReleaseCommand(g *globalFlags) *cobra.Command {
	var withSource, force, reset bool
	hr := &cobra.Command{
		Use:     "helmrelease NAME",
		Aliases: []string{"hr"},
		Short:   "Reconcile a HelmRelease (and, with --with-source, its chart and the chart's source first)",
		Args:    exactName,
		Example: "  eddy reconcile hr podinfo\n  eddy reconcile hr podinfo --with-source\n  eddy reconcile hr podinfo --force",
		RunE: func(cmd *cobra.Command, args []string) error {
			hr := &helmv2.HelmRelease{}
			return g.reconcileObject(cmd, hr, args[0], func(ctx context.Context, c client.Client, u *ui.UI, key types.NamespacedName) error {
				if withSource {
					kind, src := helmReleaseSource(hr)
					if err := reconcileSource(ctx, c, u, kind, src, true); err != nil {
						return err
					}
				}
				var also []string
				if force {
					also = append(also, helmv2.ForceRequestAnnotation)
				}
				if reset {
					also = append(also, helmv2.ResetRequestAnnotation)
				}
				if err := status.Reconcile(ctx, c, u, hr, key, also...); err != nil {
					return err
				}
				u.Success("applied revision %s", kinds.HelmReleaseRevision(hr))
				return nil
			})
		},
	}
	hr.Flags().BoolVar(&withSource, "with-source", false, "reconcile the HelmRelease's chart and its source first")
	hr.Flags().BoolVar(&force, "force", false, "force a one-off install or upgrade of the release")
	hr.Flags().BoolVar(&reset, "reset", false, "reset the release's install and upgrade failure counts")
	return hr
}

// imageReconcileShort says what a reconcile of each image kind does.
var imageReconcileShort = map[string]string{
	imagev1.ImageRepositoryKind:       "Reconcile an ImageRepository: scan its registry's tags now",
	imagev1.ImagePolicyKind:           "Reconcile an ImagePolicy: select its latest image now",
	imagev1.ImageUpdateAutomationKind: "Reconcile an ImageUpdateAutomation: run the automation now",
}

// newReconcileImageCommand is `reconcile image repository|policy|update
// NAME`, as flux's: request a reconcile, wait for it and for Ready, then
// print the kind's result line (e.g. "scan fetched 12 tags").
func newReconcileImageCommand(g *globalFlags) *cobra.Command {
	img := &cobra.Command{Use: "image", Short: "Reconcile image automation objects"}
	for _, k := range kinds.Flux {
		if !k.Image {
			continue
		}
		img.AddCommand(&cobra.Command{
			Use: k.Use + " NAME", Short: imageReconcileShort[k.Kind], Args: exactName,
			Example: "  eddy reconcile image " + k.Use + " podinfo",
			RunE: func(cmd *cobra.Command, args []string) error {
				o := k.New()
				return g.reconcileObject(cmd, o, args[0], func(ctx context.Context, c client.Client, u *ui.UI, key types.NamespacedName) error {
					if err := status.Reconcile(ctx, c, u, o, key); err != nil {
						return err
					}
					u.Success("%s", k.Done(o))
					return nil
				})
			},
		})
	}
	unknownKind(img)
	return img
}

// helmReleaseSource is the chart source of hr that flux reconciles first:
// spec.chartRef (a HelmChart or an OCIRepository, in the HelmRelease's
// namespace unless it names one), else the object helm-controller makes
// from spec.chart: the HelmChart <namespace>-<name> in the namespace of its
// sourceRef, or with spec.chart.kind OCIRepository the OCIRepository
// <namespace>-<name> in the HelmRelease's namespace.
func helmReleaseSource(hr *helmv2.HelmRelease) (string, types.NamespacedName) {
	ref := hr.GetHelmChartReference()
	if ref == nil {
		ref = hr.GetHelmChartTemplateReference()
	}
	if ref == nil {
		return "", types.NamespacedName{}
	}
	return ref.Kind, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
}

// reconcile runs do with a client, a context bounded by --timeout and the
// command's UI.
func (g *globalFlags) reconcile(cmd *cobra.Command, do func(context.Context, client.Client, *ui.UI) error) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	ctx, cancel := g.ctx(cmd)
	defer cancel()
	return do(ctx, c, ui.New(cmd.OutOrStdout()))
}

// reconcileObject runs do on obj, read from object name of --namespace:
// an error when it is not found or suspended (status.GetUnsuspended).
func (g *globalFlags) reconcileObject(cmd *cobra.Command, obj client.Object, name string,
	do func(context.Context, client.Client, *ui.UI, types.NamespacedName) error) error {
	return g.reconcile(cmd, func(ctx context.Context, c client.Client, u *ui.UI) error {
		key := types.NamespacedName{Namespace: g.namespace, Name: name}
		if err := status.GetUnsuspended(ctx, c, obj, key); err != nil {
			return err
		}
		return do(ctx, c, u, key)
	})
}

// reconcileSource reconciles the source kind key and prints the revision
// it fetched. With withSource, a HelmChart's own source (in its namespace)
// is reconciled first. An OCI HelmRepository is static, as in flux: nothing
// is requested. A kind Eddy does not serve is an error.
func reconcileSource(ctx context.Context, c client.Client, u *ui.UI, kind string, key types.NamespacedName, withSource bool) error {
	k, ok := kinds.ByKind(kind)
	if !ok || !k.Source {
		return fmt.Errorf("cannot reconcile source of kind %s", kind)
	}
	o := k.New()
	if k.Unreconciled != nil {
		if err := c.Get(ctx, key, o); err != nil {
			return status.NotFound(err, kind, key)
		}
		if k.IsUnreconciled(o) {
			u.Success("reconciliation not supported by the object")
			return nil
		}
	}
	if chart, ok := o.(*sourcev1.HelmChart); ok && withSource {
		if err := status.GetUnsuspended(ctx, c, chart, key); err != nil {
			return err
		}
		src := types.NamespacedName{Namespace: chart.Namespace, Name: chart.Spec.SourceRef.Name}
		if err := reconcileSource(ctx, c, u, chart.Spec.SourceRef.Kind, src, false); err != nil {
			return err
		}
	}
	if err := status.Reconcile(ctx, c, u, o, key); err != nil {
		return err
	}
	if a := o.(sourcev1.Source).GetArtifact(); a != nil {
		u.Success("fetched revision %s", a.Revision)
	}
	return nil
}

func exactName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%s needs exactly one NAME", cmd.CommandPath())
	}
	return nil
}
