package e2e

import (
	"strings"
	"testing"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestChartTemplateTypo changes a released HelmRelease's chart name to one
// its HelmRepository does not have: source-controller refuses the new
// HelmChart spec (keeping the old artifact), and the HelmRelease must say
// so (SourceNotReady with the HelmChart's reason) instead of reading the
// old chart from its cache and staying Ready. Fixing the name releases
// again at once.
func TestChartTemplateTypo(t *testing.T) {
	logsOnFailure(t)
	_, _, hr := releasedApp(t, "typo-")

	setChart := func(name string) {
		t.Helper()
		base := hr.DeepCopy()
		hr.Spec.Chart.Spec.Chart = name
		if err := env.Client.Patch(t.Context(), hr, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	setChart("ap")
	waitFor(t, hr, "SourceNotReady naming the missing chart", func() bool {
		c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == helmv2.SourceNotReadyReason &&
			strings.Contains(c.Message, "'ap'")
	})
	if hr.Status.ObservedGeneration == hr.Generation {
		t.Errorf("observedGeneration %d = generation while the chart is not ready", hr.Status.ObservedGeneration)
	}

	setChart("app")
	waitReady(t, hr)
	if len(hr.Status.History) != 1 {
		t.Errorf("history %d snapshots, want the one release: nothing changed but the detour", len(hr.Status.History))
	}
}
