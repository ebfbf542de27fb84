package e2e

import (
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// TestSyncRefusesAFieldTheSchemaLacks: a manifest with a field its kind
// does not declare fails the sync, naming the object and the field, and
// writes nothing, as Argo CD's validating apply does (argocd-contract
// §1.9). A server-side apply always refuses such a field, so Validate=false
// does not change it (Argo CD's client-side apply would drop the field).
func TestSyncRefusesAFieldTheSchemaLacks(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	files := map[string]string{
		"app/typo.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: typo\ndatta:\n  v: one\n",
		"app/ok.yaml":   configMapDoc("ok", "0", "one"),
	}
	repo := gitSrv.NewRepo(t, files)
	app, ns := startSync(t, repo, "validate")
	waitApp(t, app, "the sync failed", opPhase(app, argov1.OperationFailed))
	if r := resultOf(app, "ConfigMap", "typo"); r == nil || r.Status != argov1.ResultSyncFailed || !strings.Contains(r.Message, "datta") {
		t.Errorf("result of typo %+v, want SyncFailed naming the field datta", r)
	}
	if exists(t, &corev1.ConfigMap{}, ns, "ok") {
		t.Error("the valid ConfigMap was applied although the set holds an invalid one")
	}
}
