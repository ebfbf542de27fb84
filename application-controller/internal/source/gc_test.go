package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

func TestGCDeletesObjectsNoApplicationUses(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	argoSecret(t, m, "creds", "repo-creds", map[string]string{"url": "https://git.example.com", "username": "u", "password": "p"})
	kept := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/kept.git", TargetRevision: "main"}
	gone := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/gone.git"}
	chart := argov1.ApplicationSource{RepoURL: "https://charts.example.com", Chart: "x", TargetRevision: "1.0.0"}
	keptApp := app("kept", kept)
	keptApp.Operation = &argov1.Operation{Sync: &argov1.SyncOperation{Revision: sha}} // a rollback in progress
	for _, u := range []struct {
		a   *argov1.Application
		src argov1.ApplicationSource
		rev string
	}{{keptApp, kept, ""}, {keptApp, kept, sha}, {app("gone", gone), gone, ""}, {app("chart", chart), chart, ""}} {
		if _, err := m.Ensure(ctx, u.a, u.src, u.rev); err == nil {
			t.Fatal("want NotReady")
		}
	}
	// An object without the label (a user's own) stays.
	foreign := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: "users-own"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://x/y", Interval: metav1.Duration{Duration: time.Minute}}}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, foreign) })

	if err := m.GC(ctx, []argov1.Application{*keptApp}); err != nil {
		t.Fatal(err)
	}
	exists := func(obj client.Object, name string) bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, obj)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	checks := []struct {
		obj  client.Object
		name string
		want bool
	}{
		{&sourcev1.GitRepository{}, ObjectName(kept, ""), true},
		{&corev1.Secret{}, ObjectName(kept, ""), true},
		{&sourcev1.GitRepository{}, ObjectName(kept, sha), true},
		{&sourcev1.GitRepository{}, ObjectName(gone, ""), false},
		{&corev1.Secret{}, ObjectName(gone, ""), false},
		{&sourcev1.HelmChart{}, ObjectName(chart, ""), false},
		{&sourcev1.HelmRepository{}, repositoryName(chart, ""), false},
		{&sourcev1.GitRepository{}, "users-own", true},
		{&corev1.Secret{}, "creds", true},
	}
	for _, c := range checks {
		if got := exists(c.obj, c.name); got != c.want {
			t.Errorf("%T %s exists = %v, want %v", c.obj, c.name, got, c.want)
		}
	}
}

func TestCacheKeepsRecentDirectories(t *testing.T) {
	m := &Manager{CacheDir: t.TempDir(), CacheMax: 2, CacheGrace: time.Minute,
		lastUse: map[string]time.Time{}, inflight: nil}
	now := time.Now()
	ages := map[string]time.Duration{"sha256-a": 0, "sha256-b": 2 * time.Minute, "sha256-c": 3 * time.Hour,
		"sha256-d": 30 * time.Second, tmpPrefix + "old": 2 * time.Hour, tmpPrefix + "new": 0}
	for name, age := range ages {
		p := filepath.Join(m.CacheDir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	m.lastUse["sha256-b"] = now.Add(-2 * time.Minute)
	m.prune()
	// Newest two kept (a, d), b and c beyond the limit and past the grace.
	want := map[string]bool{"sha256-a": true, "sha256-d": true, tmpPrefix + "new": true}
	entries, _ := os.ReadDir(m.CacheDir)
	got := map[string]bool{}
	for _, e := range entries {
		got[e.Name()] = true
	}
	if len(got) != len(want) {
		t.Errorf("left %v, want %v", got, want)
	}
	for n := range want {
		if !got[n] {
			t.Errorf("%s removed", n)
		}
	}
}
