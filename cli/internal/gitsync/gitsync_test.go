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

// Setting the pair's fields on live objects rewrites those fields only: a
// suspend, or a secretRef when no Secret is named, stays as it was.
func TestSetKeepsFieldsThePairDoesNotSay(t *testing.T) {
	o := Options{Name: "flux-system", URL: "http://example.com/b", Branch: "dev", Interval: time.Minute, Path: "./b"}
	repo, ks := Objects(Options{Name: "flux-system", URL: "http://example.com/a", Secret: "creds", Path: "a"})
	repo.Spec.Suspend, ks.Spec.Suspend, ks.Spec.Force = true, true, true
	SetRepository(repo, o)
	SetKustomization(ks, o)
	if repo.Spec.URL != o.URL || repo.Spec.Reference.Branch != "dev" || !repo.Spec.Suspend ||
		repo.Spec.SecretRef == nil || repo.Spec.SecretRef.Name != "creds" {
		t.Errorf("GitRepository spec %+v", repo.Spec)
	}
	if ks.Spec.Path != "./b" || !ks.Spec.Suspend || !ks.Spec.Force {
		t.Errorf("Kustomization spec %+v", ks.Spec)
	}
}
