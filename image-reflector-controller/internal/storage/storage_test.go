package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestTagsSurviveARestartWithFluxRevision(t *testing.T) {
	root := t.TempDir()
	s, err := New(root, 64)
	if err != nil {
		t.Fatal(err)
	}
	tags := []string{"1.0.0", "1.1.0", "latest"}
	rev, err := s.Set("apps", "podinfo", tags)
	// sha256 of "1.0.0\n1.1.0\nlatest\n"
	if err != nil || rev != "sha256:ebabd90d0647f9a293745e6c4fb99ef9860370ba7ceebcd79efa80a8bffa862c" {
		t.Fatalf("rev %q, %v", rev, err)
	}
	if _, err := os.Stat(filepath.Join(root, "imagerepository/apps/podinfo/tags.txt")); err != nil {
		t.Error(err)
	}
	again, _ := New(root, 64)
	got, gotRev, err := again.Tags("apps", "podinfo")
	if err != nil || gotRev != rev || !slices.Equal(got, tags) {
		t.Errorf("after restart %v %q %v", got, gotRev, err)
	}
	if got, rev, err := again.Tags("apps", "none"); got != nil || rev != "" || err != nil {
		t.Errorf("missing: %v %q %v", got, rev, err)
	}
}

func TestLargeTagListsAreGzippedAndReadBack(t *testing.T) {
	root := t.TempDir()
	s, _ := New(root, 16)
	tags := []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0"}
	rev, _ := s.Set("apps", "big", tags)
	if _, err := os.Stat(filepath.Join(root, "imagerepository/apps/big/tags.txt.gz")); err != nil {
		t.Fatal(err)
	}
	got, gotRev, err := (func() ([]string, string, error) { s2, _ := New(root, 16); return s2.Tags("apps", "big") })()
	if err != nil || gotRev != rev || !slices.Equal(got, tags) {
		t.Errorf("%v %q %v", got, gotRev, err)
	}
	if err := s.Delete("apps", "big"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Tags("apps", "big"); got != nil {
		t.Errorf("after delete %v", got)
	}
}
