package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// commitLinks adds symbolic links (name → target as written) to r's work
// tree, commits and pushes them, and returns the commit.
func commitLinks(t *testing.T, r *repo, links map[string]string, msg string) string {
	t.Helper()
	for name, target := range links {
		p := filepath.Join(r.Work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.FromSlash(target), p); err != nil {
			t.Fatal(err)
		}
	}
	return r.MustCommit(t, map[string]string{}, msg)
}

// TestSymlinksAnnotationFollowsLinksInsideTheCheckout: with the
// annotation, a linked file and a linked directory are archived as what
// they point to; without it the artifact is Flux's (links dropped), until
// the annotation is added. A link out of the repository then fails the
// artifact with Argo CD's message and the previous artifact stays.
func TestSymlinksAnnotationFollowsLinksInsideTheCheckout(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"shared/cm.yaml": "kind: ConfigMap\n"})
	commitLinks(t, r, map[string]string{"apps/x/cm.yaml": "../../shared/cm.yaml", "apps/y": "../shared"}, "links")
	plain := newGitRepository(t, ns, "plain", r.URL(), nil)
	follow := newGitRepository(t, ns, "follow", r.URL(), func(o *sourcev1.GitRepository) {
		o.Annotations = map[string]string{sourcev1.SymlinksAnnotation: sourcev1.SymlinksFollow}
	})

	p := waitReady(t, plain)
	if files := untar(t, download(t, p.Status.Artifact)); len(files) != 1 || p.Status.Artifact.Metadata[sourcev1.SymlinksAnnotation] != "" {
		t.Errorf("without the annotation: files %v, metadata %v; want shared/cm.yaml alone, no links mode", keys(files), p.Status.Artifact.Metadata)
	}
	f := waitReady(t, follow)
	files := untar(t, download(t, f.Status.Artifact))
	for _, name := range []string{"shared/cm.yaml", "apps/x/cm.yaml", "apps/y/cm.yaml"} {
		if string(files[name]) != "kind: ConfigMap\n" {
			t.Errorf("with the annotation: %s = %q (files %v)", name, files[name], keys(files))
		}
	}
	if f.Status.Artifact.Revision != p.Status.Artifact.Revision || f.Status.Artifact.Digest == p.Status.Artifact.Digest {
		t.Errorf("revisions %s and %s, digests %s and %s: want one revision, two contents",
			f.Status.Artifact.Revision, p.Status.Artifact.Revision, f.Status.Artifact.Digest, p.Status.Artifact.Digest)
	}

	// Adding the annotation rebuilds the artifact of the same commit.
	update(t, plain, func(o *sourcev1.GitRepository) {
		o.Annotations = map[string]string{sourcev1.SymlinksAnnotation: sourcev1.SymlinksFollow}
	})
	if p = requestReconcile(t, plain); p.Status.Artifact.Digest != f.Status.Artifact.Digest {
		t.Errorf("after adding the annotation the digest is %s, want %s", p.Status.Artifact.Digest, f.Status.Artifact.Digest)
	}

	commitLinks(t, r, map[string]string{"apps/evil.yaml": "../../outside.yaml"}, "a link out")
	got := requestReconcile(t, follow)
	got = waitNotReady(t, got)
	want := "repository contains out-of-bounds symlinks. file: apps/evil.yaml"
	ready := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
	if !strings.Contains(ready.Message, want) || ready.Reason != sourcev1.ArchiveOperationFailedReason {
		t.Errorf("Ready %s: %q, want %s with %q", ready.Reason, ready.Message, sourcev1.ArchiveOperationFailedReason, want)
	}
	if a := got.Status.Artifact; a == nil || a.Digest != f.Status.Artifact.Digest {
		t.Errorf("artifact %+v, want the previous one kept", a)
	} else {
		download(t, a)
	}
}

// TestShortCommitSHA: ref.commit with the first 8 hex digits of a commit
// that is not the branch head checks it out at its full SHA, and a new
// reconcile does not fetch again.
func TestShortCommitSHA(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "v: 1\n"})
	c1 := r.MustGit(t, "rev-parse", "HEAD")
	r.MustCommit(t, map[string]string{"app.yaml": "v: 2\n"}, "second")
	for _, branch := range []string{"", "main"} {
		obj := newGitRepository(t, ns, "short-"+branch+"x", r.URL(), func(o *sourcev1.GitRepository) {
			o.Spec.Reference = &sourcev1.GitRepositoryRef{Commit: strings.ToUpper(c1[:8]), Branch: branch}
		})
		got := waitReady(t, obj)
		want := "sha1:" + c1
		if branch != "" {
			want = branch + "@" + want
		}
		if got.Status.Artifact.Revision != want {
			t.Errorf("revision %q, want %q", got.Status.Artifact.Revision, want)
		}
		if files := untar(t, download(t, got.Status.Artifact)); string(files["app.yaml"]) != "v: 1\n" {
			t.Errorf("app.yaml = %q, want the first commit's", files["app.yaml"])
		}
		before := gitSrv.Fetches(r.Name)
		requestReconcile(t, got)
		if n := gitSrv.Fetches(r.Name); n != before {
			t.Errorf("a reconcile at the same commit fetched again (%d fetches, was %d)", n, before)
		}
	}
	bad := newGitRepository(t, ns, "too-short", r.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Reference = &sourcev1.GitRepositoryRef{Commit: c1[:6]}
	})
	got := waitNotReady(t, bad)
	if ready := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); !strings.Contains(ready.Message, "is not a SHA-1 of 7 to 40 hex digits") ||
		!apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.StalledCondition) {
		t.Errorf("a 6-digit commit: Ready %q, want stalled on 7 to 40 hex digits", ready.Message)
	}
}
