package e2e

import (
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDependsOnReadyExpr runs against the built helm-controller: a dependsOn
// readyExpr replaces the dependency's Ready check (a release depending on a
// HelmRelease that can never be Ready installs when its expression is true),
// a false one waits with Flux's message, one that does not compile stalls
// with InvalidCELExpression; a release with spec.healthCheckExprs installs.
func TestDependsOnReadyExpr(t *testing.T) {
	logsOnFailure(t)
	ns, _, _ := releasedApp(t, "readyexpr-")
	release := func(name string, mutate func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
		hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
				Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "app", Version: "*",
					SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}}}}
		mutate(hr)
		create(t, hr)
		return hr
	}
	// Never Ready: its chart source does not exist.
	release("stuck", func(hr *helmv2.HelmRelease) {
		hr.Spec.Chart = nil
		hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "missing"}
	})
	dependsOn := func(expr string) func(*helmv2.HelmRelease) {
		return func(hr *helmv2.HelmRelease) {
			hr.Spec.DependsOn = []meta.DependencyReference{{Name: "stuck", ReadyExpr: expr}}
		}
	}
	passes := release("passes", dependsOn("dep.metadata.name == 'stuck' && self.metadata.name == 'passes'"))
	waits := release("waits", dependsOn("dep.metadata.generation > 100"))
	invalid := release("invalid", dependsOn("dep.metadata.name =="))
	exprs := release("exprs", func(hr *helmv2.HelmRelease) {
		hr.Spec.HealthCheckExprs = []kustomizev1.CustomHealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: "true"}}
	})

	waitReady(t, passes)
	failedWith := func(hr *helmv2.HelmRelease, what, reason string, stalled bool) metav1.Condition {
		t.Helper()
		waitFor(t, hr, what, func() bool {
			c := readyCondition(hr)
			return c.Status == metav1.ConditionFalse && c.Reason == reason &&
				(!stalled || apimeta.IsStatusConditionTrue(hr.Status.Conditions, meta.StalledCondition))
		})
		return readyCondition(hr)
	}
	if c := failedWith(waits, "DependencyNotReady", helmv2.DependencyNotReadyReason, false); c.Message != "dependency '"+ns+"/stuck' is not ready according to readyExpr eval" {
		t.Errorf("waits: %q", c.Message)
	}
	if c := failedWith(invalid, "Stalled InvalidCELExpression", meta.InvalidCELExpressionReason, true); !strings.HasPrefix(c.Message,
		"Reconciliation failed terminally due to configuration error: failed to evaluate dependency stuck: ") {
		t.Errorf("invalid: %q", c.Message)
	}
	waitReady(t, exprs)
	for _, hr := range []*helmv2.HelmRelease{waits, invalid} {
		if len(hr.Status.History) > 0 {
			t.Errorf("%s released %d times", hr.Name, len(hr.Status.History))
		}
	}
}
