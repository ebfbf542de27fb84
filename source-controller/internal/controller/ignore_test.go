package controller

import (
	"reflect"
	"testing"
)

// TestSourceIgnore checks, through a real reconcile, .sourceignore files at
// the root and in a subdirectory, and that Flux's default exclusions apply
// only while the repository has no ignore pattern of its own.
func TestSourceIgnore(t *testing.T) {
	ns := newNamespace(t)
	files := map[string]string{
		"deploy/app.yaml": "a", "deploy/logo.png": "png", ".github/workflows/ci.yaml": "ci",
		"docs/guide.md": "g", "docs/notes.txt": "n", "tmp/scratch.yaml": "s",
	}
	r := newRepo(t, files)
	obj := waitReady(t, newGitRepository(t, ns, "ignore", r.URL(), nil))
	if got, want := keys(untar(t, download(t, obj.Status.Artifact))), []string{"deploy/app.yaml", "docs/guide.md", "docs/notes.txt", "tmp/scratch.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("without user patterns (Flux defaults)\n got %v\nwant %v", got, want)
	}

	r.MustCommit(t, map[string]string{".sourceignore": "/tmp/\n", "docs/.sourceignore": "*.txt\n"}, "add ignore files")
	obj = requestReconcile(t, obj)
	want := []string{".github/workflows/ci.yaml", ".sourceignore", "deploy/app.yaml", "deploy/logo.png", "docs/.sourceignore", "docs/guide.md"}
	if got := keys(untar(t, download(t, obj.Status.Artifact))); !reflect.DeepEqual(got, want) {
		t.Errorf("with .sourceignore at the root and in docs/ (defaults dropped)\n got %v\nwant %v", got, want)
	}
}
