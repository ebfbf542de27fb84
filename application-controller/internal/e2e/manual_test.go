package e2e

import (
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestManualSyncAppliesOnlyWhenAsked runs the seed Application without
// syncPolicy.automated: it shows OutOfSync and applies nothing until an
// operation is patched in (as `kubectl patch … -p '{"operation":…}'`); a
// new commit is again only shown; a rollback to the first history entry
// applies the first commit's objects.
func TestManualSyncAppliesOnlyWhenAsked(t *testing.T) {
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, paymentAPI)
	first := repo.MustGit(t, "rev-parse", "HEAD")
	ns := uniqueName("manual")
	app := seedApplication(t, uniqueName("payment-manual"), repo.URL(), ns, false)
	create(t, app)
	waitApp(t, app, "OutOfSync at the first commit", func() bool {
		return app.Status.Sync.Status == argov1.SyncStatusOutOfSync && app.Status.Sync.Revision == first
	})
	if app.Status.Health.Status != argov1.HealthMissing {
		t.Errorf("health %q, want Missing", app.Status.Health.Status)
	}
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: ns, Name: "payment-config"}
	if err := env.Client.Get(t.Context(), key, cm); !apierrors.IsNotFound(err) {
		t.Fatalf("a manual-sync Application applied payment-config (err %v)", err)
	}

	requestSync(t, app, `{"operation":{"initiatedBy":{"username":"me"},"sync":{"prune":true,"syncOptions":["CreateNamespace=true"]}}}`)
	waitApp(t, app, "Synced after the requested sync", func() bool {
		return app.Operation == nil && app.Status.OperationState != nil && app.Status.OperationState.Phase == argov1.OperationSucceeded &&
			app.Status.Sync.Status == argov1.SyncStatusSynced
	})
	if h := app.Status.History; len(h) != 1 || h[0].Revision != first || h[0].InitiatedBy.Username != "me" {
		t.Fatalf("history %+v, want one entry at %s by me", h, first)
	}

	second := repo.MustCommit(t, map[string]string{"apps/payment-api/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: payment-config\ndata:\n  CURRENCY: GBP\n  TIMEOUT: \"30s\"\n"}, "GBP")
	refresh(t, app)
	waitApp(t, app, "OutOfSync at the second commit", func() bool {
		return app.Status.Sync.Status == argov1.SyncStatusOutOfSync && app.Status.Sync.Revision == second
	})
	if err := env.Client.Get(t.Context(), key, cm); err != nil || cm.Data["CURRENCY"] != "EUR" {
		t.Fatalf("the new commit was applied without a sync: %v %v", cm.Data, err)
	}
	requestSync(t, app, `{"operation":{"initiatedBy":{"username":"me"},"sync":{"syncOptions":["CreateNamespace=true"]}}}`)
	testenv.WaitForTimeout(t, env.Client, cm, "CURRENCY GBP", appTimeout, func() bool { return cm.Data["CURRENCY"] == "GBP" })
	waitApp(t, app, "two history entries", func() bool { return len(app.Status.History) == 2 && app.Operation == nil })

	t.Run("rollback to history id 0", func(t *testing.T) {
		h := app.Status.History[0]
		requestSync(t, app, `{"operation":{"initiatedBy":{"username":"me"},"sync":{"revision":"`+h.Revision+`","source":{"repoURL":"`+h.Source.RepoURL+`","path":"`+h.Source.Path+`","targetRevision":"`+h.Source.TargetRevision+`"}}}}`)
		testenv.WaitForTimeout(t, env.Client, cm, "CURRENCY EUR again", appTimeout, func() bool { return cm.Data["CURRENCY"] == "EUR" })
		waitApp(t, app, "OutOfSync with the branch after the rollback", func() bool {
			return app.Operation == nil && app.Status.Sync.Status == argov1.SyncStatusOutOfSync && len(app.Status.History) == 3
		})
	})
}

// requestSync patches app's operation field with patch (a merge patch).
func requestSync(t *testing.T, app *argov1.Application, patch string) {
	t.Helper()
	if err := env.Client.Patch(t.Context(), app, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// refresh sets the refresh annotation, as `kubectl annotate app … argocd.argoproj.io/refresh=normal`.
func refresh(t *testing.T, app *argov1.Application) {
	t.Helper()
	requestSync(t, app, `{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`)
}
