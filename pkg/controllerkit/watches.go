package controllerkit

import (
	"context"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ArtifactChanged passes updates of a source (GitRepository,
// OCIRepository, HelmRepository, HelmChart) whose status.artifact appeared or changed
// revision (Flux's SourceRevisionChangePredicate) or, beyond Flux, changed
// digest at the same revision: new content of the same commit (e.g. after
// spec.ignore changed) reaches its consumers at once, not at their interval.
// Creations, deletions and generic events do not pass.
type ArtifactChanged struct{ predicate.Funcs }

// Create passes nothing.
func (ArtifactChanged) Create(event.CreateEvent) bool { return false }

// Delete passes nothing.
func (ArtifactChanged) Delete(event.DeleteEvent) bool { return false }

// Generic passes nothing.
func (ArtifactChanged) Generic(event.GenericEvent) bool { return false }

// Update passes a new or changed artifact.
func (ArtifactChanged) Update(e event.UpdateEvent) bool {
	o, n := ArtifactOf(e.ObjectOld), ArtifactOf(e.ObjectNew)
	if n == nil {
		return false
	}
	return o == nil || o.Revision != n.Revision || o.Digest != n.Digest
}

// ArtifactOf returns status.artifact of a source object (any
// sourcev1.Source: GitRepository, OCIRepository, HelmRepository,
// HelmChart, Bucket), nil for other objects.
func ArtifactOf(obj client.Object) *meta.Artifact {
	if s, ok := obj.(sourcev1.Source); ok {
		return s.GetArtifact()
	}
	return nil
}

// EnqueueListed returns a watch handler that enqueues, for a changed
// object, each item of the list newList returns filled by c.List with the
// options opts gives for that object (typically a namespace and a field
// index naming it). A failed List is logged and enqueues nothing.
func EnqueueListed(c client.Reader, newList func() client.ObjectList, opts func(obj client.Object) []client.ListOption) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, opts(obj)...); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the objects that refer to a changed object",
				"object", obj.GetNamespace()+"/"+obj.GetName())
			return nil
		}
		var reqs []reconcile.Request
		_ = apimeta.EachListItem(list, func(o k8sruntime.Object) error {
			if co, ok := o.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(co)})
			}
			return nil
		})
		return reqs
	})
}
