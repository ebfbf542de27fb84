package reconciler_test

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// dependency is a Kustomization ns/name at generation 2, observed at
// observed, Ready as ready.
func dependency(ns, name string, observed int64, ready metav1.ConditionStatus) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 2,
		Annotations: map[string]string{"app/version": name}}}
	k.Status.ObservedGeneration = observed
	k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: ready, Reason: "R", LastTransitionTime: metav1.Now()}}
	k.Status.LastAppliedRevision = "main@sha1:" + name
	return k
}

// TestDependenciesCheck: the first dependency that is not ready, in
// spec order, names the failure; a readyExpr replaces the Ready rule
// unless the additive gate is on; a readyExpr that does not compile
// stalls; the kind's UpToDate rule comes last.
func TestDependenciesCheck(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kustomizev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		dependency("apps", "ready", 2, metav1.ConditionTrue),
		dependency("apps", "stale", 1, metav1.ConditionTrue),
		dependency("apps", "failing", 2, metav1.ConditionFalse),
		dependency("infra", "other-ns", 2, metav1.ConditionTrue),
	).Build()
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app",
		Annotations: map[string]string{"app/version": "failing"}}}
	deps := reconciler.Dependencies[*kustomizev1.Kustomization]{
		Reader: c,
		New:    func() *kustomizev1.Kustomization { return &kustomizev1.Kustomization{} },
		Retry:  7 * time.Second,
	}
	ref := func(ns, name, expr string) meta.DependencyReference {
		return meta.DependencyReference{Namespace: ns, Name: name, ReadyExpr: expr}
	}
	sameVersion := "self.metadata.annotations['app/version'] == dep.metadata.annotations['app/version']"
	for _, c := range []struct {
		name     string
		refs     []meta.DependencyReference
		additive bool
		upToDate func(*kustomizev1.Kustomization) string
		reason   string
		message  string
		stalled  bool
	}{
		{name: "all ready", refs: []meta.DependencyReference{ref("", "ready", ""), ref("infra", "other-ns", "")}},
		{name: "first not ready wins", refs: []meta.DependencyReference{ref("", "ready", ""), ref("", "stale", ""), ref("", "failing", "")},
			reason: meta.DependencyNotReadyReason, message: "dependency 'apps/stale' is not ready"},
		{name: "Ready False", refs: []meta.DependencyReference{ref("apps", "failing", "")},
			reason: meta.DependencyNotReadyReason, message: "dependency 'apps/failing' is not ready"},
		{name: "missing", refs: []meta.DependencyReference{ref("", "gone", "")},
			reason: meta.DependencyNotReadyReason, message: `unable to get 'apps/gone' dependency: kustomizations.kustomize.toolkit.fluxcd.io "gone" not found`},
		{name: "readyExpr false", refs: []meta.DependencyReference{ref("", "ready", sameVersion)},
			reason: meta.DependencyNotReadyReason, message: "dependency 'apps/ready' is not ready according to readyExpr eval"},
		{name: "readyExpr true replaces Ready", refs: []meta.DependencyReference{ref("", "failing", sameVersion)}},
		{name: "readyExpr true, additive", refs: []meta.DependencyReference{ref("", "failing", sameVersion)}, additive: true,
			reason: meta.DependencyNotReadyReason, message: "dependency 'apps/failing' is not ready"},
		{name: "readyExpr does not compile", refs: []meta.DependencyReference{ref("", "ready", "dep.nope(")},
			reason: meta.InvalidCELExpressionReason, stalled: true},
		{name: "not up to date", refs: []meta.DependencyReference{ref("", "ready", "")},
			upToDate: func(dep *kustomizev1.Kustomization) string { return "revision is not up to date" },
			reason:   meta.DependencyNotReadyReason, message: "dependency 'apps/ready' revision is not up to date"},
	} {
		deps.AdditiveCEL, deps.UpToDate = c.additive, c.upToDate
		f := deps.Check(context.Background(), obj, c.refs)
		switch {
		case c.reason == "" && f != nil:
			t.Errorf("%s: %s %s", c.name, f.Reason, f.Message)
		case c.reason == "":
		case f == nil:
			t.Errorf("%s: no failure, want %s", c.name, c.reason)
		case f.Reason != c.reason || (c.message != "" && f.Message != c.message) || f.Stalled != c.stalled:
			t.Errorf("%s: %s %q stalled %v, want %s %q stalled %v", c.name, f.Reason, f.Message, f.Stalled, c.reason, c.message, c.stalled)
		case c.stalled && f.Retry != 0, !c.stalled && f.Retry != 7*time.Second:
			t.Errorf("%s: retry %s", c.name, f.Retry)
		}
	}
}
