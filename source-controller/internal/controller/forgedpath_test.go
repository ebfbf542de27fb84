package controller

import (
	"os"
	"path/filepath"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A status artifact whose path names another object's file (or one outside
// the storage) is dropped without being read, verified or removed.
func TestForgedArtifactPathIsNeverTouched(t *testing.T) {
	root := t.TempDir()
	st, err := artifact.NewStorage(filepath.Join(root, "data"), "127.0.0.1:1", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(st.BasePath, "helmchart", "team-b", "chart", "latest.tar.gz")
	outside := filepath.Join(root, "outside.txt")
	for _, f := range []string{victim, outside} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("not yours"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"}}
	for _, p := range []string{"helmchart/team-b/chart/latest.tar.gz", "gitrepository/team-a/app/../../../outside.txt"} {
		// A digest that cannot match would delete the file if it were looked at.
		got := checkStoredArtifact(st, nil, obj, sourcev1.GitRepositoryKind, &meta.Artifact{Path: p, Digest: "sha256:00"})
		if got != nil {
			t.Errorf("%s: kept as the object's artifact", p)
		}
	}
	for _, f := range []string{victim, outside} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	var s *Signer
	if err := s.verify(t.Context(), sourcev1.GitRepositoryKind, obj, &meta.Artifact{Path: "helmchart/team-b/chart/latest.tar.gz"}); err == nil {
		t.Error("an artifact stored in another object's directory verified")
	}
}
