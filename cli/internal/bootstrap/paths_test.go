package bootstrap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// A --path that is a file (or a symlink go-git checked out as one) in the
// repository: the errors name the repository path, not the temporary
// clone's directory.
func TestCheckoutErrorsNameNoTempPath(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "clusters"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clusters", "x"), []byte("a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "clusters", "d", "gotk-sync.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	co := &Checkout{Dir: dir, repo: repo}
	_, err = co.Commit(map[string]string{"clusters/x/flux-system/gotk-components.yaml": "x: 1\n"}, "m", object.Signature{Name: "Eddy"})
	if err == nil || strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "clusters/x") {
		t.Errorf("Commit below a file: error %v, want one naming clusters/x and not %s", err, dir)
	}
	_, err = co.ReadFile("clusters/d/gotk-sync.yaml")
	if err == nil || strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "clusters/d/gotk-sync.yaml") {
		t.Errorf("ReadFile of a directory: error %v, want one naming clusters/d/gotk-sync.yaml and not %s", err, dir)
	}
}
