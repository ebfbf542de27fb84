package controller

import (
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// TestInclude copies another GitRepository's artifact into this one's,
// follows that artifact's changes, and reports a missing include.
func TestInclude(t *testing.T) {
	ns := newNamespace(t)
	shared := newRepo(t, map[string]string{"base/config.yaml": "shared: 1\n", "README.md": "not included\n"})
	app := newRepo(t, map[string]string{"app.yaml": "a: 1\n", "vendor/base/stale.yaml": "replaced\n"})
	lib := waitReady(t, newGitRepository(t, ns, "shared", shared.URL(), nil))
	obj := newGitRepository(t, ns, "app", app.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Include = []sourcev1.GitRepositoryInclude{{
			GitRepositoryRef: meta.LocalObjectReference{Name: "shared"}, FromPath: "base", ToPath: "vendor/base",
		}}
	})
	got := waitReady(t, obj)
	files := untar(t, download(t, got.Status.Artifact))
	if string(files["vendor/base/config.yaml"]) != "shared: 1\n" || files["app.yaml"] == nil {
		t.Errorf("artifact files %v: want app.yaml and vendor/base/config.yaml from the include", keys(files))
	}
	if _, ok := files["vendor/base/stale.yaml"]; ok {
		t.Error("toPath was not replaced by the include")
	}
	if len(got.Status.IncludedArtifacts) != 1 || got.Status.IncludedArtifacts[0].Digest != lib.Status.Artifact.Digest {
		t.Errorf("includedArtifacts %+v, want the shared artifact", got.Status.IncludedArtifacts)
	}

	shared.MustCommit(t, map[string]string{"base/config.yaml": "shared: 2\n"}, "bump shared")
	requestReconcile(t, lib)
	updated := waitFor(t, obj, "rebuild after the include changed", func(o *sourcev1.GitRepository) bool {
		return o.Status.Artifact != nil && o.Status.Artifact.Digest != got.Status.Artifact.Digest
	})
	if string(untar(t, download(t, updated.Status.Artifact))["vendor/base/config.yaml"]) != "shared: 2\n" {
		t.Error("the rebuilt artifact lacks the new included content")
	}
	if updated.Status.Artifact.Revision != got.Status.Artifact.Revision {
		t.Errorf("revision moved to %q though the repository did not change", updated.Status.Artifact.Revision)
	}

	missing := newGitRepository(t, ns, "missing-include", app.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Include = []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "absent"}}}
	})
	failed := waitNotReady(t, missing)
	c := apimeta.FindStatusCondition(failed.Status.Conditions, sourcev1.IncludeUnavailableCondition)
	if c == nil || c.Reason != sourcev1.NotFoundReason || c.Message != `could not get resource for include 'absent': GitRepository.source.toolkit.fluxcd.io "absent" not found` {
		t.Errorf("IncludeUnavailable %+v, want NotFound naming 'absent'", c)
	}
}
