package app

import (
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNeverReconciled(t *testing.T) {
	now := metav1.Now()
	for _, c := range []struct {
		name   string
		status argov1.ApplicationStatus
		want   bool
	}{
		{"no status", argov1.ApplicationStatus{}, true},
		{"compared", argov1.ApplicationStatus{ReconciledAt: &now}, false},
		{"a condition only", argov1.ApplicationStatus{Conditions: []argov1.ApplicationCondition{{Type: argov1.ConditionInvalidSpecError}}}, false},
	} {
		a := seed()
		a.Status = c.status
		if got := NeverReconciled(a); got != c.want {
			t.Errorf("%s: NeverReconciled = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestComparisonFailure(t *testing.T) {
	for _, c := range []struct {
		conds []argov1.ApplicationCondition
		want  string
	}{
		{nil, ""},
		{[]argov1.ApplicationCondition{{Type: argov1.ConditionSharedResourceWarning, Message: "x"}}, ""},
		{[]argov1.ApplicationCondition{{Type: argov1.ConditionComparisonError, Message: "Failed to load target state:\n  no branch main"}},
			"ComparisonError: Failed to load target state: no branch main"},
		{[]argov1.ApplicationCondition{{Type: argov1.ConditionComparisonError, Message: "c"}, {Type: argov1.ConditionInvalidSpecError, Message: "i"}},
			"InvalidSpecError: i"},
	} {
		a := seed()
		a.Status.Conditions = c.conds
		if got := ComparisonFailure(a); got != c.want {
			t.Errorf("ComparisonFailure(%+v) = %q, want %q", c.conds, got, c.want)
		}
	}
}

func TestRefreshed(t *testing.T) {
	a := seed()
	a.Annotations = map[string]string{argov1.AnnotationRefresh: "normal"}
	if Refreshed(a, "42") {
		t.Error("the Application as the refresh wrote it counts as refreshed")
	}
	a.ResourceVersion = "43"
	if Refreshed(a, "42") {
		t.Error("another write that kept the annotation counts as refreshed")
	}
	delete(a.Annotations, argov1.AnnotationRefresh)
	if !Refreshed(a, "42") {
		t.Error("a comparison that removed the annotation does not count as refreshed")
	}
}
