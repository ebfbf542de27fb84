package gitsync

import (
	"testing"
	"time"
)

// TestPairAsFluxBootstrapWritesIt: the GitRepository follows the branch
// with the Secret; the Kustomization prunes the path of that repository
// every 10m; a path is written "./<path>" once.
func TestPairAsFluxBootstrapWritesIt(t *testing.T) {
	repo, ks := Objects(Options{Name: "flux-system", Namespace: "flux-system", URL: "ssh://git@example.com/fleet",
		Branch: "main", Secret: "flux-system", Interval: time.Minute, Path: "./clusters/dev"})
	if repo.Spec.Reference.Branch != "main" || repo.Spec.SecretRef == nil || repo.Spec.SecretRef.Name != "flux-system" ||
		repo.Spec.Interval.Duration != time.Minute || repo.Kind != "GitRepository" {
		t.Errorf("GitRepository: %+v", repo)
	}
	if ks.Spec.Path != "./clusters/dev" || !ks.Spec.Prune || ks.Spec.Interval.Duration != KustomizationInterval ||
		ks.Spec.SourceRef.Kind != "GitRepository" || ks.Spec.SourceRef.Name != "flux-system" || ks.Kind != "Kustomization" {
		t.Errorf("Kustomization: %+v", ks)
	}
	if repo, _ := Objects(Options{Path: "apps"}); repo.Spec.SecretRef != nil {
		t.Errorf("no Secret named, yet spec.secretRef %+v", repo.Spec.SecretRef)
	}
	if _, ks := Objects(Options{Path: "apps"}); ks.Spec.Path != "./apps" {
		t.Errorf("path apps written %q", ks.Spec.Path)
	}
}
