package controller

import (
	"context"
	"strings"
	"sync"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/tracking"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if w.watched[gvk] {
		return
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	err := w.ctrl.Watch(source.Kind[client.Object](w.cache, obj, handler.EnqueueRequestsFromMapFunc(w.owner)))
	if err != nil {
		// A kind not served yet (its CRD not installed): tried again at the
		// next comparison.
		w.log.V(1).Info("cannot watch kind", "kind", gvk.String(), "error", err.Error())
		return
	}
	w.watched[gvk] = true
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
