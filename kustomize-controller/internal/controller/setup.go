package controller

import (
	"context"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/ssa"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// SetupWithManager registers the reconciler with the work-queue options
// opts (controllerkit.Options.ControllerOptions); it also reconciles the
// Kustomizations of a GitRepository or OCIRepository whose artifact changed
// (controllerkit.ArtifactChanged), and those whose background health checks
// ended (health.go).
func (r *KustomizationReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.artifacts = newArtifactCache(r.Fetcher, r.ArtifactCacheBytes)
	ttl := r.UnchangedRecheck
	if ttl == 0 {
		ttl = -1 // off: every object dry-run at every reconcile, as Flux
	}
	r.unchanged = ssa.NewUnchangedMemo(0, ttl)
	r.healthChecks = newHealthChecks()
	if err := mgr.Add(r.healthChecks); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kustomizev1.Kustomization{}, sourceIndex,
		func(obj client.Object) []string {
			k := obj.(*kustomizev1.Kustomization)
			ns := k.Spec.SourceRef.Namespace
			if ns == "" {
				ns = k.Namespace
			}
			return []string{k.Spec.SourceRef.Kind + "/" + ns + "/" + k.Spec.SourceRef.Name}
		}); err != nil {
		return err
	}
	// dependants enqueues the Kustomizations whose sourceRef names a source
	// of kind.
	dependants := func(kind string) handler.EventHandler {
		return controllerkit.EnqueueListed(r.Client, func() client.ObjectList { return &kustomizev1.KustomizationList{} },
			func(src client.Object) []client.ListOption {
				key := kind + "/" + src.GetNamespace() + "/" + src.GetName()
				return []client.ListOption{client.MatchingFields{sourceIndex: key}}
			})
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&kustomizev1.Kustomization{}, builder.WithPredicates(controllerkit.ReconcileOnChange())).
		Watches(&sourcev1.GitRepository{}, dependants(sourcev1.GitRepositoryKind), builder.WithPredicates(controllerkit.ArtifactChanged{})).
		Watches(&sourcev1.OCIRepository{}, dependants(sourcev1.OCIRepositoryKind), builder.WithPredicates(controllerkit.ArtifactChanged{})).
		Watches(&sourcev1.Bucket{}, dependants(sourcev1.BucketKind), builder.WithPredicates(controllerkit.ArtifactChanged{}))
	if r.AllowExternalArtifact {
		// Only with the gate on, as Flux: its CRD need not be installed.
		b = b.Watches(&sourcev1.ExternalArtifact{}, dependants(sourcev1.ExternalArtifactKind), builder.WithPredicates(controllerkit.ArtifactChanged{}))
	}
	return b.WatchesRawSource(source.Channel(r.healthChecks.done, &handler.EnqueueRequestForObject{})).
		WithOptions(opts).
		Complete(r)
}
