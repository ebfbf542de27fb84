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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// job is a Job manifest with annotations (YAML lines, indented by four)
// whose pod is held by kwok when held, and extra spec lines.
func job(name string, annotations []string, held bool, spec ...string) string {
	meta := "  name: " + name + "\n"
	if strings.HasSuffix(name, "-") {
		meta = "  generateName: " + name + "\n"
	}
	podMeta := ""
	if held {
		podMeta = "    metadata:\n      annotations: {" + heldPod + "}\n"
	}
	s := "apiVersion: batch/v1\nkind: Job\nmetadata:\n" + meta + "  annotations:\n"
	for _, a := range annotations {
		s += "    " + a + "\n"
	}
	s += "spec:\n"
	for _, l := range spec {
		s += "  " + l + "\n"
	}
	return s + "  template:\n" + podMeta + "    spec:\n      restartPolicy: Never\n      containers:\n        - {name: main, image: alpine:3}\n"
}

func configMapDoc(name, wave, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  annotations: {argocd.argoproj.io/sync-wave: %q}\ndata:\n  v: %q\n", name, wave, value)
}

// TestSyncFailingHookRunsSyncFailHooks: a PreSync Job that fails (its pod
// fails, with backoffLimit 0) fails the operation with Argo CD's
// message; the SyncFail hook runs; nothing of the Sync phase is applied;
// the HookFailed Job is deleted; the result says which hook failed and why.
func TestSyncFailingHookRunsSyncFailHooks(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/migrate.yaml": job("migrate", []string{"argocd.argoproj.io/hook: PreSync", "argocd.argoproj.io/hook-delete-policy: HookFailed"},
			true, "backoffLimit: 0"),
		"app/on-fail.yaml": job("on-fail", []string{"argocd.argoproj.io/hook: SyncFail"}, false),
		"app/cm.yaml":      configMapDoc("app-config", "0", "one"),
	})
	app, ns := startSync(t, repo, "failhook")
	waitApp(t, app, "waiting for the hook", running(app, "waiting for completion of hook batch/Job/migrate"))
	failJobPods(t, ns, "migrate")
	waitApp(t, app, "operation Failed", opPhase(app, argov1.OperationFailed))
	if msg := app.Status.OperationState.Message; msg != "one or more synchronization tasks completed unsuccessfully" {
		t.Errorf("message %q", msg)
	}
	if r := resultOf(app, "Job", "migrate"); r == nil || r.HookPhase != argov1.OperationFailed || !strings.Contains(r.Message, "backoff limit") {
		t.Errorf("result of the failed hook: %s", describeResults(app))
	}
	if r := resultOf(app, "Job", "on-fail"); r == nil || r.HookPhase != argov1.OperationSucceeded || r.SyncPhase != "SyncFail" {
		t.Errorf("result of the SyncFail hook: %s", describeResults(app))
	}
	if !exists(t, &batchv1.Job{}, ns, "on-fail") {
		t.Error("the SyncFail Job does not exist")
	}
	gone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migrate"}}, "the HookFailed Job")
	if exists(t, &corev1.ConfigMap{}, ns, "app-config") || resultOf(app, "ConfigMap", "app-config") != nil {
		t.Error("the Sync phase was applied after its PreSync hook failed")
	}
	if app.Status.Sync.Status != argov1.SyncStatusOutOfSync || len(app.Status.History) != 0 {
		t.Errorf("sync %s, %d history entries: want OutOfSync and none", app.Status.Sync.Status, len(app.Status.History))
	}
	want := fmt.Sprintf("Sync operation to %s failed: one or more synchronization tasks completed unsuccessfully", app.Status.Sync.Revision)
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var events corev1.EventList
		if err := env.Client.List(ctx, &events, inNS(argocd)); err != nil {
			return false, nil
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == app.Name && e.Type == corev1.EventTypeWarning && e.Reason == "OperationCompleted" && e.Message == want
		}), nil
	})
	if err != nil {
		t.Errorf("no Warning event %q", want)
	}
}

