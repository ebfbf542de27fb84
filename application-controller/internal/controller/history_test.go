package controller

import (
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHistoryWithANegativeLimitKeepsNone: spec.revisionHistoryLimit
// below zero (the CRD has no minimum) keeps no history, as Argo CD's
// RevisionHistories.Trunc clamps n < 0 to 0; it must not panic when a
// sync finishes (a panic there leaves the operation Running for ever,
// each pass applying again and never recording the end).
func TestHistoryWithANegativeLimitKeepsNone(t *testing.T) {
	limit := int64(-1)
	app := &argov1.Application{Spec: argov1.ApplicationSpec{RevisionHistoryLimit: &limit}}
	app.Status.History = []argov1.RevisionHistory{{ID: 0, Revision: "a"}}
	st := &argov1.OperationState{Operation: argov1.Operation{Sync: &argov1.SyncOperation{}},
		SyncResult: &argov1.SyncOperationResult{Revision: "b"}, StartedAt: metav1.Now()}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("addHistory panicked with a negative limit: %v", p)
		}
	}()
	(&ApplicationReconciler{}).addHistory(app, st, metav1.Now())
	if len(app.Status.History) != 0 {
		t.Errorf("history %+v, want none", app.Status.History)
	}
}
