package localcluster_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const refName = "org.opencontainers.image.ref.name"

// writeLayout writes an OCI image layout as make images and make
// node-images do: an image index named ghcr.io/eddyops/app:v1, and a
// single image named ghcr.io/eddyops/pause:3.10.2.
func writeLayout(t *testing.T, dir string) (idx v1.ImageIndex, img v1.Image) {
	t.Helper()
	idx, err := random.Index(512, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	img, err = random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refName: "ghcr.io/eddyops/app:v1"})); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refName: "ghcr.io/eddyops/pause:3.10.2"})); err != nil {
		t.Fatal(err)
	}
	return idx, img
}

func TestRegistryServesAPushedLayout(t *testing.T) {
	dir := t.TempDir()
	idx, img := writeLayout(t, filepath.Join(dir, "layout"))
	for _, disk := range []bool{false, true} {
		opts := localcluster.RegistryOptions{}
		if disk {
			opts.Dir = filepath.Join(dir, "blobs")
		}
		r, err := localcluster.StartRegistry(opts)
		if err != nil {
			t.Fatal(err)
		}
		if host, _, _ := net.SplitHostPort(r.Host()); host != "127.0.0.1" {
			t.Errorf("Host() = %s, want a loopback address", r.Host())
		}
		ctx := context.Background()
		pushed, err := r.PushLayout(ctx, filepath.Join(dir, "layout"))
		if err != nil {
			t.Fatal(err)
		}
		idxDigest, _ := idx.Digest()
		imgDigest, _ := img.Digest()
		want := []localcluster.PushedImage{
			{Source: "ghcr.io/eddyops/app:v1", Name: "app", Tag: "v1", Digest: idxDigest, Ref: r.Host() + "/app@" + idxDigest.String()},
			{Source: "ghcr.io/eddyops/pause:3.10.2", Name: "pause", Tag: "3.10.2", Digest: imgDigest, Ref: r.Host() + "/pause@" + imgDigest.String()},
		}
		if len(pushed) != len(want) {
			t.Fatalf("pushed %+v, want %+v", pushed, want)
		}
		for i, p := range pushed {
			if p != want[i] {
				t.Errorf("pushed %+v, want %+v", p, want[i])
			}
			// Pulled back by digest and by tag, as containerd pulls: the same digest.
			for _, ref := range []string{p.Ref, p.TagRef()} {
				r, err := name.ParseReference(ref)
				if err != nil {
					t.Fatal(err)
				}
				desc, err := remote.Get(r, remote.WithContext(ctx))
				if err != nil {
					t.Fatalf("pull %s: %v", ref, err)
				}
				if desc.Digest != p.Digest {
					t.Errorf("pulled %s: digest %s, pushed %s", ref, desc.Digest, p.Digest)
				}
			}
		}
		// Every blob of the index came back.
		ref, _ := name.NewDigest(pushed[0].Ref)
		got, err := remote.Index(ref)
		if err != nil {
			t.Fatal(err)
		}
		im, err := got.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range im.Manifests {
			pi, err := got.Image(m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			layers, err := pi.Layers()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range layers {
				rc, err := l.Compressed()
				if err != nil {
					t.Fatalf("layer of %s: %v", m.Digest, err)
				}
				rc.Close()
			}
		}
		if disk {
			if entries, _ := os.ReadDir(opts.Dir); len(entries) == 0 {
				t.Errorf("no blob written under %s", opts.Dir)
			}
		}
		r.Stop()
		r.Stop()
		if c, err := net.DialTimeout("tcp", r.Host(), time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Stop", r.Host())
		}
	}
}

func TestRegistryPushRefusesAnUnnamedImage(t *testing.T) {
	dir := t.TempDir()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	r, err := localcluster.StartRegistry(localcluster.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if _, err := r.PushLayout(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "is not named <repository>:<tag>") {
		t.Errorf("unnamed image: %v", err)
	}
	if _, err := r.PushLayout(context.Background(), filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "no OCI image layout") {
		t.Errorf("no layout: %v", err)
	}
}

// The layouts make images and make node-images wrote, when they are there:
// every image pushed and pulled back by digest.
func TestRegistryServesBuiltLayouts(t *testing.T) {
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		t.Skip(err)
	}
	r, err := localcluster.StartRegistry(localcluster.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	found := 0
	for _, l := range []string{"images", "node-images"} {
		dir := filepath.Join(root, "bin", l)
		if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
			continue
		}
		found++
		pushed, err := r.PushLayout(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pushed {
			ref, err := name.NewDigest(p.Ref)
			if err != nil {
				t.Fatal(err)
			}
			desc, err := remote.Get(ref)
			if err != nil || desc.Digest != p.Digest {
				t.Errorf("pull %s: %v, digest %v", p.Ref, err, desc)
			}
			t.Logf("bin/%s: %s (%s)", l, p.Ref, p.TagRef())
		}
	}
	if found == 0 {
		t.Skip("no bin/images or bin/node-images: run make images or make node-images")
	}
}