// TestSyncRetriesWithBackoffThenStops: an auto-sync whose object the API
// server refuses is retried with back-off ("Retrying attempt #n"), then
// stays Failed with condition SyncError and is not tried again for the
// same revision, even on refresh; a new commit syncs again
// (argocd-contract §1.9 retry, §3.1, §3.3 step 5).
func TestSyncRetriesWithBackoffThenStops(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	svc := func(port int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: %d}]\n  selector: {app: web}\n", port)
	}
	repo := gitSrv.NewRepo(t, map[string]string{"app/cm.yaml": configMapDoc("settings", "0", "one"), "app/svc.yaml": svc(70000)})
	sha := repo.MustGit(t, "rev-parse", "HEAD")
	ns := uniqueName("retry")
	app := exampleApp(uniqueName("retry"), repo.URL(), "app", ns, nil)
	factor := int64(2)
	app.Spec.SyncPolicy.Retry = &argov1.RetryStrategy{Limit: 2, Backoff: &argov1.Backoff{Duration: "1s", Factor: &factor, MaxDuration: "2s"}}
	create(t, app)
	seen := map[string]bool{}
	waitApp(t, app, "operation Failed after 2 retries", func() bool {
		if st := app.Status.OperationState; st != nil && st.Phase == argov1.OperationRunning {
			for n := 1; n <= 2; n++ {
				if strings.Contains(st.Message, fmt.Sprintf(". Retrying attempt #%d at ", n)) && st.RetryCount == int64(n) {
					seen[fmt.Sprint(n)] = true
				}
			}
		}
		return opPhase(app, argov1.OperationFailed)()
	})
	st := app.Status.OperationState
	if !seen["1"] || !seen["2"] || st.RetryCount != 2 {
		t.Errorf("retries seen %v, retryCount %d: want attempts #1 and #2", seen, st.RetryCount)
	}
	if st.Message != "one or more objects failed to apply (dry run)" {
		t.Errorf("message %q", st.Message)
	}
	want := fmt.Sprintf("Failed last sync attempt to [%s]: one or more objects failed to apply (dry run)", sha)
	waitApp(t, app, "condition SyncError", func() bool { return condition(app, argov1.ConditionSyncError) == want })
	started := st.StartedAt

	refresh(t, app)
	waitApp(t, app, "refreshed", func() bool { _, ok := app.Annotations[argov1.AnnotationRefresh]; return !ok })
	if app.Operation != nil || !app.Status.OperationState.StartedAt.Equal(&started) {
		t.Fatalf("a new auto-sync started for the same revision: %+v", app.Status.OperationState)
	}
	if exists(t, &corev1.ConfigMap{}, ns, "settings") {
		t.Error("a refused dry-run still applied the other objects")
	}

	fixed := repo.MustCommit(t, map[string]string{"app/svc.yaml": svc(80)}, "fix the port")
	refresh(t, app)
	waitApp(t, app, "Synced at the fix", func() bool {
		return opPhase(app, argov1.OperationSucceeded)() && app.Status.Sync.Status == argov1.SyncStatusSynced && app.Status.Sync.Revision == fixed
	})
	if c := condition(app, argov1.ConditionSyncError); c != "" {
		t.Errorf("SyncError %q stays after a successful sync", c)
	}
}

// condition is the message of app's condition of type typ ("" if none).
func condition(app *argov1.Application, typ string) string {
	for _, c := range app.Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

// TestSyncTerminate: a user sets status.operationState.phase Terminating
// while a hook runs; the running hook is deleted, the operation ends
// Failed "Operation terminated" and nothing after the hook is applied
// (argocd-contract §3.1).
func TestSyncTerminate(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/long.yaml": job("long", []string{"argocd.argoproj.io/hook: PreSync"}, true),
		"app/cm.yaml":   configMapDoc("never", "0", "one"),
	})
	app, ns := startSync(t, repo, "terminate")
	waitApp(t, app, "waiting for the hook", running(app, "waiting for completion of hook batch/Job/long"))
	requestSync(t, app, `{"status":{"operationState":{"phase":"Terminating"}}}`)
	waitApp(t, app, "operation Failed", opPhase(app, argov1.OperationFailed))
	if msg := app.Status.OperationState.Message; msg != "Operation terminated" {
		t.Errorf("message %q, want Operation terminated", msg)
	}
	gone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "long"}}, "the running hook")
	if r := resultOf(app, "Job", "long"); r == nil || r.HookPhase != argov1.OperationFailed || r.Message != "Terminated" {
		t.Errorf("result of the hook: %s", describeResults(app))
	}
	if exists(t, &corev1.ConfigMap{}, ns, "never") {
		t.Error("the Sync phase was applied after the operation was terminated")
	}
}

// TestSyncWaitsForHealthBetweenWaves: in a multi-step sync, the object of
// wave 1 is not created while the Deployment of wave 0 is not Available;
// it is once the Deployment's pod is Ready (argocd-contract §4.2 step 3).
func TestSyncWaitsForHealthBetweenWaves(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: slow\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: slow}}\n" +
		"  template:\n    metadata:\n      labels: {app: slow}\n      annotations: {" + heldPod + "}\n    spec:\n      containers: [{name: main, image: nginx:1}]\n"
	repo := gitSrv.NewRepo(t, map[string]string{"app/deploy.yaml": deploy, "app/cm.yaml": configMapDoc("after", "1", "one")})
	app, ns := startSync(t, repo, "gate")
	waitApp(t, app, "waiting for the Deployment", running(app, "waiting for healthy state of apps/Deployment/slow"))
	// Several passes of the wait go by: the wave-1 object is never created.
	for range 3 {
		refresh(t, app)
		waitApp(t, app, "refreshed", func() bool { _, ok := app.Annotations[argov1.AnnotationRefresh]; return !ok })
		if exists(t, &corev1.ConfigMap{}, ns, "after") {
			t.Fatal("wave 1 was applied while the Deployment of wave 0 was not Available")
		}
	}
	readyPods(t, ns, map[string]string{"app": "slow"})
	waitApp(t, app, "operation Succeeded", opPhase(app, argov1.OperationSucceeded))
	if !exists(t, &corev1.ConfigMap{}, ns, "after") {
		t.Error("wave 1 was not applied")
	}
}
