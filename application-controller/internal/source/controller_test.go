package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
)

// TestEnsureWithSourceController runs the built source-controller against
// a real Git server and checks each form of targetRevision end to end:
// HEAD (the default branch), a branch, a tag (tried as a branch first), a
// semver constraint and a commit.
func TestEnsureWithSourceController(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs source-controller")
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, "source-controller", "--storage-path="+t.TempDir(),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", port),
		"--concurrent=4", "--min-retry-delay=200ms", "--max-retry-delay=1s")
	gs, err := testenv.StartGitServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gs.Close)
	r := gs.NewRepo(t, map[string]string{"apps/app.yaml": "v: 1\n"})
	c1 := r.MustGit(t, "rev-parse", "HEAD")
	r.MustGit(t, "tag", "-a", "v1.0.0", "-m", "release")
	r.MustGit(t, "push", "-q", r.Bare, "v1.0.0")
	c2 := r.MustCommit(t, map[string]string{"apps/app.yaml": "v: 2\n"}, "second")
	r.MustGit(t, "push", "-q", r.Bare, "HEAD:refs/heads/dev")

	m := newManager(t)
	// The built source-controller signs with the cluster's key.
	m.Fetcher.Keys = artifact.NewSecretKeyring(env.Client, env.Client)
	t.Run("helm chart with credentials", func(t *testing.T) {
		cs := helmtest.NewChartServer(t, helmtest.WithBasicAuth("chart-user", "chart-pw"))
		for _, v := range []string{"1.0.0", "1.0.3", "1.1.0"} {
			cs.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "hello", v)))
		}
		argoSecret(t, m, "charts", "repository", map[string]string{"url": cs.URL(), "type": "helm",
			"username": "chart-user", "password": "chart-pw"})
		src := argov1.ApplicationSource{RepoURL: cs.URL(), Chart: "hello", TargetRevision: "1.0.*"}
		f := ensureEventually(t, m, src, "")
		if f.Revision != "1.0.3" || filepath.Base(f.Dir) != "hello" {
			t.Errorf("Fetched %+v", f)
		}
		if _, err := os.Stat(filepath.Join(f.Dir, "templates")); err != nil {
			t.Error(err)
		}
	})
	t.Run("wrong credentials", func(t *testing.T) {
		auth, err := gitserver.Start(gitserver.Options{Root: gs.Root, Username: "bot", Password: "right-pw"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(auth.Close)
		url := auth.URL + "/" + r.Name
		argoSecret(t, m, "private", "repository", map[string]string{"url": url, "username": "bot", "password": "wrong-pw"})
		src := argov1.ApplicationSource{RepoURL: url, Path: "apps"}
		var nr *NotReady
		deadline := time.Now().Add(testenv.WaitTimeout)
		for nr == nil || nr.Message == waitingMessage {
			if time.Now().After(deadline) {
				t.Fatalf("no failure reported: %+v", nr)
			}
			time.Sleep(100 * time.Millisecond)
			_, err := m.Ensure(context.Background(), app("a", src), src, "")
			if !errors.As(err, &nr) {
				t.Fatalf("want NotReady, got %v", err)
			}
		}
		if !strings.Contains(nr.Message, "authentication required") || strings.Contains(nr.Error(), "wrong-pw") {
			t.Errorf("NotReady %q", nr.Error())
		}
	})
	t.Run("symbolic links", func(t *testing.T) {
		lr := gs.NewRepo(t, map[string]string{"shared/cm.yaml": "v: shared\n"})
		if err := os.MkdirAll(filepath.Join(lr.Work, "apps"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../shared/cm.yaml", filepath.Join(lr.Work, "apps", "cm.yaml")); err != nil {
			t.Fatal(err)
		}
		lr.MustCommit(t, map[string]string{}, "a link")
		f := ensureEventually(t, m, argov1.ApplicationSource{RepoURL: lr.URL(), Path: "apps"}, "")
		if b, err := os.ReadFile(filepath.Join(f.Dir, "apps", "cm.yaml")); err != nil || string(b) != "v: shared\n" {
			t.Errorf("apps/cm.yaml = %q, %v; want the linked file's content", b, err)
		}
	})
	cases := []struct {
		target, revision, want, content string
	}{
		{"", "", c2, "v: 2\n"},
		{"HEAD", "", c2, "v: 2\n"},
		{"dev", "", c2, "v: 2\n"},
		{"v1.0.0", "", c1, "v: 1\n"},
		{"1.*", "", c1, "v: 1\n"},
		{"main", c1, c1, "v: 1\n"},
		{c1[:8], "", c1, "v: 1\n"}, // a short SHA, after branch and tag
	}
	for _, tc := range cases {
		t.Run(tc.target+"@"+tc.revision, func(t *testing.T) {
			src := argov1.ApplicationSource{RepoURL: r.URL(), Path: "apps", TargetRevision: tc.target}
			f := ensureEventually(t, m, src, tc.revision)
			if f.Revision != tc.want {
				t.Errorf("revision %s, want %s", f.Revision, tc.want)
			}
			b, err := os.ReadFile(filepath.Join(f.Dir, "apps", "app.yaml"))
			if err != nil || string(b) != tc.content {
				t.Errorf("apps/app.yaml = %q, %v; want %q", b, err, tc.content)
			}
		})
	}
}

// ensureEventually calls Ensure until it stops returning NotReady.
func ensureEventually(t *testing.T, m *Manager, src argov1.ApplicationSource, revision string) *Fetched {
	t.Helper()
	deadline := time.Now().Add(testenv.WaitTimeout)
	for {
		f, err := m.Ensure(context.Background(), app("a", src), src, revision)
		var nr *NotReady
		switch {
		case err == nil:
			return f
		case !errors.As(err, &nr):
			t.Fatal(err)
		case time.Now().After(deadline):
			t.Fatalf("still not ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
