package controller

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
)

// TestShortenName: names up to 53 characters are kept; longer ones become
// 40 characters, "-" and 12 hex digits of their sha256 (Flux's
// internal/release/name.go, whose test uses these values).
func TestShortenName(t *testing.T) {
	for in, want := range map[string]string{
		"release-name":          "release-name",
		strings.Repeat("a", 53): strings.Repeat("a", 53),
		"some-front-appended-namespace-release-with-a-name-that-exceeds-53": "some-front-appended-namespace-release-wi-",
	} {
		got := shortenName(in)
		if len(in) <= 53 && got != want {
			t.Errorf("shortenName(%q) = %q", in, got)
		}
		if len(in) > 53 && (len(got) != 53 || !strings.HasPrefix(got, want)) {
			t.Errorf("shortenName(%q) = %q, want %q + 12 hex digits", in, got, want)
		}
	}
}

// TestReleaseDigest: the snapshot digest covers the stored release but not
// its test hooks (a manual `helm test` changes no digest) nor the chart's
// templates.
func TestReleaseDigest(t *testing.T) {
	rel := func() *release.Release {
		return &release.Release{Name: "podinfo", Namespace: "apps", Version: 1, Manifest: "kind: Service\n",
			Info:   &release.Info{Status: release.StatusDeployed},
			Chart:  &chart.Chart{Metadata: &chart.Metadata{Name: "podinfo", Version: "6.14.1"}},
			Config: map[string]any{"replicaCount": 2},
			Hooks:  []*release.Hook{{Name: "pre", Events: []release.HookEvent{release.HookPreInstall}}}}
	}
	base := releaseDigest(rel(), "")
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Fatalf("digest %q", base)
	}
	withTest := rel()
	withTest.Hooks = append(withTest.Hooks, &release.Hook{Name: "t", Events: []release.HookEvent{release.HookTest},
		LastRun: release.HookExecution{Phase: release.HookPhaseSucceeded}})
	withTemplates := rel()
	withTemplates.Chart.Templates = []*chart.File{{Name: "templates/x.yaml", Data: []byte("x")}}
	for name, r := range map[string]*release.Release{"test hooks": withTest, "chart templates": withTemplates} {
		if d := releaseDigest(r, ""); d != base {
			t.Errorf("%s changed the digest", name)
		}
	}
	changed := rel()
	changed.Info.Status = release.StatusSuperseded
	if releaseDigest(changed, "") == base {
		t.Error("a status change kept the digest")
	}
	if releaseDigest(rel(), "sha256:abc") == base {
		t.Error("the OCI digest is not covered")
	}
}
