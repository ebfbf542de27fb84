package e2e

import (
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// twoConfigMaps is a directory app of ConfigMaps a and b.
var twoConfigMaps = map[string]string{
	"app/README.md": "two ConfigMaps\n",
	"app/a.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: a\n",
	"app/b.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: b\n",
}

// pruneApp is an automated Application of twoConfigMaps with prune.
func pruneApp(t *testing.T, prune bool) (*argov1.Application, *testenv.Repo, string) {
	t.Helper()
	repo := gitSrv.NewRepo(t, twoConfigMaps)
	ns := uniqueName("prune")
	app := exampleApp(uniqueName("prune"), repo.URL(), "app", ns, nil)
	app.Spec.SyncPolicy.Automated.Prune = &prune
	app.Spec.SyncPolicy.Automated.SelfHeal = nil
	create(t, app)
	waitApp(t, app, "Synced and Healthy", syncedHealthy(app))
	return app, repo, ns
}

// TestComparePruneTrueDeletesAnObjectRemovedFromGit: with
// automated.prune, a ConfigMap removed from Git is deleted by the
// auto-sync and its result is Pruned (argocd-contract §5).
func TestComparePruneTrueDeletesAnObjectRemovedFromGit(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	app, repo, ns := pruneApp(t, true)
	rev := repo.MustCommit(t, map[string]string{"app/b.yaml": ""}, "drop b")
	refresh(t, app)
	waitApp(t, app, "b pruned at the new commit", func() bool {
		r := resultOf(app, "ConfigMap", "b")
		return app.Status.Sync.Revision == rev && app.Status.Sync.Status == argov1.SyncStatusSynced && r != nil &&
			r.Status == argov1.ResultPruned && app.Status.OperationState.Phase == argov1.OperationSucceeded
	})
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "b"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("b still exists after its prune (err %v)", err)
	}
	if len(app.Status.Resources) != 1 || app.Status.Resources[0].Name != "a" {
		t.Errorf("status.resources %+v, want only a", app.Status.Resources)
	}

	t.Run("allowEmpty false refuses to wipe out everything", func(t *testing.T) {
		empty := repo.MustCommit(t, map[string]string{"app/a.yaml": ""}, "drop a")
		refresh(t, app)
		waitApp(t, app, "SyncError at the empty commit", func() bool {
			return app.Status.Sync.Revision == empty && hasCondition(app, argov1.ConditionSyncError, "auto-sync will wipe out all resources") &&
				warningEvent(t, app, argov1.ConditionSyncError, "auto-sync will wipe out all resources")
		})
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("a was deleted although allowEmpty is false: %v", err)
		}
		if app.Status.Sync.Status != argov1.SyncStatusOutOfSync {
			t.Errorf("sync %q, want OutOfSync", app.Status.Sync.Status)
		}
	})
}

// TestComparePruneFalseKeepsAnObjectRemovedFromGit: without prune, a
// ConfigMap removed from Git stays, the app is OutOfSync with the object
// requiresPruning, and a requested sync without prune reports it
// PruneSkipped (argocd-contract §5, §2).
func TestComparePruneFalseKeepsAnObjectRemovedFromGit(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	app, repo, ns := pruneApp(t, false)
	rev := repo.MustCommit(t, map[string]string{"app/b.yaml": ""}, "drop b")
	refresh(t, app)
	waitApp(t, app, "OutOfSync with b requiring pruning", func() bool {
		if app.Status.Sync.Revision != rev || app.Status.Sync.Status != argov1.SyncStatusOutOfSync {
			return false
		}
		for _, r := range app.Status.Resources {
			if r.Name == "b" && r.RequiresPruning && r.Status == argov1.SyncStatusOutOfSync {
				return true
			}
		}
		return false
	})
	requestSync(t, app, `{"operation":{"initiatedBy":{"username":"me"},"sync":{"syncOptions":["CreateNamespace=true"]}}}`)
	waitApp(t, app, "the sync done with b PruneSkipped", func() bool {
		r := resultOf(app, "ConfigMap", "b")
		return app.Operation == nil && app.Status.OperationState.Phase == argov1.OperationSucceeded && r != nil &&
			r.Status == argov1.ResultPruneSkipped && r.Message == "ignored (requires pruning)"
	})
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "b"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("b was deleted without prune: %v", err)
	}
	if app.Status.Sync.Status != argov1.SyncStatusOutOfSync {
		t.Errorf("sync %q after a sync without prune, want OutOfSync", app.Status.Sync.Status)
	}
}
