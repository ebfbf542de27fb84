package release

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
)

// TestDigestLeavesOutTestHooksAndTemplates: the snapshot digest covers the stored release but not
// its test hooks (a manual `helm test` changes no digest) nor the chart's
// templates.
func TestDigestLeavesOutTestHooksAndTemplates(t *testing.T) {
	rel := func() *helmrelease.Release {
		return &helmrelease.Release{Name: "podinfo", Namespace: "apps", Version: 1, Manifest: "kind: Service\n",
			Info:   &helmrelease.Info{Status: helmrelease.StatusDeployed},
			Chart:  &chart.Chart{Metadata: &chart.Metadata{Name: "podinfo", Version: "6.14.1"}},
			Config: map[string]any{"replicaCount": 2},
			Hooks:  []*helmrelease.Hook{{Name: "pre", Events: []helmrelease.HookEvent{helmrelease.HookPreInstall}}}}
	}
	base := Digest(rel(), "")
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Fatalf("digest %q", base)
	}
	withTest := rel()
	withTest.Hooks = append(withTest.Hooks, &helmrelease.Hook{Name: "t", Events: []helmrelease.HookEvent{helmrelease.HookTest},
		LastRun: helmrelease.HookExecution{Phase: helmrelease.HookPhaseSucceeded}})
	withTemplates := rel()
	withTemplates.Chart.Templates = []*chart.File{{Name: "templates/x.yaml", Data: []byte("x")}}
	for name, r := range map[string]*helmrelease.Release{"test hooks": withTest, "chart templates": withTemplates} {
		if d := Digest(r, ""); d != base {
			t.Errorf("%s changed the digest", name)
		}
	}
	changed := rel()
	changed.Info.Status = helmrelease.StatusSuperseded
	if Digest(changed, "") == base {
		t.Error("a status change kept the digest")
	}
	if Digest(rel(), "sha256:abc") == base {
		t.Error("the OCI digest is not covered")
	}
}
