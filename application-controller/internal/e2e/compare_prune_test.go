package e2e

import (
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestComparePruneFindsTrackedObjectsNotInStatus: an object carrying the
// Application's own tracking id is part of the app although the last
// status never listed it (written out of band, or applied just before a
// crash lost the status write): the app turns OutOfSync with it requiring
// pruning, and a sync with prune deletes it, as Argo CD finds an app's
// objects by tracking id in its cluster cache (argocd-contract §5). Without
// selfHeal no auto-sync runs again at the same revision.
func TestComparePruneFindsTrackedObjectsNotInStatus(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	app, _, ns := pruneApp(t, true)
	// The first sync must have ended: a pass of it still running would
	// prune the stray object itself, under its own result.
	waitApp(t, app, "the first sync ended", opPhase(app, argov1.OperationSucceeded))
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: ns, Annotations: map[string]string{
		argov1.AnnotationTrackingID: app.Name + ":/ConfigMap:" + ns + "/stray"}}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copied", Namespace: ns, Annotations: map[string]string{
		argov1.AnnotationTrackingID: app.Name + ":/ConfigMap:" + ns + "/a"}}} // another object's id: not this one's
	create(t, stray)
	create(t, other)
	waitApp(t, app, "OutOfSync with stray requiring pruning", func() bool {
		for _, r := range app.Status.Resources {
			if r.Name == "stray" && r.RequiresPruning && app.Status.Sync.Status == argov1.SyncStatusOutOfSync {
				return true
			}
		}
		return false
	})
	requestSync(t, app, `{"operation":{"initiatedBy":{"username":"me"},"sync":{"prune":true}}}`)
	waitApp(t, app, "stray pruned", func() bool {
		r := resultOf(app, "ConfigMap", "stray")
		return app.Operation == nil && r != nil && r.Status == argov1.ResultPruned && app.Status.Sync.Status == argov1.SyncStatusSynced
	})
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(stray), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("stray still exists after its prune (err %v)", err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(other), &corev1.ConfigMap{}); err != nil {
		t.Errorf("an object with a copied tracking id was pruned: %v", err)
	}
}
