package webui

import (
	"testing"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestHelmReleaseRevisionAsGet: after a failed upgrade the overview's
// REVISION of a HelmRelease is what `eddy get helmreleases` (and `flux get
// helmreleases`) shows: the chart version of the newest release in
// status.history, not status.lastAttemptedRevision.
func TestHelmReleaseRevisionAsGet(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "podinfo", "namespace": "apps", "generation": int64(2)},
		"status": map[string]any{
			"observedGeneration":    int64(2),
			"lastAttemptedRevision": "6.2.0+bad",
			"history": []any{
				map[string]any{"chartName": "podinfo", "chartVersion": "6.2.0", "status": "failed", "version": int64(2)},
				map[string]any{"chartName": "podinfo", "chartVersion": "6.1.0", "status": "superseded", "version": int64(1)},
			},
			"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "UpgradeFailed",
				"message": "upgrade failed", "observedGeneration": int64(2), "lastTransitionTime": "2026-01-01T00:00:00Z"}},
		},
	}}
	s := summarize(u)
	if s.Revision != "6.2.0" || s.State != "failed" {
		t.Errorf("summary: revision %q, state %q; want 6.2.0, failed", s.Revision, s.State)
	}
}

// TestUnreconciledHelmRepositoryIsReady: an OCI HelmRepository, never
// reconciled, is ready in the overview as in `eddy get sources helm`.
func TestUnreconciledHelmRepositoryIsReady(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
		"metadata": map[string]any{"name": "charts", "namespace": "apps", "generation": int64(1)},
		"spec":     map[string]any{"type": "oci", "url": "oci://ghcr.io/charts"},
	}}
	if s := summarize(u); s.State != "ready" {
		t.Errorf("OCI HelmRepository: state %q; want ready", s.State)
	}
}

// TestOverviewAndGetReadTheSameRevisionAndReady: the overview's REVISION
// and Ready of an object are what `eddy get` prints for it (status.Rows):
// both read the kind's row of kinds.All, so they cannot disagree, as they
// once did on a HelmRelease after a failed upgrade.
func TestOverviewAndGetReadTheSameRevisionAndReady(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason, Message: "m",
			ObservedGeneration: 2, LastTransitionTime: metav1.Now()}}
	}
	om := metav1.ObjectMeta{Name: "o", Namespace: "apps", Generation: 2}
	failedUpgrade := &helmv2.HelmRelease{ObjectMeta: om}
	failedUpgrade.Status.ObservedGeneration = 2
	failedUpgrade.Status.LastAttemptedRevision = "6.2.0+bad"
	failedUpgrade.Status.History = []helmv2.Snapshot{{ChartVersion: "6.2.0", Status: "failed"}, {ChartVersion: "6.1.0", Status: "superseded"}}
	failedUpgrade.Status.Conditions = ready(metav1.ConditionFalse, helmv2.UpgradeFailedReason)
	firstAttempt := &helmv2.HelmRelease{ObjectMeta: om}
	firstAttempt.Status.LastAttemptedRevision = "6.1.0"
	ks := &kustomizev1.Kustomization{ObjectMeta: om}
	ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision = "main@sha1:a", "main@sha1:b"
	ks.Status.Conditions = ready(metav1.ConditionTrue, meta.ReconciliationSucceededReason)
	git := &sourcev1.GitRepository{ObjectMeta: om}
	git.Status.Artifact = &sourcev1.Artifact{Revision: "main@sha1:c"}
	git.Status.Conditions = ready(metav1.ConditionTrue, meta.SucceededReason)
	for _, o := range []kinds.Object{failedUpgrade, firstAttempt, ks, git} {
		k, _ := kinds.Of(o)
		l := k.NewList()
		if err := apimeta.SetList(l, []runtime.Object{o}); err != nil {
			t.Fatal(err)
		}
		row := status.Rows(k, l, "")[0]
		s := mustSummary(t, o)
		if s.Revision != row.Revision {
			t.Errorf("%s: overview revision %q, get %q", k.Kind, s.Revision, row.Revision)
		}
		if s.Ready != "" && (s.Ready != row.Ready || s.Message != row.Message) {
			t.Errorf("%s: overview Ready %s %q, get %s %q", k.Kind, s.Ready, s.Message, row.Ready, row.Message)
		}
	}
	if got := mustSummary(t, failedUpgrade).Revision; got != "6.2.0" {
		t.Errorf("failed upgrade: revision %q; want the failed release's chart version 6.2.0", got)
	}
}

func mustSummary(t *testing.T, o kinds.Object) Summary {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kinds.Of(o)
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(k.GVK())
	return summarize(u)
}
