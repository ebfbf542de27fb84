package webui

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
