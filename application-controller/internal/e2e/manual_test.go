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

	// Argo CD resolves targetRevision when the sync runs: a commit pushed
	// since the last fetch (no refresh, the source's interval far off) is
	// what a sync without a revision applies (argocd-contract §3.1).
	t.Run("a sync applies the branch as it is now", func(t *testing.T) {
		third := repo.MustCommit(t, map[string]string{"apps/payment-api/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: payment-config\ndata:\n  CURRENCY: CHF\n  TIMEOUT: \"30s\"\n"}, "CHF")
		requestSync(t, app, `{"operation":{"initiatedBy":{"username":"me"},"sync":{"syncOptions":["CreateNamespace=true"]}}}`)
		waitApp(t, app, "the sync done at the third commit", func() bool {
			return app.Operation == nil && len(app.Status.History) == 4
		})
		if h := app.Status.History[3]; h.Revision != third {
			t.Errorf("the sync applied %s, want the branch's head %s", h.Revision, third)
		}
		if err := env.Client.Get(t.Context(), key, cm); err != nil || cm.Data["CURRENCY"] != "CHF" {
			t.Errorf("CURRENCY %v (err %v), want CHF", cm.Data, err)
		}
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

// TestDryRunSyncChangesNothing: a sync with dryRun creates no namespace
// (CreateNamespace=true), applies nothing, adds no history and records
// each object's outcome marked "(dry run)".
func TestDryRunSyncChangesNothing(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, paymentAPI)
	ns := uniqueName("dryrun")
	app := seedApplication(t, uniqueName("payment-dry"), repo.URL(), ns, false)
	create(t, app)
	waitApp(t, app, "OutOfSync", func() bool { return app.Status.Sync.Status == argov1.SyncStatusOutOfSync })
	requestSync(t, app, `{"operation":{"initiatedBy":{"username":"me"},"sync":{"dryRun":true,"syncOptions":["CreateNamespace=true"]}}}`)
	waitApp(t, app, "the dry run done", func() bool {
		return app.Operation == nil && app.Status.OperationState != nil && app.Status.OperationState.Phase == argov1.OperationSucceeded
	})
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry-run sync created namespace %s (err %v)", ns, err)
	}
	if r := resultOf(app, "ConfigMap", "payment-config"); r == nil || r.Message != "configmap/payment-config created (dry run)" {
		t.Errorf("dry-run result of payment-config %+v, want configmap/payment-config created (dry run)", r)
	}
	if len(app.Status.History) != 0 || app.Status.Sync.Status != argov1.SyncStatusOutOfSync {
		t.Errorf("after a dry run: history %d entries, sync %q; want none and OutOfSync", len(app.Status.History), app.Status.Sync.Status)
	}
}
