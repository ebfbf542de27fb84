package testenv_test

import (
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCheckStatus holds the rules to Flux's conventions: Reconciling and
// Stalled only when True, none of them beside Ready=True.
func TestCheckStatus(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: "R"}
	}
	for _, c := range []struct {
		name  string
		conds []metav1.Condition
		want  int
	}{
		{"ready", []metav1.Condition{cond("Ready", "True")}, 0},
		{"reconciling", []metav1.Condition{cond("Ready", "Unknown"), cond("Reconciling", "True")}, 0},
		{"retrying", []metav1.Condition{cond("Ready", "False"), cond("Reconciling", "True")}, 0},
		{"stalled", []metav1.Condition{cond("Ready", "False"), cond("Stalled", "True")}, 0},
		{"reconciling false", []metav1.Condition{cond("Ready", "True"), cond("Reconciling", "False")}, 2},
		{"stalled false", []metav1.Condition{cond("Ready", "False"), cond("Stalled", "False")}, 1},
		{"ready while reconciling", []metav1.Condition{cond("Ready", "True"), cond("Reconciling", "True")}, 1},
		{"ready while stalled", []metav1.Condition{cond("Ready", "True"), cond("Stalled", "True")}, 1},
	} {
		if got := testenv.StatusViolations(c.conds, 0, 0); len(got) != c.want {
			t.Errorf("%s: %q, want %d findings", c.name, got, c.want)
		}
	}
	// Generations: Ready observed the old generation while
	// status.observedGeneration moved on (a suspended object once did this),
	// and a condition ahead of metadata.generation.
	stale := []metav1.Condition{{Type: "Ready", Status: "True", Reason: "R", ObservedGeneration: 1}}
	if got := testenv.StatusViolations(stale, 2, 2); len(got) != 1 {
		t.Errorf("stale Ready: %q, want 1 finding", got)
	}
	if got := testenv.StatusViolations(stale, 2, 1); len(got) != 0 {
		t.Errorf("mid-reconcile: %q, want none", got)
	}
	ahead := []metav1.Condition{{Type: "Ready", Status: "Unknown", Reason: "R", ObservedGeneration: 3}}
	if got := testenv.StatusViolations(ahead, 2, 1); len(got) != 1 {
		t.Errorf("ahead: %q, want 1 finding", got)
	}
}

// TestConditions reads status.conditions of any kind through its
// unstructured form.
func TestConditions(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "observedGeneration": int64(3)}}}}}
	conds, ok := testenv.Conditions(u)
	if !ok || len(conds) != 1 || conds[0].Type != "Ready" || conds[0].ObservedGeneration != 3 {
		t.Errorf("Conditions = %+v, %v", conds, ok)
	}
	if _, ok := testenv.Conditions(&unstructured.Unstructured{Object: map[string]any{}}); ok {
		t.Error("an object without status has conditions")
	}
}
