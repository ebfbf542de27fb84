package kinds

import (
	"errors"

	"github.com/eddyops/eddy/pkg/health"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// ReadyCondition is o's Ready condition (nil without one) and whether it
// speaks of o's current generation: by the condition's own
// observedGeneration, else (0) by status.observedGeneration. This is the
// one rule of "ready for this generation" that every wait and the web UI
// apply (flux reads it so: kstatus and its reconcile wait).
func ReadyCondition(o Object) (*metav1.Condition, bool) {
	c := apimeta.FindStatusCondition(o.GetConditions(), meta.ReadyCondition)
	if c == nil {
		return nil, false
	}
	gen := o.GetGeneration()
	if c.ObservedGeneration != 0 {
		return c, c.ObservedGeneration == gen
	}
	return c, o.GetObservedGeneration() == gen
}

// Ready is flux's readiness of o (flux resume, flux create): for a kind
// with a status (k.NoStatus false) and an object a controller reconciles
// (not k.Unreconciled), status.observedGeneration ≥ 1 and a
// Ready condition of the current generation (ReadyCondition); then kstatus
// Current is ready, InProgress not yet, anything else (Failed, Stalled) an
// error with kstatus's message.
func Ready(k Kind, o Object) (bool, error) {
	if !k.NoStatus && !k.IsUnreconciled(o) {
		if o.GetObservedGeneration() < 1 {
			return false, nil
		}
		if _, current := ReadyCondition(o); !current {
			return false, nil
		}
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return false, err
	}
	res, err := health.Compute(&unstructured.Unstructured{Object: content})
	if err != nil {
		return false, err
	}
	switch res.Status {
	case kstatus.CurrentStatus:
		return true, nil
	case kstatus.InProgressStatus:
		return false, nil
	}
	return false, errors.New(res.Message)
}
