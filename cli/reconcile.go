package main

import (
	"context"
	"fmt"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
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
			return g.reconcile(cmd, func(ctx context.Context, c client.Client, u *ui.UI) error {
				k := &kustomizev1.Kustomization{}
				key := types.NamespacedName{Namespace: g.namespace, Name: args[0]}
				if err := c.Get(ctx, key, k); err != nil {
					return status.NotFound(err, "Kustomization", key)
				}
				if withSource {
					if k.Spec.SourceRef.Kind != sourcev1.GitRepositoryKind {
						return fmt.Errorf("source kind %s of Kustomization %s is not supported yet", k.Spec.SourceRef.Kind, key)
					}
					ns := k.Spec.SourceRef.Namespace
					if ns == "" {
						ns = k.Namespace
					}
					if err := reconcileSource(ctx, c, u, types.NamespacedName{Namespace: ns, Name: k.Spec.SourceRef.Name}); err != nil {
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

	source := &cobra.Command{Use: "source", Short: "Reconcile a source"}
	source.AddCommand(&cobra.Command{
		Use:   "git NAME",
		Short: "Reconcile a GitRepository: fetch the branch's last commit now",
		Args:  exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.reconcile(cmd, func(ctx context.Context, c client.Client, u *ui.UI) error {
				return reconcileSource(ctx, c, u, types.NamespacedName{Namespace: g.namespace, Name: args[0]})
			})
		},
	})
	rec.AddCommand(source)
	return rec
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

// reconcileSource reconciles GitRepository key and prints the revision it fetched.
func reconcileSource(ctx context.Context, c client.Client, u *ui.UI, key types.NamespacedName) error {
	src := &sourcev1.GitRepository{}
	if err := status.Reconcile(ctx, c, u, src, key); err != nil {
		return err
	}
	if src.Status.Artifact != nil {
		u.Success("fetched revision %s", src.Status.Artifact.Revision)
	}
	return nil
}

func exactName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%s needs exactly one NAME", cmd.CommandPath())
	}
	return nil
}
