package controller

import (
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// TestRefNameHEAD checks that ref.name HEAD checks out the remote's
// default branch (its symbolic HEAD), whatever that branch is called:
// application-controller maps Argo CD's targetRevision HEAD to it.
func TestRefNameHEAD(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "v: 1\n"})
	c1 := r.MustGit(t, "rev-parse", "HEAD")
	r.MustGit(t, "push", "-q", r.Bare, "HEAD:refs/heads/other")
	c2 := r.MustCommit(t, map[string]string{"app.yaml": "v: 2\n"}, "second")
	if c1 == c2 {
		t.Fatal("commits should differ")
	}
	obj := newGitRepository(t, ns, "head", r.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Reference = &sourcev1.GitRepositoryRef{Name: "HEAD"}
	})
	got := waitReady(t, obj)
	if want := "HEAD@sha1:" + c2; got.Status.Artifact.Revision != want {
		t.Errorf("revision %q, want %q", got.Status.Artifact.Revision, want)
	}
	files := untar(t, download(t, got.Status.Artifact))
	if string(files["app.yaml"]) != "v: 2\n" {
		t.Errorf("app.yaml = %q, want the default branch's", files["app.yaml"])
	}
}
