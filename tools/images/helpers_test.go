package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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
	names := binaryLayer(t, img)
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

// `images build kustomize-controller` (make images' command) puts eddy-sops,
// found beside the controller in bin/<os>_<arch>/, in the image of every
// platform, and refuses to build when a platform's helper is missing.
func TestImageHelpersEachPlatform(t *testing.T) {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	for _, arch := range []string{"amd64", "arm64"} {
		dir := filepath.Join(bin, "linux_"+arch)
		for _, name := range []string{"kustomize-controller", "eddy-sops"} {
			writeStandIn(t, dir, arch)
			if err := os.Rename(filepath.Join(dir, component), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	ca, _ := writeCABundle(t, tmp)
	out := filepath.Join(tmp, "images")
	args := []string{"build", "-bin", bin, "-out", out, "-registry", "r.example", "-version", "v1",
		"-created", "1700000000", "-ca-bundle", ca, "-platforms", "linux/amd64,linux/arm64", "kustomize-controller"}
	if err := build(args[1:], io.Discard); err != nil {
		t.Fatal(err)
	}
	comps, err := ReadLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	im, err := comps[0].Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
		img, err := comps[0].Index.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		names := binaryLayer(t, img)
		if !slices.Equal(names, []string{"eddy-sops", "kustomize-controller"}) {
			t.Errorf("%s: binary layer holds %v", d.Platform, names)
		}
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v", platforms)
	}

	if err := os.Remove(filepath.Join(bin, "linux_arm64", "eddy-sops")); err != nil {
		t.Fatal(err)
	}
	if err := build(args[1:], io.Discard); err == nil || !strings.Contains(err.Error(), "kustomize-controller for linux/arm64") {
		t.Errorf("arm64 helper missing: err = %v", err)
	}
}

// binaryLayer lists the files of img's last layer (the binaries), each
// checked to be executable (0755).
func binaryLayer(t *testing.T, img v1.Image) []string {
	t.Helper()
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
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Mode != 0o755 {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
		names = append(names, h.Name)
	}
}
