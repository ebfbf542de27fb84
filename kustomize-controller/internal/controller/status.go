package controller

import (
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// summarize writes Ready, Reconciling and Stalled. Flux compatible: Ready=True
// `Applied revision: <rev>`; on failure Ready=False with the reason, and
// Reconciling=True ProgressingWithRetry unless stalled.
func (r *KustomizationReconciler) summarize(obj *kustomizev1.Kustomization, f *failure) {
	gen := obj.Generation
	set := func(typ string, st metav1.ConditionStatus, reason, msg string) {
		apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	if f == nil {
		apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.ReconcilingCondition)
		apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.StalledCondition)
		set(meta.ReadyCondition, metav1.ConditionTrue, kustomizev1.ReconciliationSucceededReason, "Applied revision: "+obj.Status.LastAppliedRevision)
		obj.Status.ObservedGeneration = gen
		return
	}
	set(meta.ReadyCondition, metav1.ConditionFalse, f.reason, f.message)
	if f.stalled {
		apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.ReconcilingCondition)
		set(meta.StalledCondition, metav1.ConditionTrue, f.reason, f.message)
		obj.Status.ObservedGeneration = gen
		return
	}
	apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.StalledCondition)
	// Flux compatible: Reconciling keeps the step it failed in, with the
	// reason ProgressingWithRetry; the failure itself is Ready's message.
	msg := f.message
	if c := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReconcilingCondition); c != nil && c.Reason == meta.ProgressingReason {
		msg = c.Message
	}
	set(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, msg)
}
