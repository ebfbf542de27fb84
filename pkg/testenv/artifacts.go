package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ReadFiles returns the regular files under dir, slash-separated path
// relative to dir → content; directories and links are left out.
func ReadFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// PushLayer pushes to ref (repository:tag on this registry, without host)
// an OCI image manifest with a config blob of configType and one layer,
// layer, of layerType: an artifact as any tool could push it. It returns
// the full reference, HOST/ref.
func (r *Registry) PushLayer(t testing.TB, ref string, configType, layerType types.MediaType, layer []byte) string {
	t.Helper()
	full := r.Host() + "/" + ref
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), configType)
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(layer, layerType)})
	if err != nil {
		t.Fatal(err)
	}
	opts := []crane.Option{crane.WithAuth(authn.Anonymous)}
	if r.user != "" || r.password != "" {
		opts = []crane.Option{crane.WithAuth(&authn.Basic{Username: r.user, Password: r.password})}
	}
	if err := crane.Push(img, full, opts...); err != nil {
		t.Fatalf("testenv: pushing %s: %v", full, err)
	}
	return full
}
