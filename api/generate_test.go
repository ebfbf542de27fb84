package api_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesUpToDate runs controller-gen on a copy of this module and
// fails when the committed CRDs (config/crd/bases) or deepcopy functions
// differ from what a fresh `make generate` would write.
func TestGeneratedFilesUpToDate(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(root, "bin", "controller-gen")
	if _, err := os.Stat(gen); err != nil {
		if out, err := exec.Command("make", "-C", root, "bin/controller-gen").CombinedOutput(); err != nil {
			t.Fatalf("building controller-gen: %v\n%s", err, out)
		}
	}

	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "api"), os.DirFS(filepath.Join(root, "api"))); err != nil {
		t.Fatal(err)
	}
	crdDir := filepath.Join(work, "crd")
	run := func(args ...string) {
		cmd := exec.Command(gen, args...)
		cmd.Dir = filepath.Join(work, "api")
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("controller-gen %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("object", "paths=./...")
	run("crd", "paths=./...", "output:crd:artifacts:config="+crdDir)

	compareDirs(t, crdDir, filepath.Join(root, "config", "crd", "bases"), "*.yaml")
	for _, pkg := range []string{"source/v1", "kustomize/v1", "helm/v2", "notification/v1", "notification/v1beta3", "image/v1", "sourceextensions/v1beta1"} {
		compareDirs(t, filepath.Join(work, "api", pkg), filepath.Join(root, "api", pkg), "zz_generated.*.go")
	}
}

func compareDirs(t *testing.T, fresh, committed, pattern string) {
	t.Helper()
	want, _ := filepath.Glob(filepath.Join(fresh, pattern))
	got, _ := filepath.Glob(filepath.Join(committed, pattern))
	if len(want) == 0 {
		t.Fatalf("controller-gen wrote no %s into %s", pattern, fresh)
	}
	if len(want) != len(got) {
		t.Errorf("%s: %d committed files, a fresh `make generate` writes %d: run `make generate`", committed, len(got), len(want))
	}
	for _, f := range want {
		name := filepath.Base(f)
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s is stale (differs from a fresh controller-gen run): run `make generate`", filepath.Join(committed, name))
		}
	}
}
