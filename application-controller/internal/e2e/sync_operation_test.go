package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSyncRequestedWhileAnotherRunsDoesNotRunItsHooksAgain: a second
// operation patched onto an Application while its sync waits on a
// generated-name PreSync hook does not start over. Argo CD goes on with
// the operation in progress (controller/appcontroller.go
// processRequestedAppOperation: isOperationInProgress → state is
// status.operationState, app.operation is not read), so the hook runs
// once, the running operation keeps its start time and initiator, and no
// Job is left holding the hook finalizer.
func TestSyncRequestedWhileAnotherRunsDoesNotRunItsHooksAgain(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/migrate.yaml": job("migrate-", []string{"argocd.argoproj.io/hook: PreSync"}, true),
		"app/cm.yaml":      configMapDoc("settings", "0", "one"),
	})
	app, ns := startSync(t, repo, "second-op")
	waitApp(t, app, "waiting for the hook", running(app, "waiting for completion of hook batch/Job/migrate-"))
	started := app.Status.OperationState.StartedAt
	jobs := jobNames(t, ns)
	if len(jobs) != 1 {
		t.Fatalf("Jobs %v, want one migrate-…", jobs)
	}

	// As `kubectl patch app … --type merge -p '{"operation":…}'` by another
	// user, a second or more after the first sync started (generated hook
	// names carry the operation's start second).
	time.Sleep(1500 * time.Millisecond)
	requestSync(t, app, `{"operation":{"initiatedBy":{"username":"someone-else"},"sync":{"prune":true,"syncOptions":["CreateNamespace=true"]}}}`)
	refresh(t, app)
	waitApp(t, app, "the refresh handled", func() bool {
		_, ok := app.Annotations[argov1.AnnotationRefresh]
		return !ok
	})
	time.Sleep(5 * time.Second) // a restarted operation would have created its hook by now
	waitApp(t, app, "read", func() bool { return true })
	st := app.Status.OperationState
	if got := jobNames(t, ns); !slices.Equal(got, jobs) {
		t.Errorf("Jobs %v after a second operation request, want only %v: the PreSync hook ran again", got, jobs)
	}
	if st.Phase != argov1.OperationRunning || !st.StartedAt.Equal(&started) || st.Operation.InitiatedBy.Username != "e2e" {
		t.Errorf("operation state %s started %v by %q, want the running one (started %v by e2e)", st.Phase, st.StartedAt, st.Operation.InitiatedBy.Username, started)
	}
	for _, name := range jobNames(t, ns) {
		releaseJobPods(t, ns, name)
	}
	waitApp(t, app, "Succeeded", func() bool {
		st := app.Status.OperationState
		return st != nil && st.Phase == argov1.OperationSucceeded
	})
	for _, name := range jobNames(t, ns) {
		j := &batchv1.Job{}
		if exists(t, j, ns, name) && slices.Contains(j.Finalizers, argov1.FinalizerHook) {
			t.Errorf("Job %s keeps the hook finalizer after the sync: it can never be deleted", name)
		}
	}
	if strings.Contains(describeResults(app), "Failed") {
		t.Logf("results: %s", describeResults(app))
	}
}

// TestInvalidPostSyncHookFailsTheSyncBeforeAnythingIsApplied: a
// PostSync hook that cannot be applied (a string where the Job's schema
// wants a number) fails the operation at its dry run, with nothing of
// the Sync phase written. Argo CD dry-runs every task of the operation,
// hooks included, before the first is applied
// (gitops-engine/pkg/sync/sync_context.go Sync: "Perform a `kubectl apply
// --dry-run` against all the manifests … If anything fails, we will
// refuse to perform the sync"), message "one or more objects failed to
// apply (dry run)".
func TestInvalidPostSyncHookFailsTheSyncBeforeAnythingIsApplied(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/cm.yaml":     configMapDoc("settings", "0", "one"),
		"app/notify.yaml": job("notify", []string{"argocd.argoproj.io/hook: PostSync"}, false, `backoffLimit: "three"`),
	})
	app, ns := startSync(t, repo, "bad-hook")
	waitApp(t, app, "the operation ended", func() bool {
		st := app.Status.OperationState
		return app.Operation == nil && st != nil && st.Phase != argov1.OperationRunning
	})
	st := app.Status.OperationState
	if st.Phase != argov1.OperationFailed || st.Message != "one or more objects failed to apply (dry run)" {
		t.Errorf("operation %s %q, want Failed at the dry run; results: %s", st.Phase, st.Message, describeResults(app))
	}
	if exists(t, &corev1.ConfigMap{}, ns, "settings") {
		t.Errorf("the Sync phase's ConfigMap was applied although the PostSync hook could never be: results %s", describeResults(app))
	}
}

