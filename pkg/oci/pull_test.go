package oci

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/google/go-containerregistry/pkg/authn"
)

func sameFiles(t *testing.T, got, want map[string]string) {
	t.Helper()
	var g, w []string
	for k := range got {
		g = append(g, k)
	}
	for k := range want {
		w = append(w, k)
	}
	sort.Strings(g)
	sort.Strings(w)
	if strings.Join(g, " ") != strings.Join(w, " ") {
		t.Fatalf("files %v, want %v", g, w)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s differs", k)
		}
	}
}

// TestPushPullListTagDiff: podinfo's kustomize/ pushed, then pulled into a directory holding
// the same files; tagged (the tag lists with the same digest); listed with the semver and regex
// filters (cosign tags left out); diffed against the same directory (nil) and a changed copy
// (ErrDiffers).
func TestPushPullListTagDiff(t *testing.T) {
	reg := testenv.NewRegistry(t)
	c, _ := NewClient(Options{})
	ctx := context.Background()
	src := podinfoKustomize(t)
	repo := reg.Host() + "/manifests/podinfo"
	meta := Metadata{Source: "https://github.com/stefanprodan/podinfo", Revision: "6.9.2@sha1:0123456789abcdef0123456789abcdef01234567"}
	digestURL, err := c.Push(ctx, repo+":6.9.2", src, PushOptions{Metadata: meta, IgnorePaths: DefaultIgnorePaths})
	if err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	got, err := c.Pull(ctx, repo+":6.9.2", out, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, testenv.ReadFiles(t, out), testenv.ReadFiles(t, src))
	if got.Digest != digestURL || got.Source != meta.Source || got.Revision != meta.Revision || got.URL != repo+":6.9.2" || got.Created == "" {
		t.Errorf("pull metadata %+v", got)
	}

	tagged, err := c.Tag(ctx, repo+":6.9.2", "latest")
	if err != nil || tagged != repo+":latest" {
		t.Fatalf("Tag: %q, %v", tagged, err)
	}
	for _, tag := range []string{"6.10.0", "v7.0.0-rc.1", "sha256-abc.sig", "main-abc"} {
		if _, err := c.Push(ctx, repo+":"+tag, src, PushOptions{Metadata: meta}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(o ListOptions) string {
		t.Helper()
		metas, err := c.List(ctx, repo, o)
		if err != nil {
			t.Fatal(err)
		}
		var urls []string
		for _, m := range metas {
			if m.Source != meta.Source || !strings.HasPrefix(m.Digest, "sha256:") {
				t.Errorf("list entry %+v", m)
			}
			urls = append(urls, strings.TrimPrefix(m.URL, repo+":"))
		}
		return strings.Join(urls, " ")
	}
	if got := list(ListOptions{}); got != "v7.0.0-rc.1 main-abc latest 6.9.2 6.10.0" {
		t.Errorf("all tags: %s", got)
	}
	if got := list(ListOptions{SemverFilter: ">=6.9.0"}); got != "6.9.2 6.10.0" {
		t.Errorf("semver >=6.9.0: %s", got)
	}
	if got := list(ListOptions{RegexFilter: "^main-"}); got != "main-abc" {
		t.Errorf("regex ^main-: %s", got)
	}
	metas, _ := c.List(ctx, repo, ListOptions{RegexFilter: "^(latest|6.9.2)$"})
	if len(metas) != 2 || metas[0].Digest != metas[1].Digest || !strings.HasSuffix(digestURL, metas[0].Digest) {
		t.Errorf("latest and 6.9.2 should share the digest of the push: %+v", metas)
	}
	if _, err := c.List(ctx, repo, ListOptions{SemverFilter: "not a range"}); err == nil || !strings.Contains(err.Error(), "semver 'not a range' parse error") {
		t.Errorf("bad semver range: %v", err)
	}

	if err := c.Diff(ctx, repo+":6.9.2", src, DefaultIgnorePaths); err != nil {
		t.Errorf("diff against the pushed directory: %v", err)
	}
	changed := t.TempDir()
	if err := os.CopyFS(changed, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(changed, "hpa.yaml"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Diff(ctx, repo+":6.9.2", changed, DefaultIgnorePaths); !errors.Is(err, ErrDiffers) {
		t.Errorf("diff against a changed copy: %v, want %v", err, ErrDiffers)
	}
}

// TestPullBadInput: a missing tag, an artifact without Flux's content layer, and layers with a
// `../` entry, an absolute name, a symbolic link out and a hard link each fail the pull with a
// message naming the reference, leaving the output directory as it was.
func TestPullBadInput(t *testing.T) {
	reg := testenv.NewRegistry(t)
	c, _ := NewClient(Options{})
	ctx := context.Background()
	repo := reg.Host() + "/bad"

	out := t.TempDir()
	_, err := c.Pull(ctx, repo+":missing", out, PullOptions{})
	if err == nil || !strings.Contains(err.Error(), "artifact "+repo+":missing not found") {
		t.Errorf("missing tag: %v", err)
	}

	reg.PushLayer(t, "bad:helm", "application/vnd.cncf.helm.config.v1+json", "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
		artifacttest.TarGz(t, artifacttest.Entry{Name: "Chart.yaml", Content: "name: x"}))
	if _, err := c.Pull(ctx, repo+":helm", out, PullOptions{}); !errors.Is(err, ErrNoContentLayer) || !strings.Contains(err.Error(), repo+":helm") {
		t.Errorf("no content layer: %v", err)
	}

	ok := artifacttest.Entry{Name: "ok.yaml", Content: "ok"}
	for tag, bad := range map[string]artifacttest.Entry{
		"dotdot":   {Name: "../escape.yaml", Content: "x"},
		"absolute": {Name: "/etc/escape.yaml", Content: "x"},
		"symlink":  {Name: "passwd", Type: tar.TypeSymlink, Link: "/etc/passwd"},
		"hardlink": {Name: "up", Type: tar.TypeLink, Link: "../../x"},
	} {
		reg.PushLayer(t, "bad:"+tag, ConfigMediaType, ContentMediaType, artifacttest.TarGz(t, ok, bad))
		_, err := c.Pull(ctx, repo+":"+tag, out, PullOptions{})
		if !errors.Is(err, artifact.ErrUnsafeArchive) || !strings.Contains(err.Error(), repo+":"+tag) {
			t.Errorf("%s: %v, want an unsafe-archive error naming the reference", tag, err)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("refused pulls wrote %d entries into the output directory", len(entries))
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "escape.yaml")); err == nil {
		t.Error("a ../ entry was written outside the output directory")
	}
}

// TestAuth: against a registry with basic auth, no credentials is a 401 error naming the
// reference; --creds user:pass and the Docker config keychain (DOCKER_CONFIG) both push and pull;
// no error text holds the password.
func TestAuth(t *testing.T) {
	reg := testenv.NewRegistry(t, testenv.WithBasicAuth("flux", "s3cr3t-pass"))
	ctx := context.Background()
	src := podinfoKustomize(t)
	ref := reg.Host() + "/private/app:v1"
	meta := PushOptions{Metadata: Metadata{Source: "s", Revision: "r"}}

	anon, _ := NewClient(Options{Keychain: authn.NewMultiKeychain()})
	if _, err := anon.Push(ctx, ref, src, meta); err == nil || !strings.Contains(err.Error(), "unauthorized to access "+ref) {
		t.Errorf("push without credentials: %v", err)
	}
	_, err := anon.Pull(ctx, ref, t.TempDir(), PullOptions{})
	if err == nil || !strings.Contains(err.Error(), "unauthorized to access "+ref) {
		t.Errorf("pull without credentials: %v", err)
	}

	wrong, _ := NewClient(Options{Creds: "flux:wrong-pass"})
	if _, err := wrong.Pull(ctx, ref, t.TempDir(), PullOptions{}); err == nil || strings.Contains(err.Error(), "wrong-pass") {
		t.Errorf("pull with a wrong password: %v (must fail without showing it)", err)
	}

	withCreds, _ := NewClient(Options{Creds: "flux:s3cr3t-pass"})
	if _, err := withCreds.Push(ctx, ref, src, meta); err != nil {
		t.Fatal(err)
	}
	if _, err := withCreds.Pull(ctx, ref, t.TempDir(), PullOptions{}); err != nil {
		t.Fatal(err)
	}

	cfgDir := t.TempDir()
	cfg := `{"auths":{"` + reg.Host() + `":{"auth":"Zmx1eDpzM2NyM3QtcGFzcw=="}}}` // flux:s3cr3t-pass
	if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfgDir)
	fromConfig, _ := NewClient(Options{})
	if _, err := fromConfig.List(ctx, reg.Host()+"/private/app", ListOptions{}); err != nil {
		t.Errorf("list with the Docker config's credentials: %v", err)
	}
}
