package e2e

import (
	"slices"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSyncKilledAfterDeletingItsSucceededHookStillSucceeds: a
// HookSucceeded PostSync hook completes; the pass that sees it records
// its end, and the next pass releases and deletes it, then writes the
// operation's end; application-controller is killed between that delete
// and that write (simulated: the controller is killed while the hook
// runs, and the hook is completed, its end recorded in the status,
// released and deleted as those passes do). The restarted controller
// must not fail the sync on the missing hook ("Resource … is missing"):
// a failed sync runs the SyncFail hooks, and an auto-sync retries the
// whole sync, PreSync hooks included. Not parallel: the kill stops every
// Application's reconciling. (A hook is never deleted by the pass that
// first sees it end: the controller unit test
// TestHookIsDeletedOnlyAfterItsEndIsRecorded checks that order.)
func TestSyncKilledAfterDeletingItsSucceededHookStillSucceeds(t *testing.T) {
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/cm.yaml":     configMapDoc("settings", "0", "one"),
		"app/notify.yaml": job("notify", []string{"argocd.argoproj.io/hook: PostSync", "argocd.argoproj.io/hook-delete-policy: HookSucceeded"}, true),
	})
	app, ns := startSync(t, repo, "killed-cleanup")
	waitApp(t, app, "waiting for the hook", running(app, "waiting for completion of hook batch/Job/notify"))

	ctrls.Proc("application-controller").Kill()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			restart(t, "application-controller")
		}
	})
	releaseJobPods(t, ns, "notify")
	j := &batchv1.Job{}
	if !exists(t, j, ns, "notify") {
		t.Fatal("no Job notify")
	}
	waitJobComplete(t, j)
	recordHookSucceeded(t, app, "notify")
	orig := j.DeepCopy()
	j.Finalizers = slices.DeleteFunc(j.Finalizers, func(f string) bool { return f == argov1.FinalizerHook })
	if err := env.Client.Patch(t.Context(), j, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	bg := metav1.DeletePropagationBackground
	if err := env.Client.Delete(t.Context(), j, &client.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	gone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "notify"}}, "Job notify")

	restart(t, "application-controller")
	restarted = true
	waitApp(t, app, "the operation ended", func() bool {
		st := app.Status.OperationState
		return app.Operation == nil && st != nil && completed(st.Phase)
	})
	if st := app.Status.OperationState; st.Phase != argov1.OperationSucceeded {
		t.Errorf("operation %s %q after its hook succeeded; results %s", st.Phase, st.Message, describeResults(app))
	}
}

// waitJobComplete waits until j has the Complete condition.
func waitJobComplete(t *testing.T, j *batchv1.Job) {
	t.Helper()
	testenv.WaitForTimeout(t, env.Client, j, "Job "+j.Name+" Complete", appTimeout, func() bool {
		return slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
			return c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue
		})
	})
}

// recordHookSucceeded writes into app's status the end of its hook name
// (hookPhase Succeeded), as the pass that sees the hook complete does.
func recordHookSucceeded(t *testing.T, app *argov1.Application, name string) {
	t.Helper()
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(app), app); err != nil {
		t.Fatal(err)
	}
	orig := app.DeepCopy()
	st := app.Status.OperationState
	if st == nil || st.SyncResult == nil {
		t.Fatal("no operation results")
	}
	found := false
	for _, res := range st.SyncResult.Resources {
		if res.HookType != "" && res.Name == name {
			res.HookPhase, res.Message, found = argov1.OperationSucceeded, "job/"+name+" completed", true
		}
	}
	if !found {
		t.Fatalf("no hook result %s; results %s", name, describeResults(app))
	}
	if err := env.Client.Patch(t.Context(), app, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatal(err)
	}
}
