package localcluster_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ociArchive writes a tar of an OCI image layout holding one linux/amd64
// image named name, whose single layer holds the file bin at /<base of
// bin> and whose entrypoint is that file with args, as `ctr images import`
// reads it. It returns the tar's path.
func ociArchive(t *testing.T, name, bin string, args ...string) string {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	base := filepath.Base(bin)
	if err := tw.WriteHeader(&tar.Header{Name: base, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(layer.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	blobs := map[string][]byte{}
	add := func(b []byte) (string, int) {
		d := fmt.Sprintf("sha256:%x", sha256.Sum256(b))
		blobs[d] = b
		return d, len(b)
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	layerDigest, layerSize := add(gz.Bytes())
	config := mustJSON(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": append([]string{"/" + base}, args...), "User": "65534:65534"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{fmt.Sprintf("sha256:%x", sha256.Sum256(layer.Bytes()))}},
	})
	configDigest, configSize := add(config)
	manifest := mustJSON(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": configDigest, "size": configSize},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layerDigest, "size": layerSize}},
	})
	manifestDigest, manifestSize := add(manifest)
	index := mustJSON(map[string]any{"schemaVersion": 2, "manifests": []any{map[string]any{
		"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifestDigest, "size": manifestSize,
		"annotations": map[string]string{"io.containerd.image.name": name},
	}}})

	path := filepath.Join(t.TempDir(), strings.NewReplacer("/", "_", ":", "_").Replace(name)+".tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := tar.NewWriter(f)
	put := func(name string, b []byte) {
		if err := out.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := out.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	put("index.json", index)
	for d, b := range blobs {
		put("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), b)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// pauseBinary compiles Kubernetes' pause.c (from the Go module cache, where
// `make tools` put k8s.io/kubernetes) with gcc -static.
func pauseBinary(t *testing.T) string {
	t.Helper()
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(strings.TrimSpace(string(modcache)), "k8s.io", "kubernetes@v1.37.2", "build", "pause", "linux", "pause.c")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no pause.c in the Go module cache (run `make tools`): %v", err)
	}
	out := filepath.Join(t.TempDir(), "pause")
	if b, err := exec.Command("gcc", "-Os", "-static", "-DVERSION=eddy-test", "-o", out, src).CombinedOutput(); err != nil {
		t.Skipf("gcc -static pause.c: %v: %s", err, b)
	}
	return out
}

// echoBinary builds testdata/echo, static.
func echoBinary(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "echo")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/echo")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/echo: %v: %s", err, b)
	}
	return out
}
