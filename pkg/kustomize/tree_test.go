package kustomize

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
)

// Concurrent builds of one shared Tree each see only their own generated
// kustomization.yaml, and the Tree itself never changes.
func TestConcurrentBuildsShareATree(t *testing.T) {
	tree, err := ReadTree(bytes.NewReader(artifacttest.Files(t, map[string]string{
		"apps/a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"apps/b/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
	})), artifact.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := []string{"apps/a", "apps/b"}[i%2]
			res, err := Build(tree, Options{Path: dir, NamePrefix: "p-"})
			if err != nil {
				errs <- err
				return
			}
			if len(res.Objects) != 1 || res.Objects[0].GetName() != "p-"+filepath.Base(dir) {
				errs <- errors.New(dir + ": built " + res.Objects[0].GetName())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, ok := tree.files["/apps/a/kustomization.yaml"]; ok {
		t.Error("a build wrote its generated kustomization.yaml into the shared tree")
	}
	if got := tree.dirs["/apps"]; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("tree /apps = %v", got)
	}
}

// The in-memory filesystem answers as the disk one does for what kustomize
// asks: Walk in lexical order, Glob, CleanedAbs, and writes kept in the layer.
func TestLayerFSMatchesDisk(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b/z.yaml", "b/a.yml", "a.yaml", "c/d/e.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := ReadDirTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs := newLayerFS(tree)
	var walked, onDisk []string
	if err := fs.Walk("/", func(p string, _ os.FileInfo, err error) error {
		walked = append(walked, p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		rel, _ := filepath.Rel(dir, p)
		onDisk = append(onDisk, filepath.Join("/", rel))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(walked, onDisk) {
		t.Errorf("Walk = %v, disk = %v", walked, onDisk)
	}
	if got, _ := fs.Glob("/b/*.y*ml"); !reflect.DeepEqual(got, []string{"/b/a.yml", "/b/z.yaml"}) {
		t.Errorf("Glob = %v", got)
	}
	if d, f, err := fs.CleanedAbs("b/../b/z.yaml"); err != nil || d != "/b" || f != "z.yaml" {
		t.Errorf("CleanedAbs = %q %q %v", d, f, err)
	}
	if err := fs.WriteFile("/c/d/kustomization.yaml", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if names, _ := fs.ReadDir("/c/d"); !reflect.DeepEqual(names, []string{"e.txt", "kustomization.yaml"}) {
		t.Errorf("ReadDir after write = %v", names)
	}
	if err := fs.WriteFile("/missing/k.yaml", nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("write into a missing directory: %v", err)
	}
	if newLayerFS(tree).Exists("/c/d/kustomization.yaml") {
		t.Error("a write reached the shared tree")
	}
}
