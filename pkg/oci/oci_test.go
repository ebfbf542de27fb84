package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// podinfoKustomize is podinfo's kustomize/ directory, a realistic artifact.
func podinfoKustomize(t *testing.T) string {
	t.Helper()
	return filepath.Join(testenv.TestdataDir(t), "repos", "podinfo", "kustomize")
}

// tarEntries lists the tar.gz file's entries as "name mode" lines.
func tarEntries(t *testing.T, data []byte) []string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.ModTime.Unix() != 0 {
			t.Errorf("entry %s: owner %d/%d %q/%q, time %v: not sanitised", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
		out = append(out, h.Name+" "+h.FileInfo().Mode().String())
	}
}

// tree writes files (path → content; a path ending in / is a directory) under a new directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBuild: the tar.gz of a directory is reproducible (same bytes twice), lists the root as
// "." and every file with its mode, leaves out what --ignore-paths names (a directory's contents
// matched one by one), symbolic links and the output file itself; a single file is archived
// alone in a 0700 directory; a missing path is an error naming it.
func TestBuild(t *testing.T) {
	src := tree(t, map[string]string{
		"deploy/app.yaml": "kind: Deployment\n", "deploy/logo.png": "png", ".git/config": "[core]",
		"skip/a.yaml": "a", "skip/keep.yaml": "k", "run.sh": "#!/bin/sh\n",
	})
	if err := os.Chmod(filepath.Join(src, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "deploy", "link")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(src, "artifact.tgz") // inside the tree: must not archive itself
	ignore := append(append([]string{}, DefaultIgnorePaths...), "skip/", "!skip/keep.yaml")
	if err := Build(out, src, ignore); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(out); info.Mode().Perm() != 0o640 {
		t.Errorf("artifact mode %v, want 0640", info.Mode().Perm())
	}
	got := tarEntries(t, first)
	want := []string{". drwxr-xr-x", "deploy drwxr-xr-x", "deploy/app.yaml -rw-r--r--", "run.sh -rwxr-xr-x", "skip/keep.yaml -rw-r--r--"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	if err := Build(out, src, ignore); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(out); !bytes.Equal(first, second) {
		t.Error("two builds of the same tree differ")
	}

	single := filepath.Join(t.TempDir(), "one.tgz")
	if err := Build(single, filepath.Join(src, "deploy", "app.yaml"), nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(single)
	if got := tarEntries(t, data); strings.Join(got, ",") != ". drwx------,app.yaml -rw-r--r--" {
		t.Errorf("single file entries %v", got)
	}

	err = Build(filepath.Join(t.TempDir(), "x.tgz"), "does/not/exist", nil)
	if err == nil || err.Error() != "source path does not exist: does/not/exist" {
		t.Errorf("missing path: %v", err)
	}
}

// pushed returns the manifest of ref.
func pushed(t *testing.T, ref string, opts ...crane.Option) *v1.Manifest {
	t.Helper()
	img, err := crane.Pull(ref, opts...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPush: podinfo's kustomize/ pushed to an in-process registry is an OCI manifest with
// Flux's config and content media types, one layer whose bytes are Build's, and the
// source/revision/created annotations plus the extra ones; --reproducible's creation time
// makes the digest depend on the content alone; the returned digest URL is the manifest's.
func TestPush(t *testing.T) {
	reg := testenv.NewRegistry(t)
	c, err := NewClient(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	meta := Metadata{Source: "https://github.com/stefanprodan/podinfo", Revision: "6.9.2@sha1:0123456789abcdef0123456789abcdef01234567",
		Created: ReproducibleCreated, Annotations: map[string]string{"org.opencontainers.image.description": "podinfo"}}
	ref := reg.Host() + "/manifests/podinfo:6.9.2"
	digestURL, err := c.Push(ctx, ref, podinfoKustomize(t), PushOptions{Metadata: meta, IgnorePaths: DefaultIgnorePaths})
	if err != nil {
		t.Fatal(err)
	}
	digest, err := crane.Digest(ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := reg.Host() + "/manifests/podinfo@" + digest; digestURL != want {
		t.Errorf("digest URL %s, want %s", digestURL, want)
	}
	m := pushed(t, ref)
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Config.MediaType != ConfigMediaType {
		t.Errorf("manifest media type %s, config %s", m.MediaType, m.Config.MediaType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != ContentMediaType {
		t.Fatalf("layers %+v, want one of %s", m.Layers, ContentMediaType)
	}
	var keys []string
	for k := range m.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, " ") != "org.opencontainers.image.created org.opencontainers.image.description org.opencontainers.image.revision org.opencontainers.image.source" {
		t.Errorf("annotation keys %v", keys)
	}
	if m.Annotations[CreatedAnnotation] != "1970-01-01T00:00:00Z" || m.Annotations[SourceAnnotation] != meta.Source || m.Annotations[RevisionAnnotation] != meta.Revision {
		t.Errorf("annotations %v", m.Annotations)
	}
	built := filepath.Join(t.TempDir(), "a.tgz")
	if err := Build(built, podinfoKustomize(t), DefaultIgnorePaths); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(built)
	h, _, _ := v1.SHA256(bytes.NewReader(data))
	if m.Layers[0].Digest != h || m.Layers[0].Size != int64(len(data)) {
		t.Errorf("layer %s (%d bytes), Build's tar.gz %s (%d bytes)", m.Layers[0].Digest, m.Layers[0].Size, h, len(data))
	}

	again, err := c.Push(ctx, reg.Host()+"/manifests/podinfo:again", podinfoKustomize(t), PushOptions{Metadata: meta, IgnorePaths: DefaultIgnorePaths})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimPrefix(again, reg.Host()+"/manifests/podinfo") != strings.TrimPrefix(digestURL, reg.Host()+"/manifests/podinfo") {
		t.Errorf("reproducible pushes differ: %s and %s", digestURL, again)
	}
	now, err := c.Push(ctx, reg.Host()+"/manifests/podinfo:now", podinfoKustomize(t), PushOptions{Metadata: Metadata{Source: "s", Revision: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	if m := pushed(t, now); m.Annotations[CreatedAnnotation] == "" || m.Annotations[CreatedAnnotation] == ReproducibleCreated {
		t.Errorf("created %q, want the time of the push", m.Annotations[CreatedAnnotation])
	}
}

// TestCreds: --creds is user:password or a registry token alone; ":" is refused.
func TestCreds(t *testing.T) {
	for creds, want := range map[string]authn.AuthConfig{
		"flux:pass:with:colons": {Username: "flux", Password: "pass:with:colons"},
		"a-token":               {RegistryToken: "a-token"},
	} {
		auth, err := authFromCreds(creds)
		if err != nil {
			t.Fatal(err)
		}
		got, err := auth.Authorization()
		if err != nil || *got != want {
			t.Errorf("%s: %+v, %v; want %+v", creds, got, err, want)
		}
	}
	if _, err := NewClient(Options{Creds: ":"}); err == nil || err.Error() != "credentials cannot be empty" {
		t.Errorf(`creds ":": %v`, err)
	}
}

// TestResolveSymlinks: with ResolveSymlinks, a link to a file outside the tree and a link to a
// directory are archived as what they point to, and a link cycle ends; without it Build leaves
// the links out.
func TestResolveSymlinks(t *testing.T) {
	outside := tree(t, map[string]string{"base/deploy.yaml": "kind: Deployment\n"})
	src := tree(t, map[string]string{"app/kustomization.yaml": "resources: [deploy.yaml]\n"})
	for link, target := range map[string]string{
		"app/deploy.yaml": filepath.Join(outside, "base", "deploy.yaml"),
		"base":            filepath.Join(outside, "base"),
		"app/loop":        "..",
	} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "a.tgz")
	if err := Build(out, src, nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	if got := strings.Join(tarEntries(t, data), ","); got != ". drwx------,app drwxr-xr-x,app/kustomization.yaml -rw-r--r--" &&
		got != ". drwxr-xr-x,app drwxr-xr-x,app/kustomization.yaml -rw-r--r--" {
		t.Errorf("without resolving: %s", got)
	}
	resolved, cleanup, err := ResolveSymlinks(src)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	got := testenv.ReadFiles(t, resolved)
	want := map[string]string{"app/kustomization.yaml": "resources: [deploy.yaml]\n", "app/deploy.yaml": "kind: Deployment\n", "base/deploy.yaml": "kind: Deployment\n"}
	if len(got) != len(want) {
		t.Errorf("resolved files %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("resolved %s = %q, want %q", k, got[k], v)
		}
	}
}
