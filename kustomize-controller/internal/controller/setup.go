package controller

import (
	"context"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	eddyruntime "github.com/eddyops/eddy/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Options of SetupWithManager.
type Options struct {
	Concurrent         int
	MinRetry, MaxRetry time.Duration
}

// SetupWithManager registers the reconciler; it also reconciles the
// Kustomizations of a GitRepository whose artifact revision changed.
func (r *KustomizationReconciler) SetupWithManager(mgr ctrl.Manager, o Options) error {
	r.artifacts = newArtifactCache(r.Fetcher, r.ArtifactCacheBytes)
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
	return ctrl.NewControllerManagedBy(mgr).
		For(&kustomizev1.Kustomization{}, builder.WithPredicates(eddyruntime.ReconcileOnChange())).
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.dependants),
			builder.WithPredicates(revisionChanged{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: o.Concurrent,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](o.MinRetry, o.MaxRetry),
		}).
		Complete(r)
}

func (r *KustomizationReconciler) dependants(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &kustomizev1.KustomizationList{}
	key := sourcev1.GitRepositoryKind + "/" + obj.GetNamespace() + "/" + obj.GetName()
	if err := r.List(ctx, list, client.MatchingFields{sourceIndex: key}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, k := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&k)})
	}
	return reqs
}

// revisionChanged passes a source whose artifact appeared or changed revision
// (Flux's SourceRevisionChangePredicate) or, beyond Flux, changed digest at
// the same revision: new content of the same commit, e.g. after spec.ignore
// changed, is applied (and what left it pruned) at once, not at the interval.
type revisionChanged struct{ predicate.Funcs }

func (revisionChanged) Create(event.CreateEvent) bool   { return false }
func (revisionChanged) Delete(event.DeleteEvent) bool   { return false }
func (revisionChanged) Generic(event.GenericEvent) bool { return false }
func (revisionChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*sourcev1.GitRepository)
	n, ok2 := e.ObjectNew.(*sourcev1.GitRepository)
	if !ok1 || !ok2 || n.Status.Artifact == nil {
		return false
	}
	return o.Status.Artifact == nil || o.Status.Artifact.Revision != n.Status.Artifact.Revision ||
		o.Status.Artifact.Digest != n.Status.Artifact.Digest
}
