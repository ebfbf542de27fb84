package controllerkit

import (
	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// ReconcileRequestedPredicate passes updates that change the
// `reconcile.fluxcd.io/requestedAt` annotation: a request for an immediate
// reconcile, as `flux reconcile` and webhook receivers make. Flux compatible.
type ReconcileRequestedPredicate struct {
	predicate.Funcs
}

// Update passes when the annotation's value differs between old and new.
func (ReconcileRequestedPredicate) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	newVal, ok := e.ObjectNew.GetAnnotations()[meta.ReconcileRequestAnnotation]
	return ok && newVal != e.ObjectOld.GetAnnotations()[meta.ReconcileRequestAnnotation]
}

// Create, Delete and Generic pass nothing; combine with another predicate.
func (ReconcileRequestedPredicate) Create(event.CreateEvent) bool   { return false }
func (ReconcileRequestedPredicate) Delete(event.DeleteEvent) bool   { return false }
func (ReconcileRequestedPredicate) Generic(event.GenericEvent) bool { return false }

// ReconcileOnChange passes creations, deletions, spec changes (generation)
// and reconcile requests, but not status-only updates.
func ReconcileOnChange() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, ReconcileRequestedPredicate{})
}
