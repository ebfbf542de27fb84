package runtime

import (
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObserveSuspended records in a status what a reconcile of the suspended
// object obj observes, and nothing else: the handled reconcile request
// (lastHandledReconcileAt) and, when Ready is True, obj's generation
// (observedGeneration, with Reconciling removed), so a suspended Ready
// object reads as Current to kstatus, `kubectl wait`, a parent's health
// check and a dependant. A failing object keeps its old generation and its
// conditions. Flux compatible (kustomize-controller's finalizeStatus and
// notification-controller's Receiver patch for a suspended object).
func ObserveSuspended(obj metav1.Object, conditions *[]metav1.Condition, observedGeneration *int64, lastHandledReconcileAt *string) {
	if v, ok := obj.GetAnnotations()[meta.ReconcileRequestAnnotation]; ok {
		*lastHandledReconcileAt = v
	}
	if apimeta.IsStatusConditionTrue(*conditions, meta.ReadyCondition) {
		apimeta.RemoveStatusCondition(conditions, meta.ReconcilingCondition)
		*observedGeneration = obj.GetGeneration()
	}
}
