package e2e

import (
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSyncDeletedMidHookLeavesNothing deletes, with the resources
// finalizer, an Application whose PreSync hook is still running: the hook
// is stopped (its hook finalizer released) and deleted with the rest, as
// Argo CD deletes every object it tracks (argocd-contract §1.12).
func TestSyncDeletedMidHookLeavesNothing(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/forever.yaml": job("forever", []string{"argocd.argoproj.io/hook: PreSync"}, true),
		"app/cm.yaml":      configMapDoc("app-config", "0", "one"),
	})
	ns := uniqueName("delhook")
	app := manualApp(uniqueName("delhook"), repo.URL(), "app", ns)
	app.Finalizers = []string{argov1.FinalizerResources}
	create(t, app)
	waitApp(t, app, "OutOfSync", func() bool { return app.Status.Sync.Status == argov1.SyncStatusOutOfSync })
	requestSync(t, app, syncOp("CreateNamespace=true"))
	waitApp(t, app, "waiting for the hook", running(app, "waiting for completion of hook batch/Job/forever"))
	if err := env.Client.Delete(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	gone(t, &argov1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}, "the Application")
	gone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forever"}}, "the running hook")
	if exists(t, &corev1.ConfigMap{}, ns, "app-config") {
		t.Error("app-config exists: the Sync phase was applied although its PreSync hook never finished")
	}
}
