package kustomize

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// TestSourceOfNamesTheSourceRef: the namespace defaults to the
// Kustomization's; Git and OCI repositories and Buckets are served, other
// kinds not.
func TestSourceOfNamesTheSourceRef(t *testing.T) {
	ks := func(kind, ns string) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}}
		k.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: kind, Name: "repo", Namespace: ns}
		return k
	}
	src, key, id, ok := SourceOf(ks(sourcev1.GitRepositoryKind, ""))
	if _, git := src.(*sourcev1.GitRepository); !git || !ok || key.String() != "apps/repo" || id != "GitRepository/apps/repo" {
		t.Errorf("GitRepository: %T %s %s %v", src, key, id, ok)
	}
	src, key, id, ok = SourceOf(ks(sourcev1.OCIRepositoryKind, "infra"))
	if _, oci := src.(*sourcev1.OCIRepository); !oci || !ok || key.String() != "infra/repo" || id != "OCIRepository/infra/repo" {
		t.Errorf("OCIRepository: %T %s %s %v", src, key, id, ok)
	}
	src, _, id, ok = SourceOf(ks(sourcev1.BucketKind, ""))
	if _, bucket := src.(*sourcev1.Bucket); !bucket || !ok || id != "Bucket/apps/repo" {
		t.Errorf("Bucket: %T %s %v", src, id, ok)
	}
	src, _, id, ok = SourceOf(ks(sourcev1.ExternalArtifactKind, ""))
	if _, ea := src.(*sourcev1.ExternalArtifact); !ea || !ok || id != "ExternalArtifact/apps/repo" {
		t.Errorf("ExternalArtifact: %T %s %v", src, id, ok)
	}
	if src, _, id, ok := SourceOf(ks("ArtifactGenerator", "")); ok || src != nil || id != "ArtifactGenerator/apps/repo" {
		t.Errorf("ArtifactGenerator: %T %s %v", src, id, ok)
	}
}