// TestSyncWithLocalManifestsDoesNotApplyGitInstead: an operation with
// sync.manifests (`argocd app sync --local`) asks for those manifests to
// be applied; Argo CD compares and syncs them instead of the source's
// (controller/sync.go SyncAppState: syncOp.Manifests become the local
// manifests of the comparison). Eddy may refuse such an operation, but
// it must not apply the Git source's objects in their place.
func TestSyncWithLocalManifestsDoesNotApplyGitInstead(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, twoConfigMaps)
	ns := uniqueName("local")
	app := manualApp(uniqueName("local"), repo.URL(), "app", ns)
	create(t, app)
	waitApp(t, app, "OutOfSync", func() bool { return app.Status.Sync.Status == argov1.SyncStatusOutOfSync })
	requestSync(t, app, `{"operation":{"initiatedBy":{"username":"e2e"},"sync":{"syncOptions":["CreateNamespace=true"],`+
		`"manifests":["apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\ndata:\n  k: local\n"]}}}`)
	waitApp(t, app, "the operation ended", func() bool {
		st := app.Status.OperationState
		return app.Operation == nil && st != nil && st.Phase != argov1.OperationRunning
	})
	if exists(t, &corev1.ConfigMap{}, ns, "a") || exists(t, &corev1.ConfigMap{}, ns, "b") {
		t.Errorf("a sync of local manifests applied the Git source's ConfigMaps: operation %s %q, results %s",
			app.Status.OperationState.Phase, app.Status.OperationState.Message, describeResults(app))
	}
}

// TestSyncToARevisionThatDoesNotExistEnds: a sync to a revision the
// repository does not have ends in Error naming it, as Argo CD's does
// ("Unable to resolve '<rev>' to a commit SHA"); it is not left Running,
// waiting for an artifact that will never come.
func TestSyncToARevisionThatDoesNotExistEnds(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, twoConfigMaps)
	ns := uniqueName("norev")
	app := manualApp(uniqueName("norev"), repo.URL(), "app", ns)
	create(t, app)
	waitApp(t, app, "OutOfSync", func() bool { return app.Status.Sync.Status == argov1.SyncStatusOutOfSync })
	requestSync(t, app, `{"operation":{"initiatedBy":{"username":"e2e"},"sync":{"revision":"no-such-branch","syncOptions":["CreateNamespace=true"]}}}`)
	waitApp(t, app, "the operation ended", func() bool {
		st := app.Status.OperationState
		return app.Operation == nil && st != nil && st.Phase != argov1.OperationRunning
	})
	st := app.Status.OperationState
	if st.Phase != argov1.OperationError || !strings.Contains(st.Message, "no-such-branch") {
		t.Errorf("operation %s %q, want Error naming the revision", st.Phase, st.Message)
	}
}

// TestHookSucceededDeletedHookDoesNotFailTheSyncWhenTheAppIsWritten: a
// PostSync hook with delete policy HookSucceeded completes while
// someone else keeps writing the Application (an app of apps' parent
// re-applying it, a notifier's annotations, `kubectl annotate`). The
// pass that sees the hook complete deletes it and then writes the
// operation's end; when that write loses the race (a conflict), the
// next pass must not find the hook gone and fail the sync ("Resource …
// is missing"), which runs the SyncFail hooks and makes an auto-sync
// retry the whole sync, PreSync hooks included. The end of the sync is
// recorded before, or regardless of, the hook's deletion.
func TestHookSucceededDeletedHookDoesNotFailTheSyncWhenTheAppIsWritten(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/cm.yaml":     configMapDoc("settings", "0", "one"),
		"app/notify.yaml": job("notify", []string{"argocd.argoproj.io/hook: PostSync", "argocd.argoproj.io/hook-delete-policy: HookSucceeded"}, true),
	})
	app, ns := startSync(t, repo, "poked")
	waitApp(t, app, "waiting for the hook", running(app, "waiting for completion of hook batch/Job/notify"))

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		poke := &argov1.Application{}
		poke.Name, poke.Namespace = app.Name, app.Namespace
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			p := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.eddy.dev/poke":"%d"}}}`, i)
			_ = env.Client.Patch(context.Background(), poke, client.RawPatch("application/merge-patch+json", []byte(p)))
		}
	}()
	releaseJobPods(t, ns, "notify")
	time.Sleep(10 * time.Second)
	close(stop)
	<-done
	waitApp(t, app, "the operation ended", func() bool {
		st := app.Status.OperationState
		return app.Operation == nil && st != nil && completed(st.Phase)
	})
	if st := app.Status.OperationState; st.Phase != argov1.OperationSucceeded {
		t.Errorf("operation %s %q after its hook succeeded; results %s", st.Phase, st.Message, describeResults(app))
	}
}
