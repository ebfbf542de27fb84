package e2e

import (
	"encoding/json"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// appsValues are the values of argocd-example-apps' `apps` chart: its
// children's repoURL at url and targetRevision HEAD (the local server
// has no master), and the children named (the chart's list holds 14;
// three of them keep the test light: two that sync and a plugin).
func appsValues(t *testing.T, url string, children ...string) *apiextensionsv1.JSON {
	t.Helper()
	var apps []map[string]any
	for _, c := range children {
		a := map[string]any{"name": c}
		if c == "plugin-kasane" {
			a["path"], a["tool"] = "plugins/kasane", map[string]any{"plugin": map[string]any{"name": "kasane"}}
		}
		apps = append(apps, a)
	}
	b, err := json.Marshal(map[string]any{
		"config":       map[string]any{"spec": map[string]any{"source": map[string]any{"repoURL": url, "targetRevision": "HEAD"}}},
		"applications": apps,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: b}
}

// child reads the child Application example.<name>.
func child(t *testing.T, name string) *argov1.Application {
	t.Helper()
	a := &argov1.Application{}
	a.Namespace, a.Name = argocd, "example."+name
	return a
}

// TestCompareAppOfAppsParentAndChildren runs argocd-example-apps' `apps`
// as an app of apps (argocd-contract §9): the parent is Synced and
// Healthy once its children exist, with summary.isAppOfApps; the
// children reconcile on their own (guestbook Synced and Healthy, the
// plugin child a ComparisonError); a child dropped from the parent's
// values is pruned, and its resources go with it through its finalizer.
func TestCompareAppOfAppsParentAndChildren(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := exampleRepo(t)
	parent := exampleApp(uniqueName("apps"), repo.URL(), "apps", argocd, &argov1.ApplicationSourceHelm{
		ValuesObject: appsValues(t, repo.URL(), "guestbook", "kustomize-guestbook", "plugin-kasane"),
	})
	create(t, parent)
	waitApp(t, parent, "Synced and Healthy", syncedHealthy(parent))
	if !parent.Status.Summary.IsAppOfApps || len(parent.Status.Resources) != 3 {
		t.Errorf("isAppOfApps %v, %d resources; want true and the 3 children", parent.Status.Summary.IsAppOfApps, len(parent.Status.Resources))
	}
	guestbook := child(t, "guestbook")
	waitApp(t, guestbook, "guestbook Synced and Healthy", syncedHealthy(guestbook))
	plugin := child(t, "plugin-kasane")
	waitApp(t, plugin, "the plugin child's ComparisonError", func() bool {
		return hasCondition(plugin, argov1.ConditionComparisonError, "config management plugins are not supported by Eddy")
	})
	kustomize := child(t, "kustomize-guestbook")
	waitApp(t, kustomize, "kustomize-guestbook Synced and Healthy", syncedHealthy(kustomize))
	for _, c := range []*argov1.Application{guestbook, plugin, kustomize} {
		t.Cleanup(func() { _ = env.Client.Delete(t.Context(), c) })
	}

	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"source": map[string]any{"helm": map[string]any{
		"valuesObject": appsValues(t, repo.URL(), "guestbook", "plugin-kasane")}}}})
	requestSync(t, parent, string(patch)) // a merge patch of the values, as kubectl patch

	waitGone(t, kustomize)
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "kustomize-guestbook", Name: "kustomize-guestbook-ui"}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the pruned child's Deployment is still there (err %v)", err)
	}
	waitApp(t, parent, "Synced with two children", func() bool {
		return parent.Status.Sync.Status == argov1.SyncStatusSynced && len(parent.Status.Resources) == 2
	})
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(guestbook), guestbook); err != nil || guestbook.DeletionTimestamp != nil {
		t.Errorf("a kept child was deleted (err %v)", err)
	}
}
