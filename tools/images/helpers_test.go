package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// kustomize-controller's image holds its SOPS helper beside it, where the
// controller looks (its executable's directory): /eddy-sops.
func TestImageHelpers(t *testing.T) {
	dir := t.TempDir()
	writeStandIn(t, dir, "amd64") // named after component
	main := filepath.Join(dir, "kustomize-controller")
	if err := os.Rename(filepath.Join(dir, component), main); err != nil {
		t.Fatal(err)
	}
	writeStandIn(t, dir, "amd64")
	helper := filepath.Join(dir, "eddy-sops")
	if err := os.Rename(filepath.Join(dir, component), helper); err != nil {
		t.Fatal(err)
	}
	if got := Helpers["kustomize-controller"]; !slices.Equal(got, []string{"eddy-sops"}) {
		t.Fatalf("Helpers = %v", got)
	}
	_, ca := writeCABundle(t, dir)
	meta := Meta{Created: time.Unix(1700000000, 0), CABundle: ca}
	b := Binary{OS: "linux", Arch: "amd64", Path: main, Helpers: []string{helper}}
	idx, err := Index("kustomize-controller", []Binary{b}, meta)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Mode != 0o755 {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
		names = append(names, h.Name)
	}
	if !slices.Equal(names, []string{"eddy-sops", "kustomize-controller"}) {
		t.Fatalf("binary layer holds %v", names)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.History[len(cf.History)-1].CreatedBy; got != "eddy images: /kustomize-controller /eddy-sops" {
		t.Errorf("history: %q", got)
	}

	// A helper that is not a static binary of the platform is refused.
	b.Helpers = []string{filepath.Join(dir, "missing")}
	if _, err := Index("kustomize-controller", []Binary{b}, meta); err == nil {
		t.Fatal("a missing helper was accepted")
	}
}
