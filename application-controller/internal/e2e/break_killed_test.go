package e2e

import (
	"slices"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSyncKilledAfterDeletingItsSucceededHookStillSucceeds: the pass
// that sees a HookSucceeded PostSync hook complete deletes it, then
// writes the operation's end; application-controller is killed between
// the two (simulated: the controller is killed while the hook runs, and
// the hook is completed, released and deleted as that pass does). The
// restarted controller must not fail the sync on the missing hook
// ("Resource … is missing"): a failed sync runs the SyncFail hooks, and
// an auto-sync retries the whole sync, PreSync hooks included. Not
// parallel: the kill stops every Application's reconciling.
func TestSyncKilledAfterDeletingItsSucceededHookStillSucceeds(t *testing.T) {
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/cm.yaml":     configMapDoc("settings", "0", "one"),
		"app/notify.yaml": job("notify", []string{"argocd.argoproj.io/hook: PostSync", "argocd.argoproj.io/hook-delete-policy: HookSucceeded"}, true),
	})
	ns := uniqueName("killed-cleanup")
	app := manualApp(uniqueName("killed-cleanup"), repo.URL(), "app", ns)
	create(t, app)
	waitApp(t, app, "OutOfSync", func() bool { return app.Status.Sync.Status == argov1.SyncStatusOutOfSync })
	requestSync(t, app, syncOp("CreateNamespace=true"))
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
