package e2e

import (
	"os"
	"path/filepath"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// commitLink adds the symbolic link name → target (as written) to repo's
// work tree, commits and pushes it.
func commitLink(t *testing.T, repo *testenv.Repo, name, target string) string {
	t.Helper()
	p := filepath.Join(repo.Work, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.FromSlash(target), p); err != nil {
		t.Fatal(err)
	}
	return repo.MustCommit(t, map[string]string{}, "link "+name)
}

// linkedRepo holds apps/x/own.yaml and shared/cm.yaml, linked as
// apps/x/cm.yaml.
func linkedRepo(t *testing.T) *testenv.Repo {
	t.Helper()
	repo := gitSrv.NewRepo(t, map[string]string{
		"apps/x/own.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\ndata:\n  k: own\n",
		"shared/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: linked\ndata:\n  k: shared\n",
	})
	commitLink(t, repo, "apps/x/cm.yaml", "../../shared/cm.yaml")
	return repo
}

// TestSourceSymlinksInsideTheRepositoryAreFollowed: as Argo CD renders a
// checkout, a manifest linked from inside the repository is applied; a
// link out of the repository is a ComparisonError with Argo CD's message,
// at the first fetch (nothing applied) and in a synced app (its objects
// and history stay).
func TestSourceSymlinksInsideTheRepositoryAreFollowed(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	const outOfBounds = "repository contains out-of-bounds symlinks. file: apps/x/evil.yaml"
	t.Run("linked manifest, then a link out", func(t *testing.T) {
		t.Parallel()
		repo := linkedRepo(t)
		ns := uniqueName("links")
		app := exampleApp(uniqueName("links"), repo.URL(), "apps/x", ns, nil)
		create(t, app)
		waitApp(t, app, "Synced and Healthy", syncedHealthy(app))
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "linked"}, cm); err != nil || cm.Data["k"] != "shared" {
			t.Fatalf("the linked ConfigMap: %v %v", err, cm.Data)
		}
		commitLink(t, repo, "apps/x/evil.yaml", "../../../outside.yaml")
		refresh(t, app)
		waitApp(t, app, "ComparisonError", func() bool {
			return hasCondition(app, argov1.ConditionComparisonError, outOfBounds) && warningEvent(t, app, argov1.ConditionComparisonError, outOfBounds)
		})
		t.Logf("out of bounds: %s", app.Status.Conditions[0].Message)
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "linked"}, cm); err != nil || len(app.Status.History) != 1 {
			t.Errorf("the synced state changed: linked %v, %d history entries", err, len(app.Status.History))
		}
	})
	t.Run("a link out at the first fetch", func(t *testing.T) {
		t.Parallel()
		repo := linkedRepo(t)
		commitLink(t, repo, "apps/x/evil.yaml", "/etc/hostname")
		ns := uniqueName("links")
		app := exampleApp(uniqueName("links"), repo.URL(), "apps/x", ns, nil)
		create(t, app)
		refusedApp(t, app, argov1.ConditionComparisonError, outOfBounds, ns, "own")
	})
}

// TestSourceShortCommitSHAIsACommit: targetRevision set to the first 8
// hex digits of a commit that is not the branch head syncs that commit,
// and status.sync.revision is its full SHA, as Argo CD shows it.
func TestSourceShortCommitSHAIsACommit(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, twoConfigMaps)
	first := repo.MustGit(t, "rev-parse", "HEAD")
	repo.MustCommit(t, map[string]string{"app/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: newer\n"}, "newer b")
	ns := uniqueName("short")
	app := exampleApp(uniqueName("short"), repo.URL(), "app", ns, nil)
	app.Spec.Source.TargetRevision = first[:8]
	create(t, app)
	waitApp(t, app, "Synced and Healthy", syncedHealthy(app))
	if app.Status.Sync.Revision != first {
		t.Errorf("status.sync.revision %q, want the full SHA %s", app.Status.Sync.Revision, first)
	}
	b := &corev1.ConfigMap{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "b"}, b); err != nil || b.Data["k"] != "b" {
		t.Errorf("ConfigMap b: %v %v, want the first commit's", err, b.Data)
	}
}
