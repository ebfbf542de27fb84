package controller

import (
	"context"
	"strings"
	"sync"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/tracking"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// liveWatches watches, by metadata only, every kind an Application
// renders, so an edit of a managed object starts a comparison at once
// (argocd-contract §3.3: this is what makes self-heal fast) without a
// cache of whole objects. An object maps to its Application by its
// tracking id.
type liveWatches struct {
	mu        sync.Mutex
	watched   map[schema.GroupVersionKind]bool
	indexed   map[schema.GroupVersionKind]bool // by trackedByIndex
	ctrl      controller.Controller
	cache     cache.Cache
	namespace string
	log       logr.Logger
}

// track starts the watches of the kinds c found that are not watched yet.
func (w *liveWatches) track(ctx context.Context, app *argov1.Application, c *comparison) {
	if w == nil || w.ctrl == nil || c.target == nil {
		return
	}
	for _, u := range c.target.objects {
		w.ensure(u.GroupVersionKind())
	}
}

func (w *liveWatches) ensure(gvk schema.GroupVersionKind) {
	if gvk.Kind == "" || gvk.Version == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.indexed[gvk] {
		return
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	if !w.watched[gvk] {
		err := w.ctrl.Watch(source.Kind[client.Object](w.cache, obj, handler.EnqueueRequestsFromMapFunc(w.owner)))
		if err != nil {
			// A kind not served yet (its CRD not installed): tried again at
			// the next comparison.
			w.log.V(1).Info("cannot watch kind", "kind", gvk.String(), "error", err.Error())
			return
		}
		w.watched[gvk] = true
	}
	if err := w.cache.IndexField(context.Background(), obj, trackedByIndex, trackedBy); err != nil {
		w.log.V(1).Info("cannot index kind", "kind", gvk.String(), "error", err.Error())
		return
	}
	w.indexed[gvk] = true
}

// trackedByIndex indexes the watched objects by the app instance their
// tracking id names.
const trackedByIndex = "eddy.tracking-app"

func trackedBy(o client.Object) []string {
	if p, ok := tracking.Parse(o.GetAnnotations()[argov1.AnnotationTrackingID]); ok && p.App != "" {
		return []string{p.App}
	}
	return nil
}

// tracked returns the watched objects whose tracking id names instance
// and describes the object itself (tracking.OwnedBy), as metadata-only
// objects: what Argo CD finds in its cluster cache as the app's live
// objects (argocd-contract §5), read from the cache without a request.
// Kinds the Application never rendered since the controller started are
// not watched, so the caller adds the objects of the last
// status.resources.
func (w *liveWatches) tracked(ctx context.Context, instance string) []*unstructured.Unstructured {
	if w == nil || w.ctrl == nil {
		return nil
	}
	w.mu.Lock()
	kinds := make([]schema.GroupVersionKind, 0, len(w.indexed))
	for gvk := range w.indexed {
		kinds = append(kinds, gvk)
	}
	w.mu.Unlock()
	var out []*unstructured.Unstructured
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := w.cache.List(ctx, list, client.MatchingFields{trackedByIndex: instance}); err != nil {
			continue // not synced yet: the status' resources still count
		}
		for i := range list.Items {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			u.SetNamespace(list.Items[i].Namespace)
			u.SetName(list.Items[i].Name)
			u.SetAnnotations(list.Items[i].Annotations)
			u.SetOwnerReferences(list.Items[i].OwnerReferences)
			if tracking.OwnedBy(u, instance, u.GetNamespace() == "") {
				out = append(out, u)
			}
		}
	}
	return out
}

// absent reports whether the watches' cache, synced for gvk, holds no
// object ns/name: a read that would answer 404, saved (most of a first
// rollout's reads are of objects not created yet). False when the kind is
// not watched. An object created a moment ago may not be in the cache yet;
// its watch event starts another comparison.
func (w *liveWatches) absent(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	ok := w.indexed[gvk]
	w.mu.Unlock()
	if !ok {
		return false
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return apierrors.IsNotFound(w.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj))
}

// owner maps a live object to the Application its tracking id names.
func (w *liveWatches) owner(_ context.Context, o client.Object) []reconcile.Request {
	p, ok := tracking.Parse(o.GetAnnotations()[argov1.AnnotationTrackingID])
	if !ok {
		return nil
	}
	ns, name := w.namespace, p.App
	if i := strings.Index(p.App, "_"); i > 0 {
		ns, name = p.App[:i], p.App[i+1:]
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
