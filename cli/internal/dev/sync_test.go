package dev

import (
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The sync pair eddy dev writes is flux bootstrap's (every 1m, no Secret;
// pruning every 10m), with a reconcile requested of each.
func TestApplySyncWritesTheBootstrapPair(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	src := &Source{URL: "http://127.0.0.1:1/repo", Branch: "dev", Path: "./apps", TargetNamespace: "team"}
	if err := ApplySync(t.Context(), c, src); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: Namespace, Name: SyncName}
	repo, ks := &sourcev1.GitRepository{}, &kustomizev1.Kustomization{}
	if err := c.Get(t.Context(), key, repo); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), key, ks); err != nil {
		t.Fatal(err)
	}
	if s := repo.Spec; s.URL != src.URL || s.Interval.Duration != time.Minute || s.Reference == nil || s.Reference.Branch != "dev" ||
		s.SecretRef != nil || s.Suspend || repo.Annotations[meta.ReconcileRequestAnnotation] == "" {
		t.Errorf("GitRepository %+v %+v", repo.Annotations, s)
	}
	if s := ks.Spec; s.Interval.Duration != 10*time.Minute || s.Path != "./apps" || !s.Prune || s.TargetNamespace != "team" || s.Suspend ||
		s.SourceRef != (kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: SyncName}) ||
		ks.Annotations[meta.ReconcileRequestAnnotation] == "" {
		t.Errorf("Kustomization %+v %+v", ks.Annotations, s)
	}
}

// Re-pointing the sync rewrites the pair's own fields and resumes the
// Kustomization, and keeps what else was set on the live objects.
func TestApplySyncKeepsOtherFields(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	if err := ApplySync(t.Context(), c, &Source{URL: "http://127.0.0.1:1/a", Branch: "main", Path: "./"}); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: Namespace, Name: SyncName}
	repo, ks := &sourcev1.GitRepository{}, &kustomizev1.Kustomization{}
	if err := c.Get(t.Context(), key, repo); err != nil {
		t.Fatal(err)
	}
	repo.Spec.Suspend, repo.Spec.SecretRef = true, &meta.LocalObjectReference{Name: "creds"}
	if err := c.Update(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
	if err := SuspendKustomization(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), key, ks); err != nil {
		t.Fatal(err)
	}
	ks.Spec.Force = true
	if err := c.Update(t.Context(), ks); err != nil {
		t.Fatal(err)
	}
	if err := ApplySync(t.Context(), c, &Source{URL: "http://127.0.0.1:1/b", Branch: "main", Path: "./b"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), key, repo); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), key, ks); err != nil {
		t.Fatal(err)
	}
	if !repo.Spec.Suspend || repo.Spec.SecretRef == nil || repo.Spec.URL != "http://127.0.0.1:1/b" {
		t.Errorf("GitRepository spec %+v; want url b, still suspended, secretRef creds", repo.Spec)
	}
	if ks.Spec.Suspend || !ks.Spec.Force || ks.Spec.Path != "./b" {
		t.Errorf("Kustomization spec %+v; want path ./b, resumed, still force", ks.Spec)
	}
}
